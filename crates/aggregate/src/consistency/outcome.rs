//! What a consistency verdict says: for each volume and the host, how many seconds held the
//! promise ([`SeriesConsistency`]), the worst seconds and the per-second coefficient of
//! variation; [`ConsistencyVerdict`] is what a verdict carries.

use serde::{Deserialize, Serialize};

use crate::spec::Consistency;
use crate::verdict::coefficient_of_variation;

/// How many of the lowest seconds a verdict lists.
pub const WORST_SECONDS: usize = 5;

/// One second, by its index from the start of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SecondFigure {
    /// 0 is the first second after the ramp.
    pub second: i64,
    /// The figure in that second (IOPS, or bytes per second).
    pub value: f64,
    /// The run it belongs to when seconds of several runs are judged together
    /// (`4k_65_35 round 6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// How one series (a volume's or the host's) held its promise, second by second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct DeviceConsistency {
    /// The device.
    pub path: String,
    /// How it held.
    #[serde(flatten)]
    pub series: SeriesConsistency,
}

/// The consistency verdict of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
