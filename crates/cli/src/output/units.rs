//! How numbers are spelled for people: latencies with a unit, throughput in MiB/s.

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
    let (value, unit) = if ns < 1_000_000 {
        (ns as f64 / 1e3, "µs")
    } else if ns < 1_000_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e9, "s")
    };
    // Rounding may carry into the next decade (999.6 µs -> "1000 µs"); that still reads right.
    if value < 10.0 {
        format!("{value:.2} {unit}")
    } else if value < 100.0 {
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

    #[test]
    fn latencies_get_a_unit_and_three_figures() {
        assert_eq!(format_latency_ns(0), "-");
        assert_eq!(format_latency_ns(850), "850 ns");
        assert_eq!(format_latency_ns(3_123), "3.12 µs");
        assert_eq!(format_latency_ns(31_250), "31.2 µs");
        assert_eq!(format_latency_ns(310_400), "310 µs");
        assert_eq!(format_latency_ns(1_254_000), "1.25 ms");
        assert_eq!(format_latency_ns(2_000_000_000), "2.00 s");
    }

    #[test]
    fn throughput_is_mib_per_second() {
        assert_eq!(format_mib_per_sec(412_345.0 * 4096.0), "1610.7");
        assert_eq!(format_mib_per_sec(0.0), "0.0");
    }
}
