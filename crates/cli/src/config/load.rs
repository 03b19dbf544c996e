//! The run's open-load and burst settings from its flags (`--request-rate`, `--arrival`,
//! `--slo`, `--find-capacity`, `--input-len`, `--workload`, `--run-burst`, …), checked: apart
//! from config.rs so the flag definitions keep room.

use crate::config::RunArgs;
use anyhow::{Result, bail};
use llmib_core::{ArrivalPattern, TimeScaleSpec};

impl RunArgs {
    /// The open-load settings, when `--request-rate`, `--find-capacity` or a trace asks for
    /// them.
    pub fn load(&self) -> Result<Option<llmib_core::LoadSettings>> {
        if self.sessions_mode() && self.workload.is_some() {
            // The workload is the sessions' replay (`config/sessions.rs`), not open load's.
            let rest = RunArgs {
                workload: None,
                time_scale: None,
                ..self.clone()
            };
            return rest.load();
        }
        let trace = self.workload.as_ref().is_some_and(|w| w.kind.is_trace());
        // With --sessions, --find-capacity searches sessions (`config/sessions.rs`).
        let sessions = self.sessions_mode();
        if sessions && self.find_capacity && (self.request_rate.is_some() || trace) {
            bail!(
                "--find-capacity searches either request rates or sessions: run the open load and the sessions as two runs"
            );
        }
        let asked = self.request_rate.is_some() || (self.find_capacity && !sessions) || trace;
        if !asked {
            let workload = self
                .workload
                .as_ref()
                .map(|w| format!("--workload {}:FILE", w.kind.name()));
            let stray = [
                (workload.as_deref().unwrap_or_default(), workload.is_some()),
                ("--input-len", self.input_len.is_some()),
                ("--output-len", self.output_len.is_some()),
                ("--time-scale", self.time_scale.is_some()),
                // Session rates take the arrival pattern too (`config/sessions.rs`).
                (
                    "--arrival",
                    self.arrival.is_some() && self.session.session_rate.is_none(),
                ),
                ("--max-concurrency", self.max_concurrency.is_some()),
                ("--drain-timeout", self.drain_timeout.is_some()),
                (
                    "--capacity-precision",
                    self.capacity_precision.is_some() && !sessions,
                ),
                ("--skip-decode", self.skip_decode),
            ];
            if let Some((flag, _)) = stray.iter().find(|(_, given)| *given) {
                bail!("{flag} applies to open load: add --request-rate R,… or --find-capacity");
            }
            return Ok(None);
        }
        if self.find_capacity && self.slo.is_none() {
            bail!(
                "--find-capacity needs an SLO to search for: add --slo, e.g. --slo ttft_p99=2s,tpot_p50=50ms"
            );
        }
        if self.max_concurrency == Some(0) {
            bail!("--max-concurrency takes at least 1");
        }
        self.check_workload(trace)?;
        Ok(Some(llmib_core::LoadSettings {
            rates: self.request_rate.clone(),
            arrival: self.arrival.unwrap_or(ArrivalPattern::Poisson),
            slo: self.slo.clone(),
            find_capacity: self.find_capacity,
            precision: self.capacity_precision.unwrap_or(0.05),
            max_concurrency: self.max_concurrency,
            drain_s: self.drain_timeout.map_or(120.0, |d| d.as_secs_f64()),
            skip_decode: self.skip_decode,
            input_len: self.input_len,
            output_len: self.output_len,
            workload: self.workload.clone(),
            time_scale: self.time_scale,
            prompts: self.prompts_source()?,
        }))
    }

    /// A `prompts:FILE` workload's file, read and checked now, before the server is contacted
    /// (a bad line is refused in one line naming the file and the line), as run.json records
    /// it: its name, prompts, size and sha256, never its text.
    fn prompts_source(&self) -> Result<Option<llmib_core::PromptsSource>> {
        match &self.workload {
            Some(w) if w.kind.is_texts() => read_prompts(w).map(|(_, source)| Some(source)),
            _ => Ok(None),
        }
    }

    /// The workload flags that exclude each other (`trace`: the workload is a trace).
    fn check_workload(&self, trace: bool) -> Result<()> {
        let prompts = self
            .workload
            .as_ref()
            .is_some_and(|w| w.kind == llmib_core::WorkloadKind::Prompts);
        if prompts && self.input_len.is_some() {
            bail!(
                "--workload prompts:FILE sends the file's prompts: drop --input-len (--output-len applies to lines without max_tokens)"
            );
        }
        if !prompts
            && self.workload.is_some()
            && (self.input_len.is_some() || self.output_len.is_some())
        {
            bail!("--workload gives the lengths: drop --input-len and --output-len");
        }
        if trace && (self.request_rate.is_some() || self.find_capacity) {
            bail!(
                "a trace brings its own arrivals: drop --request-rate and --find-capacity (replay faster with --time-scale K, or search with --time-scale auto --slo …)"
            );
        }
        if self.time_scale.is_some() && !trace {
            bail!("--time-scale applies to a trace: add --workload mooncake:FILE or azure:FILE");
        }
        if self.time_scale == Some(TimeScaleSpec::Auto) && self.slo.is_none() {
            bail!(
                "--time-scale auto searches for the SLO's limit: add --slo, e.g. --slo ttft_p99=2s"
            );
        }
        Ok(())
    }

    /// The Burst / E2E settings, when `--request-count` or `--run-burst` asks for them.
    pub fn burst(&self) -> Result<Option<llmib_core::BurstSettings>> {
        if self.request_count.is_none() && !self.run_burst {
            return Ok(None);
        }
        let positive = |v: Option<u32>, flag: &str| -> Result<Option<u32>> {
            match v {
                Some(0) => bail!("{flag} must be at least 1"),
                v => Ok(v),
            }
        };
        Ok(Some(llmib_core::BurstSettings {
            request_count: positive(self.request_count, "--request-count")?,
            requests_per_concurrency: positive(
                self.burst_requests_per_concurrency,
                "--burst-requests-per-concurrency",
            )?
            .unwrap_or(5),
            warmup_request_count: self.burst_warmup_request_count,
            replace_sustained: !self.run_burst,
        }))
    }
}

/// Reads a workload of texts (`prompts:FILE`, `sharegpt-text:FILE`): its prompts, checked line
/// by line (a ShareGPT file as JSON, its pairs chosen by their text alone), and its source with
/// the sha256 of its bytes (what run.json records; a resumed run compares it). A ShareGPT
/// reply's length is the server's count, taken when the section runs
/// (`llmib_client::load_texts`); here each asks 1, as only the file's identity is recorded.
pub fn read_prompts(
    spec: &llmib_core::WorkloadSpec,
) -> Result<(llmib_core::UserPrompts, llmib_core::PromptsSource)> {
    let file = spec.path.display().to_string();
    let kind = spec.kind.name();
    let format = match spec.kind {
        llmib_core::WorkloadKind::ShareGptText => "ShareGPT JSON",
        _ => "JSONL",
    };
    let bytes = std::fs::read(&spec.path).map_err(|e| {
        anyhow::anyhow!(
            "--workload {kind}:{file}: cannot read it ({e}); give the path of a {format} file (relative to the working directory)"
        )
    })?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "--workload {kind}:{file}: not UTF-8 text (invalid byte at offset {}); convert it to UTF-8",
            e.valid_up_to()
        )
    })?;
    let prompts = llmib_core::UserPrompts::parse_texts(spec, text, &|_| 1)?;
    let source = prompts.record(llmib_core::hex_sha256(&bytes));
    Ok((prompts, source))
}
