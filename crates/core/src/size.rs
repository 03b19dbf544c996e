//! Token sizes and durations as users write them: `8K`, `1M`, `1019K`, `max`, `full`, `30s`.
//! `K` is 1024 tokens and `M` is 1024 K, as the seed page counts ("1024K" is 1,048,576).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// One requested context size, before the server's context length is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextSpec {
    /// An exact number of prompt tokens.
    Tokens(u64),
    /// The largest context that leaves room for the max output inside the context length
    /// (the seed's "1019K"); decoded like any other context.
    Max,
    /// The full context length: prefill only, since no output fits (the seed's "1024K").
    Full,
}

/// Why a size could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a number with an optional K/M suffix.
    #[error("`{0}` is not a size: write a token count like 8192, 8K, 1M, 1019K, or `max`/`full`")]
    BadSize(String),
    /// Zero is never a useful size.
    #[error("`{0}` must be greater than zero")]
    Zero(String),
    /// Not a duration.
    #[error("`{0}` is not a duration: write 30s, 500ms, 2m or 1h")]
    BadDuration(String),
    /// Shorter than anything the clock can measure a window or a limit by.
    #[error("`{0}` is too short: durations start at 1 ms")]
    TooShort(String),
    /// Longer than any run can use (and than an instant can be moved by).
    #[error("`{0}` is too long: durations are limited to 30 days")]
    TooLong(String),
}

/// The longest duration any setting accepts, seconds (30 days): longer than any matrix, and
/// far inside what an instant can be moved by without overflow.
pub const MAX_DURATION_S: f64 = 30.0 * 86_400.0;

/// Seconds as a `Duration`, clamped to `[0, MAX_DURATION_S]` (NaN is 0), for settings read
/// back from a results file that this tool did not necessarily write: never panics.
pub fn duration_from_secs(secs: f64) -> Duration {
    let s = if secs.is_nan() {
        0.0
    } else {
        secs.clamp(0.0, MAX_DURATION_S)
    };
    Duration::from_secs_f64(s)
}

/// Parses a token count: `8192`, `8K`, `8k`, `1M`, `1019K`, `1.5K` (must be whole tokens).
pub fn parse_tokens(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let bad = || SizeError::BadSize(s.to_string());
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1024u64),
        Some((i, 'm' | 'M')) => (&t[..i], 1024 * 1024),
        Some(_) => (t, 1),
        None => return Err(bad()),
    };
    let num = num.trim().replace('_', "");
    let value = if let Ok(n) = num.parse::<u64>() {
        n.checked_mul(mult).ok_or_else(bad)?
    } else {
        let f: f64 = num.parse().map_err(|_| bad())?;
        let v = f * mult as f64;
        // Fractions are allowed only when they land on a whole token count.
        if !v.is_finite() || v < 0.0 || v.fract() != 0.0 || v > u64::MAX as f64 {
            return Err(bad());
        }
        v as u64
    };
    if value == 0 {
        return Err(SizeError::Zero(s.to_string()));
    }
    Ok(value)
}

/// Parses a context size: a token count, `max` or `full`. Unlike other sizes, a context may
/// be `0`: the seed's "no filler" decode, whose prompt is only its fixed part (see
/// docs/method-notes.md, "Context 0").
pub fn parse_context(s: &str) -> Result<ContextSpec, SizeError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "max" => Ok(ContextSpec::Max),
        "full" => Ok(ContextSpec::Full),
        _ => match parse_tokens(s) {
            Err(SizeError::Zero(_)) => Ok(ContextSpec::Tokens(0)),
            other => other.map(ContextSpec::Tokens),
        },
    }
}

/// Parses a comma-separated list of contexts (`8K,16K,max,full`).
pub fn parse_context_list(s: &str) -> Result<Vec<ContextSpec>, SizeError> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_context)
        .collect()
}

/// Parses a duration: `30s`, `500ms`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, SizeError> {
    let t = s.trim();
    let bad = || SizeError::BadDuration(s.to_string());
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if secs.is_nan() || secs <= 0.0 {
        return Err(SizeError::Zero(s.to_string()));
    }
    if secs > MAX_DURATION_S {
        return Err(SizeError::TooLong(s.to_string()));
    }
    // Found by fuzzing: `.0000…1` is above zero but rounds to a zero Duration (a window of
    // no length).
    if secs < 1e-3 {
        return Err(SizeError::TooShort(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a token count the way the seed labels contexts: whole multiples of 1024 as `NK`
/// (`1024K`, not `1M`, as the seed prints), anything else as the exact number.
pub fn format_tokens(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}K", n / 1024)
    } else {
        n.to_string()
    }
}

impl fmt::Display for ContextSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContextSpec::Tokens(n) => f.write_str(&format_tokens(*n)),
            ContextSpec::Max => f.write_str("max"),
            ContextSpec::Full => f.write_str("full"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_durations_are_refused_and_stored_ones_clamped() {
        for s in ["99999999999999999999", "1e30", "721h", "inf"] {
            assert!(
                matches!(
                    parse_duration(s),
                    Err(SizeError::TooLong(_) | SizeError::BadDuration(_))
                ),
                "{s}: {:?}",
                parse_duration(s)
            );
        }
        assert_eq!(parse_duration("720h"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert!(matches!(
            parse_duration(".0000000000000000000001"),
            Err(SizeError::TooShort(_))
        ));
        assert_eq!(duration_from_secs(1e300), Duration::from_secs(30 * 86_400));
        assert_eq!(duration_from_secs(f64::NAN), Duration::ZERO);
        assert_eq!(duration_from_secs(-1.0), Duration::ZERO);
    }

    #[test]
    fn parses_the_seed_sizes() {
        assert_eq!(parse_tokens("8K"), Ok(8192));
        assert_eq!(parse_tokens("1019K"), Ok(1_043_456));
        assert_eq!(parse_tokens("1M"), Ok(1_048_576));
        assert_eq!(parse_tokens("1.5k"), Ok(1536));
        assert_eq!(parse_tokens("300"), Ok(300));
        assert_eq!(parse_context("MAX"), Ok(ContextSpec::Max));
        assert_eq!(parse_context("full"), Ok(ContextSpec::Full));
        // Context 0 is the seed's first default context; other sizes still refuse zero.
        assert_eq!(parse_context("0"), Ok(ContextSpec::Tokens(0)));
        assert_eq!(parse_context("0K"), Ok(ContextSpec::Tokens(0)));
        assert!(parse_tokens("0").is_err());
        assert!(parse_tokens("0").is_err());
        assert!(parse_tokens("1.1").is_err());
        assert!(parse_tokens("K").is_err());
        assert!(parse_tokens("-5").is_err());
        assert!(parse_tokens("99999999999999999999M").is_err());
        assert_eq!(
            parse_context_list("8K, 16K,max").unwrap_or_default(),
            vec![
                ContextSpec::Tokens(8192),
                ContextSpec::Tokens(16384),
                ContextSpec::Max
            ]
        );
    }

    #[test]
    fn formats_like_the_seed() {
        assert_eq!(format_tokens(1_048_576), "1024K");
        assert_eq!(format_tokens(1_043_456), "1019K");
        assert_eq!(format_tokens(300), "300");
        assert_eq!(format_tokens(1500), "1500");
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
