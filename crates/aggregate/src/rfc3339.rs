//! RFC 3339 times, parsed and written by a small parser here (the run windows reports carry
//! in [`crate::Provenance`], and a front end's start times): the format is fixed, and a date
//! library would be the heaviest dependency for two functions.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `t`, `z` and a space
/// for the `T` are accepted, as RFC 3339 allows). Leap second 60 is taken as the next second.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>, what: &str| -> Result<i64, String> {
        let part = b
            .get(range)
            .filter(|p| p.iter().all(u8::is_ascii_digit))
            .ok_or_else(|| format!("expected the {what} as digits"))?;
        Ok(part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |at: usize, want: &[u8], what: &str| -> Result<(), String> {
        match b.get(at) {
            Some(c) if want.contains(c) => Ok(()),
            _ => Err(format!("expected {what} at position {}", at + 1)),
        }
    };
    let year = digits(0..4, "year (YYYY)")?;
    sep(4, b"-", "'-'")?;
    let month = digits(5..7, "month (MM)")?;
    sep(7, b"-", "'-'")?;
    let day = digits(8..10, "day (DD)")?;
    sep(10, b"Tt ", "'T'")?;
    let hour = digits(11..13, "hour (hh)")?;
    sep(13, b":", "':'")?;
    let minute = digits(14..16, "minutes (mm)")?;
    sep(16, b":", "':'")?;
    let second = digits(17..19, "seconds (ss)")?;
    let mut at = 19;
    let mut nanos: i64 = 0;
    if b.get(at) == Some(&b'.') {
        let start = at + 1;
        let len = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if len == 0 {
            return Err("expected digits after '.'".into());
        }
        for (i, d) in b[start..start + len].iter().enumerate().take(9) {
            nanos += i64::from(d - b'0') * 10i64.pow(8 - i as u32);
        }
        at = start + len;
    }
    let offset_secs = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == b.len() => {
            let oh = digits(at + 1..at + 3, "offset hours")?;
            sep(at + 3, b":", "':' in the offset")?;
            let om = digits(at + 4..at + 6, "offset minutes")?;
            if oh > 23 || om > 59 {
                return Err(format!("offset {oh:02}:{om:02} is out of range"));
            }
            let secs = oh * 3600 + om * 60;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return Err("expected 'Z' or an offset such as +01:00 at the end".into()),
    };
    if !(1..=12).contains(&month) {
        return Err(format!("month {month} is out of range"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(format!(
            "day {day} is out of range for {year:04}-{month:02}"
        ));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(format!(
            "time {hour:02}:{minute:02}:{second:02} is out of range"
        ));
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_secs;
    let whole = Duration::from_secs(secs.unsigned_abs());
    let t = if secs >= 0 {
        UNIX_EPOCH + whole
    } else {
        UNIX_EPOCH - whole
    };
    Ok(t + Duration::from_nanos(nanos as u64))
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The (year, month 1-12, day 1-31) of `days` since 1970-01-01: the inverse of
/// `days_from_civil` (Howard Hinnant's civil_from_days).
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `t` as RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T12:00:00.000Z`.
pub fn format_rfc3339(t: SystemTime) -> String {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        Err(e) => (-(e.duration().as_secs_f64().ceil() as i64), 0),
    };
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(t: SystemTime) -> f64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    }

    #[test]
    fn rfc3339_times_parse_to_the_right_instant() {
        for (text, want) in [
            ("1970-01-01T00:00:00Z", 0.0),
            ("2026-11-22T12:00:00Z", 1_795_348_800.0),
            ("2026-11-22t12:00:00z", 1_795_348_800.0),
            ("2026-11-22 12:00:00Z", 1_795_348_800.0),
            ("2026-11-22T13:00:00+01:00", 1_795_348_800.0),
            ("2026-11-22T06:30:00-05:30", 1_795_348_800.0),
            ("2026-11-22T12:00:00.25Z", 1_795_348_800.25),
            ("2024-02-29T00:00:00Z", 1_709_164_800.0),
            ("2000-03-01T00:00:00Z", 951_868_800.0),
            ("2016-12-31T23:59:60Z", 1_483_228_800.0),
        ] {
            let got = parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(
                (secs(got) - want).abs() < 1e-6,
                "{text}: {} vs {want}",
                secs(got)
            );
        }
        let nanos = parse_rfc3339("2026-01-01T00:00:00.123456789123Z").unwrap();
        assert_eq!(
            nanos.duration_since(UNIX_EPOCH).unwrap().subsec_nanos(),
            123_456_789
        );
    }

    #[test]
    fn malformed_times_say_what_is_wrong() {
        for (text, expected) in [
            ("2026-13-01T00:00:00Z", "month 13"),
            ("2026-02-29T00:00:00Z", "day 29 is out of range for 2026-02"),
            ("2026-11-31T00:00:00Z", "day 31"),
            ("2026-11-22T24:00:00Z", "out of range"),
            ("2026-11-22T12:00:00", "expected 'Z'"),
            ("2026-11-22T12:00:00+0100", "expected 'Z'"),
            ("2026-11-22T12:00Z", "expected ':'"),
            ("2026-11-22", "'T'"),
            ("tomorrow", "year"),
            ("2026-11-22T12:00:00.Z", "digits after '.'"),
            ("", "year"),
        ] {
            let err = parse_rfc3339(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn formatting_inverts_parsing() {
        for text in [
            "1970-01-01T00:00:00.000Z",
            "2026-11-22T12:00:00.250Z",
            "2024-02-29T23:59:59.999Z",
            "2100-03-01T00:00:00.000Z",
        ] {
            assert_eq!(format_rfc3339(parse_rfc3339(text).unwrap()), text);
        }
    }
}
