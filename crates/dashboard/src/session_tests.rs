//! A session run on the dashboard (issue 42): a session cell in its own words (a closed loop of
//! S sessions, an open loop at its rate), its cells counted with the plan's and priced for the
//! ETA, the server's gauges and the cell's live figures (turns, live tok/s, the latest turns'
//! TTFTs, the cache's hit rate against the prediction) read from the live window the cell
//! publishes, and the sessions' own matrix, apart from the decode matrix. Every state is built
//! from the events the session section sends and a fixed clock.

use super::tables::matrices;
use super::tests::{gpus, info_of, render};
use super::view::Dashboard;
use llmib_client::{Gauges, LiveWindow, ProgressEvent, Stage};
use llmib_core::{CellResult, CellStatus, ContextSpec, LengthSpec, Phase, PlannedCell};
use llmib_core::{Plan, RunInfo, SessionSettings, Settings, Sourced, ThinkTime};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The run against a tiny vLLM simulator (context 8K, 16,384 KV tokens): contexts 1K
/// and 2K, S = 1, 4, 8, 4 turns of 128 tokens asking 32, a 256-token system prompt, 1 s of
/// think time; `rates` adds open-loop cells, `decode` a decode matrix at N = 1, 2.
fn session_info(rates: Option<Vec<f64>>, decode: bool) -> RunInfo {
    let mut st = SessionSettings::new(vec![1, 4, 8]);
    st.session_rates = rates;
    st.turn_input = LengthSpec::Fixed(128);
    st.turn_output = 32;
    st.system_prompt_tokens = 256;
    st.think_time = ThinkTime::Fixed(1.0);
    st.with_decode = decode;
    let settings = Settings {
        contexts: [1024u64, 2048].map(ContextSpec::Tokens).to_vec(),
        concurrency: vec![1, 2],
        max_output: 64,
        duration_s: 60.0,
        sessions: Some(st),
        ..Settings::default()
    };
    let mut info = info_of(Plan::build(settings, Some(8192), Some(16_384)));
    info.engine.name = Some("vllm".into());
    info.engine.version = Some("0.10.1.1".into());
    info.engine.kv_capacity_tokens = Some(Sourced {
        value: 16_384,
        source: "vllm:cache_config_info num_gpu_blocks × block_size".into(),
    });
    info
}

/// A measured row of `cell` at `tok_s` total tok/s, TTFT 6 ms, hit rate 89 %.
fn measured(cell: &PlannedCell, status: CellStatus, tok_s: f64) -> CellResult {
    let k = cell.key;
    let mut r = CellResult::empty(
        k.phase,
        k.context_tokens,
        &cell.label,
        k.concurrency,
        status,
    );
    r.session.session_rate = Some(k.request_rate());
    r.total_tok_per_s = Some(tok_s);
    r.ttft_ms_p50 = Some(6.2);
    r.tbt_ms_p50 = Some(1.1);
    r.measured_s = Some(4.0);
    if k.phase == Phase::Prefill {
        r.prompt_tok_per_s = Some(tok_s);
    }
    if k.phase == Phase::Session {
        r.tbt_ms_p50 = None;
        r.session.cache_hit_rate = Some(Some(0.891));
        r.session.predicted_cache_hit_rate = Some(Some(0.891));
        r.session.turns_completed = Some(Some(4 * u64::from(k.concurrency)));
    }
    r
}

/// The planned cell of `phase` at (context, N or S, rate in mrps).
fn planned(d: &Dashboard, phase: Phase, ctx: u64, n: u32, rate_mrps: u64) -> PlannedCell {
    d.planned_cells()
        .into_iter()
        .find(|c| {
            let k = c.key;
            (k.phase, k.context_tokens, k.concurrency, k.rate_mrps) == (phase, ctx, n, rate_mrps)
        })
        .cloned()
        .unwrap_or_else(|| panic!("{phase:?} {ctx} × {n} @ {rate_mrps} is planned"))
}

/// Runs `cell` from `at` for `secs`, its row saved at the end; the session section numbers its
/// cells among its own (`index` of `total`), as it sends them.
fn ran(d: &mut Dashboard, cell: PlannedCell, row: CellResult, at: Instant, index: usize) {
    d.apply(
        &ProgressEvent::CellStarted {
            index,
            total: 6,
            cell,
        },
        at,
    );
    d.apply(
        &ProgressEvent::CellDone(Box::new(row)),
        at + Duration::from_secs(5),
    );
}

/// The prefill cells done, then `done` session cells of 1K (5 s each); returns when the next
/// starts.
fn after_prefill(info: &RunInfo, t0: Instant, done: &[u32]) -> (Dashboard, Instant) {
    let mut d = Dashboard::new(info, vec![], t0);
    let mut at = t0;
    for c in info.plan.cells.clone() {
        let row = measured(&c, CellStatus::Valid, 155_100.0);
        ran(&mut d, c, row, at, 0);
        at += Duration::from_secs(5);
    }
    for (i, s) in done.iter().enumerate() {
        let c = planned(&d, Phase::Session, 1024, *s, 0);
        let row = measured(&c, CellStatus::Valid, 39.9 * f64::from(*s));
        ran(&mut d, c, row, at, i);
        at += Duration::from_secs(5);
    }
    (d, at)
}

/// Starts `cell` as the session section does: prompts, its live window, the warm-ups, then
/// the measured turns (`open loop` in the progress protocol, for closed loops too).
fn start_session(d: &mut Dashboard, cell: PlannedCell, live: &Arc<LiveWindow>, at: Instant) {
    d.apply(
        &ProgressEvent::CellStarted {
            index: 1,
            total: 6,
            cell,
        },
        at,
    );
    d.apply(&ProgressEvent::Phase(Stage::Prompts), at);
    d.apply(&ProgressEvent::WindowLive(live.clone()), at);
    d.apply(&ProgressEvent::Phase(Stage::WarmUp), at);
    d.apply(
        &ProgressEvent::Phase(Stage::OpenLoop),
        at + Duration::from_secs(1),
    );
    live.open_turns(at + Duration::from_secs(1));
}

/// The 1K × 4 closed loop 3 s in: 6 of its 16 turns done, tokens flowing, gauges read.
fn closed_loop_running(t0: Instant) -> (Dashboard, Instant) {
    let info = session_info(None, false);
    let (mut d, at) = after_prefill(&info, t0, &[1]);
    let cell = planned(&d, Phase::Session, 1024, 4, 0);
    let live = Arc::new(LiveWindow::for_sessions(
        4,
        Duration::from_secs(60),
        true,
        Some(16),
    ));
    start_session(&mut d, cell, &live, at);
    for (k, ttft) in [2.1, 2.4, 5.6, 5.2, 4.2, 4.9].into_iter().enumerate() {
        let k = k as u32;
        // The server reported 800 of 1,000 prompt tokens cached; 900 were predicted.
        live.turn_ended(
            (k % 4, k / 4 + 1),
            Some(ttft),
            false,
            (1000, 900, Some(800)),
        );
    }
    d.tick(at + Duration::from_secs(2));
    for i in 0..4 {
        let s = live.stream(i).expect("a session's stream");
        s.first_token.store(true, Ordering::Relaxed);
        s.tokens.fetch_add(160, Ordering::Relaxed);
    }
    let gauges = Gauges {
        running: Some(4.0),
        waiting: Some(0.0),
        kv_usage: Some(0.31),
        ..Default::default()
    };
    live.set_gauges(gauges, at + Duration::from_secs(3));
    let now = at + Duration::from_secs(3);
    d.tick(now);
    (d, now)
}

#[test]
fn a_closed_loop_session_cell_shows_its_own_words_gauges_and_live_turns() {
    let t0 = Instant::now();
    let (d, now) = closed_loop_running(t0);
    let screen = render(&d, Some(&gpus(1)), now, 160, 48);
    insta::assert_snapshot!(screen);
    // The cell's own words: a closed loop of 4 sessions, never "open loop".
    assert!(
        screen.contains("sessions 1K × 4 · closed loop · 4/8 · 3s"),
        "{screen}"
    );
    assert!(screen.contains("4 sessions, 4/4 with a token"), "{screen}");
    assert!(!screen.contains("open loop"), "{screen}");
    // Counted as planned: 2 prefill cells and 6 session cells (2K × 8 predicted over the KV
    // capacity: 8 × (2,048 + 128 + 2 × 32) > 16,384); placed among all the run's cells.
    assert!(
        screen.contains("8 cells planned, 1 over capacity"),
        "{screen}"
    );
    assert!(screen.contains("cells 3/8"), "{screen}");
    assert!(!screen.contains("ETA 0s"), "{screen}");
    // The server's gauges, as the cell's sampler read them.
    assert!(!screen.contains("no gauges read yet"), "{screen}");
    assert!(screen.contains("running 4 · waiting 0"), "{screen}");
    // Live figures: turns of planned, the latest turns' TTFTs, the hit rate against the
    // prediction.
    assert!(screen.contains("turns 6/16"), "{screen}");
    assert!(
        screen.contains("TTFT latest turns 2.1 ms 2.4 ms 5.6 ms"),
        "{screen}"
    );
    assert!(screen.contains("hit 80.0 % (predicted 90.0 %)"), "{screen}");
    assert!(d.live.tok_per_s.is_some_and(|r| r > 0.0), "{:?}", d.live);
    // The sessions' own matrix: its title, S across, the first cell's figures.
    assert!(screen.contains("Sessions · total tok/s"), "{screen}");
    assert!(!screen.contains("Sustained decode"), "{screen}");
    assert!(screen.contains("S=8"), "{screen}");
}

#[test]
fn a_session_cell_on_a_narrow_terminal_keeps_its_words_and_figures() {
    let t0 = Instant::now();
    let (d, now) = closed_loop_running(t0);
    let screen = render(&d, None, now, 80, 24);
    insta::assert_snapshot!(screen);
    assert!(screen.contains("closed loop"), "{screen}");
    assert!(screen.contains("turns 6/16"), "{screen}");
    assert!(screen.contains("cells 3/8"), "{screen}");
}

#[test]
fn an_open_loop_session_cell_says_its_rate() {
    let t0 = Instant::now();
    let info = session_info(Some(vec![0.5]), false);
    let (mut d, at) = after_prefill(&info, t0, &[1, 4, 8]);
    // Per context: S = 1, 4, 8 and one rate; 2 prefill cells.
    assert_eq!(d.progress(), (5, 10));
    let cell = planned(&d, Phase::Session, 1024, 0, 500);
    let live = Arc::new(LiveWindow::for_sessions(
        30,
        Duration::from_secs(60),
        true,
        Some(120),
    ));
    start_session(&mut d, cell, &live, at);
    d.tick(at + Duration::from_secs(2));
    let screen = render(&d, None, at + Duration::from_secs(2), 160, 48);
    assert!(
        screen.contains("sessions 1K @ 0.5/s · open loop · 6/10"),
        "{screen}"
    );
    assert!(!screen.contains("closed loop"), "{screen}");
    assert!(screen.contains("@0.5/s"), "the rate's column:\n{screen}");
    assert!(screen.contains("turns 0/120"), "{screen}");
    // After the turns, the stage beside them on the bar.
    d.apply(
        &ProgressEvent::Phase(Stage::Counting),
        at + Duration::from_secs(3),
    );
    let screen = render(&d, None, at + Duration::from_secs(3), 160, 48);
    assert!(screen.contains("counting · turns 0/120"), "{screen}");
    let row = measured(
        &planned(&d, Phase::Session, 1024, 0, 500),
        CellStatus::Valid,
        90.0,
    );
    let line = super::lines::describe(&row);
    assert!(line.starts_with("sessions     1K @ 0.5/s  Valid"), "{line}");
}

#[test]
fn session_cells_are_never_drawn_in_the_decode_matrix() {
    let t0 = Instant::now();
    let info = session_info(None, true);
    let mut d = Dashboard::new(&info, vec![], t0);
    let mut at = t0;
    for c in d.planned_cells().into_iter().cloned().collect::<Vec<_>>() {
        let (status, tok_s) = match (c.key.phase, c.key.concurrency) {
            (Phase::Session, 8) => (CellStatus::RequestsQueued, 304.0),
            (Phase::Session, s) => (CellStatus::Valid, 39.9 * f64::from(s)),
            (Phase::Prefill, _) => (CellStatus::Valid, 155_100.0),
            (_, n) => (CellStatus::Valid, 190.7 * f64::from(n)),
        };
        if c.key.context_tokens == 2048 && c.key.phase == Phase::Session {
            break;
        }
        ran(&mut d, c.clone(), measured(&c, status, tok_s), at, 0);
        at += Duration::from_secs(5);
    }
    let shown = matrices(&d, 128);
    let titles: Vec<&str> = shown.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        titles,
        [
            " Sustained decode · total tok/s ",
            " Sessions · total tok/s "
        ]
    );
    let text = |lines: &[ratatui::text::Line]| {
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>()
    };
    let decode = text(&shown[0].1);
    assert!(decode.contains("N=2") && !decode.contains("S="), "{decode}");
    assert!(
        !decode.contains("39.9") && !decode.contains("159.6"),
        "{decode}"
    );
    let sessions = text(&shown[1].1);
    assert!(
        sessions.contains("S=4") && sessions.contains("159.6"),
        "{sessions}"
    );
    insta::assert_snapshot!(render(&d, None, at, 160, 48));
}

#[test]
fn the_eta_prices_session_cells_by_the_ones_measured_and_the_turns_left() {
    let t0 = Instant::now();
    let info = session_info(None, false);
    let (mut d, at) = after_prefill(&info, t0, &[1]);
    // Before any session cell ran, each is priced by the plan (its cold histories and window).
    let fresh = Dashboard::new(&info, vec![], t0);
    assert!(fresh.eta_s(t0) > 5.0 * 60.0, "{}", fresh.eta_s(t0));
    // 1K × 1 took 5 s: the 4 session cells left that fit the KV (2K × 8 does not) take as
    // long each.
    assert!((d.eta_s(at) - 20.0).abs() < 1e-6, "{}", d.eta_s(at));
    let cell = planned(&d, Phase::Session, 1024, 4, 0);
    let live = Arc::new(LiveWindow::for_sessions(
        4,
        Duration::from_secs(60),
        true,
        Some(16),
    ));
    start_session(&mut d, cell, &live, at);
    let now = at + Duration::from_secs(2);
    d.tick(now);
    // No turn yet: the running cell has its price less the time it ran.
    assert!((d.eta_s(now) - 18.0).abs() < 1e-6, "{}", d.eta_s(now));
    for k in 0..4 {
        live.turn_ended((k, 1), Some(3.0), false, (1000, 900, None));
    }
    d.tick(now);
    // 4 of 16 turns in 2 s: 6 s more, then the 3 cells after it.
    assert!((d.eta_s(now) - 21.0).abs() < 1e-6, "{}", d.eta_s(now));
}

#[test]
fn a_replay_counts_its_cells_and_says_what_it_is() {
    let mut info = session_info(None, false);
    let st = info.plan.settings.sessions.as_mut().expect("sessions");
    st.replay = Some("sessions:testdata/workloads/sessions.jsonl".into());
    let cells = super::sessions::session_cells(&info.plan);
    let names: Vec<String> = cells.iter().map(super::view::cell_name).collect();
    assert_eq!(names, ["sessions sessions.jsonl"]);
    assert_eq!(super::sessions::loop_words(cells[0].key), "replay");
    let st = info.plan.settings.sessions.as_mut().expect("sessions");
    st.replay = Some("sharegpt:chats.json".into());
    st.session_rates = Some(vec![0.5, 2.0]);
    let cells = super::sessions::session_cells(&info.plan);
    let names: Vec<String> = cells.iter().map(super::view::cell_name).collect();
    assert_eq!(
        names,
        ["sessions chats.json @ 0.5/s", "sessions chats.json @ 2/s"]
    );
    assert_eq!(super::sessions::loop_words(cells[1].key), "open loop");
    // Counted with the plan's own cells (the two prefill cells).
    let d = Dashboard::new(&info, vec![], Instant::now());
    assert_eq!(d.progress(), (0, 4));
}
