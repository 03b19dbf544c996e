//! Number formatting, exactly as the seed page prints its figures. Every exporter that shows a
//! number to a person goes through here, so a rule is changed in one place. The rules (also in
//! `docs/report.md`):
//!
//! | figure | rule | seed examples |
//! |---|---|---|
//! | throughput (tables, matrix) | one decimal, thousands separated; from 10,000 (after rounding) in thousands with one decimal and `K` (K = 1000 here: a rate, not a token size) | `9,232.0`, `1,345.8`, `10.6K` |
//! | throughput (prefill chart) | whole numbers below 10,000, else as above | `9,232`, `10.6K` |
//! | TTFT | whole milliseconds, thousands separated; below 10 ms one decimal | `888 ms`, `131,949 ms` |
//! | time between tokens | milliseconds with one decimal | `5.2 ms` |
//! | measured for | seconds with one decimal | `30.0 s`, `31.8 s` |
//! | average active requests | one decimal | `1.9` |
//! | counts (requests, tokens) | whole, thousands separated | `5,719` |
//! | time per measurement | whole seconds when whole, else one decimal | `30 s` |
//! | max output | count + ` tokens` | `4,096 tokens` |
//! | null (does not apply) | an em dash | `—` |
//!
//! Non-finite values cannot come from JSON, but are printed as `—` rather than panicking.

/// What the tables print for a figure that does not apply (null).
pub(crate) const NULL: &str = "—";

/// Inserts thousands separators into a string of ASCII digits.
fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `v` with `decimals` decimals and thousands separators (`1,345.8`).
pub(crate) fn grouped(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return NULL.to_string();
    }
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s.as_str(), None),
    };
    // `-0.0` rounds to "0.0": print it without the sign.
    let negative = v < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0');
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    out.push_str(&group_digits(int));
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// A whole count with thousands separators (`5,719`).
pub fn count(n: u64) -> String {
    group_digits(&n.to_string())
}

/// Whether a rate prints in thousands: decided on the value as printed, so 9,999.96 (which
/// would print as `10,000.0`) becomes `10.0K`.
fn in_thousands(v: f64) -> bool {
    (v * 10.0).round() / 10.0 >= 10_000.0
}

/// A rate in thousands: `10.6K`.
fn thousands(v: f64) -> String {
    format!("{}K", grouped(v / 1000.0, 1))
}

/// Throughput in tables and the matrix: `9,232.0`, `190.7`, `10.6K`.
pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else if in_thousands(v) {
        thousands(v)
    } else {
        grouped(v, 1)
    }
}

/// Throughput on the prefill chart: `9,232`, `10.6K`.
pub fn rate_compact(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else if in_thousands(v) {
        thousands(v)
    } else {
        grouped(v, 0)
    }
}

/// TTFT: `888 ms`, `1,527 ms`; below 10 ms one decimal (`3.4 ms`), because local engines and the
/// simulator answer that fast and `3 ms` would hide a 30 % difference.
pub fn ttft_ms(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else if v.abs() < 9.95 {
        format!("{} ms", grouped(v, 1))
    } else {
        format!("{} ms", grouped(v, 0))
    }
}

/// Time between tokens: `5.2 ms`.
pub fn tbt_ms(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else {
        format!("{} ms", grouped(v, 1))
    }
}

/// Measured window: `30.0 s`.
pub(crate) fn seconds(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else {
        format!("{} s", grouped(v, 1))
    }
}

/// A setting in seconds, as the Run card prints it: `30 s`, `2.5 s`.
pub(crate) fn setting_seconds(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{} s", grouped(v, 0))
    } else {
        format!("{} s", grouped(v, 1))
    }
}

/// One decimal, thousands separated: `1.9`, `16.0`.
pub(crate) fn decimal1(v: f64) -> String {
    grouped(v, 1)
}

/// A token count with its unit: `4,096 tokens`.
pub(crate) fn tokens(n: u64) -> String {
    format!("{} tokens", count(n))
}

/// GPU memory in GB as vendors label it: bytes in GiB, rounded to a whole number (an "80GB"
/// H100 reports 79.6 GiB, a "96GB" RTX PRO 6000 95.6 GiB).
pub(crate) fn gpu_gb(bytes: u64) -> u64 {
    (bytes as f64 / f64::from(1u32 << 30)).round() as u64
}

/// A ratio to a baseline: `×1.06`, `×0.97`.
pub(crate) fn ratio(r: f64) -> String {
    if !r.is_finite() {
        NULL.to_string()
    } else {
        format!("×{}", grouped(r, 2))
    }
}

/// `Some(v)` through `f`, `None` as [`NULL`].
pub(crate) fn or_null<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| NULL.to_string(), f)
}

/// A request rate: up to three decimals, trailing zeros dropped (`2.5/s`, `0.125/s`, `12/s`).
pub(crate) fn req_rate(v: f64) -> String {
    if !v.is_finite() {
        return NULL.to_string();
    }
    format!("{}/s", trim_zeros(grouped(v, 3)))
}

/// Four significant digits (whole numbers from 1,000 up), trailing zeros dropped, no
/// separators: `216.5`, `0.01235`, `37749`.
pub(crate) fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    trim_zeros(format!("{v:.decimals$}"))
}

/// A decimal's trailing zeros dropped, and its point with them (`2.50` → `2.5`, `12.0` →
/// `12`); a whole number as it is.
fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_figures() {
        assert_eq!(rate(9232.0), "9,232.0");
        assert_eq!(rate(10_600.0), "10.6K");
        assert_eq!(rate(7890.0), "7,890.0");
        assert_eq!(rate(1345.8), "1,345.8");
        assert_eq!(rate(190.7), "190.7");
        assert_eq!(rate_compact(9232.0), "9,232");
        assert_eq!(rate_compact(10_700.0), "10.7K");
        assert_eq!(ttft_ms(888.0), "888 ms");
        assert_eq!(ttft_ms(1527.0), "1,527 ms");
        assert_eq!(ttft_ms(131_949.0), "131,949 ms");
        assert_eq!(tbt_ms(5.2), "5.2 ms");
        assert_eq!(significant(12345.6), "12346");
        assert_eq!(significant(12.3456), "12.35");
        assert_eq!(significant(216.533), "216.5");
        assert_eq!(significant(2.0), "2");
        assert_eq!(significant(0.012346), "0.01235");
        assert_eq!(significant(0.0), "0");
        assert_eq!(seconds(30.0), "30.0 s");
        assert_eq!(seconds(31.8), "31.8 s");
        assert_eq!(decimal1(1.9), "1.9");
        assert_eq!(count(40_368), "40,368");
        assert_eq!(count(0), "0");
        assert_eq!(tokens(4096), "4,096 tokens");
        assert_eq!(setting_seconds(30.0), "30 s");
        assert_eq!(gpu_gb(96 << 30), 96);
        assert_eq!(gpu_gb(102_641_893_376), 96);
    }

    #[test]
    fn edges() {
        assert_eq!(rate(9_999.96), "10.0K");
        assert_eq!(rate(9_999.94), "9,999.9");
        assert_eq!(rate(1_234_567.0), "1,234.6K");
        assert_eq!(rate(f64::NAN), NULL);
        assert_eq!(rate(f64::INFINITY), NULL);
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        assert_eq!(grouped(-0.01, 1), "0.0");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(grouped(100_000.0, 0), "100,000");
        assert_eq!(ttft_ms(3.44), "3.4 ms");
        assert_eq!(ttft_ms(9.96), "10 ms");
        assert_eq!(setting_seconds(2.5), "2.5 s");
        assert_eq!(ratio(1.0567), "×1.06");
        assert_eq!(or_null(None::<f64>, rate), "—");
    }
}
