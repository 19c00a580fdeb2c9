//! A report's bursts and baselines: [`report_bursts`] runs a [`BurstRule`] on the host's
//! per-second IOPS and each device's, and [`baseline_rates`] are the rates of the seconds after
//! a drop, which a verdict judges instead of the whole run's.

use hostmax_engine::PerOp;
use serde::{Deserialize, Serialize};

use crate::burst::{Burst, BurstRule};
use crate::report::HostReport;
use crate::series::SecondPoint;

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
