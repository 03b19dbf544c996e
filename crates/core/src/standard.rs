//! The standard matrix (`run --standard`): a named, versioned set of contexts, concurrencies,
//! standalone prefills, window length and output length, so that runs from different machines
//! compare like with like. A version never changes once published; a new set is a new version.
//! The run records the version in its settings (`standard`), and everything else about the run
//! (the server, its capacity) decides which cells fit: cells that do not are Over capacity or
//! dropped with their reason, as in any run.

use crate::plan::Settings;
use crate::size::ContextSpec;

/// One published version of the standard matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StandardMatrix {
    /// The version's name (`v1`).
    pub name: &'static str,
    /// Decode contexts, tokens (0: decode with no filler).
    pub contexts: &'static [u64],
    /// Concurrency levels.
    pub concurrency: &'static [u32],
    /// Standalone prefill contexts, tokens.
    pub prefill_contexts: &'static [u64],
    /// Cold prefills per standalone prefill context (their median is the figure).
    pub prefill_repeats: u32,
    /// Decode window, seconds.
    pub duration_s: f64,
    /// `max_tokens` of every request.
    pub max_output: u32,
}

/// Every published version, oldest first; the last is the default of `--standard`.
pub const STANDARD_MATRICES: &[StandardMatrix] = &[StandardMatrix {
    name: "v1",
    contexts: &[0, 65_536, 131_072],
    concurrency: &[1, 8, 16],
    prefill_contexts: &[32_768, 131_072],
    prefill_repeats: 3,
    duration_s: 30.0,
    // Short enough that 16 requests of 128K fit the KV of a mid-size server (16 × 132K), long
    // enough that a window's requests rarely end inside it.
    max_output: 1024,
}];

/// A `--standard` version that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("no standard matrix {given:?}: the published versions are {known}")]
pub struct UnknownStandard {
    /// What was asked for.
    pub given: String,
    /// The versions there are, comma-separated.
    pub known: String,
}

/// The published version named `name`.
pub fn standard_matrix(name: &str) -> Result<&'static StandardMatrix, UnknownStandard> {
    STANDARD_MATRICES
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| UnknownStandard {
            given: name.to_string(),
            known: STANDARD_MATRICES
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

impl StandardMatrix {
    /// `settings` with this matrix's cells and lengths, and its name recorded.
    pub fn apply(&self, settings: &mut Settings) {
        settings.contexts = self
            .contexts
            .iter()
            .map(|&c| ContextSpec::Tokens(c))
            .collect();
        settings.concurrency = self.concurrency.to_vec();
        settings.prefill_contexts = self
            .prefill_contexts
            .iter()
            .map(|&c| ContextSpec::Tokens(c))
            .collect();
        settings.prefill_repeats = self.prefill_repeats;
        settings.duration_s = self.duration_s;
        settings.max_output = self.max_output;
        settings.standard = Some(self.name.to_string());
    }

    /// One line for reports: what the version fixes.
    pub fn describe(&self) -> String {
        let sizes = |v: &[u64]| {
            v.iter()
                .map(|&c| crate::size::format_tokens(c))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let levels: Vec<String> = self.concurrency.iter().map(u32::to_string).collect();
        format!(
            "standard matrix {}: contexts {} × concurrency {}, standalone prefill at {} ({} each), \
             {:.0} s windows, {} output tokens",
            self.name,
            sizes(self.contexts),
            levels.join(", "),
            sizes(self.prefill_contexts),
            self.prefill_repeats,
            self.duration_s,
            self.max_output
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_fixes_the_cells_and_records_its_name() {
        let m = standard_matrix("v1").expect("v1");
        let mut s = Settings::default();
        m.apply(&mut s);
        assert_eq!(
            s.contexts,
            vec![
                ContextSpec::Tokens(0),
                ContextSpec::Tokens(65_536),
                ContextSpec::Tokens(131_072)
            ]
        );
        assert_eq!(s.concurrency, vec![1, 8, 16]);
        assert_eq!(s.prefill_repeats, 3);
        assert_eq!((s.duration_s, s.max_output), (30.0, 1024));
        assert_eq!(s.standard.as_deref(), Some("v1"));
        assert_eq!(
            m.describe(),
            "standard matrix v1: contexts 0, 64K, 128K × concurrency 1, 8, 16, standalone prefill at 32K, 128K (3 each), 30 s windows, 1024 output tokens"
        );
    }

    #[test]
    fn an_unknown_version_names_the_published_ones() {
        let e = standard_matrix("v9").expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "no standard matrix \"v9\": the published versions are v1"
        );
    }

    /// A published version is frozen: its cells are part of what makes two runs comparable.
    #[test]
    fn published_versions_do_not_change() {
        let v1 = STANDARD_MATRICES[0];
        assert_eq!(v1.name, "v1");
        assert_eq!(v1.contexts, &[0, 65_536, 131_072]);
        assert_eq!(v1.concurrency, &[1, 8, 16]);
        assert_eq!(v1.prefill_contexts, &[32_768, 131_072]);
    }
}
