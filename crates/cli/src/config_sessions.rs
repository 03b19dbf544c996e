//! The run's session settings from its flags (`--sessions`, `--turns`, `--turn-input-len`,
//! `--think-time`, …), checked: apart from config.rs so the flag definitions keep room.

use crate::config::RunArgs;
use anyhow::{Result, bail};
use llmib_core::{LengthSpec, SessionSettings, ThinkTime};

impl RunArgs {
    /// The session settings, when `--sessions` asks for them; a session flag without it is
    /// refused, as it would measure nothing.
    pub fn session_settings(&self) -> Result<Option<SessionSettings>> {
        let Some(levels) = &self.sessions else {
            let stray = [
                ("--turns", self.turns.is_some()),
                ("--turn-input-len", self.turn_input_len.is_some()),
                ("--turn-output-len", self.turn_output_len.is_some()),
                ("--system-prompt-len", self.system_prompt_len.is_some()),
                (
                    "--system-prompt-groups",
                    self.system_prompt_groups.is_some(),
                ),
                ("--think-time", self.think_time.is_some()),
                ("--flush-cache", self.flush_cache),
                ("--cache-block-tokens", self.cache_block_tokens.is_some()),
            ];
            if let Some((flag, _)) = stray.iter().find(|(_, given)| *given) {
                bail!("{flag} applies to sessions: add --sessions S,… (e.g. --sessions 1,8)");
            }
            return Ok(None);
        };
        if levels.0.is_empty() {
            bail!("--sessions needs at least one number of concurrent sessions, e.g. 1,8,32");
        }
        let mut st = SessionSettings::new(levels.0.clone());
        st.turns = match self.turns {
            Some(0) => None,
            Some(t) => Some(t),
            None => st.turns,
        };
        st.turn_input = self.turn_input_len.unwrap_or(st.turn_input);
        if st.turn_input == LengthSpec::Fixed(0) {
            bail!("--turn-input-len must be at least 1 token");
        }
        st.turn_output = self.turn_output_len.unwrap_or(st.turn_output);
        st.system_prompt_tokens = self.system_prompt_len.unwrap_or(st.system_prompt_tokens);
        st.system_prompt_groups = self.system_prompt_groups.unwrap_or(st.system_prompt_groups);
        st.think_time = self.think_time.unwrap_or(ThinkTime::Fixed(0.0));
        st.flush_cache = self.flush_cache;
        if self.cache_block_tokens == Some(0) {
            bail!("--cache-block-tokens must be at least 1");
        }
        st.cache_block_tokens = self.cache_block_tokens;
        // The decode matrix runs beside the sessions only where --concurrency asks for it.
        st.with_decode = self.concurrency.is_some();
        Ok(Some(st))
    }
}
