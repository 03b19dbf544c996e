//! The parsers of the typed values, one per kind: a flag's `value_parser` and the file's
//! deserializer (`config/de.rs`) both call them, so a key means exactly what its flag means.
//! The list types they produce live here too, so the parsers import nothing from `config/mod.rs`.

use llmib_core::{ArrivalPattern, ContextSpec, RateSpec, Slo};
use llmib_core::{parse_context_list, parse_duration, parse_tokens};
use std::time::Duration;

/// Contexts as `--contexts` takes them (`8K,16K,max,full`): never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextList(pub Vec<ContextSpec>);

/// Concurrency levels as `--concurrency` takes them (`1,2,4`): ascending, unique, never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels(pub Vec<u32>);

/// Report formats as `--format` takes them (`html,md`; `all`; `none` for no report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formats(pub Vec<llmib_report::Format>);

/// `--extra-body` as it is taken: a JSON object without the tool's own keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraBody(pub serde_json::Map<String, serde_json::Value>);

/// `8K,16K,max,full`: at least one context.
pub fn contexts(s: &str) -> Result<ContextList, String> {
    let v = parse_context_list(s).map_err(|e| e.to_string())?;
    if v.is_empty() {
        return Err("no context given: give at least one size, e.g. 8K,16K".into());
    }
    Ok(ContextList(v))
}

/// As [`contexts`], or `none` for no context at all.
pub fn prefill_contexts(s: &str) -> Result<ContextList, String> {
    if s.trim() == "none" {
        return Ok(ContextList(Vec::new()));
    }
    parse_context_list(s)
        .map(ContextList)
        .map_err(|e| e.to_string())
}

/// `1,2,4`: positive whole numbers, sorted and deduplicated.
pub fn levels(s: &str) -> Result<Levels, String> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let n = part
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("`{part}` is not a positive whole number"))?;
        v.push(n);
    }
    if v.is_empty() {
        return Err("no level given: give levels like 1,2,4,8".into());
    }
    v.sort_unstable();
    v.dedup();
    Ok(Levels(v))
}

/// `30s`, `500ms`, `2m`, `1h` or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// A token count: `8192`, `8K`, `1M`.
pub fn tokens(s: &str) -> Result<u64, String> {
    parse_tokens(s).map_err(|e| e.to_string())
}

/// `2,4,8`, `auto` or `auto:K`.
pub fn request_rate(s: &str) -> Result<RateSpec, String> {
    s.parse()
        .map_err(|e: llmib_core::RateSpecError| e.to_string())
}

/// A JSON object without the tool's own keys.
pub fn extra_body(s: &str) -> Result<ExtraBody, String> {
    llmib_core::RequestControls::parse_extra_body(s)
        .map(ExtraBody)
        .map_err(|e| e.to_string())
}

/// `poisson`, `constant` or `gamma:SHAPE`.
pub fn arrival(s: &str) -> Result<ArrivalPattern, String> {
    s.parse()
        .map_err(|e: llmib_core::ArrivalError| e.to_string())
}

/// `4K`, `4K:normal:512` or `1K..16K`.
pub fn length(s: &str) -> Result<llmib_core::LengthSpec, String> {
    s.parse()
        .map_err(|e: llmib_core::LengthError| e.to_string())
}

/// Rates per second as `--session-rate` takes them (`0.5,1,2`): one value to clap, which
/// would read a bare `Vec` as a flag given many times.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates(pub Vec<f64>);

/// Positive rates, comma-separated: `0.5,1,2`.
pub fn rates(s: &str) -> Result<Rates, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
            _ => Err(format!("`{}` is not a positive rate per second", p.trim())),
        })
        .collect::<Result<Vec<f64>, String>>()
        .and_then(|v| {
            if v.is_empty() {
                Err("give at least one rate, e.g. 0.5,1,2".to_string())
            } else {
                Ok(Rates(v))
            }
        })
}

/// `--percentiles`: the extra latency percentiles, ascending (one value to clap, as [`Rates`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles(pub Vec<f64>);

/// Percentiles above 0 and below 100, comma-separated: `50,90,99,99.9` (the fixed p50, p90
/// and p99 are kept whether named or not; `llmib_core::parse_percentiles`).
pub fn percentiles(s: &str) -> Result<Percentiles, String> {
    llmib_core::parse_percentiles(s)
        .map(Percentiles)
        .map_err(|e| e.to_string())
}

/// A think time: `0`, `2s`, `exp:2s`.
pub fn think_time(s: &str) -> Result<llmib_core::ThinkTime, String> {
    s.parse()
        .map_err(|e: llmib_core::ThinkTimeError| e.to_string())
}

/// `sharegpt:FILE`, `sharegpt-text:FILE`, `mooncake:FILE`, `azure:FILE`, `sessions:FILE`,
/// `weka:FILE` or `prompts:FILE`.
pub fn workload(s: &str) -> Result<llmib_core::WorkloadSpec, String> {
    s.parse()
        .map_err(|e: llmib_core::WorkloadError| e.to_string())
}

/// A positive number or `auto`.
pub fn time_scale(s: &str) -> Result<llmib_core::TimeScaleSpec, String> {
    s.parse()
        .map_err(|e: llmib_core::WorkloadError| e.to_string())
}

/// `--until-stable`: `2%` or `2`.
pub fn stable_target(s: &str) -> Result<llmib_core::StableTarget, String> {
    s.parse()
        .map_err(|e: llmib_core::StableTargetError| e.to_string())
}

/// `ttft_p99=2s,tpot_p50=40ms,…`.
pub fn slo(s: &str) -> Result<Slo, String> {
    s.parse().map_err(|e: llmib_core::SloError| e.to_string())
}

/// A fraction above 0 and below 1 (`0.05`), or a percentage (`5%`).
pub fn precision(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    };
    v.ok()
        .filter(|x| *x > 0.0 && *x < 1.0)
        .ok_or_else(|| format!("`{s}` is not a precision: give a fraction such as 0.05, or 5%"))
}

/// A token count that fits a request's `max_tokens`.
pub fn max_output(s: &str) -> Result<u32, String> {
    u32::try_from(tokens(s)?).map_err(|_| format!("`{s}` is too large for max_tokens"))
}

/// `html,md,csv,json`, `all` or `none`.
pub fn formats(s: &str) -> Result<Formats, String> {
    match s.trim() {
        "" | "all" => Ok(Formats(llmib_report::Format::ALL.to_vec())),
        "none" => Ok(Formats(Vec::new())),
        list => list
            .split(',')
            .map(|f| f.parse::<llmib_report::Format>().map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()
            .map(Formats),
    }
}

/// `--shard`: `I/N` or `auto`.
pub fn shard(s: &str) -> Result<llmib_core::ShardArg, String> {
    s.parse().map_err(|e: llmib_core::ShardError| e.to_string())
}

/// `--start-at`: an RFC 3339 instant, kept as given (its ns are `llmib_core::parse_rfc3339_ns`).
pub fn start_at(s: &str) -> Result<String, String> {
    match llmib_core::parse_rfc3339_ns(s) {
        Some(_) => Ok(s.trim().to_string()),
        None => Err(format!(
            "`{s}` is not an RFC 3339 instant: write e.g. 2026-12-04T22:00:00Z (every shard gets the same)"
        )),
    }
}

/// `--sweep-member`: the JSON a sweep passes to each combination's run.
pub fn sweep_member(s: &str) -> Result<llmib_core::SweepMember, String> {
    serde_json::from_str(s).map_err(|e| format!("not a sweep member (JSON): {e}"))
}
