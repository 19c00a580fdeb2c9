//! Parsers (and matching formatters) for the values users type: sizes (`4k`, `10g`),
//! durations (`30s`, `500ms`) and percentages (`70`, `70%`) (CPU lists are the device crate's:
//! [`hostmax_device::parse_cpu_list`]); and the one
//! place numbers are spelled for people: latencies ([`format_latency_ns`]), sizes
//! ([`human_size`]) and throughput ([`format_mib_per_sec`]).
//!
//! Every parser returns a [`UnitError`] naming the input and what would be accepted; none of
//! them panics on any input (they are fuzzed), and each overflow is an error, never a wrap.

use std::time::Duration;

/// Why a value could not be parsed. Shown after the option's name, so it reads as a sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Nothing was given.
    #[error("empty {what}; give e.g. {example}")]
    Empty {
        /// What kind of value was expected ("size", "duration", ...).
        what: &'static str,
        /// An example of a valid value.
        example: &'static str,
    },
    /// The input is not a valid value of that kind.
    #[error("'{input}' is not a valid {what}: {reason}")]
    Invalid {
        /// The input as given.
        input: String,
        /// What kind of value was expected.
        what: &'static str,
        /// Why not, and what would be accepted.
        reason: String,
    },
}

fn invalid(input: &str, what: &'static str, reason: impl Into<String>) -> UnitError {
    UnitError::Invalid {
        input: input.to_string(),
        what,
        reason: reason.into(),
    }
}

/// Splits `s` into its leading ASCII digits and the rest.
fn split_number(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

/// `input` without surrounding whitespace, or the error for an empty `what`, suggesting
/// `example`.
fn non_empty<'a>(
    input: &'a str,
    what: &'static str,
    example: &'static str,
) -> Result<&'a str, UnitError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(UnitError::Empty { what, example });
    }
    Ok(trimmed)
}

/// Parses the leading digits of a value, with the errors shared by sizes and durations.
fn parse_leading_u64<'a>(
    input: &str,
    trimmed: &'a str,
    what: &'static str,
    accepted: &str,
) -> Result<(u64, &'a str), UnitError> {
    if trimmed.starts_with('-') {
        return Err(invalid(input, what, format!("negative; {accepted}")));
    }
    let body = trimmed.strip_prefix('+').unwrap_or(trimmed);
    let (digits, suffix) = split_number(body);
    if digits.is_empty() {
        return Err(invalid(
            input,
            what,
            format!("it does not start with a number; {accepted}"),
        ));
    }
    let number = digits
        .parse::<u64>()
        .map_err(|_| invalid(input, what, "the number is too large"))?;
    Ok((number, suffix))
}

const SIZE_ACCEPTED: &str =
    "use a whole number of bytes with an optional suffix b, k, m, g or t (powers of 1024, e.g. 4k, 10g)";

/// Parses a size in bytes: a whole number with an optional suffix `k`, `m`, `g`, `t` (powers of
/// 1024, as fio's default `kb_base=1024`), optionally followed by `b` or `ib` (`4k`, `4kb`,
/// `4KiB` are all 4096); `b` or no suffix is bytes. Case does not matter.
///
/// Unlike fio's compatibility mode, `KiB` also means 1024 (fio reads it as 1000 there), so
/// `4KiB` is the same as `4k` whatever the user's habit.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    const WHAT: &str = "size";
    let trimmed = non_empty(input, WHAT, "4k or 10g")?;
    let (number, suffix) = parse_leading_u64(input, trimmed, WHAT, SIZE_ACCEPTED)?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ if suffix.starts_with('.') => {
            return Err(invalid(
                input,
                WHAT,
                format!("fractions are not accepted; {SIZE_ACCEPTED}"),
            ))
        }
        _ => {
            return Err(invalid(
                input,
                WHAT,
                format!("unknown suffix '{suffix}'; {SIZE_ACCEPTED}"),
            ))
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| invalid(input, WHAT, "too large (more than 16 EiB)"))
}

/// Formats a byte count in the largest unit that states it exactly (`4096` -> `4k`,
/// `1536` -> `1536`), so that [`parse_size`] gives back the same number.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "t"), (30, "g"), (20, "m"), (10, "k")];
    if bytes == 0 {
        return "0".to_string();
    }
    for (shift, unit) in UNITS {
        if bytes.trailing_zeros() >= shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Formats a byte count for people, in binary units with up to one decimal (`1.5 GiB`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = UNITS[0];
    for next in &UNITS[1..] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

const DURATION_ACCEPTED: &str =
    "use a whole number with an optional suffix ms, s, m or h (no suffix is seconds, e.g. 30s, 500ms, 2m)";

/// The longest duration any option takes: 365 days (8760h), the engine's longest ramp and
/// longest measured time ([`hostmax_engine::MAX_RUN_TIME`]). A longer one is an error here, so
/// no later sum of durations (an `Instant` plus ramp plus runtime, a start time plus a wait)
/// can overflow.
pub const MAX_DURATION: Duration = hostmax_engine::MAX_RUN_TIME;

/// Parses a duration: a whole number with a suffix `ms`, `s`, `m` (minutes) or `h`; a bare
/// number is seconds, as in fio. Case does not matter. At most [`MAX_DURATION`].
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    const WHAT: &str = "duration";
    let trimmed = non_empty(input, WHAT, "30s or 500ms")?;
    let (number, suffix) = parse_leading_u64(input, trimmed, WHAT, DURATION_ACCEPTED)?;
    let too_long = || {
        invalid(
            input,
            WHAT,
            format!(
                "too long: use at most {} (365 days)",
                format_duration(MAX_DURATION)
            ),
        )
    };
    let d = match suffix.to_ascii_lowercase().as_str() {
        "ms" => Some(Duration::from_millis(number)),
        "" | "s" => Some(Duration::from_secs(number)),
        "m" => number.checked_mul(60).map(Duration::from_secs),
        "h" => number.checked_mul(3600).map(Duration::from_secs),
        _ if suffix.starts_with('.') => {
            return Err(invalid(
                input,
                WHAT,
                format!("fractions are not accepted; {DURATION_ACCEPTED}"),
            ))
        }
        _ => {
            return Err(invalid(
                input,
                WHAT,
                format!("unknown suffix '{suffix}'; {DURATION_ACCEPTED}"),
            ))
        }
    };
    d.filter(|d| *d <= MAX_DURATION).ok_or_else(too_long)
}

/// Formats a duration in the largest unit that states it exactly (`90s` -> `90s`,
/// `120s` -> `2m`, `1500ms` -> `1500ms`), so that [`parse_duration`] gives it back.
/// Sub-millisecond parts are dropped: no parser input has them.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".to_string();
    }
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let secs = ms / 1000;
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

/// Parses a percentage, 0 to 100, with or without a trailing `%` (`70`, `70%`).
pub fn parse_percent(input: &str) -> Result<u8, UnitError> {
    const WHAT: &str = "percentage";
    let trimmed = non_empty(input, WHAT, "70")?;
    let body = trimmed.strip_suffix('%').unwrap_or(trimmed).trim_end();
    if body.starts_with('-') {
        return Err(invalid(
            input,
            WHAT,
            "negative; use a whole number from 0 to 100",
        ));
    }
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(input, WHAT, "use a whole number from 0 to 100"));
    }
    match body.parse::<u64>() {
        Ok(n) if n <= 100 => Ok(n as u8),
        _ => Err(invalid(
            input,
            WHAT,
            "above 100; use a whole number from 0 to 100",
        )),
    }
}

/// Parses a positive whole number that may not be zero (`--rate-iops`), with an optional
/// `k` or `m` suffix meaning thousands or millions (`50k`), as counts are usually spoken.
pub fn parse_count(input: &str) -> Result<u64, UnitError> {
    const WHAT: &str = "count";
    const ACCEPTED: &str =
        "use a whole number above 0, optionally with k or m (thousands, millions)";
    let trimmed = non_empty(input, WHAT, "5000 or 50k")?;
    let (number, suffix) = parse_leading_u64(input, trimmed, WHAT, ACCEPTED)?;
    let factor = match suffix.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        _ => {
            return Err(invalid(
                input,
                WHAT,
                format!("unknown suffix '{suffix}'; {ACCEPTED}"),
            ))
        }
    };
    match number.checked_mul(factor) {
        Some(0) => Err(invalid(input, WHAT, format!("zero; {ACCEPTED}"))),
        Some(n) => Ok(n),
        None => Err(invalid(input, WHAT, "too large")),
    }
}

/// Parses a seed: a whole number from 0 to 2^64-1, decimal or hexadecimal with `0x`.
pub fn parse_seed(input: &str) -> Result<u64, UnitError> {
    const WHAT: &str = "seed";
    const ACCEPTED: &str =
        "use a whole number from 0 to 18446744073709551615, or hex such as 0x5eed";
    let trimmed = non_empty(input, WHAT, "42")?;
    let parsed = match trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        // from_str_radix accepts a sign; a seed has none.
        Some(hex) if hex.bytes().all(|b| b.is_ascii_hexdigit()) && !hex.is_empty() => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if trimmed.bytes().all(|b| b.is_ascii_digit()) => trimmed.parse::<u64>().ok(),
        None => None,
    };
    parsed.ok_or_else(|| invalid(input, WHAT, ACCEPTED))
}

// How numbers are spelled for people in tables, live lines and pages (one place for all).

/// Bytes in a MiB: throughput is in MiB/s, as sizes on the command line are powers of 1024.
pub const MIB: f64 = 1024.0 * 1024.0;

/// A latency in nanoseconds with a unit and three significant figures: `850 ns`, `3.12 µs`,
/// `310 µs`, `1.25 ms`, `2.00 s`; `-` for 0 (nothing recorded).
pub fn format_latency_ns(ns: u64) -> String {
    if ns == 0 {
        return "-".to_string();
    }
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    // Three figures of 999,500 ns and up round to 1000 µs: spell those in the next unit
    // (1.00 ms), so the unit never flips between neighbours such as "1000 µs" and "1.01 ms".
    let (value, unit) = if ns < 999_500 {
        (ns as f64 / 1e3, "µs")
    } else if ns < 999_500_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e9, "s")
    };
    if value < 9.995 {
        format!("{value:.2} {unit}")
    } else if value < 99.95 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// Bytes per second as MiB/s with one decimal, without the unit: `1610.7`.
pub fn format_mib_per_sec(bytes_per_sec: f64) -> String {
    format!("{:.1}", bytes_per_sec / MIB)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*), so the generated cases are the same on
    /// every run and a failure can be reproduced.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn sizes_use_powers_of_1024() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("512b"), Ok(512));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4kb"), Ok(4096));
        assert_eq!(parse_size("4kib"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("8m"), Ok(8 << 20));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("10g"), Ok(10 << 30));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert_eq!(parse_size(" 4k "), Ok(4096));
        assert_eq!(parse_size("+4k"), Ok(4096));
        assert_eq!(parse_size("16777215t"), Ok(16_777_215 << 40));
    }

    #[test]
    fn bad_sizes_are_errors_that_name_the_input() {
        for bad in [
            "",
            " ",
            "k",
            "-1",
            "-4k",
            "4x",
            "4kk",
            "4 k",
            "1.5g",
            "0x10",
            "abc",
            "4kibi",
            "18446744073709551616",
            "16777216t",
            "99999999999999999999999k",
            "4k4",
            "+",
            "++4",
            "4\u{0}",
            "٣k",
            "4ｋ",
        ] {
            let err = parse_size(bad).expect_err(bad);
            let msg = err.to_string();
            assert!(!msg.contains('\n'), "{msg}");
            if !bad.trim().is_empty() {
                assert!(msg.contains(bad), "{bad:?} -> {msg}");
            }
        }
        assert!(parse_size("-4k")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(parse_size("16777216t")
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert!(parse_size("4x")
            .unwrap_err()
            .to_string()
            .contains("suffix 'x'"));
    }

    #[test]
    fn sizes_round_trip_through_formatting() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..20_000 {
            let value = match rng.below(4) {
                0 => rng.next(),
                1 => rng.below(1 << 20),
                2 => rng.below(1 << 24) << (10 * rng.below(5)),
                _ => 1u64 << rng.below(64),
            };
            let text = format_size(value);
            assert_eq!(parse_size(&text), Ok(value), "{value} -> {text}");
            assert_eq!(parse_size(&text.to_uppercase()), Ok(value));
        }
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(3 << 30), "3g");
        assert_eq!(format_size(u64::MAX), u64::MAX.to_string());
    }

    #[test]
    fn human_sizes_read_well() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(4096), "4 KiB");
        assert_eq!(human_size(3 << 29), "1.5 GiB");
        assert_eq!(human_size(u64::MAX), "16384 PiB");
    }

    #[test]
    fn durations_take_fio_suffixes() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("500MS"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("8760h"), Ok(MAX_DURATION));
    }

    #[test]
    fn bad_durations_are_errors() {
        for bad in [
            "",
            "abc",
            "-5s",
            "-0",
            "10x",
            "10 s",
            "1.5s",
            "s",
            "ms",
            "5sec",
            "5mss",
            "10d",
            "18446744073709551616",
            "307445734561825861m",
            "5124095576030432h",
            "1m30s",
            "9223372036854775807s",
            "18446744073709551615ms",
            "8761h",
            "31536001",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert!(!err.to_string().contains('\n'));
        }
        assert!(parse_duration("-5s")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(parse_duration("10x")
            .unwrap_err()
            .to_string()
            .contains("'10x'"));
        assert!(parse_duration("5124095576030432h")
            .unwrap_err()
            .to_string()
            .contains("too long"));
        assert!(parse_duration("9223372036854775807s")
            .unwrap_err()
            .to_string()
            .contains("at most 8760h"));
    }

    #[test]
    fn durations_round_trip_through_formatting() {
        let mut rng = Rng(0x0dd_ba11_cafe_f00d);
        for _ in 0..20_000 {
            // Within MAX_DURATION (31,536,000 s): longer ones are refused.
            let d = match rng.below(3) {
                0 => Duration::from_millis(rng.below(1 << 34)),
                1 => Duration::from_secs(rng.below(1 << 24)),
                _ => Duration::from_secs(60 * rng.below(1 << 19)),
            };
            let text = format_duration(d);
            assert_eq!(parse_duration(&text), Ok(d), "{d:?} -> {text}");
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn percentages_are_0_to_100() {
        assert_eq!(parse_percent("0"), Ok(0));
        assert_eq!(parse_percent("70"), Ok(70));
        assert_eq!(parse_percent("70%"), Ok(70));
        assert_eq!(parse_percent("100"), Ok(100));
        for bad in [
            "",
            "%",
            "101",
            "-1",
            "70.5",
            "abc",
            "1000000000000000000000",
            "7 0",
        ] {
            parse_percent(bad).expect_err(bad);
        }
        assert!(parse_percent("101")
            .unwrap_err()
            .to_string()
            .contains("above 100"));
        for n in 0..=1000u32 {
            assert_eq!(
                parse_percent(&n.to_string()).ok(),
                (n <= 100).then_some(n as u8)
            );
        }
    }

    #[test]
    fn counts_and_seeds() {
        assert_eq!(parse_count("5000"), Ok(5000));
        assert_eq!(parse_count("50k"), Ok(50_000));
        assert_eq!(parse_count("2M"), Ok(2_000_000));
        for bad in ["", "0", "0k", "-5", "abc", "5x", "18446744073709551615k"] {
            parse_count(bad).expect_err(bad);
        }
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed("0x5eed"), Ok(0x5eed));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
        for bad in [
            "",
            "-1",
            "+1",
            "0x",
            "0x+1",
            "0xg",
            "abc",
            "18446744073709551616",
            "1e3",
        ] {
            parse_seed(bad).expect_err(bad);
        }
    }

    /// Random strings over the characters the parsers care about: none may panic, and any
    /// accepted value must format back to something that parses to the same value.
    #[test]
    fn generated_garbage_never_panics() {
        const ALPHABET: &[char] = &[
            '0', '1', '9', '-', '+', ',', '.', ' ', '%', 'k', 'K', 'm', 'M', 's', 'h', 'g', 't',
            'i', 'b', 'B', 'x', '\u{e9}', '\u{663}',
        ];
        let mut rng = Rng(0xfeed_beef_dead_c0de);
        for _ in 0..50_000 {
            let len = rng.below(12) as usize;
            let s: String = (0..len)
                .map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize])
                .collect();
            if let Ok(v) = parse_size(&s) {
                assert_eq!(parse_size(&format_size(v)), Ok(v));
            }
            if let Ok(d) = parse_duration(&s) {
                assert_eq!(parse_duration(&format_duration(d)), Ok(d));
            }
            if let Ok(cpus) = hostmax_device::parse_cpu_list(&s) {
                assert!(!cpus.is_empty());
                let text = hostmax_device::format_cpu_list(&cpus);
                assert_eq!(hostmax_device::parse_cpu_list(&text), Ok(cpus));
            }
            if let Ok(p) = parse_percent(&s) {
                assert!(p <= 100);
            }
            let _ = parse_count(&s);
            let _ = parse_seed(&s);
        }
    }
}

#[cfg(test)]
mod spelling_tests {
    use super::*;

    #[test]
    fn latencies_get_a_unit_and_three_figures() {
        assert_eq!(format_latency_ns(0), "-");
        assert_eq!(format_latency_ns(850), "850 ns");
        assert_eq!(format_latency_ns(3_123), "3.12 µs");
        assert_eq!(format_latency_ns(31_250), "31.2 µs");
        assert_eq!(format_latency_ns(310_400), "310 µs");
        assert_eq!(format_latency_ns(1_254_000), "1.25 ms");
        assert_eq!(format_latency_ns(2_000_000_000), "2.00 s");
        // Never "1000 µs" beside "1.01 ms": the carry moves to the next unit.
        assert_eq!(format_latency_ns(999_499), "999 µs");
        assert_eq!(format_latency_ns(999_600), "1.00 ms");
        assert_eq!(format_latency_ns(9_996), "10.0 µs");
        assert_eq!(format_latency_ns(99_960), "100 µs");
        assert_eq!(format_latency_ns(20_650_100), "20.7 ms");
    }

    #[test]
    fn throughput_is_mib_per_second() {
        assert_eq!(format_mib_per_sec(412_345.0 * 4096.0), "1610.7");
        assert_eq!(format_mib_per_sec(0.0), "0.0");
    }
}
