//! Splitting a line into fields and reading its numbers, without allocating.

/// Up to `N` fields of a line, and how many it had in all (more than `N` when it had more).
pub(crate) struct Fields<'l, const N: usize> {
    pub field: [&'l [u8]; N],
    pub count: usize,
}

impl<'l, const N: usize> Fields<'l, N> {
    fn push(&mut self, f: &'l [u8]) {
        if self.count < N {
            self.field[self.count] = f;
        }
        self.count += 1;
    }
}

/// The fields of `line` between runs of spaces and tabs (how fio's `sscanf("%s")` reads an
/// iolog line).
pub(crate) fn split_whitespace<const N: usize>(line: &[u8]) -> Fields<'_, N> {
    let mut fields = Fields {
        field: [&[][..]; N],
        count: 0,
    };
    for f in line
        .split(|&b| b == b' ' || b == b'\t')
        .filter(|f| !f.is_empty())
    {
        fields.push(f);
    }
    fields
}

/// The comma-separated fields of `line`, each without spaces or tabs around it.
pub(crate) fn split_commas<const N: usize>(line: &[u8]) -> Fields<'_, N> {
    let mut fields = Fields {
        field: [&[][..]; N],
        count: 0,
    };
    for f in line.split(|&b| b == b',') {
        fields.push(f.trim_ascii());
    }
    fields
}

/// A decimal whole number of digits alone (no sign, no spaces), if it fits 64 bits.
pub(crate) fn parse_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 20 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in text {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Seconds, whole (`1538323199`) or with up to nine decimals (`1538323199.25`), in
/// nanoseconds, if they fit 64 bits.
pub(crate) fn parse_seconds_ns(text: &[u8]) -> Option<u64> {
    let (whole, fraction) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &[][..]),
    };
    if fraction.len() > 9 || (text.contains(&b'.') && fraction.is_empty()) {
        return None;
    }
    let mut nanos = if fraction.is_empty() {
        0
    } else {
        parse_u64(fraction)?
    };
    for _ in fraction.len()..9 {
        nanos *= 10;
    }
    parse_u64(whole)?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

/// A duration in nanoseconds for a message: `1.5 s`, `20 ms`, `300 us`, `7 ns`.
pub(crate) fn format_ns(ns: u64) -> String {
    let (value, unit) = match ns {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (ns as f64 / 1e3, "us"),
        1_000_000..1_000_000_000 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_fields_are_counted_past_the_limit() {
        let f = split_whitespace::<3>(b"  a\tbb  c d ");
        assert_eq!(f.count, 4);
        assert_eq!(f.field, [&b"a"[..], b"bb", b"c"]);
        assert_eq!(split_whitespace::<3>(b"   ").count, 0);
    }

    #[test]
    fn comma_fields_keep_empty_ones_and_lose_spaces() {
        let f = split_commas::<5>(b"1, R ,,4,");
        assert_eq!(f.count, 5);
        assert_eq!(f.field, [&b"1"[..], b"R", b"", b"4", b""]);
    }

    #[test]
    fn numbers_are_digits_alone_within_64_bits() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"18446744073709551616",
            b"-1",
            b"+1",
            b"1 ",
            b"0x10",
            b"1e3",
        ] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn seconds_take_up_to_nine_decimals() {
        assert_eq!(parse_seconds_ns(b"2"), Some(2_000_000_000));
        assert_eq!(parse_seconds_ns(b"2.5"), Some(2_500_000_000));
        assert_eq!(parse_seconds_ns(b"0.000000001"), Some(1));
        for bad in [&b"2."[..], b".5", b"1.0000000001", b"1.2.3", b"99999999999"] {
            assert_eq!(parse_seconds_ns(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(format_ns(7), "7 ns");
        assert_eq!(format_ns(300_000), "300 us");
        assert_eq!(format_ns(1_500_000_000), "1.5 s");
        assert_eq!(format_ns(20_250_000), "20.25 ms");
    }
}
