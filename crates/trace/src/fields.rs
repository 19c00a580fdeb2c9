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

/// A line read field by field in one pass, its fields parted by one `sep` byte each: the
/// fast path of every format, for lines as the traces' own writers write them. Any surprise
/// (a second space, a sign, a decimal point, too many digits) is `None`, and the caller reads
/// the line again the slow way, which says what is wrong.
pub(crate) struct FieldCursor<'l> {
    line: &'l [u8],
    at: usize,
    sep: u8,
}

impl<'l> FieldCursor<'l> {
    pub fn new(line: &'l [u8], sep: u8) -> Self {
        FieldCursor { line, at: 0, sep }
    }

    /// Past the separator after a field, or at the line's end.
    fn end_field(&mut self) -> Option<()> {
        match self.line.get(self.at) {
            Some(&b) if b == self.sep => {
                self.at += 1;
                Some(())
            }
            None => Some(()),
            Some(_) => None,
        }
    }

    /// The next field, any bytes but the separator (at least one).
    pub fn word(&mut self) -> Option<&'l [u8]> {
        let rest = &self.line[self.at..];
        let len = rest
            .iter()
            .position(|&b| b == self.sep)
            .unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        self.at += len;
        self.end_field()?;
        Some(&rest[..len])
    }

    /// The next field, a whole number of at most 19 digits (which cannot overflow).
    pub fn number(&mut self) -> Option<u64> {
        let start = self.at;
        let mut n: u64 = 0;
        // Eight digits at a time while they last, then one at a time.
        while let Some(eight) = self.line.get(self.at..self.at + 8) {
            let word = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
            if !all_digits(word) {
                break;
            }
            n = n.wrapping_mul(100_000_000).wrapping_add(eight_digits(word));
            self.at += 8;
        }
        while let Some(&b) = self.line.get(self.at) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            n = n.wrapping_mul(10).wrapping_add(u64::from(d));
            self.at += 1;
        }
        let digits = self.at - start;
        if digits == 0 || digits > 19 {
            return None;
        }
        self.end_field()?;
        Some(n)
    }

    /// The next field, one byte.
    pub fn byte(&mut self) -> Option<u8> {
        let b = *self.line.get(self.at)?;
        self.at += 1;
        self.end_field()?;
        Some(b)
    }

    /// Whether the whole line was read (and it did not end in a separator).
    pub fn done(&self) -> bool {
        self.at == self.line.len() && self.line.last() != Some(&self.sep)
    }
}

/// Whether the eight bytes of `word` (little-endian) are all ASCII digits: each byte's high
/// nibble is 3, and adding 6 does not carry into it.
fn all_digits(word: u64) -> bool {
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    (word & HIGH) | ((word.wrapping_add(0x0606_0606_0606_0606) & HIGH) >> 4)
        == 0x3333_3333_3333_3333
}

/// The number eight ASCII digits (little-endian in `word`, the first the most significant)
/// make, in three multiplications (Lemire, "Quickly parsing eight digits").
fn eight_digits(word: u64) -> u64 {
    let v = word - 0x3030_3030_3030_3030;
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let low = (v & 0x0000_00ff_0000_00ff).wrapping_mul(100 + (1_000_000 << 32));
    let high = ((v >> 16) & 0x0000_00ff_0000_00ff).wrapping_mul(1 + (10_000 << 32));
    low.wrapping_add(high) >> 32
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
    fn cursor_fields_read_in_one_pass_or_give_up() {
        let mut f = FieldCursor::new(b"12,R,0,4096", b',');
        assert_eq!(
            (f.number(), f.byte(), f.number()),
            (Some(12), Some(b'R'), Some(0))
        );
        assert!(!f.done());
        assert_eq!(f.number(), Some(4096));
        assert!(f.done());
        for giving_up in [
            &b" 1"[..],
            b"1 ",
            b"-1",
            b"",
            b"12345678901234567890",
            b"1.5",
        ] {
            let mut f = FieldCursor::new(giving_up, b',');
            assert!(f.number().is_none() || !f.done(), "{giving_up:?}");
        }
        let mut f = FieldCursor::new(b"1,", b',');
        assert_eq!(f.number(), Some(1));
        assert!(!f.done(), "a trailing comma is one more field");
        let mut f = FieldCursor::new(b"7 /dev/sdb read", b' ');
        assert_eq!(f.number(), Some(7));
        assert_eq!(
            (f.word(), f.word()),
            (Some(&b"/dev/sdb"[..]), Some(&b"read"[..]))
        );
        assert!(f.done());
        let mut f = FieldCursor::new(b"7  x", b' ');
        assert_eq!((f.number(), f.word()), (Some(7), None), "two spaces");
    }

    #[test]
    fn eight_digits_at_once_read_as_one_at_a_time() {
        for text in ["00000000", "12345678", "99999999", "10000001", "31415926"] {
            let word = u64::from_le_bytes(text.as_bytes().try_into().unwrap());
            assert!(all_digits(word), "{text}");
            assert_eq!(eight_digits(word), text.parse::<u64>().unwrap(), "{text}");
        }
        for text in [
            "1234567/",
            "1234567:",
            " 2345678",
            "1234,678",
            "\u{0}1234567",
        ] {
            let word = u64::from_le_bytes(text.as_bytes().try_into().unwrap());
            assert!(!all_digits(word), "{text:?}");
        }
        for n in [
            0u64,
            7,
            12345678,
            123456789,
            1577808000000626,
            9999999999999999999,
        ] {
            let text = n.to_string();
            for tail in ["", ",x"] {
                let line = format!("{text}{tail}");
                assert_eq!(
                    FieldCursor::new(line.as_bytes(), b',').number(),
                    Some(n),
                    "{line}"
                );
            }
        }
        assert_eq!(
            FieldCursor::new(b"10000000000000000000", b',').number(),
            None
        );
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
