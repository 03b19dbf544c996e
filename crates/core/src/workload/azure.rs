//! Azure's LLM inference trace: CSV with `TIMESTAMP,ContextTokens,GeneratedTokens`, the
//! timestamp a UTC `YYYY-MM-DD HH:MM:SS[.fraction]`, read here without a date crate.

use super::error::{WorkloadError, bad_row, relative_s};
use super::request::WorkloadRequest;

const HEADER: &str = "TIMESTAMP,ContextTokens,GeneratedTokens";

/// The requests of an Azure trace (blank lines ignored; the header must come first).
pub(super) fn parse(file: &str, text: &str) -> Result<Vec<WorkloadRequest>, WorkloadError> {
    let mut rows = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let Some((hline, header)) = rows.next() else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = header
        .trim_start_matches('\u{feff}')
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let col = |want: &str| names.iter().position(|n| n == &want.to_ascii_lowercase());
    let (Some(ts), Some(ctx), Some(gen_)) = (
        col("TIMESTAMP"),
        col("ContextTokens"),
        col("GeneratedTokens"),
    ) else {
        return Err(bad_row(
            file,
            hline,
            format!("the header must name the columns {HEADER}"),
        ));
    };
    let mut out: Vec<WorkloadRequest> = Vec::new();
    let mut first_ns = None;
    for (line, raw) in rows {
        let cells: Vec<&str> = raw.split(',').map(str::trim).collect();
        let cell = |i: usize| cells.get(i).copied().unwrap_or("");
        let at_ns = epoch_ns(cell(ts)).ok_or_else(|| {
            bad_row(
                file,
                line,
                format!(
                    "`{}` is not a timestamp like 2023-11-16 18:15:46.6805900",
                    cell(ts)
                ),
            )
        })?;
        let tokens = |i: usize, name: &str| match cell(i).parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad_row(
                file,
                line,
                format!("{name} `{}` must be a whole number of tokens ≥ 1", cell(i)),
            )),
        };
        let (input, output) = (
            tokens(ctx, "ContextTokens")?,
            tokens(gen_, "GeneratedTokens")?,
        );
        let first = *first_ns.get_or_insert(at_ns);
        // Relative in whole ns first: epoch seconds with 7 fraction digits are beyond f64.
        let at_s = (at_ns - first) as f64 / 1e9;
        let prev = out.last().and_then(|r| r.arrival_s);
        out.push(WorkloadRequest {
            line,
            arrival_s: Some(relative_s(file, line, at_s, 0.0, prev)?),
            input_tokens: input,
            output_tokens: output,
            prefix_blocks: Vec::new(),
        });
    }
    Ok(out)
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` (or with a `T`), UTC, as ns since 1970 (proleptic
/// Gregorian calendar). Fraction digits past the ninth are dropped. `None` when malformed.
pub(super) fn epoch_ns(s: &str) -> Option<i128> {
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.split('-');
    let (y, mo, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    let (clock, frac) = time
        .trim()
        .trim_end_matches('Z')
        .split_once('.')
        .unwrap_or((time.trim().trim_end_matches('Z'), ""));
    let mut c = clock.split(':');
    let (h, mi, sec) = (num(c.next()?)?, num(c.next()?)?, num(c.next()?)?);
    if d.next().is_some() || c.next().is_some() {
        return None;
    }
    let days_in = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let month_ok = (1..=12).contains(&mo)
        && (1..=days_in[(mo as usize).saturating_sub(1).min(11)]).contains(&day);
    if !month_ok || h > 23 || mi > 59 || sec > 60 || !(1..=9999).contains(&y) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: String = frac.chars().take(9).collect();
    let nanos = format!("{digits:0<9}").parse::<i128>().ok()?;
    let secs = days_from_civil(y, mo, day) * 86_400 + h * 3600 + mi * 60 + sec;
    Some(secs * 1_000_000_000 + nanos)
}

/// A short unsigned decimal field (at most 4 digits: years, months, … seconds).
fn num(s: &str) -> Option<i128> {
    let s = s.trim();
    (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn leap(y: i128) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Days from 1970-01-01 to the date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i128, m: i128, d: i128) -> i128 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_read_to_the_ns() {
        assert_eq!(epoch_ns("1970-01-01 00:00:00"), Some(0));
        // date -u -d '2023-11-16 18:15:46' +%s = 1700158546
        assert_eq!(
            epoch_ns("2023-11-16 18:15:46.6805900"),
            Some(1_700_158_546_680_590_000)
        );
        assert_eq!(
            epoch_ns("2024-02-29T00:00:01.5Z"),
            Some(1_709_164_801_500_000_000)
        );
        for bad in [
            "",
            "2023-11-16",
            "2023-13-01 00:00:00",
            "2023-02-29 00:00:00",
            "2023-11-16 24:00:00",
            "2023-11-16 18:15:46.x",
            "2023-11-16 18:15",
            "99999-01-01 00:00:00",
            "2023-11-16 18:15:46:01",
        ] {
            assert_eq!(epoch_ns(bad), None, "{bad}");
        }
    }
}
