//! The LoRA flags of `run` (`--lora`, `--lora-assign`), flattened into `RunArgs` and its config
//! file, and checked into the run's `llmib_core::LoraSettings`: each request's `model` one of
//! the server's adapters, and the rows' figures per adapter (docs/lora.md).

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use llmib_core::{LoraAssign, LoraSettings};
use serde::{Deserialize, Deserializer};

/// `--lora-assign`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LoraAssignArg {
    /// Stream (or open-load request) k takes adapter k mod K.
    #[default]
    RoundRobin,
    /// Each stream (or open-load request) draws its adapter from the run's seed.
    Random,
}

impl From<LoraAssignArg> for LoraAssign {
    fn from(a: LoraAssignArg) -> Self {
        match a {
            LoraAssignArg::RoundRobin => LoraAssign::RoundRobin,
            LoraAssignArg::Random => LoraAssign::Random,
        }
    }
}

/// The LoRA flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct LoraArgs {
    /// LoRA adapters to spread the decode, burst and rate cells' requests over,
    /// comma-separated (`sql,chat`), each listed by the server's /v1/models; the rows give
    /// requests, output tok/s and TTFT per adapter.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    #[serde(deserialize_with = "names")]
    pub lora: Option<Vec<String>>,
    /// How requests take adapters: `round-robin` (stream or request k takes adapter k mod K;
    /// the default) or `random` (seeded per stream or request).
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "assign")]
    pub lora_assign: Option<LoraAssignArg>,
}

/// A config file's `lora`: a list of names, or one comma-separated string as the flag takes.
fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Names {
        One(String),
        List(Vec<String>),
    }
    Ok(Some(match Names::deserialize(d)? {
        Names::One(s) => s.split(',').map(str::to_string).collect(),
        Names::List(v) => v,
    }))
}

/// A config file's `lora_assign`, read as the flag is.
fn assign<'de, D: Deserializer<'de>>(d: D) -> Result<Option<LoraAssignArg>, D::Error> {
    use serde::de::Error as _;
    let s = String::deserialize(d)?;
    LoraAssignArg::from_str(&s, false)
        .map(Some)
        .map_err(|_| D::Error::custom(format!("`{s}` is not one of: round-robin, random")))
}

impl LoraArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: LoraArgs) -> LoraArgs {
        LoraArgs {
            lora: self.lora.or(lower.lora),
            lora_assign: self.lora_assign.or(lower.lora_assign),
        }
    }

    /// Checks the flags into the run's settings, the random assignment seeded by `seed` (the
    /// run's prompt seed): `None` without `--lora` (`--lora-assign` alone is refused: it would
    /// assign nothing).
    pub fn settings(&self, seed: u64) -> Result<Option<LoraSettings>> {
        let Some(names) = &self.lora else {
            if self.lora_assign.is_some() {
                bail!("--lora-assign spreads requests over adapters: add --lora NAME,...");
            }
            return Ok(None);
        };
        let names = names.iter().map(|n| n.trim().to_string()).collect();
        let assign = self.lora_assign.unwrap_or_default().into();
        Ok(Some(LoraSettings::new(names, assign, seed)?))
    }

    /// What resume compares with the saved run: the adapters and their assignment (the seed is
    /// the saved run's, whatever this invocation drew).
    pub fn given(&self) -> Option<(Vec<String>, Option<LoraAssign>)> {
        let names = self.lora.as_ref()?.iter().map(|n| n.trim().to_string());
        Some((names.collect(), self.lora_assign.map(Into::into)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_assignment_are_checked_into_settings() {
        let a = LoraArgs {
            lora: Some(vec!["sql".into(), " chat".into()]),
            ..Default::default()
        };
        let s = a.settings(9).expect("ok").expect("some");
        assert_eq!(s.adapters, ["sql", "chat"]);
        assert_eq!((s.assign, s.seed), (LoraAssign::RoundRobin, 9));
        let a = LoraArgs {
            lora_assign: Some(LoraAssignArg::Random),
            ..a
        };
        assert_eq!(
            a.settings(9).expect("ok").expect("some").assign,
            LoraAssign::Random
        );
        let alone = LoraArgs {
            lora_assign: Some(LoraAssignArg::Random),
            ..Default::default()
        };
        let e = alone.settings(0).expect_err("assign alone");
        assert!(e.to_string().contains("add --lora"), "{e}");
        let twice = LoraArgs {
            lora: Some(vec!["a".into(), "a".into()]),
            ..Default::default()
        };
        assert!(twice.settings(0).is_err());
        assert_eq!(LoraArgs::default().settings(0).expect("none"), None);
    }

    #[test]
    fn a_config_file_takes_a_list_or_a_comma_string() {
        let a: LoraArgs =
            toml::from_str("lora = [\"a\", \"b\"]\nlora_assign = \"random\"").expect("parses");
        assert_eq!(a.lora, Some(vec!["a".into(), "b".into()]));
        assert_eq!(a.lora_assign, Some(LoraAssignArg::Random));
        let a: LoraArgs = toml::from_str("lora = \"a,b\"").expect("parses");
        assert_eq!(a.lora, Some(vec!["a".into(), "b".into()]));
        assert!(toml::from_str::<LoraArgs>("lora_assign = \"sideways\"").is_err());
    }
}
