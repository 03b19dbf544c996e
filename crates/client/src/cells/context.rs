//! The run's context, as the matrix and the open-load sections see it: what the run was given
//! ([`MatrixRun`]: the engine, the plan, the store, the progress sink, cancellation, the
//! hardware monitor, a shard) and how it ends ([`MatrixEnd`]); what it carries from cell to
//! cell is `crate::cells::state`'s. The figures a request needs from the settings (its silence limits,
//! the prompt tolerance) are derived here once, as methods, so no cell recomputes them.

use crate::cells::shard::ShardRun;
use crate::cells::skip::CellSkip;
use crate::machine::hwmon::HwMonitor;
use crate::progress::events::Progress;
use crate::server::engine::Engine;
use crate::wire::stream::StreamLimits;
use llmib_core::duration_from_secs;
use llmib_core::{CellKey, Plan, PlannedCell, RunDir, StoreError};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::time::Instant;
pub use tokio_util::sync::CancellationToken;

/// How a matrix run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatrixEnd {
    /// Every planned cell has a row.
    Completed,
    /// Ctrl-C: the cell in progress and the rest are Not run.
    Interrupted,
    /// The time budget was spent: the rest are Not run.
    BudgetSpent,
    /// The server went away; the rest are Not run. The message says what happened.
    ServerGone(String),
}

impl MatrixEnd {
    /// The reason a Not run row gives for a cell this end left unmeasured.
    pub(crate) fn not_run_reason(&self) -> String {
        match self {
            MatrixEnd::Completed => "skipped".into(),
            MatrixEnd::Interrupted => "the run was interrupted".into(),
            MatrixEnd::BudgetSpent => "the --max-time budget was spent".into(),
            MatrixEnd::ServerGone(why) => format!("the run stopped early: {why}"),
        }
    }
}

/// Errors that stop the driver (only the results store: a cell's failure is data).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// Results could not be saved.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Everything the driver needs.
pub struct MatrixRun<'a> {
    /// The probed engine.
    pub engine: Arc<Engine>,
    /// Served model name.
    pub model: String,
    /// The plan.
    pub plan: &'a Plan,
    /// Where rows go.
    pub store: &'a RunDir,
    /// Cells already measured (resume): skipped.
    pub done: HashSet<CellKey>,
    /// Progress sink.
    pub progress: &'a dyn Progress,
    /// Run-wide cancellation (Ctrl-C).
    pub cancel: CancellationToken,
    /// The hardware monitor whose per-cell summary goes into each measured row: only when the
    /// server runs on this machine (elsewhere this machine's GPUs say nothing of it).
    pub hardware: Option<&'a HwMonitor>,
    /// Skips the cell in progress (the dashboard's `s` key).
    pub skip: CellSkip,
    /// This run is a shard (`--shard`): its part of each cell and its timetable
    /// (`ShardRun::of` the plan).
    pub shard: Option<Arc<ShardRun>>,
}

impl<'a> MatrixRun<'a> {
    /// The run as one cell sees it: cancelled with the run, or alone by a skip.
    pub(crate) fn for_cell(&self) -> MatrixRun<'a> {
        MatrixRun {
            engine: self.engine.clone(),
            model: self.model.clone(),
            plan: self.plan,
            store: self.store,
            // A cell never reads which cells were done before.
            done: HashSet::new(),
            progress: self.progress,
            cancel: self.skip.arm(&self.cancel),
            hardware: self.hardware,
            skip: self.skip.clone(),
            shard: self.shard.clone(),
        }
    }

    /// The silence limits of a request of `prompt_tokens` sent with `in_flight − 1` others
    /// like it.
    pub(crate) fn limits(&self, prompt_tokens: u64, in_flight: u32) -> StreamLimits {
        let s = &self.plan.settings;
        StreamLimits {
            first_token: duration_from_secs(s.first_token_limit_s(prompt_tokens, in_flight)),
            idle: duration_from_secs(s.idle_timeout_s),
            loop_guard: s.loop_detection,
        }
    }

    /// How far a reported prompt length may be from C: 0 for exact prompts, the estimate's
    /// tolerance otherwise.
    pub(crate) fn prompt_tolerance(&self, cell: &PlannedCell) -> u64 {
        llmib_core::prompt_tolerance(self.plan.settings.token_targeting, cell.key.context_tokens)
    }

    /// Why the run stops before the next cell, if it does (Ctrl-C, the time budget).
    pub(crate) fn stop_reason(&self, started: Instant) -> MatrixEnd {
        if self.cancel.is_cancelled() {
            MatrixEnd::Interrupted
        } else if self
            .plan
            .settings
            .max_time_s
            .is_some_and(|b| started.elapsed().as_secs_f64() >= b)
        {
            MatrixEnd::BudgetSpent
        } else {
            MatrixEnd::Completed
        }
    }

    /// The context of the first cell this run will measure: not measured before (resume), and
    /// not skipped as Over capacity. `None`: the matrix measures nothing.
    pub(crate) fn first_measured_context(&self) -> Option<u64> {
        self.plan
            .cells
            .iter()
            .filter(|c| !self.done.contains(&c.key))
            .find(|c| self.plan.measures(c))
            .map(|c| c.key.context_tokens)
    }
}
