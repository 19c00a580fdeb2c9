//! Burst behaviour: a run whose IOPS hold at one level and then drop to a lower one for good,
//! as a cloud volume's do when its burst credits are spent. [`BurstRule::detect`] finds the
//! drop in a per-second series; `baseline.rs` applies it to a report's host and devices
//! ([`crate::report_bursts`], [`crate::baseline_rates`]).
//!
//! The series is split where two flat levels fit it best (least squares over every split that
//! leaves at least `min_burst_secs` before and `min_baseline_secs` after). It is a burst when
//! the level after is at most `max_baseline_share` of the level before, and each side is
//! a sustained level: at least `min_sustained_share` of the seconds before lie above the
//! midpoint of the two levels, as many after lie below it, and neither side's standard
//! deviation passes `max_level_spread` of the drop. A run that is merely noisy, slows down
//! gradually or dips and recovers is not a burst.

use serde::{Deserialize, Serialize};

/// When a series counts as a burst followed by a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BurstRule {
    /// Seconds the burst must last, at least.
    pub min_burst_secs: usize,
    /// Seconds of baseline after the drop, at least.
    pub min_baseline_secs: usize,
    /// Largest baseline level as a share of the burst level (0.75: a drop of 25% or more).
    pub max_baseline_share: f64,
    /// Share of each side's seconds that must lie on its side of the midpoint between the
    /// two levels.
    pub min_sustained_share: f64,
    /// Largest standard deviation of each side's seconds as a share of the drop: each side is
    /// a level, not part of a slide.
    pub max_level_spread: f64,
}

impl Default for BurstRule {
    /// 5 s of burst, 5 s of baseline, a drop of at least 25%, 80% of the seconds on each side,
    /// each side's spread at most a fifth of the drop.
    fn default() -> Self {
        BurstRule {
            min_burst_secs: 5,
            min_baseline_secs: 5,
            max_baseline_share: 0.75,
            min_sustained_share: 0.8,
            max_level_spread: 0.2,
        }
    }
}

/// A drop found in a series: `iops[..baseline_from]` is the burst, the rest the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Burst {
    /// The first second of the baseline (seconds from the measured window's start): when the
    /// drop came.
    pub drop_at_secs: u64,
    /// Mean IOPS of the seconds before the drop.
    pub burst_iops: f64,
    /// Mean IOPS of the seconds from the drop on.
    pub baseline_iops: f64,
    /// Seconds of baseline measured.
    pub baseline_secs: u64,
}

impl BurstRule {
    /// The drop in `iops` (one value per second, from the measured window's start), if the
    /// series is a sustained burst followed by a lower, sustained baseline.
    pub fn detect(&self, iops: &[f64]) -> Option<Burst> {
        let n = iops.len();
        let first = self.min_burst_secs.max(1);
        let last = n.checked_sub(self.min_baseline_secs.max(1))?;
        if first > last || iops.iter().any(|v| !v.is_finite()) {
            return None;
        }
        // Prefix sums of values and squares: each split's two-level error in O(1).
        let mut sum = vec![0.0; n + 1];
        let mut squares = vec![0.0; n + 1];
        for (i, v) in iops.iter().enumerate() {
            sum[i + 1] = sum[i] + v;
            squares[i + 1] = squares[i] + v * v;
        }
        let error = |from: usize, to: usize| {
            let s = sum[to] - sum[from];
            squares[to] - squares[from] - s * s / (to - from) as f64
        };
        let split = (first..=last).min_by(|&a, &b| {
            let ea = error(0, a) + error(a, n);
            let eb = error(0, b) + error(b, n);
            ea.total_cmp(&eb)
        })?;
        let burst_iops = sum[split] / split as f64;
        let baseline_iops = (sum[n] - sum[split]) / (n - split) as f64;
        if burst_iops <= 0.0 || baseline_iops > self.max_baseline_share * burst_iops {
            return None;
        }
        let mid = (burst_iops + baseline_iops) / 2.0;
        let share = |values: &[f64], on_side: &dyn Fn(f64) -> bool| {
            values.iter().filter(|&&v| on_side(v)).count() as f64 / values.len() as f64
        };
        let spread =
            |from: usize, to: usize| (error(from, to).max(0.0) / (to - from) as f64).sqrt();
        let drop = burst_iops - baseline_iops;
        let level = spread(0, split) <= self.max_level_spread * drop
            && spread(split, n) <= self.max_level_spread * drop;
        let sustained = share(&iops[..split], &|v| v > mid) >= self.min_sustained_share
            && share(&iops[split..], &|v| v < mid) >= self.min_sustained_share;
        (level && sustained).then_some(Burst {
            drop_at_secs: split as u64,
            burst_iops,
            baseline_iops,
            baseline_secs: (n - split) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `secs` seconds at `level`, with a ±`wobble` sawtooth.
    fn flat(level: f64, secs: usize, wobble: f64) -> Vec<f64> {
        (0..secs)
            .map(|i| level + if i % 2 == 0 { wobble } else { -wobble })
            .collect()
    }

    #[test]
    fn a_drop_after_a_sustained_start_is_found_at_its_second() {
        let mut series = flat(3000.0, 30, 60.0);
        series.extend(flat(1000.0, 20, 30.0));
        let burst = BurstRule::default().detect(&series).expect("a burst");
        assert_eq!(burst.drop_at_secs, 30);
        assert_eq!(burst.baseline_secs, 20);
        assert!((burst.burst_iops - 3000.0).abs() < 1.0, "{burst:?}");
        assert!((burst.baseline_iops - 1000.0).abs() < 1.0, "{burst:?}");
    }

    #[test]
    fn a_drop_over_a_second_or_two_is_placed_inside_it() {
        // Credits run out mid-second: one second between the levels.
        let mut series = flat(3000.0, 12, 50.0);
        series.push(2000.0);
        series.extend(flat(1000.0, 12, 20.0));
        let burst = BurstRule::default().detect(&series).expect("a burst");
        assert!((12..=13).contains(&burst.drop_at_secs), "{burst:?}");
    }

    #[test]
    fn steady_noisy_gradual_or_recovering_runs_are_not_bursts() {
        let rule = BurstRule::default();
        assert_eq!(rule.detect(&flat(3000.0, 60, 200.0)), None, "steady");
        // A 10% step is not a burst's drop.
        let mut small = flat(3000.0, 20, 20.0);
        small.extend(flat(2700.0, 20, 20.0));
        assert_eq!(rule.detect(&small), None, "small step");
        // A slow slide from 3000 to 1000: no two flat levels.
        let slide: Vec<f64> = (0..60).map(|i| 3000.0 - i as f64 * 2000.0 / 59.0).collect();
        assert_eq!(rule.detect(&slide), None, "slide");
        // A dip that recovers: the second level is not held.
        let mut dip = flat(3000.0, 20, 20.0);
        dip.extend(flat(1000.0, 5, 20.0));
        dip.extend(flat(3000.0, 20, 20.0));
        assert_eq!(rule.detect(&dip), None, "dip");
        // A rise is not a drop.
        let mut rise = flat(1000.0, 20, 20.0);
        rise.extend(flat(3000.0, 20, 20.0));
        assert_eq!(rule.detect(&rise), None, "rise");
    }

    #[test]
    fn too_short_a_burst_or_baseline_is_not_judged() {
        let rule = BurstRule::default();
        let mut short_burst = flat(3000.0, 3, 0.0);
        short_burst.extend(flat(1000.0, 30, 0.0));
        assert_eq!(rule.detect(&short_burst), None);
        let mut short_baseline = flat(3000.0, 30, 0.0);
        short_baseline.extend(flat(1000.0, 3, 0.0));
        assert_eq!(rule.detect(&short_baseline), None);
        assert_eq!(rule.detect(&[]), None);
        assert_eq!(rule.detect(&[1.0, f64::NAN, 3.0]), None);
    }
}
