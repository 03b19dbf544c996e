//! One context's open-load section, the state its cells share ([`Section`]): the context,
//! the load settings, the rows so far, the next unused stream index, and its varying lengths;
//! with the prompts a section builds (each request its own, fresh at this context) and the
//! in-flight bound of its saturation batch.
//!
//! Every request of every cell has a prompt of its own (exactly C tokens, a stream index no
//! other request of the run uses), so no prefix cache serves one request from another: open
//! load is cold prefills, as real traffic is.

use crate::cells::context::{MatrixEnd, MatrixRun};
use crate::cells::inputs::CellFailure;
use crate::cells::varying::{PromptMakers, Varying, build_requests, fixed_scale};
use crate::prompts::prompt::PromptBuilder;
use crate::wire::stream::RequestSpec;
use llmib_core::{CellResult, LoadSettings, PlannedContext, round_rate};
/// Stream indices of open-load prompts start here (decode cells use 0..N, standalone prefills
/// count down from `u32::MAX`).
pub(crate) const OPEN_LOOP_STREAMS: u32 = 1 << 30;

/// What one context's section carries from cell to cell.
pub(crate) struct Section<'s> {
    /// Why the run stops before the next cell (Ctrl-C, the time budget), if it does.
    pub(crate) stop: &'s dyn Fn() -> MatrixEnd,
    /// Set when a cell of this section was stopped: how the run ended.
    pub(crate) ended: Option<MatrixEnd>,
    pub(crate) ctx: &'s PlannedContext,
    pub(crate) load: &'s LoadSettings,
    /// Every row saved before the open-load sections (the whole matrix, and resumed rows):
    /// the decode rows give the capacity concurrency.
    pub(crate) saved: &'s [CellResult],
    /// The next unused open-load stream index at this context.
    pub(crate) next_stream: u32,
    /// Every rate row of this context (resumed ones first).
    pub(crate) rate_rows: Vec<CellResult>,
    pub(crate) synchronous: Option<f64>,
    pub(crate) saturation: Option<f64>,
    /// Lengths that vary from request to request, when asked.
    pub(crate) varying: Option<&'s mut Varying>,
}

/// Builds fresh prompts at this context, one per stream index of `streams` (indices no other
/// request of the run uses), and their streamed requests.
pub(crate) async fn fresh_requests(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &Section<'_>,
    streams: &[u32],
    max_tokens: u32,
) -> Result<(Vec<RequestSpec>, u64), CellFailure> {
    let mut out = Vec::with_capacity(streams.len());
    let mut tokens = s.ctx.tokens;
    // Open load queues behind as many prompts as the server admits at once.
    let lim = m.limits(s.ctx.tokens, saturation_slots(m, s));
    for &stream in streams {
        if m.cancel.is_cancelled() {
            break;
        }
        let p = builder
            .build(s.ctx.tokens, stream)
            .await
            .map_err(|e| CellFailure::from(&e))?;
        tokens = p.tokens;
        let model = crate::cells::lora::request_model(m, stream);
        let spec = crate::cells::images::request(
            m,
            &model,
            p.input,
            max_tokens,
            false,
            lim,
            s.ctx.tokens,
            stream,
        )
        .map_err(|e| CellFailure::request_body(e.to_string()))?;
        out.push(spec);
    }
    Ok((out, tokens))
}

/// The stream indices of a cell of `total` requests of which this process sends `mine`
/// (global indices): the next `total` unused ones, so that every shard gives request i the
/// prompt one process would.
pub(crate) fn take_streams(s: &mut Section<'_>, total: usize, mine: &[u32]) -> Vec<u32> {
    let base = s.next_stream;
    s.next_stream = base.wrapping_add(total as u32);
    mine.iter().map(|i| base.wrapping_add(*i)).collect()
}

/// The trace's mean rate, when the section replays a trace (1/s for a trace whose rows share
/// one instant: its replay is then one burst, keyed as if at K/s).
pub(crate) fn trace_rate_of(s: &Section<'_>) -> Option<f64> {
    let v = s.varying.as_deref()?;
    v.trace().map(|w| w.trace_rate().unwrap_or(1.0))
}

/// The time scale whose replay runs at `rate`: the one asked where it rounds to this rate, so
/// a replay at `--time-scale 2` runs at exactly 2.
pub(crate) fn scale_at(s: &Section<'_>, trace_rate: f64, rate: f64) -> f64 {
    match fixed_scale(s.load) {
        Some(k) if round_rate(k * trace_rate) == rate => k,
        _ => rate / trace_rate,
    }
}

/// How many requests the saturation batch keeps in flight: the cap, else as many as the KV
/// cache holds at this context (the server's own admission limit, where it reports its
/// capacity) or the matrix's largest concurrency, whichever is larger; at most 256.
pub(crate) fn saturation_slots(m: &MatrixRun<'_>, s: &Section<'_>) -> u32 {
    if let Some(cap) = s.load.max_concurrency {
        return cap;
    }
    let st = &m.plan.settings;
    let per_request = s.ctx.tokens + u64::from(st.max_output);
    let by_kv = m
        .plan
        .kv_capacity_tokens
        .map(|kv| kv / per_request.max(1))
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    let by_matrix = st.concurrency.iter().copied().max();
    by_kv.max(by_matrix).unwrap_or(16).clamp(1, 256)
}

/// Builds the prompts of a cell whose lengths vary (`crate::cells::varying::build_requests`).
pub(crate) async fn varying_requests(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    reqs: &[llmib_core::CellRequest],
    streams: &[u32],
) -> Result<(Vec<RequestSpec>, Vec<u64>), CellFailure> {
    let longest = s
        .varying
        .as_deref()
        .map_or(s.ctx.tokens, |v| v.max_input(s.ctx.tokens));
    let lim = m.limits(longest, saturation_slots(m, s));
    let makers = match s.varying.as_deref_mut() {
        Some(v) => PromptMakers {
            blocks: v.blocks.as_mut(),
            prompts: v.prompts.as_ref(),
        },
        None => PromptMakers {
            blocks: None,
            prompts: None,
        },
    };
    let context = s.ctx.tokens;
    build_requests(m, builder, makers, reqs, streams, lim, context).await
}
