//! `--resume`: the saved run's settings are the base, and no setting given again is dropped
//! silently. A setting that only governs how the run proceeds (a timeout, the time budget,
//! which cells to retry, what is kept) is applied and noted in `run.json`; one that would
//! change what is measured (the matrix, the window, the output length, the endpoint, the
//! model, the server's description) is refused with a message that names it, since the
//! resumed cells must be comparable with the saved ones.

use crate::config::RunArgs;
use anyhow::{Result, bail};
use llmib_core::EngineKind;
use llmib_core::RunInfo;
use llmib_core::redact_command;
use llmib_core::{Api, Settings};
use std::fmt::Debug;
use std::path::Path;

/// The settings a resumed run goes on with, and what changed in them.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    /// The saved settings with the changes that may be made on resume.
    pub settings: Settings,
    /// One line per change, for `run.json`'s notes.
    pub notes: Vec<String>,
}

/// Seconds, shown as a duration.
#[derive(Clone, Copy, PartialEq)]
struct Secs(f64);

impl Debug for Secs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}s", self.0)
    }
}

/// A setting that would change the measurement: given again, it must equal the saved one.
fn fixed<T: PartialEq + Debug>(flag: &str, given: Option<T>, saved: T) -> Result<()> {
    match given {
        Some(g) if g != saved => bail!(
            "--{flag} {g:?} differs from the resumed run's {saved:?}: it would change what the \
             run measures; resume without --{flag}, or start a new run"
        ),
        _ => Ok(()),
    }
}

/// A setting that may change on resume: applied, and noted when it differs.
fn changeable<T: PartialEq + Debug>(
    flag: &str,
    given: Option<T>,
    slot: &mut T,
    notes: &mut Vec<String>,
) {
    if let Some(g) = given
        && g != *slot
    {
        notes.push(format!("--{flag} changed on resume: {slot:?} → {g:?}"));
        *slot = g;
    }
}

/// Decides the settings of a resumed run from the saved run `saved` (in `dir`) and the
/// settings given now (`args`: flags, environment and config file merged), with `url` the
/// server as given now (credentials stripped). Pure.
pub fn decide(saved: &RunInfo, args: &RunArgs, dir: &Path, url: Option<&str>) -> Result<Resumed> {
    classified(args);
    refuse_changed_measurement(saved, args, dir)?;
    refuse_changed_price(&saved.plan.settings, args)?;
    let (settings, mut notes) = apply_changes(&saved.plan.settings, args);
    if let Some(u) = url
        && u != saved.url
    {
        notes.push(format!(
            "resumed against {u} (the run began at {})",
            saved.url
        ));
    }
    Ok(Resumed { settings, notes })
}

/// Every field of [`RunArgs`], by what resume does with it: a new field does not compile
/// until it is put in one class and handled there. One class a paragraph (hence unformatted:
/// a field a line would hide the classes in a page of names).
#[rustfmt::skip]
fn classified(args: &RunArgs) {
    let RunArgs {
        // Fixed: `refuse_changed_measurement` refuses another value.
        model: _, standard: _, engine: _, contexts: _, concurrency: _, duration: _,
        max_output: _, kv_capacity: _, dcp_size: _, hardware: _, launch_command: _,
        sweep_member: _, output: _, force: _, api: _, request_count: _,
        burst_warmup_request_count: _, run_burst: _, burst_requests_per_concurrency: _,
        prefill_metric: _, skip_prefill: _, prefill_only: _, prefill_contexts: _,
        standalone_prefill: _, serial_server: _, respect_eos: _, request_rate: _, arrival: _,
        slo: _, percentiles: _, find_capacity: _, capacity_precision: _, max_concurrency: _, drain_timeout: _,
        skip_decode: _, input_len: _, output_len: _, workload: _, time_scale: _, session: _,
        mixed: _, probe: _, temperature: _, top_p: _, seed: _, extra_body: _,
        forced_token_id: _, no_loop_detection: _, max_total_tokens: _,
        show_capacity_limited_values: _, cost: _, lora: _, images: _, structured: _,
        // Its text: the same file again (`prompt_args::resumed`, from run_cmd).
        prompts: _,
        // Refused: a shard's timetable has passed.
        sharding: _,
        // Changeable: `apply_changes` (and the URL note in `decide`).
        url: _, max_time: _, decode_warmup_seconds: _, until_stable: _, readiness_timeout: _,
        first_token_timeout: _, idle_timeout: _, busy_timeout: _, save_requests: _, save_texts: _,
        tokenizer: _, retry_failed: _,
        // Per call: not saved with the run.
        api_key: _, api_key_header: _, config: _, resume: _, format: _, display: _,
        no_hw_monitor: _, hw_monitor_interval: _, hw_gpu_limit: _, refresh_rate: _,
        http_reader: _, events: _, metrics_listen: _, hardware_info: _,
    } = args;
}

/// Refuses a setting given again with another value than the saved run measured with.
fn refuse_changed_measurement(saved: &RunInfo, a: &RunArgs, dir: &Path) -> Result<()> {
    let s = &saved.plan.settings;
    if a.force {
        bail!("--force replaces a run and --resume continues one: pass only one of them");
    }
    if s.shard.is_some() || a.sharding.shard.is_some() {
        bail!(
            "a shard cannot be resumed: its timetable has passed and the other shards went on; run every shard again with a new --start-at"
        );
    }
    fixed("output", a.output.as_deref(), dir)?;
    fixed(
        "model",
        a.model.as_deref(),
        saved.model.served_model.as_str(),
    )?;
    let kind = a.engine.map(|e| Some(EngineKind::from(e)));
    fixed("engine", kind, saved.engine.kind)?;
    fixed("standard", a.standard.clone().map(Some), s.standard.clone())?;
    fixed(
        "contexts",
        a.contexts.clone().map(|c| c.0),
        s.contexts.clone(),
    )?;
    let levels = a.concurrency.clone().map(|c| c.0);
    fixed("concurrency", levels, s.concurrency.clone())?;
    let window = a.duration.map(|d| Secs(d.as_secs_f64()));
    fixed("duration", window, Secs(s.duration_s))?;
    fixed("max-output", a.max_output, s.max_output)?;
    let kv = a.kv_capacity.map(Some);
    fixed("kv-capacity", kv, saved.plan.kv_capacity_tokens)?;
    fixed("dcp-size", a.dcp_size.map(Some), saved.engine.dcp_size)?;
    // `auto` chose by the same server when the run began.
    let auto_api = match saved.engine.kind {
        Some(EngineKind::Generic) | None => Api::Chat,
        Some(_) => Api::Completions,
    };
    fixed("api", a.api.map(|x| x.choice().unwrap_or(auto_api)), s.api)?;
    let targeting = a.prompts.token_targeting.and_then(|t| t.choice());
    fixed("token-targeting", targeting, s.token_targeting)?;
    refuse_changed_cells(s, a)?;
    let launch = a.launch_command.as_deref().map(redact_command);
    fixed(
        "launch-command",
        launch,
        saved.launch_command.clone().unwrap_or_default(),
    )?;
    fixed(
        "sweep-member",
        a.sweep_member.clone().map(Some),
        saved.sweep.clone(),
    )?;
    if let Some(h) = &a.hardware {
        let h = llmib_client::parse_hardware_override(h)
            .map_err(|e| anyhow::anyhow!("--hardware: {}", e.0))?;
        fixed("hardware", Some(h), saved.hardware.clone())?;
    }
    Ok(())
}

/// Refuses a price or GPU count other than the saved run's: its rows' cost figures used them,
/// and the rest must compare with them.
fn refuse_changed_price(s: &Settings, a: &RunArgs) -> Result<()> {
    let (c, e) = (&a.cost, &s.economics);
    fixed("gpu-hour-usd", c.gpu_hour_usd.map(Some), e.gpu_hour_usd)?;
    fixed("node-hour-usd", c.node_hour_usd.map(Some), e.node_hour_usd)?;
    fixed("gpus", c.gpus.map(Some), e.gpus)
}

/// Refuses a change of which cells a context has: bursts, prefill profiles, single-flight,
/// EOS, open load.
fn refuse_changed_cells(s: &Settings, a: &RunArgs) -> Result<()> {
    let burst_given = a.request_count.is_some()
        || a.burst_warmup_request_count.is_some()
        || a.run_burst
        || a.burst_requests_per_concurrency.is_some();
    let burst = burst_given.then(|| a.burst()).transpose()?;
    fixed("request-count / --run-burst", burst, s.burst)?;
    let metric = a.prefill_metric.map(Into::into);
    fixed("prefill-metric", metric, s.prefill_metric)?;
    // Rows summarised with other percentiles would not line up with the saved ones.
    let percentiles = a.percentiles.as_ref().map(|p| p.0.as_slice());
    fixed("percentiles", percentiles, s.percentiles.as_slice())?;
    fixed(
        "skip-prefill",
        a.skip_prefill.then_some(true),
        s.skip_prefill,
    )?;
    fixed(
        "prefill-only",
        a.prefill_only.then_some(true),
        s.prefill_only,
    )?;
    let extra = a.prefill_contexts.clone().map(|c| c.0);
    fixed("prefill-contexts", extra, s.prefill_contexts.clone())?;
    fixed(
        "standalone-prefill",
        a.standalone_prefill,
        s.prefill_repeats,
    )?;
    fixed(
        "serial-server",
        a.serial_server.then_some(true),
        s.serial_server,
    )?;
    fixed("respect-eos", a.respect_eos.then_some(true), s.respect_eos)?;
    fixed(
        "no-loop-detection",
        a.no_loop_detection.then_some(false),
        s.loop_detection,
    )?;
    let controls_given = a.temperature.is_some()
        || a.top_p.is_some()
        || a.seed.is_some()
        || a.extra_body.is_some()
        || a.forced_token_id.is_some();
    // The structured flags are compared apart (`refuse_changed_structured`), so a control
    // given again without them is compared with the saved controls' own structured keys.
    let controls = controls_given
        .then(|| a.request_controls())
        .transpose()?
        .map(|c| llmib_core::RequestControls {
            structured: s.request.structured.clone(),
            ..c
        });
    fixed(
        "temperature / --top-p / --seed / --extra-body / --forced-token-id",
        controls,
        s.request.clone(),
    )?;
    fixed(
        "max-total-tokens",
        a.max_total_tokens.map(Some),
        s.max_total_tokens,
    )?;
    fixed(
        "show-capacity-limited-values",
        a.show_capacity_limited_values.then_some(true),
        s.measure_over_capacity,
    )?;
    let load_given = a.request_rate.is_some() || a.find_capacity || a.workload.is_some();
    let load = load_given.then(|| a.load()).transpose()?;
    fixed(
        "request-rate / --find-capacity / --slo / --workload / --input-len / --output-len / --time-scale",
        load,
        s.load.clone(),
    )?;
    refuse_changed_structured(s, a)?;
    refuse_changed_sections(s, a)
}

/// Refuses another schema, tools file or choice (by the files' sha256): the answers would be
/// checked against something else than the saved rows'.
fn refuse_changed_structured(s: &Settings, a: &RunArgs) -> Result<()> {
    let given = a
        .structured
        .given()
        .then(|| a.structured.spec(None))
        .transpose()?;
    let print = |s: &llmib_core::StructuredSpec| {
        let format = s.response_format.as_ref().map(|f| match f {
            llmib_core::ResponseFormat::JsonObject => "json_object".to_string(),
            llmib_core::ResponseFormat::JsonSchema { sha256, .. } => format!("sha256 {sha256}"),
        });
        (format, s.tools_sha256.clone(), s.tool_choice.clone())
    };
    fixed(
        "response-format / --tools / --tool-choice",
        given.map(|g| g.as_ref().map(print)),
        s.request.structured.as_ref().map(print),
    )
}

/// Refuses a change of the sections after the matrix (sessions, mixed prefill) and of the
/// probes beside its cells.
fn refuse_changed_sections(s: &Settings, a: &RunArgs) -> Result<()> {
    let sessions = a
        .sessions_mode()
        .then(|| a.session_settings())
        .transpose()?;
    fixed(
        "sessions / --turns / --turn-input-len / --turn-output-len / --system-prompt-len / --think-time / --flush-cache",
        sessions,
        s.sessions.clone(),
    )?;
    let probe_given = a.probe.probe_rate.is_some()
        || a.probe.probe_input_len.is_some()
        || a.probe.probe_output_len.is_some();
    let probe = probe_given.then(|| a.probe.settings()).transpose()?;
    fixed(
        "probe-rate / --probe-input-len / --probe-output-len",
        probe,
        s.probe,
    )?;
    // The adapters and their assignment; the random seed stays the saved run's.
    let lora = a
        .lora
        .given()
        .map(|(names, how)| Some((names, how.unwrap_or_default())));
    let saved_lora = s.lora.as_ref().map(|l| (l.adapters.clone(), l.assign));
    fixed("lora / --lora-assign", lora, saved_lora)?;
    // The images' count, sizes and format; their seed stays the saved run's.
    let saved_images = s
        .images
        .as_ref()
        .map(|i| (i.per_request, i.sizes.clone(), i.format));
    let images = a.images.images.map(|_| a.images.given());
    fixed(
        "images / --image-size / --image-format",
        images,
        saved_images,
    )?;
    let m = &a.mixed;
    let mixed_given = m.mixed_prefill.is_some()
        || m.mixed_concurrency.is_some()
        || m.mixed_context.is_some()
        || m.mixed_span.is_some();
    let mixed = mixed_given.then(|| m.settings()).transpose()?;
    fixed(
        "mixed-prefill / --mixed-concurrency / --mixed-context / --mixed-span",
        mixed,
        s.mixed_prefill.clone(),
    )?;
    Ok(())
}

/// The saved settings with the changes resume allows, and a note for each.
fn apply_changes(saved: &Settings, a: &RunArgs) -> (Settings, Vec<String>) {
    let mut settings = saved.clone();
    let mut notes = Vec::new();
    let secs = |d: Option<std::time::Duration>| d.map(|d| Secs(d.as_secs_f64()));
    let mut budget = settings.max_time_s.map(Secs);
    changeable(
        "max-time",
        secs(a.max_time).map(Some),
        &mut budget,
        &mut notes,
    );
    settings.max_time_s = budget.map(|b| b.0);
    let mut first = settings.first_token_timeout_s.map(Secs);
    let given = secs(a.first_token_timeout).map(Some);
    changeable("first-token-timeout", given, &mut first, &mut notes);
    settings.first_token_timeout_s = first.map(|f| f.0);
    for (flag, given, slot) in [
        (
            "readiness-timeout",
            a.readiness_timeout,
            &mut settings.readiness_timeout_s,
        ),
        ("idle-timeout", a.idle_timeout, &mut settings.idle_timeout_s),
        ("busy-timeout", a.busy_timeout, &mut settings.busy_timeout_s),
    ] {
        let mut v = Secs(*slot);
        changeable(flag, secs(given), &mut v, &mut notes);
        *slot = v.0;
    }
    // A hidden warm-up measures nothing, so the resumed part may warm up differently.
    let mut warmup = Secs(settings.decode_warmup_s);
    let given = a
        .decode_warmup_s()
        .ok()
        .filter(|_| a.decode_warmup_seconds.is_some());
    changeable(
        "decode-warmup-seconds",
        given.map(Secs),
        &mut warmup,
        &mut notes,
    );
    settings.decode_warmup_s = warmup.0;
    // How long a cell runs, not what it measures: the rest may stop earlier or later.
    let target = a.until_stable.map(Some);
    changeable(
        "until-stable",
        target,
        &mut settings.until_stable,
        &mut notes,
    );
    let keep = (a.save_requests || a.save_texts).then_some(true);
    changeable(
        "save-requests",
        keep,
        &mut settings.save_requests,
        &mut notes,
    );
    let texts = a.save_texts.then_some(true);
    changeable("save-texts", texts, &mut settings.save_texts, &mut notes);
    let tokenizer = a.tokenizer.clone().map(Some);
    changeable(
        "tokenizer",
        tokenizer,
        &mut settings.tokenizer_file,
        &mut notes,
    );
    if a.retry_failed {
        notes.push("--retry-failed on resume: failed cells are measured again".into());
    }
    (settings, notes)
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
