//! The file's side of [`crate::config::parse`]: a key's TOML value (a number, a string, or a list
//! of them, as before) becomes the text a flag would carry, and goes through the flag's parser.

use super::parse::{self, ContextList, ExtraBody, Formats, Levels};
use clap::ValueEnum;
use llmib_core::{ArrivalPattern, RateSpec, Slo};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use std::time::Duration;

/// A TOML value as the text of a flag.
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    Int(u64),
    Float(f64),
    Str(String),
    List(Vec<Text>),
}

impl Text {
    fn into_string(self) -> String {
        match self {
            Text::Int(n) => n.to_string(),
            Text::Float(f) => f.to_string(),
            Text::Str(s) => s,
            Text::List(v) => v
                .into_iter()
                .map(Text::into_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

fn with<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: fn(&str) -> Result<T, String>,
) -> Result<Option<T>, D::Error> {
    let text = Text::deserialize(d)?.into_string();
    parse(&text).map(Some).map_err(D::Error::custom)
}

pub fn contexts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ContextList>, D::Error> {
    with(d, parse::contexts)
}

pub fn prefill_contexts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ContextList>, D::Error> {
    with(d, parse::prefill_contexts)
}

pub fn levels<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Levels>, D::Error> {
    with(d, parse::levels)
}

pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    with(d, parse::duration)
}

pub fn tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    with(d, parse::tokens)
}

pub fn max_output<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    with(d, parse::max_output)
}

pub fn formats<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Formats>, D::Error> {
    with(d, parse::formats)
}

pub fn request_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RateSpec>, D::Error> {
    with(d, parse::request_rate)
}

pub fn arrival<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ArrivalPattern>, D::Error> {
    with(d, parse::arrival)
}

pub fn slo<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Slo>, D::Error> {
    with(d, parse::slo)
}

pub fn length<'de, D: Deserializer<'de>>(d: D) -> Result<Option<llmib_core::LengthSpec>, D::Error> {
    with(d, parse::length)
}

pub fn percentiles<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<parse::Percentiles>, D::Error> {
    with(d, parse::percentiles)
}

pub fn rates<'de, D: Deserializer<'de>>(d: D) -> Result<Option<parse::Rates>, D::Error> {
    with(d, parse::rates)
}

pub fn think_time<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<llmib_core::ThinkTime>, D::Error> {
    with(d, parse::think_time)
}

pub fn workload<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<llmib_core::WorkloadSpec>, D::Error> {
    with(d, parse::workload)
}

pub fn time_scale<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<llmib_core::TimeScaleSpec>, D::Error> {
    with(d, parse::time_scale)
}

/// A TOML table or a JSON string, either way through the flag's parser.
pub fn extra_body<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ExtraBody>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    let text = match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    parse::extra_body(&text).map(Some).map_err(D::Error::custom)
}

pub fn precision<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    with(d, parse::precision)
}

/// A name of a `ValueEnum`, read as clap reads the flag (aliases included).
pub fn value_enum<'de, D: Deserializer<'de>, T: ValueEnum>(d: D) -> Result<Option<T>, D::Error> {
    let s = String::deserialize(d)?;
    T::from_str(&s, false).map(Some).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_owned()))
            .collect();
        D::Error::custom(format!("`{s}` is not one of: {}", names.join(", ")))
    })
}

pub fn stable_target<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<llmib_core::StableTarget>, D::Error> {
    with(d, parse::stable_target)
}

/// `--shard` in a config file.
pub fn shard<'de, D: Deserializer<'de>>(d: D) -> Result<Option<llmib_core::ShardArg>, D::Error> {
    with(d, parse::shard)
}

/// `--start-at` in a config file.
pub fn start_at<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    with(d, parse::start_at)
}
