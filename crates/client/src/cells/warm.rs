//! The run's hidden warm-ups, before its first measured cell: one request at concurrency 1
//! (always), then, with `--decode-warmup-seconds S`, a hidden decode cell of S seconds at
//! `llmib_core::decode_warmup_cell` (the largest context and concurrency that fit). The
//! server's one-off costs (graph capture for a batch size, allocator growth, a long KV cache's
//! first use) belong to no cell. Every prompt here shares no prefix with a measured one (its
//! tag is salted), and nothing is measured: a failure shows in the first cell, and the decode
//! warm-up's outcome is one note.

use crate::cells::context::MatrixRun;
use crate::cells::decode_cell::window_spec;
use crate::cells::state::RunState;
use crate::cells::window::{run_window, warm_up};
use crate::progress::events::{Progress, ProgressEvent, Stage};
use crate::progress::live::LiveWindow;
use crate::prompts::prompt::PromptBuilder;
use crate::wire::stream::RequestSpec;
use llmib_core::{CellKey, decode_warmup_cell, format_tokens};
use std::sync::Arc;

/// The warm-ups, once per run, before the first cell that is measured (`first_context`: its
/// context, which sizes the one-request warm-up).
pub(crate) async fn warm_up_once(m: &MatrixRun<'_>, st: &mut RunState, first_context: u64) {
    if st.hidden_warmup_done {
        return;
    }
    st.hidden_warmup_done = true;
    hidden_warm_up(m, &mut st.builder, first_context).await;
    if let Some(key) = decode_warmup_cell(m.plan) {
        st.builder.learn_word_rate().await;
        decode_warm_up(m, &st.builder, key).await;
    }
}

/// A hidden warm-up at concurrency 1 (about 512 tokens, at most 32 out).
async fn hidden_warm_up(m: &MatrixRun<'_>, builder: &mut PromptBuilder, context: u64) {
    m.progress.event(ProgressEvent::Phase(Stage::HiddenWarmUp));
    let p = builder.throwaway(context.min(512), 0);
    let max = m.plan.settings.max_output.min(32);
    let lim = m.limits(context.min(512), 1);
    m.progress.event(ProgressEvent::Note(format!(
        "hidden warm-up: waiting for the server's first token (at most {:.0} s)",
        lim.first_token.as_secs_f64()
    )));
    if let Ok(spec) = m.engine.stream_request(&m.model, p, max, true, lim) {
        warm_up(&m.engine, &[(0, spec)], &m.cancel).await;
    }
}

/// The hidden decode cell: N streams of throwaway prompts of about 0.8 × C tokens (an
/// estimate without a tokenizer round trip; kept below C so it never exceeds the context
/// length), the closed loop run for `--decode-warmup-seconds` after the window's usual
/// readiness. Its events stay off the dashboard's cell panels; one note says what it did.
async fn decode_warm_up(m: &MatrixRun<'_>, builder: &PromptBuilder, key: CellKey) {
    let s = &m.plan.settings;
    let n = key.concurrency;
    let approx = key.context_tokens * 4 / 5;
    m.progress.event(ProgressEvent::Phase(Stage::HiddenWarmUp));
    m.progress.event(ProgressEvent::Note(format!(
        "decode warm-up: {n} streams at about {} tokens for {:.0} s (not recorded)",
        format_tokens(key.context_tokens),
        s.decode_warmup_s
    )));
    let lim = m.limits(approx, n);
    let requests: Result<Vec<RequestSpec>, _> = (0..n)
        .map(|i| {
            let p = builder.throwaway(approx, i);
            m.engine
                .stream_request(&m.model, p, s.max_output, false, lim)
        })
        .collect();
    let Ok(requests) = requests else {
        return;
    };
    let mut spec = window_spec(m, n);
    spec.duration = llmib_core::duration_from_secs(s.decode_warmup_s);
    // A warm-up runs its seconds whatever its figures do.
    spec.until_stable = None;
    let live = Arc::new(LiveWindow::new(n, spec.duration, false));
    let w = run_window(m.engine.clone(), &requests, &spec, &m.cancel, live, &Quiet).await;
    let errors = w.records.iter().filter(|r| r.record.is_error()).count();
    if errors > 0 {
        m.progress.event(ProgressEvent::Note(format!(
            "decode warm-up: {errors} of {} requests errored (the first cell will show why if it persists)",
            w.records.len()
        )));
    }
    // Nothing here is measured, but a model that loops now will loop in the cells: say so.
    if let Some(ev) = llmib_core::loop_evidence(w.records.iter().map(|r| &r.record)) {
        m.progress.event(ProgressEvent::Note(format!(
            "decode warm-up: {}",
            ev.reason()
        )));
    }
    if let Some(reason) = w.queue.start_barrier.and_then(|b| b.busy_reason()) {
        m.progress.event(ProgressEvent::Note(format!(
            "decode warm-up not run: {reason}"
        )));
    }
}

/// The decode warm-up's progress: nothing (it is no cell).
struct Quiet;

impl Progress for Quiet {
    fn event(&self, _e: ProgressEvent) {}
}
