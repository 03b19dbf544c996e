//! The run's session settings from its flags (`--sessions`, `--turns`, `--turn-input-len`,
//! `--think-time`, …), checked: apart from config.rs so the flag definitions keep room.

use crate::config::RunArgs;
use anyhow::{Result, bail};
use llmib_core::{LengthSpec, SessionSettings, ThinkTime, TimeScaleSpec, WorkloadKind};

impl RunArgs {
    /// Whether the run has a session section: `--sessions`, `--session-rate`, or a session
    /// trace to replay.
    pub fn sessions_mode(&self) -> bool {
        self.session.sessions.is_some()
            || self.session.session_rate.is_some()
            || self
                .workload
                .as_ref()
                .is_some_and(|w| w.kind.is_session_trace())
    }

    /// A replay's file (`--workload sessions:FILE`, or `sharegpt:FILE` with `--session-rate`)
    /// and its time scale, checked.
    fn session_replay(&self) -> Result<(Option<String>, f64)> {
        let Some(w) = &self.workload else {
            if self.time_scale.is_some() && self.session.sessions.is_some() {
                bail!("--time-scale applies to a replay: add --workload sessions:FILE");
            }
            return Ok((None, 1.0));
        };
        let k = match self.time_scale {
            None => 1.0,
            Some(TimeScaleSpec::Factor(k)) => k,
            Some(TimeScaleSpec::Auto) => {
                bail!(
                    "--time-scale auto searches open load: give a session replay a factor, e.g. --time-scale 2"
                )
            }
        };
        match w.kind {
            _ if self.session.sessions.is_some() => {
                bail!("a replay's sessions come from its file: drop --sessions")
            }
            WorkloadKind::Sessions | WorkloadKind::Weka if self.session.session_rate.is_some() => {
                bail!(
                    "a session trace starts its sessions itself: drop --session-rate (replay faster with --time-scale K)"
                )
            }
            // Both ShareGPT kinds replay the recorded words: a session sends its turns' text.
            WorkloadKind::ShareGpt | WorkloadKind::ShareGptText
                if self.session.session_rate.is_none() =>
            {
                bail!("ShareGPT's conversations replay as sessions arriving at --session-rate R")
            }
            WorkloadKind::Sessions
            | WorkloadKind::Weka
            | WorkloadKind::ShareGpt
            | WorkloadKind::ShareGptText => {}
            _ => bail!(
                "{} is not a session trace: replay sessions from sessions:FILE, weka:FILE or sharegpt:FILE",
                w.kind.name()
            ),
        }
        Ok((Some(format!("{}:{}", w.kind.name(), w.path.display())), k))
    }

    /// The session settings, when `--sessions` asks for them; a session flag without it is
    /// refused, as it would measure nothing.
    pub fn session_settings(&self) -> Result<Option<SessionSettings>> {
        let a = &self.session;
        if !self.sessions_mode() {
            let stray = [
                ("--turns", a.turns.is_some()),
                ("--turn-input-len", a.turn_input_len.is_some()),
                ("--turn-output-len", a.turn_output_len.is_some()),
                ("--system-prompt-len", a.system_prompt_len.is_some()),
                ("--system-prompt-groups", a.system_prompt_groups.is_some()),
                ("--think-time", a.think_time.is_some()),
                ("--flush-cache", a.flush_cache),
                ("--cache-block-tokens", a.cache_block_tokens.is_some()),
            ];
            if let Some((flag, _)) = stray.iter().find(|(_, given)| *given) {
                bail!("{flag} applies to sessions: add --sessions S,… (e.g. --sessions 1,8)");
            }
            return Ok(None);
        }
        let levels = a.sessions.as_ref().map(|l| l.0.clone()).unwrap_or_default();
        if a.sessions.is_some() && levels.is_empty() {
            bail!("--sessions needs at least one number of concurrent sessions, e.g. 1,8,32");
        }
        let mut st = SessionSettings::new(levels);
        st.session_rates = a.session_rate.clone().map(|r| r.0);
        st.arrival = self.arrival.unwrap_or(st.arrival);
        (st.replay, st.time_scale) = self.session_replay()?;
        st.turns = match a.turns {
            Some(0) => None,
            Some(t) => Some(t),
            None => st.turns,
        };
        if st.session_rates.is_some() && st.turns.is_none() && st.replay.is_none() {
            bail!(
                "--session-rate starts sessions that each run --turns turns: give --turns N (at least 1)"
            );
        }
        st.turn_input = a.turn_input_len.unwrap_or(st.turn_input);
        if st.turn_input == LengthSpec::Fixed(0) {
            bail!("--turn-input-len must be at least 1 token");
        }
        st.turn_output = a.turn_output_len.unwrap_or(st.turn_output);
        st.system_prompt_tokens = a.system_prompt_len.unwrap_or(st.system_prompt_tokens);
        st.system_prompt_groups = a.system_prompt_groups.unwrap_or(st.system_prompt_groups);
        st.think_time = a.think_time.unwrap_or(ThinkTime::Fixed(0.0));
        st.flush_cache = a.flush_cache;
        if a.cache_block_tokens == Some(0) {
            bail!("--cache-block-tokens must be at least 1");
        }
        st.cache_block_tokens = a.cache_block_tokens;
        // The decode matrix runs beside the sessions only where --concurrency asks for it.
        st.with_decode = self.concurrency.is_some();
        st.slo = self.slo.clone();
        st.find_capacity = self.find_capacity && self.request_rate.is_none();
        if st.find_capacity && st.slo.is_none() {
            bail!(
                "--find-capacity needs an SLO to search for: add --slo, e.g. --slo ttft_p99=2s,tpot_p50=50ms"
            );
        }
        st.precision = self.capacity_precision.unwrap_or(st.precision);
        Ok(Some(st))
    }
}
