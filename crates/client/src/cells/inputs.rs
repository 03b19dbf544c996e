//! A cell's inputs, given to it once by the matrix before it runs: its streams' prompts built
//! (exact token counts, one prompt per stream per context) and, where the cell asks for it,
//! warmed (each cold prompt sent once, so the measured requests hit the prefix cache), and
//! their streamed requests with the silence limits of N in flight. A cell gets a
//! [`CellInputs`] and returns its row; it never reaches back for a prompt or a limit.
//!
//! State per context: stream i has one fixed prompt for every N at that context, and a prompt
//! that has been sent once is cached by the server, so moving from N to 2N only prefills the N
//! new prompts in the warm-up (METHOD.md "The matrix").

use crate::cells::context::MatrixRun;
use crate::cells::outlet::report_errors;
use crate::cells::window::{into_records, warm_up};
use crate::progress::events::{ProgressEvent, Stage};
use crate::prompts::prompt::{BuiltPrompt, PromptBuilder, PromptError};
use crate::wire::stream::RequestSpec;
use llmib_core::{CellResult, ErrorTally, PlannedCell, failed_result};
use std::collections::{HashMap, HashSet};

/// Why a cell could not be given its inputs: the failed row's error kind and its text.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(crate) struct CellFailure {
    /// The row's `first_error` kind (`prompt_tokenize`, `request_body`, …).
    pub(crate) kind: &'static str,
    /// What went wrong, in the words the row shows.
    pub(crate) message: String,
}

impl CellFailure {
    /// A request body the engine could not build (or a prompt missing for it).
    pub(crate) fn request_body(message: String) -> CellFailure {
        CellFailure {
            kind: "request_body",
            message,
        }
    }

    /// A rate cell's schedule that could not be drawn (or a trace too big for one cell).
    pub(crate) fn schedule(message: String) -> CellFailure {
        CellFailure {
            kind: "schedule",
            message,
        }
    }

    /// The cell's row: Failed, with this error.
    pub(crate) fn row(self, cell: &PlannedCell) -> CellResult {
        failed_result(cell, self.kind, self.message)
    }
}

impl From<&PromptError> for CellFailure {
    fn from(e: &PromptError) -> CellFailure {
        CellFailure {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// Per-context prompt state.
pub(crate) struct ContextPrompts {
    pub(crate) context: u64,
    pub(crate) prompts: HashMap<u32, BuiltPrompt>,
    pub(crate) warmed: HashSet<u32>,
    /// Set when prompts cannot be built at this context: every cell here fails with it.
    error: Option<CellFailure>,
}

impl ContextPrompts {
    /// No prompt built yet at `context`.
    pub(crate) fn new(context: u64) -> ContextPrompts {
        ContextPrompts {
            context,
            prompts: HashMap::new(),
            warmed: HashSet::new(),
            error: None,
        }
    }

    /// Builds the prompt of each of `streams` not built yet at this context.
    async fn ensure(
        &mut self,
        builder: &mut PromptBuilder,
        streams: &[u32],
    ) -> Result<(), CellFailure> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        for &i in streams {
            if self.prompts.contains_key(&i) {
                continue;
            }
            match builder.build(self.context, i).await {
                Ok(p) => {
                    self.prompts.insert(i, p);
                }
                Err(e) => {
                    let err = CellFailure::from(&e);
                    // A server that could not be reached is not a fact about this context:
                    // the next cell tries again (and the run ends if the server is gone).
                    if e.kind() != "prompt_connect" {
                        self.error = Some(err.clone());
                    }
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// The streamed request of each stream in `streams` (built once; re-sends reuse it), with
    /// the limits of `streams.len()` in flight.
    fn requests(
        &self,
        m: &MatrixRun<'_>,
        streams: &[u32],
        max_tokens: u32,
        deferred: bool,
    ) -> Result<Vec<(u32, RequestSpec)>, CellFailure> {
        let lim = m.limits(self.context, streams.len() as u32);
        streams
            .iter()
            .map(|&i| {
                let p = self.prompts.get(&i).ok_or_else(|| {
                    CellFailure::request_body(format!("no prompt was built for stream {i}"))
                })?;
                let model = crate::cells::lora::request_model(m, i);
                let input = p.input.clone();
                let spec = crate::cells::images::request(
                    m,
                    &model,
                    input,
                    max_tokens,
                    deferred,
                    lim,
                    self.context,
                    i,
                )
                .map_err(|e| CellFailure::request_body(e.to_string()))?;
                Ok((i, spec))
            })
            .collect()
    }

    /// Sends the prompts the server has not seen yet once (`max_tokens = 1`), so the window's
    /// requests hit the prefix cache; returns the warm-up's errors.
    async fn warm_cold(
        &mut self,
        m: &MatrixRun<'_>,
        streams: &[u32],
    ) -> Result<ErrorTally, CellFailure> {
        let cold: Vec<u32> = streams
            .iter()
            .copied()
            .filter(|i| !self.warmed.contains(i))
            .collect();
        let mut errors = ErrorTally::default();
        if cold.is_empty() {
            return Ok(errors);
        }
        m.progress.event(ProgressEvent::Phase(Stage::WarmUp));
        let reqs = self.requests(m, &cold, 1, true)?;
        let done = into_records(warm_up(&m.engine, &reqs, &m.cancel).await);
        report_errors(m, Stage::WarmUp, &done);
        errors.add_records(&done, "warmup_");
        self.warmed
            .extend(done.iter().filter(|r| !r.is_error()).map(|r| r.stream));
        Ok(errors)
    }
}

/// What a cell asks for: which streams, how their requests end, and whether their prompts
/// are warmed first.
pub(crate) struct Wanted {
    /// The streams this process runs (a shard's share of N), in order.
    pub(crate) streams: Vec<u32>,
    /// `max_tokens` of each request.
    pub(crate) max_tokens: u32,
    /// Tokens counted after the request (no per-chunk usage asked for).
    pub(crate) deferred: bool,
    /// Cold prompts are sent once before the cell.
    pub(crate) warm: bool,
    /// The phase the displays show while the prompts are built.
    pub(crate) stage: Stage,
}

impl Wanted {
    /// What a closed-loop cell (decode, burst) asks for: `streams`' prompts warmed and their
    /// requests with the run's `--max-output`.
    pub(crate) fn warmed(m: &MatrixRun<'_>, streams: Vec<u32>) -> Wanted {
        Wanted {
            streams,
            max_tokens: m.plan.settings.max_output,
            deferred: false,
            warm: true,
            stage: Stage::Prompts,
        }
    }
}

/// A cell's inputs (see the module comment).
pub(crate) struct CellInputs {
    /// The streams, in order; `requests[k]` is stream `streams[k]`'s.
    pub(crate) streams: Vec<u32>,
    /// One streamed request per stream.
    pub(crate) requests: Vec<RequestSpec>,
    /// The prompt length each request should report: the first stream's prompt (C where the
    /// cell has none).
    pub(crate) prompt_tokens: u64,
    /// The warm-up's errors (none when nothing was warmed).
    pub(crate) warmup_errors: ErrorTally,
}

/// Gives a cell its inputs: `want.streams`' prompts built, warmed where asked, and their
/// requests. `Err`: the cell fails with it before sending anything measured.
pub(crate) async fn prepare(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    want: Wanted,
) -> Result<CellInputs, CellFailure> {
    m.progress.event(ProgressEvent::Phase(want.stage));
    cp.ensure(builder, &want.streams).await?;
    let warmup_errors = if want.warm {
        cp.warm_cold(m, &want.streams).await?
    } else {
        ErrorTally::default()
    };
    let requests = cp.requests(m, &want.streams, want.max_tokens, want.deferred)?;
    let prompt_tokens = want
        .streams
        .first()
        .and_then(|i| cp.prompts.get(i))
        .map_or(cp.context, |p| p.tokens);
    Ok(CellInputs {
        streams: want.streams,
        requests: requests.into_iter().map(|(_, r)| r).collect(),
        prompt_tokens,
        warmup_errors,
    })
}
