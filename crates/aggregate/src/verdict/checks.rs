//! The checks: each promised figure of a device or the host against every run that can show
//! it ([`check_promise`], [`check_figure`]); a run as the rules see it is a [`JudgedRun`]
//! (a report, or a suite cell). The worst of those runs' figures is the one compared.

use super::outcome::{keeps, FigureCheck};
use super::promise::{Figure, MeasuredFigures, OpFigures, RuleKind, RunShape};
use crate::baseline::{baseline_rates, report_bursts, ReportBursts};
use crate::burst::BurstRule;
use crate::report::{Figures, HostReport, WorkloadSummary};
use crate::spec::{Expectation, Tolerance};

impl From<&WorkloadSummary> for RunShape {
    fn from(w: &WorkloadSummary) -> Self {
        RunShape {
            block_size: w.block_size,
            in_flight: w.in_flight_per_device(),
            record_latency: w.record_latency,
        }
    }
}

impl RuleKind {
    /// Whether a run of `workload` judges this kind of rule.
    pub fn judged_by(self, workload: &WorkloadSummary) -> bool {
        self.judges(workload.into())
    }
}

impl From<&Figures> for MeasuredFigures {
    fn from(f: &Figures) -> Self {
        MeasuredFigures {
            iops: f.iops,
            bytes_per_sec: f.bytes_per_sec,
            ops: f.ops.map(|_, o| {
                (o.ios > 0).then_some(OpFigures {
                    iops: o.iops,
                    bytes_per_sec: o.bytes_per_sec,
                    // With an offered rate, the response time: what a user of the volume
                    // waited, a stall included (service time hides it).
                    latency_ns: *o.judged_latency(),
                })
            }),
        }
    }
}

/// One run as the rules see it: a phase of a verification, a single run, a suite cell.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JudgedRun {
    /// How a check names it (a suite cell's key, `4k_100_0`).
    pub label: String,
    /// Which rules it judges.
    pub shape: RunShape,
    /// The per-device IOPS cap it ran with, if any: a capped run cannot show more.
    pub rate_iops: Option<u64>,
    /// The host's figures.
    pub host: MeasuredFigures,
    /// Each device's, by path.
    pub devices: Vec<(String, MeasuredFigures)>,
}

impl JudgedRun {
    /// The run of `report`, named `label`. Where its IOPS dropped after a sustained start
    /// (burst credits spent, [`BurstRule`]), the rates judged are the baseline's after the
    /// drop ([`crate::baseline_rates`]).
    pub fn from_report(label: impl Into<String>, report: &HostReport) -> JudgedRun {
        let bursts = report_bursts(&BurstRule::default(), report);
        JudgedRun {
            label: label.into(),
            shape: RunShape::from(&report.workload),
            rate_iops: report.workload.rate_iops,
            host: judged_figures(report, &bursts, None),
            devices: report
                .devices
                .iter()
                .enumerate()
                .map(|(i, d)| (d.path.clone(), judged_figures(report, &bursts, Some(i))))
                .collect(),
        }
    }

    /// The figures of the device at `path`, or the host's for `None`.
    fn figures(&self, device: Option<&str>) -> Option<&MeasuredFigures> {
        match device {
            None => Some(&self.host),
            Some(path) => self.devices.iter().find(|(p, _)| p == path).map(|(_, f)| f),
        }
    }

    /// What its `rate_iops` allows of `figure`, per device (`None` uncapped or for latency).
    fn rate_cap(&self, figure: Figure) -> Option<f64> {
        let cap = self.rate_iops? as f64;
        let allowed = figure.rule().promise().rate_cap;
        allowed.allows(cap, self.shape.block_size)
    }
}

/// The figures a verdict judges of the host (`None`) or the device at index `device` of
/// `report`: the whole run's, with the rates of the baseline where `bursts` found a drop.
pub(crate) fn judged_figures(
    report: &HostReport,
    bursts: &ReportBursts,
    device: Option<usize>,
) -> MeasuredFigures {
    let whole = match device {
        None => &report.host,
        Some(i) => &report.devices[i].figures,
    };
    let mut figures = MeasuredFigures::from(whole);
    if let Some(baseline) = baseline_rates(report, bursts, device) {
        figures.iops = baseline.iops;
        figures.bytes_per_sec = baseline.bytes_per_sec;
        for (op, slot) in figures.ops.iter_mut() {
            if let Some(o) = slot.as_mut() {
                // Every I/O of a kind has the run's block size: its bytes follow its I/Os.
                if o.iops > 0.0 {
                    o.bytes_per_sec *= baseline.ops[op] / o.iops;
                }
                o.iops = baseline.ops[op];
            }
        }
    }
    figures
}

/// Checks one promised figure of the device at `device` (the host for `None`) on every run
/// that judges it.
pub fn check_figure(
    figure: Figure,
    expected: f64,
    runs: &[JudgedRun],
    device: Option<&str>,
    t: Tolerance,
) -> FigureCheck {
    let judged: Vec<(&JudgedRun, f64)> = runs
        .iter()
        .filter(|r| figure.rule().judges(r.shape))
        .filter_map(|r| Some((r, figure.of(r.figures(device)?)?)))
        .collect();
    let values = judged.iter().map(|(_, v)| *v);
    let measured = if figure.is_ceiling() {
        values.reduce(f64::max)
    } else {
        values.reduce(f64::min)
    };
    // The host may do what every device's cap allows together.
    let devices = |r: &JudgedRun| {
        if device.is_some() {
            1.0
        } else {
            r.devices.len() as f64
        }
    };
    let cap = judged
        .iter()
        .filter_map(|(r, _)| r.rate_cap(figure).map(|c| c * devices(r)))
        .reduce(f64::min);
    let rate_cap = rate_cap_below(cap, Some(expected), t);
    FigureCheck {
        figure,
        expected,
        measured,
        runs: judged.iter().map(|(r, _)| r.label.clone()).collect(),
        rate_cap,
        pass: measured.map(|m| keeps(figure, expected, m, rate_cap, t)),
    }
}

/// The indices of the `runs` that judge `check`'s figure and in which that of the device at
/// `device` (the host for `None`) fell short of its promise.
pub(super) fn shortfall_runs<'a>(
    check: &'a FigureCheck,
    runs: &'a [JudgedRun],
    device: Option<&'a str>,
    t: Tolerance,
) -> impl Iterator<Item = usize> + 'a {
    let figure = check.figure;
    runs.iter()
        .enumerate()
        .filter(move |(_, r)| figure.rule().judges(r.shape))
        .filter_map(move |(i, r)| Some((i, r, figure.of(r.figures(device)?)?)))
        .filter(move |(_, r, value)| {
            let cap = rate_cap_below(r.rate_cap(figure), Some(check.expected), t);
            !keeps(figure, check.expected, *value, cap, t)
        })
        .map(|(i, _, _)| i)
}

/// Checks every figure `expected` promises of the device at `device` (the host for `None`),
/// kind by kind in [`PROMISE_KINDS`](super::PROMISE_KINDS)' order: IOPS, throughput, and a
/// p95 promise once for reads and once for writes. Of a kind with several figures, one no
/// judging run did is left out while another was judged (a read-only latency run promises
/// nothing of writes); with none judged all are given, unjudged.
pub fn check_promise(
    expected: &Expectation,
    runs: &[JudgedRun],
    device: Option<&str>,
    t: Tolerance,
) -> Vec<FigureCheck> {
    let mut checks = Vec::new();
    for kind in RuleKind::ALL {
        let Some(promise) = kind.expected(expected) else {
            continue;
        };
        let of_kind: Vec<FigureCheck> = kind
            .figures()
            .map(|f| check_figure(f, promise, runs, device, t))
            .collect();
        let any_judged = of_kind.iter().any(|c| c.measured.is_some());
        checks.extend(
            of_kind
                .into_iter()
                .filter(|c| !any_judged || c.measured.is_some()),
        );
    }
    checks
}

/// What the workload's `rate_iops` cap allows when it keeps a run from showing `expected` (the cap is below it
/// beyond the tolerance), else `None`.
fn rate_cap_below(cap: Option<f64>, expected: Option<f64>, t: Tolerance) -> Option<f64> {
    match (cap, expected) {
        (Some(cap), Some(e)) if !t.reaches(cap, e) => Some(cap),
        _ => None,
    }
}

impl JudgedRun {
    /// The run named `label` of `shape`, with no offered rate, whose host did `host` and
    /// whose devices (by path) did `devices` (set a rate with [`JudgedRun::with_rate_iops`]).
    pub fn new(
        label: impl Into<String>,
        shape: RunShape,
        host: MeasuredFigures,
        devices: Vec<(String, MeasuredFigures)>,
    ) -> JudgedRun {
        JudgedRun {
            label: label.into(),
            shape,
            rate_iops: None,
            host,
            devices,
        }
    }
}

with_setters!(JudgedRun {
    with_rate_iops => rate_iops: Option<u64>,
});
