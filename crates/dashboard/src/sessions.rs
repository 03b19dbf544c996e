//! A session run on the dashboard (docs/sessions.md): the session cells the run plans, counted
//! with the plan's own cells (the plan lists prefill, decode and burst cells; the session
//! section plans, per context with room, one cell per `--sessions` S and one per
//! `--session-rate`, or a replay's cells) and priced for the ETA; a session cell in its own
//! words (a closed loop of S sessions, or an open loop at a rate); and its live figures while
//! it runs (turns done of planned, live tok/s, the latest turns' TTFTs, the prefix cache's hit
//! rate so far against the prediction), read from the live window the cell publishes.

use llmib_client::LiveWindow;
use llmib_core::{CellKey, Phase, Plan, PlannedCell, WorkloadSpec};
use llmib_core::{rate_mrps, session_contexts, session_kv_needed};
use std::time::Instant;

/// The session cells `plan` runs, in run order: per context with room for a conversation
/// (`llmib_core::session_contexts`), one per `--sessions` S (predicted Over capacity as the
/// section predicts it) and one per `--session-rate`; a replay's one cell (one per rate for
/// ShareGPT). Empty without sessions. A `--find-capacity` search's cells are not known
/// before it runs: they count as they are measured.
pub fn session_cells(plan: &Plan) -> Vec<PlannedCell> {
    let Some(st) = plan.settings.sessions.as_ref() else {
        return Vec::new();
    };
    let rates = st.session_rates.as_deref().unwrap_or_default();
    let cell = |context_tokens: u64, label: &str, concurrency: u32, rate: f64| PlannedCell {
        key: CellKey {
            phase: Phase::Session,
            context_tokens,
            concurrency,
            rate_mrps: rate_mrps(rate),
        },
        label: label.to_string(),
        over_capacity: false,
    };
    if let Some(spec) = &st.replay {
        let label = spec
            .parse::<WorkloadSpec>()
            .ok()
            .and_then(|w| w.path.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| spec.clone());
        return match rates {
            [] => vec![cell(0, &label, 0, 0.0)],
            _ => rates.iter().map(|r| cell(0, &label, 0, *r)).collect(),
        };
    }
    let mut out = Vec::new();
    for ctx in session_contexts(plan).0 {
        for &s in &st.sessions {
            let mut c = cell(ctx.tokens, &ctx.label, s, 0.0);
            let needs = session_kv_needed(s, ctx.tokens, st.turn_input.max(), st.turn_output);
            c.over_capacity = plan.kv_capacity_tokens.is_some_and(|kv| needs > kv);
            out.push(c);
        }
        out.extend(rates.iter().map(|r| cell(ctx.tokens, &ctx.label, 0, *r)));
    }
    out
}

/// How a session cell runs, in words: `closed loop` (S sessions, each turn after the last
/// one's end and think time), `open loop` (sessions arriving at a rate) or `replay` (a
/// session trace's sessions at their recorded starts).
pub fn loop_words(key: CellKey) -> &'static str {
    match (key.concurrency, key.rate_mrps) {
        (0, 0) => "replay",
        (0, _) => "open loop",
        _ => "closed loop",
    }
}

/// What a session cell shows while it runs (computed by the dashboard's tick).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFigures {
    /// Sessions in the cell (an open loop's: the arrivals planned).
    pub sessions: u32,
    /// Measured turns ended, and how many errored.
    pub turns_done: u64,
    /// See `turns_done`.
    pub turn_errors: u64,
    /// Measured turns planned, where known (a closed loop without `--turns`: not).
    pub turns_planned: Option<u64>,
    /// The latest measured turns, oldest first: session, turn, TTFT in ms.
    pub latest: Vec<(u32, u32, Option<f64>)>,
    /// The prefix cache's hit rate so far as the server reported it, and as predicted.
    pub hit: Option<f64>,
    /// See `hit`.
    pub predicted_hit: Option<f64>,
    /// Seconds since the measured turns began, and the planned window; `None` before.
    pub window: Option<(f64, f64)>,
}

impl SessionFigures {
    /// A session cell's live window read at `now`.
    pub fn read(live: &LiveWindow, now: Instant) -> SessionFigures {
        let (turns_done, turn_errors) = live.turns_done();
        let (hit, predicted_hit) = live.hit_rates();
        SessionFigures {
            sessions: live.concurrency,
            turns_done,
            turn_errors,
            turns_planned: live.turns_planned(),
            latest: live.latest_turns(),
            hit,
            predicted_hit,
            window: live.turns_opened().map(|at| {
                let end = live.closed().unwrap_or(now);
                (
                    end.saturating_duration_since(at).as_secs_f64(),
                    live.duration.as_secs_f64(),
                )
            }),
        }
    }

    /// Seconds the running cell has left, from its turns so far: the time per turn so far
    /// times the turns left (`None` until a turn ended or where the turns planned are not
    /// known).
    pub fn left_s(&self, ran_s: f64) -> Option<f64> {
        let planned = self.turns_planned?;
        (self.turns_done > 0).then(|| {
            ran_s * planned.saturating_sub(self.turns_done) as f64 / self.turns_done as f64
        })
    }

    /// The bar: turns done of planned, or the window's time; `None` before the turns begin.
    pub fn bar(&self) -> Option<(f64, String)> {
        match (self.turns_planned, self.window) {
            (Some(p), Some(_)) if p > 0 => Some((
                (self.turns_done as f64 / p as f64).clamp(0.0, 1.0),
                format!("turns {}/{p}", self.turns_done),
            )),
            (_, Some((done, total))) if total > 0.0 => Some((
                (done / total).clamp(0.0, 1.0),
                format!("{done:.1} / {total:.0} s · turns {}", self.turns_done),
            )),
            _ => None,
        }
    }
}
