//! Snapshots of the dashboard at fixed states (ratatui's `TestBackend`, insta): prefill
//! running, a window half done, a queued cell, a narrow terminal, no GPU, eight GPUs. Every
//! state is built from the events the driver sends and a fixed clock, so a snapshot changes
//! only when the drawing does.

use super::draw::draw;
use super::view::{Dashboard, Doing};
use llmib_client::Gauges;
use llmib_client::LiveWindow;
use llmib_client::{ProgressEvent, RequestErrorKind, Stage};
use llmib_core::ContextSpec;
use llmib_core::ReadinessBy;
use llmib_core::{CellResult, CellStatus, Phase, QueueObservation};
use llmib_core::{CpuReading, GpuReading, HwSample};
use llmib_core::{EngineInfo, HardwareInfo, ModelInfo, Sourced};
use llmib_core::{Plan, Settings};
use llmib_core::{RunInfo, RunState, SCHEMA_VERSION, ToolInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn info() -> RunInfo {
    info_with(vec![1, 4, 16, 64])
}

/// The run's header with these concurrency levels (contexts 8K, 32K, 128K).
fn info_with(concurrency: Vec<u32>) -> RunInfo {
    let settings = Settings {
        contexts: [8192u64, 32768, 131072].map(ContextSpec::Tokens).to_vec(),
        concurrency,
        duration_s: 30.0,
        ..Settings::default()
    };
    info_of(Plan::build(settings, Some(262_144), Some(1_000_000)))
}

/// The run's header of `plan` (an sglang server of 1,000,000 KV tokens).
pub(crate) fn info_of(plan: Plan) -> RunInfo {
    RunInfo {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::current(),
        state: RunState::Running,
        started_at: "2026-12-03T12:00:00Z".into(),
        finished_at: None,
        url: "http://127.0.0.1:8000".into(),
        engine: EngineInfo {
            name: Some("sglang".into()),
            version: Some("0.5.6\u{1b}[31m".into()),
            kv_capacity_tokens: Some(Sourced {
                value: 1_000_000,
                source: "/get_server_info max_total_num_tokens".into(),
            }),
            ..Default::default()
        },
        model: ModelInfo {
            served_model: "zai-org/GLM-5.3-Flash".into(),
            ..Default::default()
        },
        hardware: HardwareInfo::default(),
        launch_command: None,
        launch_command_source: None,
        diagnostics: None,
        sweep: None,
        plan,
        notes: vec![],
    }
}

fn row(phase: Phase, ctx: u64, n: u32, status: CellStatus, tok_s: f64) -> CellResult {
    let label = format!("{}K", ctx / 1024);
    let mut r = CellResult::empty(phase, ctx, &label, n, status);
    if status.has_figures() {
        match phase {
            Phase::Prefill => {
                r.prompt_tok_per_s = Some(tok_s);
                r.ttft_ms_p50 = Some(ctx as f64 / tok_s * 1000.0);
            }
            Phase::Decode
            | Phase::Burst
            | Phase::Rate
            | Phase::Capacity
            | Phase::Session
            | Phase::MixedPrefill => {
                r.total_tok_per_s = Some(tok_s);
                r.ttft_ms_p50 = Some(120.0);
                r.tbt_ms_p50 = Some(5.2);
                r.measured_s = Some(30.0);
            }
        }
    }
    r
}

pub(crate) fn gpus(n: u32) -> HwSample {
    HwSample {
        gpus: (0..n)
            .map(|i| GpuReading {
                index: i,
                name: Some("NVIDIA H200".into()),
                util_pct: Some(97.0 - f64::from(i)),
                mem_util_pct: Some(41.0),
                vram_used_bytes: Some(128 << 30),
                vram_total_bytes: Some(140 << 30),
                power_w: Some(612.0),
                power_limit_w: Some(700.0),
                temp_c: Some(61.0),
                sm_clock_mhz: Some(1980),
                mem_clock_mhz: Some(3201),
                pcie_rx_bytes_per_s: Some(2.1e6),
                pcie_tx_bytes_per_s: Some(1.8e6),
            })
            .collect(),
        cpu: Some(CpuReading {
            util_pct: Some(12.0),
            freq_mhz: Some(3100),
            temp_c: Some(48.0),
        }),
        gpu_source: "nvml".into(),
    }
}

fn no_gpu() -> HwSample {
    HwSample {
        gpus: vec![],
        cpu: Some(CpuReading {
            util_pct: Some(35.0),
            freq_mhz: None,
            temp_c: None,
        }),
        gpu_source: "none".into(),
    }
}

pub(crate) fn render(d: &Dashboard, hw: Option<&HwSample>, now: Instant, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| draw(f, d, hw, now)).expect("draw");
    format!("{}", t.backend())
}

/// The run after its 8K context: prefill and N = 1, 4 done, the 32K prefill running.
fn after_first_context(t0: Instant) -> Dashboard {
    let info = info();
    let mut d = Dashboard::new(&info, vec![], t0);
    let mut at = t0;
    for r in [
        row(Phase::Prefill, 8192, 1, CellStatus::Valid, 9232.0),
        row(Phase::Decode, 8192, 1, CellStatus::Valid, 190.7),
        row(Phase::Decode, 8192, 4, CellStatus::Valid, 389.2),
        row(Phase::Decode, 8192, 16, CellStatus::Valid, 948.2),
        row(Phase::Decode, 8192, 64, CellStatus::Failed, 0.0),
    ] {
        let cell = info
            .plan
            .cells
            .iter()
            .find(|c| c.key == r.key())
            .cloned()
            .expect("planned");
        d.apply(
            &ProgressEvent::CellStarted {
                index: 0,
                total: info.plan.cells.len(),
                cell,
            },
            at,
        );
        at += Duration::from_secs(32);
        let mut r = r;
        if r.status == CellStatus::Failed {
            r.first_error = Some("HTTP 503: The request queue is full.".into());
        }
        d.apply(&ProgressEvent::CellDone(Box::new(r)), at);
    }
    d
}

fn start(d: &mut Dashboard, ctx: u64, phase: Phase, n: u32, index: usize, at: Instant) {
    let cell = d
        .plan
        .cells
        .iter()
        .find(|c| c.key.context_tokens == ctx && c.key.phase == phase && c.key.concurrency == n)
        .cloned()
        .expect("planned");
    let total = d.plan.cells.len();
    d.apply(&ProgressEvent::CellStarted { index, total, cell }, at);
}

#[test]
fn prefill_running() {
    let t0 = Instant::now();
    let mut d = after_first_context(t0);
    let at = t0 + Duration::from_secs(160);
    start(&mut d, 32768, Phase::Prefill, 1, 5, at);
    d.apply(&ProgressEvent::Phase(Stage::Prefill), at);
    insta::assert_snapshot!(render(
        &d,
        Some(&gpus(2)),
        at + Duration::from_secs(3),
        120,
        36
    ));
}

/// A window half done, with live figures from the window's atomics and gauges.
pub(crate) fn window_half_done(t0: Instant) -> (Dashboard, Instant) {
    let mut d = after_first_context(t0);
    let at = t0 + Duration::from_secs(200);
    start(&mut d, 32768, Phase::Prefill, 1, 5, at);
    d.apply(
        &ProgressEvent::CellDone(Box::new(row(
            Phase::Prefill,
            32768,
            1,
            CellStatus::Valid,
            10_700.0,
        ))),
        at + Duration::from_secs(3),
    );
    start(
        &mut d,
        32768,
        Phase::Decode,
        4,
        7,
        at + Duration::from_secs(3),
    );
    let live = Arc::new(LiveWindow::new(4, Duration::from_secs(30), true));
    d.apply(
        &ProgressEvent::WindowLive(live.clone()),
        at + Duration::from_secs(4),
    );
    for i in 0..4 {
        live.stream(i)
            .expect("stream")
            .first_token
            .store(true, Ordering::Relaxed);
    }
    let opened = at + Duration::from_millis(5500);
    live.open(ReadinessBy::GaugesAndFirstTokens, opened);
    d.apply(
        &ProgressEvent::Readiness {
            by: ReadinessBy::GaugesAndFirstTokens,
            after_s: 2.5,
            streams_with_token: 4,
            concurrency: 4,
            running: Some(4.0),
            waiting: Some(0.0),
        },
        opened,
    );
    live.set_gauges(
        Gauges {
            running: Some(4.0),
            waiting: Some(0.0),
            generation_tokens_total: Some(1000.0),
            kv_usage: Some(0.41),
            spec_accept_rate: Some(0.55),
            spec_accept_length: Some(1.55),
            ..Default::default()
        },
        opened,
    );
    // Ticks every 250 ms for 15 s at 400 tok/s.
    for k in 0..=60u32 {
        let now = opened + Duration::from_millis(250 * u64::from(k));
        live.stream(0)
            .expect("stream")
            .tokens
            .store(u64::from(k) * 100, Ordering::Relaxed);
        d.tick(now);
    }
    (d, opened + Duration::from_secs(15))
}

#[test]
fn window_half_done_wide() {
    let t0 = Instant::now();
    let (d, now) = window_half_done(t0);
    insta::assert_snapshot!(render(&d, Some(&gpus(8)), now, 140, 40));
}

#[test]
fn narrow_terminal() {
    let t0 = Instant::now();
    let (d, now) = window_half_done(t0);
    insta::assert_snapshot!(render(&d, Some(&gpus(2)), now, 80, 24));
}

#[test]
fn no_gpu_visible() {
    let t0 = Instant::now();
    let (d, now) = window_half_done(t0);
    let s = render(&d, Some(&no_gpu()), now, 120, 36);
    assert!(s.contains("no GPU visible"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn a_queued_cell_shows_what_the_server_ran() {
    let t0 = Instant::now();
    let mut d = after_first_context(t0);
    let mut q = row(Phase::Decode, 32768, 16, CellStatus::RequestsQueued, 412.6);
    q.queue = Some(QueueObservation {
        mean_waiting: Some(4.2),
        ..Default::default()
    });
    d.apply(
        &ProgressEvent::CellDone(Box::new(q)),
        t0 + Duration::from_secs(300),
    );
    let s = render(&d, None, t0 + Duration::from_secs(301), 120, 36);
    assert!(s.contains("(12/16)*"), "{s}");
    insta::assert_snapshot!(s);
}

/// Server strings are sanitised on the way in: an escape in the version never reaches the
/// terminal.
#[test]
fn server_strings_are_sanitised() {
    let d = Dashboard::new(&info(), vec![], Instant::now());
    assert!(!d.header.engine.contains('\u{1b}'));
    assert!(d.header.engine.contains("0.5.6?[31m"));
}

/// A megabyte of model id is cut in the header (redrawn four times a second; run.json keeps
/// it whole).
#[test]
fn a_megabyte_model_id_is_cut_in_the_header() {
    let mut i = info();
    i.model.served_model = "m".repeat(1 << 20);
    let d = Dashboard::new(&i, vec![], Instant::now());
    assert!(d.header.model.len() < 200, "{}", d.header.model.len());
    assert!(d.header.model.ends_with("… (1048576 characters)"));
}

#[test]
fn the_eta_shrinks_as_cells_finish_and_learns_the_prefill_rate() {
    let t0 = Instant::now();
    let fresh = Dashboard::new(&info(), vec![], t0);
    let later = after_first_context(t0);
    let now = t0 + Duration::from_secs(200);
    assert!(
        later.eta_s(now) < fresh.eta_s(now),
        "{} !< {}",
        later.eta_s(now),
        fresh.eta_s(now)
    );
    assert_eq!(later.progress(), (5, fresh.plan.cells.len()));
}

/// The default eight concurrency levels: 8K measured, with a queued cell at N = 16 and at
/// N = 128, a failed one and a not-run one; 32K × 1 running.
fn eight_levels(t0: Instant) -> (Dashboard, Instant) {
    let info = info_with(vec![1, 2, 4, 8, 16, 32, 64, 128]);
    let mut d = Dashboard::new(&info, vec![], t0);
    let queued = |n: u32, rate: f64, waiting: f64| {
        let mut q = row(Phase::Decode, 8192, n, CellStatus::RequestsQueued, rate);
        q.queue = Some(QueueObservation {
            mean_waiting: Some(waiting),
            ..Default::default()
        });
        q
    };
    let rows = [
        row(Phase::Prefill, 8192, 1, CellStatus::Valid, 9232.0),
        row(Phase::Decode, 8192, 1, CellStatus::Valid, 190.7),
        row(Phase::Decode, 8192, 2, CellStatus::Valid, 301.4),
        row(Phase::Decode, 8192, 4, CellStatus::Valid, 389.2),
        row(Phase::Decode, 8192, 8, CellStatus::Valid, 948.2),
        queued(16, 412.6, 4.2),
        row(Phase::Decode, 8192, 32, CellStatus::Failed, 0.0),
        row(Phase::Decode, 8192, 64, CellStatus::NotRun, 0.0),
        queued(128, 12_345.6, 28.0),
    ];
    let mut at = t0;
    for r in rows {
        at += Duration::from_secs(32);
        d.apply(&ProgressEvent::CellDone(Box::new(r)), at);
    }
    start(&mut d, 32768, Phase::Prefill, 1, 9, at);
    (d, at + Duration::from_secs(2))
}

/// At 120 and 80 columns the eight columns are too narrow for `412.6 (12/16)*`: the cell
/// keeps its marker (`413*`) and the legend says what the server ran.
#[test]
fn eight_levels_keep_the_queued_marker() {
    let t0 = Instant::now();
    let (d, now) = eight_levels(t0);
    for (w, h) in [(120, 40), (80, 24)] {
        let s = render(&d, Some(&gpus(2)), now, w, h);
        assert!(s.contains("413*"), "{w}×{h}:\n{s}");
        assert!(s.contains("8K×16 12/16"), "{w}×{h}:\n{s}");
        assert!(s.contains("8K×128 100/128"), "{w}×{h}:\n{s}");
        insta::assert_snapshot!(format!("eight_levels_{w}x{h}"), s);
    }
    // At 100 columns (the narrowest wide layout) a column has 6 characters: status words are
    // shortened too, and the legend spells them out.
    let s = render(&d, Some(&gpus(2)), now, 100, 30);
    for needle in ["413*", "n/r", "over", "8K×16 12/16", "n/r: not run"] {
        assert!(s.contains(needle), "{needle}:\n{s}");
    }
}

/// Readiness, request errors with their retry, and skipped cells reach the event log.
#[test]
fn the_log_shows_readiness_request_errors_and_skips() {
    let t0 = Instant::now();
    let info = info();
    let mut d = Dashboard::new(&info, vec![], t0);
    start(&mut d, 32768, Phase::Decode, 4, 7, t0);
    d.apply(
        &ProgressEvent::Readiness {
            by: ReadinessBy::QueueStalled,
            after_s: 2.04,
            streams_with_token: 3,
            concurrency: 4,
            running: Some(3.0),
            waiting: Some(1.0),
        },
        t0 + Duration::from_secs(3),
    );
    assert_eq!(
        d.current.as_ref().map(|c| c.phase),
        Some(Doing::Stage(Stage::Window))
    );
    for (retry_in_s, retry_after) in [(Some(0.05), false), (Some(2.0), true), (None, false)] {
        d.apply(
            &ProgressEvent::RequestError {
                phase: if retry_in_s.is_some() {
                    Stage::Window
                } else {
                    Stage::WarmUp
                },
                stream: 2,
                kind: RequestErrorKind::HttpStatus(500),
                message: "Internal error\u{1b}[2J".into(),
                retry_in_s,
                retry_after,
            },
            t0 + Duration::from_secs(4),
        );
    }
    let cell = info
        .plan
        .cells
        .iter()
        .find(|c| c.over_capacity)
        .cloned()
        .expect("an over-capacity cell");
    d.apply(
        &ProgressEvent::Skipped {
            cell,
            reason: "over KV capacity (needs 8650752 tokens, has 1000000)".into(),
        },
        t0 + Duration::from_secs(5),
    );
    let log: Vec<&str> = d.log.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        log,
        [
            "readiness: queue_stalled after 2.0 s · 3/4 streams with a token · running 3 waiting 1 \
             · requests stayed queued while the running count stopped growing",
            "window request error, stream 2: http_500: Internal error?[2J; retry in 0.05 s (backoff)",
            "window request error, stream 2: http_500: Internal error?[2J; retry in 2.0 s (Retry-After)",
            "warm-up request error, stream 2: http_500: Internal error?[2J",
            "skipped: decode 32K × 64: over KV capacity (needs 8650752 tokens, has 1000000)",
        ]
    );
}

/// A new cell starts without the last cell's generation rate and speculative figures.
#[test]
fn a_new_cell_forgets_the_last_cells_server_figures() {
    let t0 = Instant::now();
    let (mut d, now) = window_half_done(t0);
    let g = |total: f64| Gauges {
        generation_tokens_total: Some(total),
        spec_accept_rate: Some(0.5),
        spec_accept_length: Some(1.5),
        ..Default::default()
    };
    d.observe_gauges(now, g(1000.0));
    d.observe_gauges(now + Duration::from_secs(1), g(1400.0));
    assert_eq!(d.server_gen_tok_per_s, Some(400.0));
    assert!(d.spec.is_some());
    start(
        &mut d,
        32768,
        Phase::Decode,
        16,
        8,
        now + Duration::from_secs(2),
    );
    assert_eq!((d.server_gen_tok_per_s, d.spec), (None, None));
}

/// Known answer: with nothing measured (5,000 prompt tok/s and 2 s of overhead assumed, 30 s
/// windows), the plan's 12 runnable cells cost 1,572,864 prompt tokens of prefill (8K × 64,
/// 32K × 16 and 128K × 4 distinct prompts) plus 9 × 32 s of decode: 602.5728 s. Once the 8K
/// prefill (1.6384 s) runs, its elapsed time comes off, down to nothing left of it.
#[test]
fn the_eta_counts_only_what_the_running_cell_has_left() {
    let t0 = Instant::now();
    let mut d = Dashboard::new(&info(), vec![], t0);
    let total = 1_572_864.0 / 5000.0 + 9.0 * 32.0;
    assert!((d.eta_s(t0) - total).abs() < 1e-9, "{}", d.eta_s(t0));
    start(&mut d, 8192, Phase::Prefill, 1, 0, t0);
    for (ran_s, left) in [(0.0, total), (1.0, total - 1.0), (5.0, total - 1.6384)] {
        let eta = d.eta_s(t0 + Duration::from_secs_f64(ran_s));
        assert!(
            (eta - left).abs() < 1e-9,
            "after {ran_s} s: {eta} != {left}"
        );
    }
}

/// The GPU mean is over the GPUs that reported a utilisation, not over all of them.
#[test]
fn gpu_mean_utilisation_skips_gpus_without_a_reading() {
    let t0 = Instant::now();
    let (d, now) = window_half_done(t0);
    let mut hw = gpus(4);
    for g in [1, 3] {
        hw.gpus[g].util_pct = None;
    }
    // GPUs 0 and 2 report 97 % and 95 %.
    let s = render(&d, Some(&hw), now, 140, 40);
    assert!(s.contains("4 GPU · 96% ·"), "{s}");
    for g in &mut hw.gpus {
        g.util_pct = None;
    }
    let s = render(&d, Some(&hw), now, 140, 40);
    assert!(s.contains("4 GPU · – ·"), "{s}");
}

/// The hardware panel grows for more GPUs while the log keeps its rows; the GPUs that still do
/// not fit are counted. At 120×30, 7 of 16 GPU lines fit beside the totals and the CPU.
#[test]
fn gpus_that_do_not_fit_are_counted() {
    let t0 = Instant::now();
    let (d, now) = window_half_done(t0);
    let s = render(&d, Some(&gpus(16)), now, 120, 30);
    assert!(s.contains("+9 more GPUs"), "{s}");
    assert!(s.contains("│6 91% mem"), "{s}");
    assert!(!s.contains("│7 90% mem"), "{s}");
    assert!(s.contains("CPU 12%"), "{s}");
}

/// An open-load cell on the dashboard: the rate kept against the rate asked, the queue for the
/// cap, and the SLO attainment so far.
#[test]
fn an_open_load_cell_shows_its_rate_queue_and_attainment() {
    let t0 = Instant::now();
    let mut d = after_first_context(t0);
    let at = t0 + Duration::from_secs(200);
    let cell = llmib_core::rate_cell(32768, "32K", 2.5);
    d.apply(
        &ProgressEvent::CellStarted {
            index: 20,
            total: 21,
            cell,
        },
        at,
    );
    let live = Arc::new(llmib_client::OpenLoopLive::default());
    live.scheduled.store(75, Ordering::Relaxed);
    live.fired.store(30, Ordering::Relaxed);
    live.rate_mrps.store(2_500, Ordering::Relaxed);
    live.first_fire_ns.store(400_000_000, Ordering::Relaxed);
    live.last_fire_ns.store(12_000_000_000, Ordering::Relaxed);
    live.in_flight.store(6, Ordering::Relaxed);
    live.waiting.store(2, Ordering::Relaxed);
    live.ended.store(22, Ordering::Relaxed);
    live.errors.store(1, Ordering::Relaxed);
    live.met.store(20, Ordering::Relaxed);
    d.apply(&ProgressEvent::OpenLoopLive(live), at);
    d.tick(at + Duration::from_secs(12));
    let screen = render(&d, Some(&gpus(2)), at + Duration::from_secs(12), 120, 36);
    assert!(screen.contains("rate 2.50/s of 2.5/s asked"), "{screen}");
    assert!(
        screen.contains("in flight 6 · queued for the cap 2"),
        "{screen}"
    );
    assert!(screen.contains("SLO met 20 (90.9 %)"), "{screen}");
    assert!(screen.contains("sent 30/75"), "{screen}");
}

/// A Failed row whose window stalled has a reason and no request error: the line says it.
#[test]
fn a_failed_line_says_why_even_without_a_request_error() {
    let mut r = row(Phase::Decode, 8192, 4, CellStatus::Failed, 0.0);
    r.status_reason = Some("the window stalled".into());
    let line = super::lines::describe(&r);
    assert!(
        line.contains("Failed") && line.contains("the window stalled"),
        "{line}"
    );
}

/// A terminal of 0×0 (or one that reports no size) gets lines, never a blank dashboard.
#[test]
fn a_terminal_without_a_size_gets_lines() {
    use super::choose;
    use crate::DisplayMode as M;
    assert_eq!(choose(None, true, Some((120, 40))), M::Tui);
    assert_eq!(choose(None, true, Some((0, 0))), M::Plain);
    assert_eq!(choose(Some(M::Tui), true, None), M::Plain);
    assert_eq!(choose(None, false, Some((120, 40))), M::Plain);
    assert_eq!(choose(Some(M::Json), true, Some((0, 0))), M::Json);
}

/// A finished session row shows C, S, tok/s, TTFT and its hit rate measured / predicted, in
/// the plain line and in the dashboard's log, with the cache note that explains a low rate.
#[test]
fn a_session_row_shows_its_hit_rates() {
    let mut r = row(Phase::Session, 8192, 4, CellStatus::Valid, 1234.5);
    r.session = llmib_core::SessionColumns {
        turns_completed: Some(Some(12)),
        cache_hit_rate: Some(Some(0.921)),
        predicted_cache_hit_rate: Some(Some(0.93)),
        ..llmib_core::SessionColumns::bare()
    };
    r.status_reason = Some("prefix caching looks off\u{1b}[2J".into());
    let line = super::lines::describe(&r);
    for needle in [
        "sessions     8K × 4",
        "Valid",
        "1234.5 tok/s",
        "TTFT 120 ms",
        "hit 92.1 % / 93.0 %",
        "turns 12",
        "prefix caching looks off?[2J",
    ] {
        assert!(line.contains(needle), "{needle}: {line}");
    }
    let t0 = Instant::now();
    let mut d = Dashboard::new(&info(), vec![], t0);
    d.apply(&ProgressEvent::CellDone(Box::new(r)), t0);
    let log: Vec<&str> = d.log.iter().map(|l| l.text.as_str()).collect();
    assert!(
        log.iter()
            .any(|l| l.starts_with("sessions 8K × 4: Valid  1234.5 tok/s")
                && l.contains("hit 92.1 % / 93.0 %")),
        "{log:?}"
    );
}

#[test]
fn a_run_of_sessions_alone_fills_the_session_matrix() {
    let mut info = info_with(vec![1]);
    let mut settings = info.plan.settings.clone();
    settings.sessions = Some(llmib_core::SessionSettings::new(vec![2, 8]));
    info.plan = Plan::build(settings, Some(262_144), Some(1_000_000));
    assert!(!info.plan.cells.iter().any(|c| c.key.phase == Phase::Decode));
    let done = row(Phase::Session, 8192, 2, CellStatus::Valid, 1234.5);
    let d = Dashboard::new(&info, vec![done], Instant::now());
    let shown = crate::tables::matrices(&d, 100);
    assert_eq!(shown.len(), 1, "the session matrix alone");
    let text: String = shown[0]
        .1
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                + "\n"
        })
        .collect();
    assert!(text.contains("S=2") && text.contains("S=8"), "{text}");
    assert!(
        text.contains("1,234.5"),
        "the finished cell's tok/s: {text}"
    );
    assert!(!text.contains("N="), "{text}");
}
