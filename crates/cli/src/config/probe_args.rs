//! The probe flags of `run` (`--probe-rate`, `--probe-input-len`, `--probe-output-len`),
//! flattened into `RunArgs` and its config file, and checked into the run's
//! `llmib_core::ProbeSettings`: light requests at a fixed low rate beside each loaded cell,
//! reported apart (docs/method-notes.md, "Probe requests").

use super::de;
use super::parse;
use anyhow::{Result, bail};
use clap::Args;
use llmib_core::{DEFAULT_PROBE_INPUT_TOKENS, DEFAULT_PROBE_OUTPUT_TOKENS, ProbeSettings};
use serde::Deserialize;

/// The most probes per second: a probe measures the load, it must not be one.
const MAX_PROBE_RATE: f64 = 10.0;

/// The probe flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct ProbeArgs {
    /// Probe requests per second beside every decode, burst, rate and session cell (e.g. 0.5;
    /// at most 10): each a fresh short prompt sent on a fixed interval while the cell's load
    /// runs; the row's `probe` gives their TTFT, TPOT and E2E apart from the cell's figures.
    #[arg(long, value_name = "PER_S")]
    pub probe_rate: Option<f64>,
    /// About how many prompt tokens each probe sends (default 128; the server's count is
    /// reported).
    #[arg(long, value_name = "TOKENS", value_parser = parse::tokens)]
    #[serde(deserialize_with = "de::tokens")]
    pub probe_input_len: Option<u64>,
    /// max_tokens of each probe (default 16).
    #[arg(long, value_name = "TOKENS")]
    pub probe_output_len: Option<u32>,
}

impl ProbeArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: ProbeArgs) -> ProbeArgs {
        ProbeArgs {
            probe_rate: self.probe_rate.or(lower.probe_rate),
            probe_input_len: self.probe_input_len.or(lower.probe_input_len),
            probe_output_len: self.probe_output_len.or(lower.probe_output_len),
        }
    }

    /// Checks the flags into the run's settings: `None` without `--probe-rate` (the length
    /// flags alone are refused: they would send nothing).
    pub fn settings(&self) -> Result<Option<ProbeSettings>> {
        let Some(rate) = self.probe_rate else {
            if self.probe_input_len.is_some() || self.probe_output_len.is_some() {
                bail!(
                    "--probe-input-len and --probe-output-len set up probe requests: add --probe-rate (e.g. 0.5)"
                );
            }
            return Ok(None);
        };
        if !(rate.is_finite() && rate > 0.0 && rate <= MAX_PROBE_RATE) {
            bail!(
                "--probe-rate takes probes per second above 0 and at most {MAX_PROBE_RATE}, not {rate}"
            );
        }
        let input_tokens = self.probe_input_len.unwrap_or(DEFAULT_PROBE_INPUT_TOKENS);
        let output_tokens = self.probe_output_len.unwrap_or(DEFAULT_PROBE_OUTPUT_TOKENS);
        if input_tokens == 0 || output_tokens == 0 {
            bail!("--probe-input-len and --probe-output-len take at least 1 token");
        }
        Ok(Some(ProbeSettings {
            rate,
            input_tokens,
            output_tokens,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_gives_the_defaults_and_bad_values_are_refused() {
        let a = ProbeArgs {
            probe_rate: Some(0.5),
            ..Default::default()
        };
        let s = a.settings().expect("ok").expect("some");
        assert_eq!((s.rate, s.input_tokens, s.output_tokens), (0.5, 128, 16));
        for rate in [0.0, -1.0, 11.0, f64::NAN] {
            let a = ProbeArgs {
                probe_rate: Some(rate),
                ..Default::default()
            };
            let e = a.settings().expect_err("refused");
            assert!(e.to_string().contains("--probe-rate takes"), "{rate}: {e}");
        }
        let a = ProbeArgs {
            probe_output_len: Some(8),
            ..Default::default()
        };
        let e = a.settings().expect_err("a length alone");
        assert!(e.to_string().contains("add --probe-rate"), "{e}");
        assert_eq!(ProbeArgs::default().settings().expect("none"), None);
    }
}
