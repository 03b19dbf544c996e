//! `run` and `demo`: probe the server, build the plan, drive the matrix, save, report.

use crate::config::{self, ContextList, Formats, Levels, RunArgs};
use crate::live::event_file::EventsFile;
use anyhow::{Context, Result, bail};
use clap::Args;
use llmib_client::LocalTokenizer;
use llmib_client::MatrixEnd;
use llmib_client::{Engine, ProbeOptions};
use llmib_core::CellKey;
use llmib_core::ContextSpec;
use llmib_core::Diagnostics;
use llmib_core::now_rfc3339;
use llmib_core::{HardwareInfo, Sourced};
use llmib_core::{LoadedRun, RunDir};
use llmib_core::{Plan, Settings};
use llmib_core::{RunInfo, RunState, SCHEMA_VERSION, ToolInfo};
use llmib_core::{every_measured_cell_failed, measure_again_on_resume, nothing_measured};
use llmib_core::{redact_command, terminal_line};
use llmib_dashboard::DisplayMode;
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How a command ended, as an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success (0).
    Ok,
    /// The server went away mid-run (3); results so far are saved.
    ServerGone,
    /// Ctrl-C or SIGTERM (130); results so far are saved.
    Interrupted,
    /// The run finished but every cell it measured failed (4).
    AllFailed,
    /// The run ended without measuring any cell: every one was Over capacity or Not run (5).
    NothingMeasured,
    /// An upload to a hub failed (6): `upload` (some directory) or `run --upload` (the results
    /// are kept on disk).
    UploadFailed,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::ServerGone => ExitCode::from(3),
            Exit::Interrupted => ExitCode::from(130),
            Exit::AllFailed => ExitCode::from(4),
            Exit::NothingMeasured => ExitCode::from(5),
            Exit::UploadFailed => ExitCode::from(6),
        }
    }
}

/// Flags of `demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Simulator profile (built-in name or TOML file).
    #[arg(long, default_value = "seed")]
    pub profile: String,
    /// Decode window per cell (the default keeps the full matrix within a few minutes).
    #[arg(long, default_value = "3s", value_parser = config::parse::duration)]
    pub duration: Duration,
    /// Results directory (default: `results/demo-TIMESTAMP`).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Contexts (default: the seed's, at the profile's scale).
    #[arg(long, value_parser = config::parse::contexts)]
    pub contexts: Option<ContextList>,
    /// Concurrency levels (default: the seed's).
    #[arg(long, value_parser = config::parse::levels)]
    pub concurrency: Option<Levels>,
    /// Report formats written at the end.
    #[arg(long, value_parser = config::parse::formats)]
    pub format: Option<Formats>,
    /// What the terminal shows (as `run --display`).
    #[arg(long, value_enum)]
    pub display: Option<DisplayMode>,
    /// Do not read this machine's GPUs and CPU.
    #[arg(long)]
    pub no_hw_monitor: bool,
    /// Also write every progress event to FILE (as `run --events`).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
}

/// `demo`: the built-in simulator, in-process, with the full default matrix at its scale.
pub async fn demo(a: DemoArgs) -> Result<Exit> {
    let cfg = llmib_sim::load_profile(&a.profile)
        .with_context(|| format!("cannot load simulator profile `{}`", a.profile))?;
    let scale = u64::from(cfg.scale.max(1));
    let api_key = cfg.api_key.clone();
    // The simulator gets a runtime and threads of its own, as a real server has its own
    // process: the client's runtime then holds only the client, and what the client measures
    // of itself (its lateness, `client_lag`) is the client's, not the server's scheduler.
    let sim_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sim")
        .enable_all()
        .build()
        .context("cannot start the simulator's runtime")?;
    let handle = sim_rt
        .spawn(llmib_sim::spawn(cfg))
        .await
        .context("the simulator's start-up task died")?
        .context("cannot start the simulator")?;
    errln!(
        "simulator `{}` listening on {} (1/{scale} of the seed's sizes)",
        a.profile,
        handle.base_url()
    );
    let contexts = a.contexts.unwrap_or_else(|| {
        // The seed's contexts, scaled: 8K/64 = 128 tokens … 512K/64 = 8K, then max and full.
        let mut v: Vec<ContextSpec> = [8u64, 16, 32, 64, 128, 256, 512]
            .iter()
            .map(|k| ContextSpec::Tokens(k * 1024 / scale))
            .collect();
        v.extend([ContextSpec::Max, ContextSpec::Full]);
        ContextList(v)
    });
    let args = RunArgs {
        url: Some(handle.base_url()),
        api_key,
        // The simulator imitates a server; it runs on no GPU, and the card must not claim one.
        hardware_info: Some(HardwareInfo {
            device_type: Some("Simulated (llm-inference-bench sim)".into()),
            os: Some(std::env::consts::OS.into()),
            source: Some(format!("simulator profile `{}`", a.profile)),
            ..Default::default()
        }),
        contexts: Some(contexts),
        // The 8K sanity prefill at the profile's scale (8K/64 = 128 tokens: the demo's first
        // context).
        prefill_contexts: Some(ContextList(vec![ContextSpec::Tokens(
            (8192 / scale).max(1),
        )])),
        concurrency: a.concurrency,
        duration: Some(a.duration),
        max_output: Some(u32::try_from((4096 / scale).max(1)).unwrap_or(4096)),
        readiness_timeout: Some(Duration::from_secs(20)),
        output: Some(a.output.unwrap_or_else(|| default_output("demo"))),
        format: a.format,
        display: a.display,
        no_hw_monitor: a.no_hw_monitor,
        events: a.events,
        ..Default::default()
    };
    let result = run(args).await;
    handle.shutdown().await;
    // Inside an async context a runtime may only be dropped in the background.
    sim_rt.shutdown_background();
    result
}

/// `results/PREFIX-TIMESTAMP`: where a run writes when no `--output` is given.
pub(crate) fn default_output(prefix: &str) -> PathBuf {
    let ts = now_rfc3339().replace([':', '.'], "-");
    PathBuf::from("results").join(format!("{prefix}-{ts}"))
}

/// With `--resume DIR`: the saved run and the notes of what changed, with the settings it
/// decides (new prompts: the interrupted run may have sent the old ones, and a server that
/// cached them would make a resumed prefill measure a cache hit).
fn resumed_run(
    args: &RunArgs,
    settings: &mut Settings,
) -> Result<Option<(llmib_core::LoadedRun, Vec<String>)>> {
    let Some(dir) = &args.resume else {
        return Ok(None);
    };
    let r = RunDir::open(dir.clone())?
        .load()
        .with_context(|| format!("cannot resume from {}", dir.display()))?;
    let url = args.url.as_deref().map(llmib_core::strip_url_userinfo);
    let decided = crate::config::resume::decide(&r.info, args, dir, url.as_deref())?;
    // The saved run keeps the text's source only: the file read now must be that text.
    let prompt_text = crate::config::prompt_args::resumed(
        settings.prompt_text.take(),
        decided.settings.prompt_text.as_ref(),
    )?;
    *settings = Settings {
        prompt_seed: settings.prompt_seed,
        prompt_text,
        ..decided.settings
    };
    Ok(Some((r, decided.notes)))
}

/// `run`: measure the matrix. Phases: read the flags (and the run to resume), probe the
/// server, prepare the results directory and plan, drive the matrix, write the reports.
pub async fn run(args: RunArgs) -> Result<Exit> {
    let args = args.merge_file()?;
    let formats = args
        .format
        .clone()
        .map_or_else(|| llmib_report::Format::ALL.to_vec(), |f| f.0);
    // Flags are checked before the server is contacted: a typo should not wait for a probe.
    let mut settings = args.settings()?;
    let events = args.events.as_deref().map(EventsFile::create).transpose()?;
    // Bound before the probe: an address in use is said now, not after the probe.
    let metrics = match &args.metrics_listen {
        Some(addr) => Some(crate::live::metrics_listen::start(addr).await?),
        None => None,
    };
    let resumed = resumed_run(&args, &mut settings)?;
    let (url, probe) = probe_server(&args, &settings, resumed.as_ref().map(|r| &r.0)).await?;
    check_inputs(&settings, &probe).await?;
    let facts = machine_facts(&args, &url, resumed.is_some()).await;
    let Prepared {
        dir,
        plan,
        mut info,
        done,
        engine,
        model,
    } = match resumed {
        Some((r, notes)) => prepare_resume(&args, settings, r, notes, probe)?,
        None => prepare_new(&args, settings, &url, probe, facts)?,
    };
    dir.write_info(&info)?;
    errln!("results: {}", dir.path().display());

    let display = llmib_dashboard::resolve(args.display);
    let reader = Arc::clone(&engine);
    let end = crate::live::drive::drive(crate::live::drive::Drive {
        engine,
        model,
        plan: &plan,
        dir: &dir,
        done,
        info: &info,
        display,
        monitor: args.monitor()?,
        server_local: is_loopback(&url),
        events,
        metrics: metrics.as_ref().map(|m| m.sink.clone()),
    })
    .await;
    // `metrics` goes down with the run, once its reports are written (`MetricsListen::finish`).
    info.finished_at = Some(now_rfc3339());
    info.notes.extend(raw_reader_note(&reader));
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            // The store failed (a full disk): say so in run.json where it can still be written,
            // so the run is not left `running`.
            info.state = RunState::Aborted;
            let _ = dir.write_info(&info);
            return Err(e);
        }
    };
    info.state = match &end {
        MatrixEnd::Completed | MatrixEnd::BudgetSpent => RunState::Completed,
        MatrixEnd::Interrupted => RunState::Interrupted,
        MatrixEnd::ServerGone(_) => RunState::Aborted,
    };
    dir.write_info(&info)?;
    write_reports(&dir, &formats, display != DisplayMode::Json);
    if let Some(m) = metrics {
        m.finish().await;
    }
    exit_of(end, &dir)
}

/// What is read and checked against the probed server before anything is sent or saved: the
/// open-load workload, a session replay's file (a typo in its path would otherwise fail the
/// replay's row after the whole matrix) and the LoRA adapters (each one the server lists).
async fn check_inputs(settings: &Settings, probe: &llmib_client::Probe) -> Result<()> {
    crate::config::workload_check::check(settings.load.as_ref(), &probe.engine).await?;
    crate::config::workload_check::check_replay(
        settings.sessions.as_ref().and_then(|s| s.replay.as_deref()),
        probe.engine.api().is_conversation(),
        settings.shard.is_some(),
    )?;
    if let Some(l) = &settings.lora {
        l.check_served(&probe.served_models)?;
    }
    Ok(())
}

/// What the raw reader's kernel timestamps did over the run (`--http-reader raw`, or `auto` on
/// an `http://` URL): how many
/// reads had one, and how far they moved the chunk instants from the user-space reads (the
/// client's lateness that the lateness probe only estimates).
fn raw_reader_note(engine: &Engine) -> Option<String> {
    let s = engine.raw_reader_stats()?;
    let fallback = s.pieces - s.kernel_pieces;
    let mut note = format!(
        "raw reader: {} of {} body reads carried the kernel's receive time; it put chunk instants {:.0} µs before the user-space reads on average ({:.0} µs at most)",
        s.kernel_pieces,
        s.pieces,
        s.mean_correction_ms * 1e3,
        s.max_correction_ms * 1e3
    );
    if fallback > 0 {
        note.push_str(&format!(
            "; {fallback} reads had none and keep their user-space instant"
        ));
    }
    Some(note)
}

/// The exit code of a driven run, with the line that explains a failure.
fn exit_of(end: MatrixEnd, dir: &RunDir) -> Result<Exit> {
    Ok(match end {
        MatrixEnd::Completed | MatrixEnd::BudgetSpent => {
            let (rows, _) = dir.load_cells()?;
            match every_measured_cell_failed(&rows) {
                Some(first) => {
                    errln!(
                        "error: every measured cell failed (first error: {}); results are in {}",
                        terminal_line(&first),
                        dir.path().display()
                    );
                    Exit::AllFailed
                }
                None => match nothing_measured(&rows) {
                    Some(why) => {
                        errln!(
                            "error: the run measured nothing ({}); its rows are in {}",
                            terminal_line(&why),
                            dir.path().display()
                        );
                        Exit::NothingMeasured
                    }
                    None => Exit::Ok,
                },
            }
        }
        MatrixEnd::Interrupted => Exit::Interrupted,
        MatrixEnd::ServerGone(why) => {
            errln!(
                "error: {why}; results so far are in {} (finish later with --resume)",
                dir.path().display()
            );
            Exit::ServerGone
        }
    })
}

/// A run ready to drive.
struct Prepared {
    dir: RunDir,
    plan: Plan,
    info: RunInfo,
    /// Cells already measured (resume).
    done: HashSet<CellKey>,
    engine: Arc<Engine>,
    model: String,
}

/// The API a new run asks the probe for: `--api`'s, where it names one; under `auto`, chat for
/// a run with images (a completion prompt has no image part), else the probe's choice.
fn asked_api(args: &RunArgs, settings: &Settings) -> Option<llmib_core::Api> {
    let images = settings.images.as_ref().map(|_| llmib_core::Api::Chat);
    args.api.and_then(config::ApiArg::choice).or(images)
}

/// Probes the server named by the flags (or by the run being resumed). What the run decided
/// (endpoint, EOS, targeting, local tokenizer) goes in with the probe's options, so the engine
/// comes back complete; on resume, the saved run's choices are passed as decided.
async fn probe_server(
    args: &RunArgs,
    settings: &Settings,
    resumed: Option<&LoadedRun>,
) -> Result<(String, llmib_client::Probe)> {
    let url = args
        .url
        .clone()
        .or_else(|| resumed.map(|r| r.info.url.clone()))
        .context("no server URL: pass --url http://host:port (or set OPENAI_BASE_URL)")?;
    let local_tokenizer = match &settings.tokenizer_file {
        Some(path) => Some(Arc::new(LocalTokenizer::load(path)?)),
        None => None,
    };
    let saved = resumed.map(|r| &r.info);
    let opts = ProbeOptions {
        base_url: url.clone(),
        api_key: args.api_key.clone(),
        model: args
            .model
            .clone()
            .or_else(|| saved.map(|i| i.model.served_model.clone())),
        engine: args.engine.map(Into::into),
        // A capacity override of the saved run stays with it.
        kv_capacity: args.kv_capacity.or_else(|| {
            saved
                .and_then(|i| i.engine.kv_capacity_tokens.as_ref())
                .filter(|k| k.source == "--kv-capacity")
                .map(|k| k.value)
        }),
        dcp_size: args
            .dcp_size
            .or_else(|| saved.and_then(|i| i.engine.dcp_size)),
        timeout: Duration::from_secs(10),
        api: match saved {
            Some(_) => Some(settings.api),
            None => asked_api(args, settings),
        },
        targeting: match saved {
            Some(_) => Some(settings.token_targeting),
            None => args
                .prompts
                .token_targeting
                .and_then(config::TargetingArg::choice),
        },
        respect_eos: settings.respect_eos,
        save_texts: settings.save_texts,
        local_tokenizer,
        request: settings.request.clone(),
        key_header: args.api_key_header.map(Into::into),
    };
    // A control the API has no key for is refused before anything is sent.
    if let Some(refused) = opts.api.and_then(|a| settings.request.refused_on(a)) {
        bail!("{refused}");
    }
    let mut probe = Engine::probe(&opts).await?;
    // `--api auto` resolved by the probe: a structured flag it cannot carry is refused too.
    if let Some(refused) = settings.request.refused_on(probe.engine.api()) {
        bail!("{refused}");
    }
    // The run's own choice, per call: a resumed run reads as this invocation says.
    let set = match args.http_reader.unwrap_or_default() {
        config::HttpReaderArg::Auto => probe
            .engine
            .set_http_reader_auto(opts.timeout, llmib_client::http_proxy_var())
            .map(drop),
        config::HttpReaderArg::Reqwest => probe
            .engine
            .set_http_reader(llmib_client::HttpReader::Reqwest, opts.timeout),
        config::HttpReaderArg::Raw => probe
            .engine
            .set_http_reader(llmib_client::HttpReader::Raw, opts.timeout),
    };
    if let Err(e) = set {
        bail!("{e}");
    }
    Ok((url, probe))
}

/// Resume: the plan comes from the interrupted run, with the settings [`crate::config::resume::decide`]
/// allowed to change (noted); cells it measured are skipped.
fn prepare_resume(
    args: &RunArgs,
    settings: Settings,
    r: LoadedRun,
    resume_notes: Vec<String>,
    probe: llmib_client::Probe,
) -> Result<Prepared> {
    let dir = args.resume.clone().context("resume directory")?;
    let aborted = r.info.state == RunState::Aborted;
    let done: HashSet<_> = r
        .cells
        .iter()
        .filter(|c| !measure_again_on_resume(c, aborted, args.retry_failed))
        .map(|c| c.key())
        .collect();
    let mut info = r.info;
    info.state = RunState::Running;
    info.finished_at = None;
    info.notes.push(format!("resumed at {}", now_rfc3339()));
    info.notes.extend(resume_notes);
    let mut plan = info.plan.clone();
    plan.settings = Settings {
        prompt_seed: settings.prompt_seed.max(1),
        ..settings
    };
    info.plan = plan.clone();
    let model = probe.engine.model().served_model.clone();
    Ok(Prepared {
        dir: RunDir::create(dir)?,
        plan,
        info,
        done,
        engine: Arc::new(probe.engine),
        model,
    })
}

/// A new run: the plan from the flags and what the server said, and the run's metadata.
fn prepare_new(
    args: &RunArgs,
    mut settings: Settings,
    url: &str,
    probe: llmib_client::Probe,
    facts: MachineFacts,
) -> Result<Prepared> {
    let engine = probe.engine;
    settings.api = engine.api();
    settings.token_targeting = engine.targeting();
    if settings.token_targeting == llmib_core::Targeting::Ids {
        let refused = llmib_core::ids_refusal(
            engine.api(),
            engine.info().capabilities.token_id_prompts,
            engine.has_tokenizer(),
            settings.prompt_text.is_some(),
        );
        if let Some(why) = refused {
            bail!("{why}");
        }
    }
    // A shard's decode ramps are sized by what the server caches (the plan then says so, and
    // its hash sees it): known only now.
    if let Some(t) = settings.timetable.as_mut() {
        t.cached_prompt_block_tokens = engine.cached_prompt_block_tokens();
    }
    let info_engine = engine.info().clone();
    let context_length = info_engine
        .context_length
        .as_ref()
        .map(|s: &Sourced<u64>| s.value);
    let kv = info_engine.kv_capacity_tokens.as_ref().map(|s| s.value);
    if settings.contexts.is_empty() {
        bail!("no contexts to run");
    }
    settings.prompt_seed = settings.prompt_seed.max(1);
    // The 8K sanity prefill is a default, not a request: on a server too small for it, it is
    // neither planned nor listed as dropped.
    if args.prefill_contexts.is_none() && settings.standard.is_none() {
        settings.prefill_contexts = llmib_core::default_prefill_contexts(context_length);
    }
    let plan = Plan::build(settings, context_length, kv);
    if plan.contexts.is_empty() {
        bail!(
            "none of the requested contexts fits the server's context length ({}); pass smaller --contexts",
            context_length.map_or("unknown".into(), |c| c.to_string())
        );
    }
    let out = args.output.clone().unwrap_or_else(|| default_output("run"));
    let dir = RunDir::create_new(out, args.force)?;
    let info = run_info(args, url, &engine, &plan, probe.notes, facts)?;
    let model = engine.model().served_model.clone();
    Ok(Prepared {
        dir,
        // With the GPU count run.json's hardware gives (`run_info`).
        plan: info.plan.clone(),
        info,
        done: HashSet::new(),
        engine: Arc::new(engine),
        model,
    })
}

/// What `run.json` says of a new run: server, engine, model, hardware, launch command (secrets
/// redacted), plan, notes and startup diagnostics (their strings redacted with the rest: the key
/// may sit in an environment value too short to look like one).
fn run_info(
    args: &RunArgs,
    url: &str,
    engine: &Engine,
    plan: &Plan,
    probe_notes: Vec<String>,
    facts: MachineFacts,
) -> Result<RunInfo> {
    let MachineFacts { diagnostics, local } = facts;
    let probed_launch = engine.launch_command().map(str::to_string);
    let hardware = match &args.hardware {
        _ if args.hardware_info.is_some() => args.hardware_info.clone().unwrap_or_default(),
        Some(h) => llmib_client::parse_hardware_override(h)
            .map_err(|e| anyhow::anyhow!("--hardware: {}", e.0))?,
        // Local facts describe the server only when it runs on this machine.
        None if is_loopback(url) => local.unwrap_or_else(llmib_client::detect_local),
        None => Default::default(),
    };
    // The cost figures' GPU count when --gpus is not given: the server's machine's.
    let mut plan = plan.clone();
    plan.settings.economics.gpus_detected = hardware.gpu_count;
    let (launch_command, launch_command_source) = match (&args.launch_command, &probed_launch) {
        (Some(c), _) => (
            Some(redact_command(c)),
            Some("--launch-command".to_string()),
        ),
        (None, Some(c)) => (
            Some(redact_command(c)),
            Some(format!("{} server info", engine.kind().name())),
        ),
        (None, None) => (None, None),
    };
    // Dropped contexts are the plan's (`plan.dropped_contexts`), which every report lists: not
    // notes again.
    let mut notes: Vec<String> = probe_notes;
    if plan.kv_capacity_tokens.is_none() {
        notes.push("KV capacity unknown: no cell was predicted Over capacity; queueing is detected instead".into());
    }
    // The prompt text is no part of run.json (only its source), so the redaction's round trip
    // through JSON drops it: kept here and put back for the cells of this process.
    let text = plan
        .settings
        .prompt_text
        .as_ref()
        .and_then(|p| p.text.clone());
    let info = RunInfo {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::current(),
        state: RunState::Running,
        started_at: now_rfc3339(),
        finished_at: None,
        url: llmib_core::strip_url_userinfo(url),
        engine: engine.info().clone(),
        model: engine.model().clone(),
        hardware,
        launch_command,
        launch_command_source,
        plan,
        notes,
        diagnostics,
        sweep: args.sweep_member.clone(),
    };
    let mut info = redacted_info(info, &engine.secrets())?;
    if let Some(p) = info.plan.settings.prompt_text.as_mut() {
        p.text = text;
    }
    Ok(info)
}

/// The run's header with every string through `redact_text`: hardware names given by flag, the
/// launch command, the server's version and notes may all hold the key given by flag, env or
/// URL. A round trip through JSON reaches every field, present or added later.
fn redacted_info(info: RunInfo, secrets: &[&str]) -> Result<RunInfo> {
    let mut v = serde_json::to_value(&info).context("run.json header")?;
    llmib_core::redact_strings(&mut v, secrets);
    serde_json::from_value(v).context("run.json header after redaction")
}

/// Prints the tables (unless stdout is for JSON events) and writes the report files; a report
/// that fails is a warning, since the results are saved.
fn write_reports(dir: &RunDir, formats: &[llmib_report::Format], tables: bool) {
    match llmib_report::render(dir.path(), llmib_report::Format::Markdown) {
        // With `--display json` stdout holds only events.
        Ok(_) if !tables => {}
        Ok(md) => {
            // The tables hold the server's model name, version, launch command and errors: one
            // sanitised line each, a runaway string cut (report.md keeps it whole).
            outln!();
            for line in md.lines() {
                outln!("{}", terminal_line(line));
            }
        }
        Err(e) => errln!("warning: cannot print the tables: {e}"),
    }
    if !formats.is_empty() {
        match llmib_report::write_reports(dir.path(), formats, None) {
            Ok(paths) => {
                for p in paths {
                    errln!("wrote {}", p.display());
                }
            }
            Err(e) => errln!(
                "warning: the report could not be written ({e}); the results are saved in {}",
                dir.path().display()
            ),
        }
    }
}

/// What a new run whose server runs on this machine records of the machine.
#[derive(Default)]
struct MachineFacts {
    /// The startup diagnostics (the rule of the Hardware card).
    diagnostics: Option<Diagnostics>,
    /// The hardware `run.json` describes, where no flag gives it.
    local: Option<HardwareInfo>,
}

/// The machine's facts for a new run whose server runs here: none for a remote server, a
/// resumed run (it keeps its own) or the demo's simulator (its card describes no machine); the
/// hardware only where no flag gives it. Both are gathered at once: each runs `nvidia-smi`
/// (hundreds of milliseconds on a GPU server) and the first request waits for them (issue 44).
async fn machine_facts(args: &RunArgs, url: &str, resuming: bool) -> MachineFacts {
    if resuming || args.hardware_info.is_some() || !is_loopback(url) {
        return MachineFacts::default();
    }
    let local = async {
        if args.hardware.is_some() {
            return None;
        }
        tokio::task::spawn_blocking(llmib_client::detect_local)
            .await
            .ok()
    };
    let (diagnostics, local) = tokio::join!(llmib_client::gather_diagnostics(), local);
    MachineFacts {
        diagnostics: Some(diagnostics),
        local,
    }
}

/// Whether the URL's host is this machine.
fn is_loopback(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    matches!(host, "localhost" | "127.0.0.1" | "[" | "0.0.0.0")
        || host.starts_with("127.")
        || rest.starts_with("[::1]")
}
