//! The `run` flags checked into what the run is given: the matrix's [`Settings`], the request
//! controls, and the hardware monitor's and the dashboard's pace ([`Monitor`]). Apart from
//! config.rs, which defines the flags and merges their sources.

use crate::config::RunArgs;
use anyhow::{Result, bail};
use llmib_core::{ContextSpec, Settings};
use std::time::Duration;

/// The hardware monitor's and the dashboard's pace (`--no-hw-monitor`,
/// `--hw-monitor-interval`, `--hw-gpu-limit`, `--refresh-rate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Monitor {
    /// Read this machine's GPUs and CPU at all.
    pub on: bool,
    /// How often.
    pub interval: Duration,
    /// Only the first N GPUs.
    pub gpu_limit: Option<usize>,
    /// The dashboard's redraw period.
    pub frame: Duration,
}

impl RunArgs {
    /// Checks the matrix settings into [`Settings`] (the endpoint and the targeting are the
    /// probe's to decide; a fresh prompt seed is drawn).
    pub fn settings(&self) -> Result<Settings> {
        let mut s = self.free_settings()?;
        if let Some(version) = &self.standard {
            self.standard_into(version, &mut s)?;
        }
        Ok(s)
    }

    /// `--standard VERSION` over `s`: the flags it fixes may not be given too (a run that
    /// changed one would not compare with the others it is meant to).
    fn standard_into(&self, version: &str, s: &mut Settings) -> Result<()> {
        let m = llmib_core::standard_matrix(version)?;
        let given = [
            ("--contexts", self.contexts.is_some()),
            ("--concurrency", self.concurrency.is_some()),
            ("--duration", self.duration.is_some()),
            ("--max-output", self.max_output.is_some()),
            ("--prefill-contexts", self.prefill_contexts.is_some()),
            ("--standalone-prefill", self.standalone_prefill.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            bail!(
                "--standard {version} fixes {flag}: drop it (or drop --standard for a free-form run)"
            );
        }
        m.apply(s);
        Ok(())
    }

    /// The settings of a free-form run (no `--standard`).
    fn free_settings(&self) -> Result<Settings> {
        if self.skip_prefill && self.prefill_only {
            bail!("--skip-prefill and --prefill-only exclude each other: keep one");
        }
        let d = Settings::default();
        let sharded = self.sharded(&|k| std::env::var(k).ok())?;
        if let Some(why) = sharded
            .as_ref()
            .and_then(|s| s.timetable.missed(llmib_core::unix_now_ns()))
        {
            bail!("{why}");
        }
        let prompt_seed = sharded.as_ref().map_or_else(fresh_seed, |s| s.prompt_seed);
        Ok(Settings {
            contexts: self.contexts.clone().map_or(d.contexts, |c| c.0),
            concurrency: self.concurrency.clone().map_or(d.concurrency, |c| c.0),
            duration_s: self.duration.map_or(d.duration_s, |t| t.as_secs_f64()),
            max_output: self.max_output.unwrap_or(d.max_output),
            max_time_s: self.max_time.map(|t| t.as_secs_f64()),
            readiness_timeout_s: secs_or(self.readiness_timeout, d.readiness_timeout_s),
            first_token_timeout_s: self.first_token_timeout.map(|t| t.as_secs_f64()),
            idle_timeout_s: secs_or(self.idle_timeout, d.idle_timeout_s),
            loop_detection: !self.no_loop_detection,
            busy_timeout_s: secs_or(self.busy_timeout, d.busy_timeout_s),
            // A merge recomputes every figure from the shards' records.
            save_requests: self.save_requests || self.save_texts || sharded.is_some(),
            save_texts: self.save_texts,
            // A grammar ends each answer where the model closes it: forcing a length would
            // contradict it, so structured requests end at EOS (docs/structured-output.md).
            respect_eos: self.respect_eos || self.structured.given(),
            serial_server: self.serial_server,
            skip_prefill: self.skip_prefill,
            prefill_only: self.prefill_only,
            tokenizer_file: self.tokenizer.clone(),
            prompt_text: self.prompts.source()?,
            prefill_metric: self.prefill_metric.unwrap_or_default().into(),
            prefill_repeats: match self.standalone_prefill {
                Some(0) => bail!("--standalone-prefill takes at least 1 prefill per context"),
                Some(k) => k,
                None => 1,
            },
            // The seed tool's sanity point: a prefill at 8K in every run (it merges with an
            // 8K decode context). Once the server's context length is known, a default that
            // does not fit is left out (`llmib_core::default_prefill_contexts`), never dropped.
            prefill_contexts: self.prefill_contexts.clone().map_or_else(
                || vec![ContextSpec::Tokens(llmib_core::DEFAULT_PREFILL_CONTEXT)],
                |c| c.0,
            ),
            burst: self.burst()?,
            load: self.load()?,
            sessions: self.session_settings()?,
            mixed_prefill: self.mixed.settings_for(sharded.is_some())?,
            probe: self.probe.settings()?,
            request: self.request_controls()?,
            max_total_tokens: self.max_total_tokens,
            measure_over_capacity: self.show_capacity_limited_values,
            decode_warmup_s: self.decode_warmup_s()?,
            until_stable: self.until_stable,
            prompt_seed,
            lora: self.lora.settings(prompt_seed)?,
            images: self.images.settings(
                self.api.and_then(crate::config::ApiArg::choice),
                prompt_seed,
            )?,
            shard: sharded.as_ref().map(|s| s.spec),
            timetable: sharded.map(|s| s.timetable),
            economics: self.cost.settings()?,
            percentiles: self.percentiles.clone().map(|p| p.0).unwrap_or_default(),
            ..d
        })
    }

    /// The hardware monitor's and the dashboard's pace.
    pub fn monitor(&self) -> Result<Monitor> {
        // Twice a second: a cell's telemetry shows a clock that dropped for a second.
        let interval = self
            .hw_monitor_interval
            .unwrap_or(Duration::from_millis(500));
        if interval < Duration::from_millis(100) {
            bail!("--hw-monitor-interval must be at least 100ms");
        }
        let hz = self.refresh_rate.unwrap_or(4.0);
        if !(1.0..=30.0).contains(&hz) {
            bail!("--refresh-rate takes 1 to 30 redraws per second");
        }
        if self.hw_gpu_limit == Some(0) {
            bail!("--hw-gpu-limit takes at least 1 (use --no-hw-monitor to read none)");
        }
        Ok(Monitor {
            on: !self.no_hw_monitor,
            interval,
            gpu_limit: self.hw_gpu_limit,
            frame: Duration::from_secs_f64(1.0 / hz),
        })
    }

    /// What every generation request carries beyond the tool's own keys.
    pub fn request_controls(&self) -> Result<llmib_core::RequestControls> {
        if let Some(t) = self.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            bail!("--temperature must be a number of 0 or more");
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            bail!("--top-p must be above 0 and at most 1");
        }
        if self.forced_token_id.is_some() && (self.temperature.is_some() || self.respect_eos) {
            bail!(
                "--forced-token-id sets temperature 0 and ignores EOS: drop --temperature and --respect-eos"
            );
        }
        if self.forced_token_id.is_some() && self.structured.given() {
            bail!(
                "--forced-token-id forces one token, which a schema or a tool call forbids: drop one"
            );
        }
        let extra_body = self.extra_body.clone().map(|e| e.0);
        Ok(llmib_core::RequestControls {
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
            structured: self.structured.spec(extra_body.as_ref())?,
            extra_body,
            forced_token_id: self.forced_token_id,
        })
    }

    /// `--decode-warmup-seconds`, checked: 0 (none) up to the longest duration any setting
    /// takes.
    pub fn decode_warmup_s(&self) -> Result<f64> {
        match self.decode_warmup_seconds {
            None => Ok(0.0),
            Some(s) if s.is_finite() && (0.0..=llmib_core::MAX_DURATION_S).contains(&s) => Ok(s),
            Some(s) => bail!(
                "--decode-warmup-seconds {s}: give a number of seconds from 0 (none) to 2592000"
            ),
        }
    }
}

fn secs_or(t: Option<Duration>, default_s: f64) -> f64 {
    t.map_or(default_s, |t| t.as_secs_f64())
}

/// A seed that differs between runs, so that no two runs share prompt prefixes (a server's
/// prefix cache must never serve one run's prompts to the next).
pub fn fresh_seed() -> u64 {
    llmib_core::unix_now_ns() ^ (u64::from(std::process::id()) << 32)
}
