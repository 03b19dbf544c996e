//! Wall-clock timestamps for metadata (never for figures, which use a monotonic clock).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, ns since the Unix epoch (0 for a clock before 1970): the wall clock that shards of a
/// run share (never for figures).
pub fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Now as RFC 3339 UTC with milliseconds (`2026-12-02T15:45:02.123Z`).
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// Formats a system time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}.{:03}Z", whole_seconds(d.as_secs()), d.subsec_millis())
}

/// Formats a system time as RFC 3339 UTC with nanoseconds (`2026-12-02T15:45:02.123456789Z`):
/// for lining a run's events up with other tools' telemetry, where a millisecond is coarse.
pub fn rfc3339_nanos(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}.{:09}Z", whole_seconds(d.as_secs()), d.subsec_nanos())
}

/// `2026-12-02T15:45:02`: the date and time of `secs` since the Unix epoch, UTC.
fn whole_seconds(secs: u64) -> String {
    let secs = secs as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, dd) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Parses an RFC 3339 instant (`2026-12-04T22:00:00Z`, `…T23:00:00.5+01:00`; `t` and `z`
/// lower-case too) into ns since the Unix epoch. `None` for anything else, a field out of
/// range, or an instant before 1970.
pub fn parse_rfc3339_ns(text: &str) -> Option<u64> {
    let t = text.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(s).ok()?.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let seps = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if seps.iter().any(|(i, c)| t.get(*i) != Some(c)) || !matches!(t.get(10), Some(b'T' | b't')) {
        return None;
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ns: i64 = 0;
    if t.get(i) == Some(&b'.') {
        let digits = t[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let kept = &t[i + 1..i + 1 + digits.min(9)];
        frac_ns =
            std::str::from_utf8(kept).ok()?.parse::<i64>().ok()? * 10i64.pow(9 - kept.len() as u32);
        i += 1 + digits;
    }
    let offset_s = match t.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let _ = (h1, h2, m1, m2);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s.min(59) - offset_s;
    u64::try_from(secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)?).ok()
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Howard Hinnant's civil-to-days algorithm, the inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian), to avoid a date crate.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_139_902_123);
        assert_eq!(rfc3339(t), "2026-12-01T15:45:02.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
        let ns = UNIX_EPOCH + Duration::from_nanos(1_796_139_902_123_456_789);
        assert_eq!(rfc3339_nanos(ns), "2026-12-01T15:45:02.123456789Z");
        assert_eq!(
            parse_rfc3339_ns(&rfc3339_nanos(ns)),
            Some(1_796_139_902_123_456_789)
        );
    }

    #[test]
    fn rfc3339_parses_back() {
        let p = |s: &str| parse_rfc3339_ns(s);
        assert_eq!(p("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            p("2026-12-01T15:45:02.123Z"),
            Some(1_796_139_902_123_000_000)
        );
        assert_eq!(
            p("2026-12-01T16:45:02.123+01:00"),
            Some(1_796_139_902_123_000_000)
        );
        assert_eq!(
            p("2026-12-01t15:15:02.123-00:30"),
            Some(1_796_139_902_123_000_000)
        );
        assert_eq!(
            p("2000-02-29T00:00:00.000000001Z"),
            Some(951_782_400_000_000_001)
        );
        for bad in [
            "",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:00",
            "2026-12-01T00:00:00+1:00",
            "1969-12-31T23:59:59Z",
            "2026-12-01T00:00:00.Z",
            "2026-12-01 00:00:00Z",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
        // Every millisecond instant formatted here reads back.
        for ms in [0u64, 951_782_400_000, 1_796_139_902_123, 4_102_444_799_999] {
            let t = UNIX_EPOCH + Duration::from_millis(ms);
            assert_eq!(p(&rfc3339(t)), Some(ms * 1_000_000));
        }
    }
}
