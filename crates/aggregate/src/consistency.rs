//! Consistency: how often a promise held, second by second. Cloud SLAs promise a figure "99%
//! of the time"; a run's average can meet the figure while some seconds fall far short.
//!
//! [`Consistency`] is the share of one-second intervals that must be at or above
//! (1 - tolerance) x the promise; [`judge_runs`] (for `hostmax verify`, [`judge_consistency`];
//! for the suite, its cells' rounds) judges each volume and the host over every second of the
//! runs that judge IOPS (or, when nothing promises IOPS, throughput) by the verdict's rules,
//! lists the worst seconds, and gives each volume's per-second coefficient of variation.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::spec::{Expectation, SpecError};
use crate::verdict::{coefficient_of_variation, RuleKind, SpecSet};
use crate::{HostReport, SecondPoint};

/// How many of the lowest seconds a verdict lists.
pub const WORST_SECONDS: usize = 5;

/// The share of seconds a promise must hold in, as a fraction (0.99 for "99%").
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Consistency(f64);

impl Consistency {
    /// A share above 0 and at most 1.
    pub fn new(fraction: f64) -> Option<Consistency> {
        (fraction.is_finite() && fraction > 0.0 && fraction <= 1.0).then_some(Consistency(fraction))
    }

    /// The share as a fraction.
    pub fn fraction(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", (self.0 * 100.0 * 1e6).round() / 1e6)
    }
}

impl FromStr for Consistency {
    type Err = SpecError;

    /// `99%`, `99.9%` or `99.9` (percent).
    fn from_str(text: &str) -> Result<Consistency, SpecError> {
        let bad = || {
            SpecError::File(format!(
                "consistency \"{text}\": give the share of seconds the promise must hold in, above 0% and up to 100%, e.g. 99% or 99.9%"
            ))
        };
        let percent: f64 = text
            .trim()
            .trim_end_matches('%')
            .trim()
            .parse()
            .map_err(|_| bad())?;
        Consistency::new(percent / 100.0).ok_or_else(bad)
    }
}

/// One second, by its index from the start of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondFigure {
    /// 0 is the first second after the ramp.
    pub second: i64,
    /// The figure in that second (IOPS, or bytes per second).
    pub value: f64,
    /// The run it belongs to when seconds of several runs are judged together (the suite's
    /// `4k_65_35 round 6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// How one series (a volume's or the host's) held its promise, second by second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesConsistency {
    /// What was promised (IOPS or bytes per second); `None` when nothing was (the CV is
    /// still given).
    pub expected: Option<f64>,
    /// The floor a second must reach: (1 - tolerance) x expected.
    pub floor: Option<f64>,
    /// Whole seconds measured.
    pub seconds: usize,
    /// Seconds at or above the floor.
    pub seconds_held: usize,
    /// `seconds_held / seconds`.
    pub share_held: Option<f64>,
    /// The share reached the required consistency (true when nothing was promised).
    pub pass: bool,
    /// Standard deviation over mean of the per-second figures.
    pub cv: f64,
    /// The lowest seconds, lowest first.
    pub worst_seconds: Vec<SecondFigure>,
}

impl SeriesConsistency {
    /// Judges `per_second` against `expected` at `tolerance`, requiring `required`.
    pub fn judge(
        per_second: &[SecondFigure],
        expected: Option<f64>,
        tolerance: f64,
        required: Consistency,
    ) -> SeriesConsistency {
        let values: Vec<f64> = per_second.iter().map(|s| s.value).collect();
        let floor = expected.map(|e| e * (1.0 - tolerance));
        let seconds_held = match floor {
            Some(f) => values.iter().filter(|&&v| v >= f).count(),
            None => values.len(),
        };
        let share_held = (expected.is_some() && !values.is_empty())
            .then(|| seconds_held as f64 / values.len() as f64);
        // A tiny slack so that 99 of 100 seconds meets "99%" despite rounding.
        let pass = share_held.is_none_or(|s| s + 1e-9 >= required.fraction());
        let mut worst = per_second.to_vec();
        worst.sort_by(|a, b| a.value.total_cmp(&b.value).then(a.second.cmp(&b.second)));
        worst.truncate(WORST_SECONDS);
        SeriesConsistency {
            expected,
            floor,
            seconds: values.len(),
            seconds_held,
            share_held,
            pass,
            cv: coefficient_of_variation(&values),
            worst_seconds: worst,
        }
    }
}

/// One volume's consistency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceConsistency {
    /// The device.
    pub path: String,
    /// How it held.
    #[serde(flatten)]
    pub series: SeriesConsistency,
}

/// The consistency verdict of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsistencyVerdict {
    /// The share of seconds required.
    pub required: Consistency,
    /// `iops` or `bytes_per_sec`: the figure judged.
    pub figure: String,
    /// Every judged series reached the required share.
    pub pass: bool,
    /// The host (judged when it promises the figure).
    pub host: SeriesConsistency,
    /// Each volume.
    pub devices: Vec<DeviceConsistency>,
}

impl ConsistencyVerdict {
    /// "/dev/sdb" or "host" for each series that fell short.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .devices
            .iter()
            .filter(|d| !d.series.pass)
            .map(|d| format!("{} consistency", d.path))
            .collect();
        if !self.host.pass {
            out.push("host consistency".into());
        }
        out
    }
}

/// Judges how often each volume and the host kept its promise in `reports` (the runs of one
/// command, unnamed), as [`judge_runs`] does.
pub fn judge_consistency(
    specs: &SpecSet,
    reports: &[&HostReport],
    required: Consistency,
) -> Option<ConsistencyVerdict> {
    let volumes: Vec<(String, Expectation)> = specs
        .devices
        .iter()
        .map(|d| (d.path.clone(), d.expected()))
        .collect();
    let runs: Vec<(Option<String>, &HostReport)> = reports.iter().map(|r| (None, *r)).collect();
    let host = specs.host.expected();
    judge_runs(&volumes, &host, &runs, specs.tolerance.fraction(), required)
}

/// Judges how often each volume (its promise by path in `volumes`) and the host kept its
/// promise, over every whole second of the `runs` (each with the name its seconds carry)
/// that judge the figure: IOPS when anything promises IOPS, else throughput, on the runs
/// [`RuleKind::judges`] picks for it. `None` when no run judges it or none has a second.
/// Seconds some device did not report (`partial`) are left out; devices are taken in the
/// first judged run's order.
pub fn judge_runs(
    volumes: &[(String, Expectation)],
    host: &Expectation,
    runs: &[(Option<String>, &HostReport)],
    tolerance: f64,
    required: Consistency,
) -> Option<ConsistencyVerdict> {
    let any_iops = host.iops.is_some() || volumes.iter().any(|(_, e)| e.iops.is_some());
    let (rule, by_bytes) = if any_iops {
        (RuleKind::Iops, false)
    } else {
        (RuleKind::Throughput, true)
    };
    let promise = |e: &Expectation| if by_bytes { e.bytes_per_sec } else { e.iops };
    let judged: Vec<&(Option<String>, &HostReport)> = runs
        .iter()
        .filter(|(_, r)| rule.judged_by(&r.workload))
        .collect();
    let first = judged.first()?.1;
    // Every whole second of the judged runs, `value` picking its figure.
    let seconds = |value: &dyn Fn(&SecondPoint, f64) -> f64| -> Vec<SecondFigure> {
        judged
            .iter()
            .flat_map(|(label, r)| {
                let scale = if by_bytes {
                    f64::from(r.workload.block_size)
                } else {
                    1.0
                };
                r.time_series
                    .iter()
                    .filter(|p| !p.partial)
                    .map(move |p| SecondFigure {
                        second: p.second,
                        value: value(p, scale),
                        run: label.clone(),
                    })
            })
            .collect()
    };
    let host_seconds = seconds(&|p, _| if by_bytes { p.bytes_per_sec } else { p.iops });
    if host_seconds.is_empty() {
        return None;
    }
    let devices = first
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            // By name (merged reports list hosts' devices side by side), by place in older
            // reports whose per-second entries carry no name.
            let per_second = seconds(&|p, _| {
                p.devices
                    .iter()
                    .find(|s| s.path == d.path && s.host == d.host)
                    .or_else(|| p.devices.get(i).filter(|s| s.path.is_empty()))
                    .map_or(0.0, |s| if by_bytes { s.bytes_per_sec } else { s.iops })
            });
            let expected = volumes
                .iter()
                .find(|(path, _)| *path == d.path)
                .and_then(|(_, e)| promise(e));
            (d.path.clone(), per_second, expected)
        })
        .collect();
    Some(judge_series(
        devices,
        (host_seconds, promise(host)),
        tolerance,
        required,
        by_bytes,
    ))
}

/// Judges already gathered per-second figures: each volume's `(path, seconds, promise)` and
/// the host's `(seconds, promise)` (bytes per second when `by_bytes`, else IOPS).
fn judge_series(
    devices: Vec<(String, Vec<SecondFigure>, Option<f64>)>,
    host: (Vec<SecondFigure>, Option<f64>),
    tolerance: f64,
    required: Consistency,
    by_bytes: bool,
) -> ConsistencyVerdict {
    let devices: Vec<DeviceConsistency> = devices
        .into_iter()
        .map(|(path, seconds, expected)| DeviceConsistency {
            path,
            series: SeriesConsistency::judge(&seconds, expected, tolerance, required),
        })
        .collect();
    let host = SeriesConsistency::judge(&host.0, host.1, tolerance, required);
    ConsistencyVerdict {
        required,
        figure: if by_bytes { "bytes_per_sec" } else { "iops" }.into(),
        pass: host.pass && devices.iter().all(|d| d.series.pass),
        host,
        devices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(values: &[f64]) -> Vec<SecondFigure> {
        values
            .iter()
            .enumerate()
            .map(|(i, &value)| SecondFigure {
                second: i as i64,
                value,
                run: None,
            })
            .collect()
    }

    #[test]
    fn consistency_parses_and_refuses() {
        assert_eq!("99%".parse::<Consistency>().unwrap().fraction(), 0.99);
        assert!(("99.9".parse::<Consistency>().unwrap().fraction() - 0.999).abs() < 1e-12);
        assert_eq!("100%".parse::<Consistency>().unwrap().to_string(), "100%");
        for bad in ["0%", "101%", "x", "-5%", ""] {
            let err = bad.parse::<Consistency>().unwrap_err().to_string();
            assert!(err.contains("e.g. 99%"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_share_of_seconds_at_the_floor_decides() {
        // 100 seconds at 2000 IOPS, two of them dropped to 1500: 98% held.
        let mut values = vec![2000.0; 100];
        values[17] = 1500.0;
        values[60] = 1200.0;
        let s = seconds(&values);
        let t = 0.05;
        let at99 = SeriesConsistency::judge(&s, Some(2000.0), t, "99%".parse().unwrap());
        assert_eq!((at99.seconds, at99.seconds_held), (100, 98));
        assert_eq!(at99.floor, Some(1900.0));
        assert!(!at99.pass);
        assert_eq!(
            at99.worst_seconds[0],
            SecondFigure {
                second: 60,
                value: 1200.0,
                run: None,
            }
        );
        assert_eq!(at99.worst_seconds[1].second, 17);
        assert_eq!(at99.worst_seconds.len(), WORST_SECONDS);
        assert!(at99.cv > 0.0);
        let at98 = SeriesConsistency::judge(&s, Some(2000.0), t, "98%".parse().unwrap());
        assert!(at98.pass);
        // Exactly at the floor holds.
        let edge = SeriesConsistency::judge(
            &seconds(&[1900.0; 10]),
            Some(2000.0),
            t,
            "100%".parse().unwrap(),
        );
        assert!(edge.pass && edge.cv == 0.0);
        // Nothing promised: passes, CV still given.
        let free = SeriesConsistency::judge(&s, None, t, "99%".parse().unwrap());
        assert!(free.pass && free.share_held.is_none() && free.cv > 0.0);
    }
}
