//! Percentiles of an HDR histogram, and exact histogram addition.

use hdrhistogram::{Counter, Histogram};
use serde::{Deserialize, Serialize};

/// Latency percentiles of one kind of I/O, in nanoseconds; all zero when nothing was recorded.
///
/// Each percentile is the highest value equivalent to its bin (3 significant figures), as
/// HdrHistogram reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LatencySummary {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile (what providers' latency promises name).
    #[serde(default)]
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
    /// 99.99th percentile.
    pub p99_99: u64,
    /// Highest latency recorded.
    pub max: u64,
    /// Lowest latency recorded.
    pub min: u64,
    /// Mean latency.
    pub mean: f64,
}

impl LatencySummary {
    /// Reads the percentiles off `histogram` (any counter width).
    pub fn from_histogram<T: Counter>(histogram: &Histogram<T>) -> LatencySummary {
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            p50: histogram.value_at_quantile(0.5),
            p90: histogram.value_at_quantile(0.9),
            p95: histogram.value_at_quantile(0.95),
            p99: histogram.value_at_quantile(0.99),
            p99_9: histogram.value_at_quantile(0.999),
            p99_99: histogram.value_at_quantile(0.9999),
            max: histogram.max(),
            min: histogram.min(),
            mean: histogram.mean(),
        }
    }
}

/// Adds every count of `source` to `dest`, bin for bin.
///
/// With the shared bounds of [`hostmax_engine::new_latency_histogram`] this is exact. Should
/// `source` hold values beyond `dest`'s range (a histogram made with other bounds), those are
/// clamped to `dest`'s highest trackable value and still counted, so no I/O is ever dropped.
pub fn add_exact<T: Counter>(dest: &mut Histogram<T>, source: &Histogram<T>) {
    if dest.add(source).is_ok() {
        return;
    }
    // `add` refuses the whole source when its maximum is out of range; re-record it bin by
    // bin instead, clamping only what does not fit.
    for bin in source.iter_recorded() {
        dest.saturating_record_n(bin.value_iterated_to(), bin.count_at_value());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_engine::new_latency_histogram;

    #[test]
    fn empty_histogram_gives_zeroes() {
        let h = new_latency_histogram();
        assert_eq!(
            LatencySummary::from_histogram(&h),
            LatencySummary::default()
        );
    }

    #[test]
    fn percentiles_follow_the_recorded_values() {
        let mut h = new_latency_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 1_000).unwrap();
        }
        let s = LatencySummary::from_histogram(&h);
        // 3 significant figures: each value within 0.1% of the exact percentile.
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.001;
        assert!(near(s.p50, 5_000_000), "p50 {}", s.p50);
        assert!(near(s.p90, 9_000_000), "p90 {}", s.p90);
        assert!(near(s.p99, 9_900_000), "p99 {}", s.p99);
        assert!(near(s.p99_9, 9_990_000), "p99.9 {}", s.p99_9);
        assert!(near(s.max, 10_000_000), "max {}", s.max);
        assert!(near(s.min, 1_000), "min {}", s.min);
        assert!(
            (s.mean - 5_000_500.0).abs() < 5_000_500.0 * 0.001,
            "mean {}",
            s.mean
        );
        assert!(s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.p99_9 && s.p99_9 <= s.p99_99);
        assert!(s.p99_99 <= s.max);
    }

    #[test]
    fn add_exact_clamps_values_beyond_range_instead_of_dropping_them() {
        let mut small: Histogram<u64> = Histogram::new_with_bounds(1, 1_000_000, 3).unwrap();
        let mut big = new_latency_histogram();
        big.record(500).unwrap();
        big.record(60_000_000_000).unwrap();
        add_exact(&mut small, &big);
        assert_eq!(small.len(), 2);
        assert!(small.max() >= 1_000_000);
    }
}
