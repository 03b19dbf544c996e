//! Open-loop cells whose requests vary (issue 20): where `--input-len`, `--output-len` or
//! `--workload` give each request its own lengths, this module says where they come from
//! ([`Varying`]), builds every request's prompt (exact by the server's tokenizer, a stream of
//! its own so no two share a prefix, except the shared blocks of a Mooncake trace; the user's
//! own prompts of `prompts:FILE`, and ShareGPT's human messages of `sharegpt-text:FILE`, are
//! sent as written, counted by the server once sent) and adds
//! what was asked and sent to the row (`llmib_core::workload_figures`).
//!
//! How contexts combine with it: `--input-len` and `--workload` replace the per-context
//! open-loop sections with one section, keyed at the mean prompt length of its requests and
//! labelled by the spec or the file; `--output-len` alone keeps one section per context (the
//! prompt is the context, the output is drawn).

use crate::cells::context::MatrixRun;
use crate::cells::inputs::CellFailure;
use crate::cells::lora;
use crate::prompts::block_prompt::{BlockPrompts, load_texts, load_workload};
use crate::prompts::prompt::PromptBuilder;
use crate::server::engine::PromptInput;
use crate::wire::stream::{RequestSpec, StreamLimits};
use llmib_core::{
    CellRequest, ContextSpec, LengthSource, LengthSpec, LoadSettings, PlannedContext, PromptBody,
    RequestRecord, TimeScaleSpec, UserPrompts, Workload, WorkloadError, WorkloadFigures,
    WorkloadKind, predicted_cached_tokens, workload_figures,
};

/// Where a section's request lengths come from.
pub(crate) struct Varying {
    /// A workload file of lengths, loaded.
    pub workload: Option<Workload>,
    /// The user's own prompts (`prompts:FILE`), loaded.
    pub prompts: Option<UserPrompts>,
    /// `--input-len`.
    pub input: Option<LengthSpec>,
    /// `--output-len`.
    pub output: Option<LengthSpec>,
    /// Prompts that share a trace's blocks.
    pub blocks: Option<BlockPrompts>,
}

impl Varying {
    /// The varying lengths `load` asks for, the workload read (errors name the file and line).
    /// `None` for fixed lengths.
    pub(crate) async fn of(
        m: &MatrixRun<'_>,
        load: &LoadSettings,
    ) -> Result<Option<Varying>, WorkloadError> {
        if load.input_len.is_none() && load.output_len.is_none() && load.workload.is_none() {
            return Ok(None);
        }
        let (workload, prompts) = match &load.workload {
            Some(spec) if spec.kind.is_texts() => (
                None,
                Some(prompts_of(&m.engine, spec, load.prompts.as_ref()).await?),
            ),
            Some(spec) => (Some(load_workload(&m.engine, spec).await?), None),
            None => (None, None),
        };
        let shares = workload
            .as_ref()
            .is_some_and(|w| w.requests.iter().any(|r| !r.prefix_blocks.is_empty()));
        Ok(Some(Varying {
            workload,
            prompts,
            input: load.input_len,
            output: load.output_len,
            blocks: shares
                .then(|| BlockPrompts::new(m.engine.clone(), m.plan.settings.prompt_seed)),
        }))
    }

    /// Whether one section labelled by the lengths replaces the per-context ones.
    pub(crate) fn replaces_contexts(&self) -> bool {
        self.input.is_some() || self.workload.is_some() || self.prompts.is_some()
    }

    /// Whether the workload is a trace to replay (its own arrivals).
    pub(crate) fn trace(&self) -> Option<&Workload> {
        self.workload.as_ref().filter(|w| w.source.kind.is_trace())
    }

    /// The one section's context: keyed at the mean prompt length, labelled by what it is.
    ///
    /// `fallback` is the plan's first decode context: a trace or a length distribution brings
    /// its own lengths, so it runs even where every planned context was dropped (a small
    /// server against the default `--max-output`); `None` then, and it is its own spec.
    pub(crate) fn context(&self, fallback: Option<&PlannedContext>) -> Option<PlannedContext> {
        let file = |s: &llmib_core::WorkloadSpec| {
            let name = s.path.file_name().map_or_else(
                || s.path.display().to_string(),
                |f| f.to_string_lossy().into_owned(),
            );
            format!("{}:{name}", s.kind.name())
        };
        let mean = |v: Vec<u64>| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
        let (mean, label) = match (&self.workload, &self.prompts, &self.input) {
            (Some(w), _, _) => (
                mean(w.requests.iter().map(|r| r.input_tokens).collect()),
                file(&w.source),
            ),
            // Keyed at the estimate: the server counts each prompt only once it is sent.
            (None, Some(p), _) => (
                mean(p.prompts.iter().map(|q| q.approx_tokens).collect()),
                file(&p.source),
            ),
            (None, None, Some(i)) => (i.mean(), i.to_string()),
            (None, None, None) => return fallback.cloned(),
        };
        let tokens = mean.round().max(1.0) as u64;
        Some(PlannedContext {
            tokens,
            label,
            decode: true,
            spec: fallback.map_or(ContextSpec::Tokens(tokens), |f| f.spec),
        })
    }

    /// The source of a cell's lengths at a context of `context` tokens.
    pub(crate) fn source(&self, context: u64, max_output: u32) -> LengthSource<'_> {
        let output = self
            .output
            .unwrap_or(LengthSpec::Fixed(u64::from(max_output)));
        match (&self.workload, &self.prompts) {
            (Some(w), _) if w.source.kind == WorkloadKind::ShareGpt => LengthSource::Sample(w),
            (Some(w), _) => LengthSource::Replay(w),
            (None, Some(prompts)) => LengthSource::Prompts { prompts, output },
            (None, None) => LengthSource::Specs {
                input: self.input.unwrap_or(LengthSpec::Fixed(context)),
                output,
            },
        }
    }

    /// The longest prompt a cell can send (what its first-token limit must allow for).
    pub(crate) fn max_input(&self, context: u64) -> u64 {
        match (&self.workload, &self.prompts, &self.input) {
            (Some(w), _, _) => w.requests.iter().map(|r| r.input_tokens).max().unwrap_or(0),
            (None, Some(p), _) => p.prompts.iter().map(|q| q.approx_tokens).max().unwrap_or(0),
            (None, None, Some(i)) => i.max(),
            (None, None, None) => context,
        }
    }

    /// The row's account of what a cell asked and sent: `requests` are the cell's, `records`
    /// the ones it sent (by stream index); `k` the time scale of a replay.
    pub(crate) fn figures(
        &self,
        src: LengthSource<'_>,
        requests: &[CellRequest],
        records: &[RequestRecord],
        k: Option<f64>,
    ) -> Option<WorkloadFigures> {
        let counted: Vec<CellRequest>;
        let sent: Vec<&CellRequest> = if self.prompts.is_some() {
            // The user's prompts: each sent one's length is the server's count of it.
            counted = records
                .iter()
                .filter_map(|r| {
                    let q = requests.get(r.stream as usize)?;
                    Some(CellRequest {
                        input_tokens: r.prompt_tokens_reported?,
                        ..q.clone()
                    })
                })
                .collect();
            counted.iter().collect()
        } else {
            records
                .iter()
                .filter_map(|r| requests.get(r.stream as usize))
                .collect()
        };
        let mut f = workload_figures(src, &sent)?;
        let cached: Vec<u64> = records
            .iter()
            .filter_map(|r| r.cached_tokens_reported)
            .collect();
        f.cached_tokens_reported = (!cached.is_empty()).then(|| cached.iter().sum());
        if let Some(w) = self.trace() {
            f.time_scale = k;
            f.trace_rate = w.trace_rate();
            if w.requests.iter().any(|r| !r.prefix_blocks.is_empty()) {
                let p = predicted_cached_tokens(&w.requests, llmib_core::MOONCAKE_BLOCK_TOKENS);
                f.predicted_cached_tokens = Some(p.cached_tokens);
            }
        }
        Some(f)
    }
}

/// The time scale of a trace replay when it is a number (`auto` is searched).
pub(crate) fn fixed_scale(load: &LoadSettings) -> Option<f64> {
    match load.time_scale {
        None => Some(1.0),
        Some(TimeScaleSpec::Factor(k)) => Some(k),
        Some(TimeScaleSpec::Auto) => None,
    }
}

/// The file's prompts as `load` recorded them, read again: the open-load section's turn comes
/// after the matrix, and the file must still be the one checked before the run (its size and
/// prompt count; the command compared its sha256). A `sharegpt-text:FILE` file's replies are
/// counted by the server's tokenizer here ([`load_texts`]).
async fn prompts_of(
    engine: &crate::server::engine::Engine,
    spec: &llmib_core::WorkloadSpec,
    recorded: Option<&llmib_core::PromptsSource>,
) -> Result<UserPrompts, WorkloadError> {
    let p = load_texts(engine, spec).await?;
    let now = (p.bytes, p.prompts.len() as u64);
    if let Some(rec) = recorded
        && (rec.bytes, rec.lines) != now
    {
        return Err(WorkloadError::Read {
            file: spec.path.display().to_string(),
            error: format!(
                "it changed since the run checked it ({} bytes and {} prompts now, {} and {} then)",
                now.0, now.1, rec.bytes, rec.lines
            ),
        });
    }
    Ok(p)
}

/// How a request's prompt is made: one of the user's, as written; a trace's shared blocks;
/// or filler of its length.
pub(crate) struct PromptMakers<'a> {
    /// Prompts that share a trace's blocks.
    pub blocks: Option<&'a mut BlockPrompts>,
    /// The user's own prompts.
    pub prompts: Option<&'a UserPrompts>,
}

/// Builds each request's prompt and its streamed request, request k with stream index
/// `streams[k]` (one each, so prompts share no prefix but a trace's blocks). Returns the
/// requests and each one's built prompt length (for the user's own prompts, the estimate: the
/// server counts them once sent). `context` keys their images (`crate::cells::images`).
pub(crate) async fn build_requests(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    mut makers: PromptMakers<'_>,
    requests: &[CellRequest],
    streams: &[u32],
    lim: StreamLimits,
    context: u64,
) -> Result<(Vec<RequestSpec>, Vec<u64>), CellFailure> {
    let mut out = Vec::with_capacity(requests.len());
    let mut built = Vec::with_capacity(requests.len());
    for (r, &stream) in requests.iter().zip(streams) {
        if m.cancel.is_cancelled() {
            break;
        }
        let own = r
            .prompt
            .zip(makers.prompts)
            .and_then(|(i, p)| p.prompts.get(i));
        let (input, tokens) = match (own, makers.blocks.as_deref_mut()) {
            (Some(p), _) => (as_written(&p.body), p.approx_tokens),
            (None, Some(b)) if !r.prefix_blocks.is_empty() => {
                let p = b
                    .build(builder, r.input_tokens, &r.prefix_blocks, stream)
                    .await
                    .map_err(|e| CellFailure::from(&e))?;
                (p.input, p.tokens)
            }
            _ => {
                let p = builder
                    .build(r.input_tokens, stream)
                    .await
                    .map_err(|e| CellFailure::from(&e))?;
                (p.input, p.tokens)
            }
        };
        built.push(tokens);
        let max_tokens = u32::try_from(r.output_tokens).unwrap_or(u32::MAX);
        let spec = crate::cells::images::request(
            m,
            &lora::request_model(m, stream),
            input,
            max_tokens,
            false,
            lim,
            context,
            stream,
        )
        .map_err(|e| CellFailure::request_body(e.to_string()))?;
        out.push(spec);
    }
    Ok((out, built))
}

/// A user's prompt as its request sends it: the text, or the chat's messages as written (the
/// command refused a chat where the API sends one text).
fn as_written(body: &PromptBody) -> PromptInput {
    match body {
        PromptBody::Text(t) => PromptInput::Text(t.clone()),
        PromptBody::Messages(m) => PromptInput::Messages(serde_json::Value::Array(m.clone())),
    }
}
