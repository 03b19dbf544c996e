//! A replay of recorded sessions (docs/sessions.md, "Replays"): a session trace's
//! conversations at their recorded starts and pauses (`--time-scale K` divides both), or
//! ShareGPT's conversations arriving at `--session-rate`. Every session's opening prompt is
//! built (a trace's to its exact length, ShareGPT's from its recorded text) and sent cold as
//! its first measured turn; each later turn appends the model's own answer and the recorded
//! (or a filler) message. One cell per replay (per rate for ShareGPT); the row is
//! `llmib_core::session_result`'s like any session cell's; on a shard, its sessions j ≡ I
//! (mod N) in its slot of the timetable (`session_shard`).

use crate::cells::context::{DriverError, MatrixEnd, MatrixRun};
use crate::cells::inputs::CellFailure;
use crate::cells::outlet::save;
use crate::cells::session_agent::{AgentJob, ForkIn};
use crate::cells::session_cell::{
    Ran, SessionContext, announce, cached_counter, finish_cell, flush, run_window,
};
use crate::cells::session_shard::{self, SessionShare};
use crate::cells::session_turns::{SESSION_STREAMS, SessionJob, TurnSpec, session_stream};
use crate::cells::telemetry::CellRecorder;
use crate::progress::events::{ProgressEvent, Stage};
use crate::prompts::conversation::{Conversation, load_replay, opening};
use crate::prompts::prompt::PromptBuilder;
use llmib_core::{
    CellKey, CellResult, CellStatus, Phase, PlannedCell, SessionLoop, SessionReplay, SlotKind,
    TurnInput, WorkloadSpec, bare_result, duration_from_secs, failed_result, fnv1a,
    interrupted_result, now_rfc3339, rate_mrps, session_limits, session_slot_kind,
};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::time::Duration;

/// Most sessions one replay cell may hold.
const MAX_REPLAY_SESSIONS: usize = 4096;

/// The shortest opening of a replay's sessions given by length (`u64::MAX`: none is).
fn shortest_opening(replay: &SessionReplay) -> u64 {
    replay
        .sessions
        .iter()
        .filter_map(|s| match s.turns.first().map(|t| &t.input) {
            Some(TurnInput::Tokens(n)) => Some(*n),
            _ => None,
        })
        .min()
        .unwrap_or(u64::MAX)
}

/// The system prompt of replayed session `i`: its group's (shared by the group), else its
/// own; at most half the `shortest` opening, so that every first message keeps room.
fn system_of(
    sx: &SessionContext<'_>,
    replay: &SessionReplay,
    i: usize,
    shortest: u64,
) -> (String, u64) {
    let s = &replay.sessions[i];
    let tokens = sx.settings.system_prompt_tokens.min(shortest / 2).max(1);
    let key = match &s.group {
        Some(g) => fnv1a(format!("group {g}").as_bytes()),
        None => fnv1a(format!("session {i} {}", s.id).as_bytes()),
    };
    let index = SESSION_STREAMS - 1_000 - (key % 1_000_000) as u32;
    (sx.text.text(tokens, key, index, "system-"), tokens)
}

/// Tool definitions of about `tokens` tokens (chat-shaped), the same for every session that
/// gives the same size (one agent's tools); `None` for 0.
fn tools_of(sx: &SessionContext<'_>, tokens: u64) -> Option<Value> {
    if tokens == 0 {
        return None;
    }
    let key = fnv1a(format!("tools {tokens}").as_bytes());
    let index = SESSION_STREAMS - 2_000_000 - (key % 1_000_000) as u32;
    let about = sx.text.text(tokens, key, index, "tools-");
    Some(
        json!([{"type": "function", "function": {"name": "run", "description": about,
        "parameters": {"type": "object", "properties": {"input": {"type": "string"}},
                       "required": ["input"]}}}]),
    )
}

/// The index of the session a subagent forks from after a turn (k ≥ 1), and k; `None` for a
/// session that opens its own conversation.
fn forked(replay: &SessionReplay, i: usize) -> Option<(usize, u32)> {
    let f = replay
        .sessions
        .get(i)?
        .fork
        .as_ref()
        .filter(|f| f.turn >= 1)?;
    let p = replay.sessions.iter().position(|s| s.id == f.parent)?;
    Some((p, f.turn))
}

/// The opening prompt of each session of `ids` (global indices), built and counted, by its
/// index. A subagent forked after a turn builds none: it continues its parent's conversation
/// (`session_agent`); it holds its parent's opening until then.
async fn openings(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    (sx, cell): (&SessionContext<'_>, &PlannedCell),
    replay: &SessionReplay,
    ids: &[u32],
) -> Result<Vec<(u32, Conversation)>, CellFailure> {
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    let chat = m.engine.api().is_conversation();
    let mut out: Vec<(u32, Conversation)> = Vec::with_capacity(ids.len());
    let shortest = shortest_opening(replay);
    for &j in ids {
        let i = j as usize;
        let Some(first) = replay.sessions.get(i).and_then(|s| s.turns.first()) else {
            continue;
        };
        if let Some((p, _)) = forked(replay, i) {
            let parent = out
                .iter()
                .find(|(j, _)| *j as usize == p)
                .map(|x| x.1.clone());
            if let Some(c) = parent {
                out.push((j, c));
            }
            continue;
        }
        let (system, hint) = system_of(sx, replay, i, shortest);
        let stream = session_stream(cell.key, i as u32);
        let tools = tools_of(sx, replay.sessions[i].tools_tokens);
        let c = opening(
            builder,
            &m.engine,
            (chat, tools.as_ref()),
            &system,
            hint,
            &first.input,
            stream,
        )
        .await
        .map_err(|e| CellFailure::from(&e))?;
        out.push((j, c));
    }
    Ok(out)
}

/// A replay's slot of the timetable: every opening's tokens (a recorded text's at four bytes a
/// token: every shard reads the same file, so every shard computes the same), to the last
/// session's start and the drain after it.
fn replay_slot(m: &MatrixRun<'_>, replay: &SessionReplay, starts_s: &[f64]) -> SlotKind {
    let build = replay
        .sessions
        .iter()
        .filter_map(|s| s.turns.first())
        .map(|t| match &t.input {
            TurnInput::Tokens(n) => *n,
            TurnInput::Text(s) => s.len() as u64 / 4,
        })
        .fold(0u64, u64::saturating_add);
    let last = starts_s.iter().copied().fold(0.0, f64::max);
    session_slot_kind(SessionLoop::Replay, build, m.plan.settings.duration_s, last)
}

/// The turns of session `i` as the task sends them: the opening first (its start is the
/// job's), then each recorded turn after its pause, both divided by the time scale.
fn specs(replay: &SessionReplay, i: usize, k: f64) -> Vec<TurnSpec> {
    replay.sessions[i]
        .turns
        .iter()
        .enumerate()
        .map(|(t, turn)| {
            let (input, text) = match &turn.input {
                TurnInput::Tokens(n) => (*n, None),
                TurnInput::Text(s) => (0, Some(Arc::from(s.as_str()))),
            };
            TurnSpec {
                input,
                text,
                output: turn.output_tokens,
                // A subagent's first pause is after its parent's fork turn.
                think_s: if t == 0 && forked(replay, i).is_none() {
                    0.0
                } else {
                    turn.delay_s / k
                },
            }
        })
        .collect()
}

/// Measures one replay cell: sessions start at `starts_s` (seconds after the cell's origin);
/// on a shard, its sessions j ≡ I (mod N) in its slot of the timetable (`session_shard`).
pub(crate) async fn replay_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    (sx, cell): (&SessionContext<'_>, &PlannedCell),
    replay: &SessionReplay,
    starts_s: &[f64],
) -> CellResult {
    if replay.sessions.len() > MAX_REPLAY_SESSIONS {
        let why = format!(
            "the replay has {} sessions, more than one cell holds ({MAX_REPLAY_SESSIONS}): cut the file",
            replay.sessions.len()
        );
        return CellFailure::schedule(why).row(cell);
    }
    let starts: Vec<u64> = (0..replay.sessions.len())
        .map(|i| duration_from_secs(starts_s.get(i).copied().unwrap_or(0.0)).as_nanos() as u64)
        .collect();
    let slot = replay_slot(m, replay, starts_s);
    let Some(share) = session_shard::share(m, starts, slot).await else {
        return interrupted_result(cell);
    };
    if share.mine.is_empty() && share.slot.is_some() {
        return session_shard::idle_row(m, cell, &share);
    }
    match replay_turns(m, builder, (sx, cell), replay, &share).await {
        Ok(ran) => finish_cell(m, sx, cell, ran).await,
        Err(row) => session_shard::finish(m, cell, &share, Vec::new(), (None, None), row),
    }
}

/// This process's sessions of a replay run (`Err`: the row of a cell that failed before its
/// turns): the cache flushed where asked, the openings built, then every session from its
/// start.
async fn replay_turns(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    (sx, cell): (&SessionContext<'_>, &PlannedCell),
    replay: &SessionReplay,
    share: &SessionShare,
) -> Result<Ran, CellResult> {
    let asked = sx.settings.flush_cache && share.flushes(m);
    let flushed = flush(m, asked).await.map_err(|e| e.row(cell))?;
    let convs = openings(m, builder, (sx, cell), replay, &share.ids())
        .await
        .map_err(|e| e.row(cell))?;
    let before = cached_counter(&m.engine).await;
    let origin = session_shard::origin(m, share, false)
        .await
        .map_err(|late| failed_result(cell, "shard_late", late.to_string()))?;
    let cut = m.cancel.child_token();
    let k = sx.settings.time_scale;
    let n = share.starts.len() as u32;
    let max_prompt = m.plan.context_length;
    // A replay plans every recorded turn of its sessions.
    let planned = convs
        .iter()
        .filter_map(|(j, _)| replay.sessions.get(*j as usize))
        .map(|s| s.turns.len() as u64)
        .sum();
    let live = announce(m, n, Some(planned));
    let start = |j: u32| share.mine.iter().find(|(i, _)| *i == j).map_or(0, |s| s.1);
    let sessions = convs.len() as u32;
    let ids: Vec<u32> = convs.iter().map(|c| c.0).collect();
    let mut agents = agent_jobs(sx, replay, &ids).into_iter();
    // A subagent waits for its parent's fork turn from the origin on.
    let child = |j: u32| forked(replay, j as usize).is_some();
    let jobs: Vec<SessionJob> = convs
        .into_iter()
        .map(|(j, conv)| SessionJob {
            engine: m.engine.clone(),
            model: m.model.clone(),
            session: j,
            tag: session_stream(cell.key, j),
            start: Duration::from_nanos(if child(j) { 0 } else { start(j) }),
            warm_output: None,
            answer: String::new(),
            answer_tokens: 0,
            specs: specs(replay, j as usize, k),
            first_as_is: !child(j),
            agent: agents.next().unwrap_or_default(),
            block: sx.block,
            text: sx.text,
            window_end: None,
            origin,
            cancel: cut.clone(),
            limits: m.limits(conv.tokens, n),
            max_prompt,
            conv,
            live: Some(live.clone()),
        })
        .collect();
    let (span, drain) = share_limits(m, share);
    let limit = origin + Duration::from_secs_f64(span + drain);
    let (sent, max_waiting) = run_window(m, jobs, limit, &cut, &live).await;
    Ok(Ran {
        sent,
        max_waiting,
        sessions,
        flushed,
        before,
        share: share.clone(),
        ready: None,
    })
}

/// Each session of `ids`'s agent parts: its turns' kinds, and a channel from each parent's
/// fork turn to each subagent forked there (a parent this process does not run never sends).
fn agent_jobs(sx: &SessionContext<'_>, replay: &SessionReplay, ids: &[u32]) -> Vec<AgentJob> {
    let session = |j: u32| replay.sessions.get(j as usize);
    let mut jobs: Vec<AgentJob> = ids
        .iter()
        .map(|&j| AgentJob {
            kinds: session(j).map_or_else(Vec::new, |s| {
                s.turns.iter().map(|t| (t.kind, t.answer)).collect()
            }),
            ..AgentJob::default()
        })
        .collect();
    for (c, &j) in ids.iter().enumerate() {
        let (Some((p, turn)), Some(s)) = (forked(replay, j as usize), session(j)) else {
            continue;
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let parent_tools = replay.sessions.get(p).map_or(0, |x| x.tools_tokens);
        if let Some(pc) = ids.iter().position(|&x| x as usize == p) {
            jobs[pc].fork_out.push((turn, tx));
        }
        jobs[c].fork_in = Some(ForkIn {
            from: rx,
            shares: llmib_core::fork_shares_turn(turn, s.tools_tokens, parent_tools),
            tools: tools_of(sx, s.tools_tokens),
        });
    }
    jobs
}

/// A replay's span (its last session's start) and drain limit, seconds.
fn share_limits(m: &MatrixRun<'_>, share: &SessionShare) -> (f64, f64) {
    let last = share.starts.iter().copied().max().unwrap_or(0) as f64 / 1e9;
    session_limits(SessionLoop::Replay, m.plan.settings.duration_s, last)
}

/// The replay's cells: one for a session trace (sessions at their recorded starts), one per
/// `--session-rate` for ShareGPT (conversations arriving on a Poisson schedule, in file order).
/// Each row is saved as soon as it is known; a file that cannot be read fails its cells.
pub(crate) async fn run_replays(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    sx: &SessionContext<'_>,
    spec: &str,
    end: &mut MatrixEnd,
    stop: &impl Fn() -> MatrixEnd,
) -> Result<(), DriverError> {
    let st = sx.settings;
    let parsed: Result<WorkloadSpec, _> = spec.parse();
    let label = parsed.as_ref().map_or_else(
        |_| spec.to_string(),
        |w| {
            w.path
                .file_name()
                .map_or(spec.to_string(), |f| f.to_string_lossy().into_owned())
        },
    );
    let cells: Vec<PlannedCell> = match st.session_rates.as_deref() {
        Some(rates) => rates.iter().map(|r| replay_planned(&label, *r)).collect(),
        None => vec![replay_planned(&label, 0.0)],
    };
    let file = parsed
        .as_ref()
        .map_or_else(|_| spec.to_string(), |w| w.path.display().to_string());
    let loaded = match parsed {
        Ok(w) => load_replay(&m.engine, &w).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let (chat, sharded) = (m.engine.api().is_conversation(), m.shard.is_some());
    let loaded = loaded.and_then(|r| match r.agent_refusal(&file, chat, sharded) {
        Some(why) => Err(why),
        None => Ok(r),
    });
    for (index, cell) in cells.iter().enumerate() {
        if m.done.contains(&cell.key) {
            continue;
        }
        if *end == MatrixEnd::Completed {
            *end = stop();
        }
        let row = match (&loaded, *end == MatrixEnd::Completed) {
            (_, false) => bare_result(cell, CellStatus::NotRun, Some(end.not_run_reason())),
            (Err(why), true) => failed_result(cell, "workload", why.clone()),
            (Ok(replay), true) => {
                m.progress.event(ProgressEvent::CellStarted {
                    index,
                    total: cells.len(),
                    cell: cell.clone(),
                });
                let starts = match cell.key.request_rate() {
                    Some(rate) => arrivals_s(m, cell, rate, replay.sessions.len()),
                    None => replay.starts_s(st.time_scale),
                };
                let rec = CellRecorder::start(m, Phase::Session);
                let run = rec.run(m);
                let mut row = replay_cell(&run, builder, (sx, cell), replay, &starts).await;
                row.started_at = Some(rec.started_at());
                row.finished_at = Some(now_rfc3339());
                rec.finish(m, &mut row).await;
                row.session.session = row.session.session.take().map(|mut f| {
                    f.replay = Some(format!("{spec} at time scale {}", st.time_scale));
                    f
                });
                row
            }
        };
        save(m, row)?;
    }
    Ok(())
}

/// The planned cell of a replay (at `rate` sessions per second for ShareGPT; 0: a trace's
/// own starts).
fn replay_planned(label: &str, rate: f64) -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase: Phase::Session,
            context_tokens: 0,
            concurrency: 0,
            rate_mrps: if rate > 0.0 { rate_mrps(rate) } else { 0 },
        },
        label: label.to_string(),
        over_capacity: false,
    }
}

/// Poisson arrivals at `rate` over the window for ShareGPT's conversations, at most `n` of
/// them, seconds after the cell's origin.
fn arrivals_s(m: &MatrixRun<'_>, cell: &PlannedCell, rate: f64, n: usize) -> Vec<f64> {
    let st = &m.plan.settings;
    let seed = st.request.seed.unwrap_or(st.prompt_seed) ^ cell.key.rate_mrps ^ 0x5e55_0001;
    llmib_core::schedule(
        llmib_core::ArrivalPattern::Poisson,
        rate,
        st.duration_s,
        seed,
    )
    .unwrap_or_default()
    .into_iter()
    .take(n)
    .map(|ns| ns as f64 / 1e9)
    .collect()
}
