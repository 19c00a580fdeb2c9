//! Judging how often a promise held, over the seconds of the runs the verdict's rules pick
//! ([`judge_runs`]; [`judge_consistency`] for a [`SpecSet`]).

use super::outcome::{ConsistencyVerdict, DeviceConsistency, SecondFigure, SeriesConsistency};
use crate::report::HostReport;
use crate::series::SecondPoint;
use crate::spec::{Consistency, Expectation};
use crate::verdict::{RuleKind, SpecSet};

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
