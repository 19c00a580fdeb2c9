//! Burst behaviour: a run whose IOPS hold at one level and then drop to a lower one for good,
//! as a cloud volume's do when its burst credits are spent. [`BurstRule::detect`] finds the
//! drop in a per-second series; [`report_bursts`] looks at a report's host and every device;
//! [`baseline_rates`] are a report's rates over the seconds after the drop, which a verdict
//! judges instead of the whole run's.
//!
//! The series is split where two flat levels fit it best (least squares over every split that
//! leaves at least `min_burst_secs` before and `min_baseline_secs` after). It is a burst when
//! the level after is at most `max_baseline_share` of the level before, and each side is
//! a sustained level: at least `min_sustained_share` of the seconds before lie above the
//! midpoint of the two levels, as many after lie below it, and neither side's standard
//! deviation passes `max_level_spread` of the drop. A run that is merely noisy, slows down
//! gradually or dips and recovers is not a burst.

use serde::{Deserialize, Serialize};

use hostmax_engine::PerOp;

use crate::report::HostReport;
use crate::series::SecondPoint;

/// When a series counts as a burst followed by a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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

/// The bursts of one report: the host's series and each device's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReportBursts {
    /// The host's IOPS dropped.
    pub host: Option<Burst>,
    /// Each device whose own IOPS dropped, by path.
    pub devices: Vec<(String, Burst)>,
}

impl ReportBursts {
    /// Whether neither the host nor any device dropped.
    pub fn is_empty(&self) -> bool {
        self.host.is_none() && self.devices.is_empty()
    }
}

/// The whole seconds of a report's series: a point some device did not report is left out
/// (it would look like a drop), and so is the last point of a run cut short mid-second.
fn whole_seconds(report: &HostReport) -> &[SecondPoint] {
    let points = &report.time_series;
    let whole = points.iter().take_while(|p| !p.partial).count();
    let measured = report.measured_secs.floor() as usize;
    &points[..whole.min(measured)]
}

/// [`BurstRule::detect`] on the host's IOPS and each device's.
pub fn report_bursts(rule: &BurstRule, report: &HostReport) -> ReportBursts {
    let seconds = whole_seconds(report);
    let host: Vec<f64> = seconds.iter().map(|p| p.iops).collect();
    let devices = report
        .devices
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let series: Vec<f64> = seconds
                .iter()
                .map(|p| p.devices.get(i).map_or(0.0, |s| s.iops))
                .collect();
            rule.detect(&series).map(|b| (d.path.clone(), b))
        })
        .collect();
    ReportBursts {
        host: rule.detect(&host),
        devices,
    }
}

/// The rates of the seconds after a drop: what a verdict judges in place of the whole run's
/// (latencies stay the whole run's: a device's per-second histograms are not kept).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct BaselineRates {
    /// IOPS of every kind together.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Each kind's IOPS.
    pub ops: PerOp<f64>,
}

/// The baseline's rates of the host (`None`) or the device at `device` (an index of the
/// report's devices) where `bursts` found a drop in its series; `None` where it found none.
pub fn baseline_rates(
    report: &HostReport,
    bursts: &ReportBursts,
    device: Option<usize>,
) -> Option<BaselineRates> {
    let burst = match device {
        None => bursts.host.as_ref(),
        Some(i) => {
            let path = &report.devices.get(i)?.path;
            bursts
                .devices
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, b)| b)
        }
    }?;
    let after = whole_seconds(report).get(burst.drop_at_secs as usize..)?;
    let n = after.len().max(1) as f64;
    let mut rates = BaselineRates::default();
    for p in after {
        let (iops, bytes, ops) = match device {
            None => (p.iops, p.bytes_per_sec, p.ops.0.map(|_, s| s.iops)),
            Some(d) => {
                let s = p.devices.get(d)?;
                (s.iops, s.bytes_per_sec, s.ops.0)
            }
        };
        rates.iops += iops / n;
        rates.bytes_per_sec += bytes / n;
        for (op, v) in rates.ops.iter_mut() {
            *v += ops[op] / n;
        }
    }
    Some(rates)
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
