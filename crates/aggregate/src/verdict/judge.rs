//! [`judge`]: one or more reports against a [`SpecSet`], giving a [`Verdict`]. It is composed
//! of named steps: each device's checks ([`device_verdict`]), the host's
//! ([`host_verdict`]: its own promise, what the volumes promise together, and the
//! [`Bottleneck`] when it falls short of that), and the promises no run could judge.

use serde::{Deserialize, Serialize};

use super::bottleneck::{bottleneck, Bottleneck, VolumeShare};
use super::checks::{check_promise, judged_figures, shortfall_runs, JudgedRun};
use super::outcome::{
    device_checks, figure_to_reach, host_checks, BurstFinding, DeviceVerdict, FigureCheck,
    HostVerdict, Judgement, LatencyTime, NotJudged, Promiser, Verdict, VerdictFigures,
};
use super::promise::{Figure, MeasuredFigures, PerKind, RuleKind};
use super::spec_set::{DeviceExpectation, SpecSet};
use crate::baseline::report_bursts;
use crate::burst::BurstRule;
use crate::report::{HostReport, Provenance};
use crate::spec::Tolerance;

/// Judges `reports` (one run, or the phases of a verification) against `specs`.
///
/// Devices are listed as the first report lists them; a device with no entry in `specs` is
/// not judged. A rule no report qualifies for is listed in `not_judged` and does not fail
/// the verdict, nor does a promise whose path no report has (listed there too). A verdict
/// that judged nothing is [`Judgement::NotJudged`], never a pass; so is one over a report
/// cut short ([`Verdict::withhold`]).
///
/// # Example
///
/// A scratch file measured with the engine, then judged against a promise of 100 IOPS (a
/// promise of IOPS is judged on runs of 4 KiB blocks or smaller at a depth above 1):
///
/// ```
/// use std::time::Duration;
///
/// use hostmax_aggregate::verdict::{DeviceExpectation, Judgement};
/// use hostmax_aggregate::{judge, summarize, SpecSet, VolumeSpec};
/// use hostmax_engine::{measure, DeviceInterval, MeasureRequest, Workload};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Scratch(std::path::PathBuf);
/// # impl Drop for Scratch {
/// #     fn drop(&mut self) {
/// #         let _ = std::fs::remove_file(&self.0);
/// #     }
/// # }
/// let file = std::env::temp_dir().join(format!("hostmax-judge-doc-{}.img", std::process::id()));
/// std::fs::File::create(&file)?.set_len(16 << 20)?;
/// # let _scratch = Scratch(file.clone());
/// let workload = Workload::default()
///     .with_iodepth(4)
///     .with_runtime(Duration::from_millis(300))
///     .with_ramp(Duration::ZERO);
/// let result = measure(MeasureRequest::new(vec![file.clone()], workload), &mut |_: DeviceInterval| {})?;
/// let report = summarize(&result, Vec::new());
///
/// // A flat promise needs no size (a per-GB one takes it: `DeviceExpectation::new`).
/// let volume = DeviceExpectation::flat(
///     // The path as the report names it (canonical).
///     report.devices[0].path.clone(),
///     "iops=100".parse::<VolumeSpec>()?,
///     "a scratch file",
/// )?;
/// let mut specs = SpecSet::default();
/// specs.devices.push(volume);
/// let verdict = judge(&specs, &[&report]);
/// assert_eq!(verdict.devices[0].judgement, Judgement::Pass);
/// println!("{verdict}"); // PASS: every judged figure is within 5% of its promise
/// // Nothing was promised of the host: it is not judged, and that is no pass.
/// assert_eq!(verdict.host.judgement, Judgement::NotJudged);
/// # Ok(())
/// # }
/// ```
pub fn judge(specs: &SpecSet, reports: &[&HostReport]) -> Verdict {
    let t = specs.tolerance;
    let runs: Vec<JudgedRun> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| JudgedRun::from_report(format!("run {}", i + 1), r))
        .collect();
    let paths: Vec<String> = reports
        .first()
        .map(|r| r.devices.iter().map(|d| d.path.clone()).collect())
        .unwrap_or_default();
    let mut not_judged = Vec::new();
    let devices: Vec<DeviceVerdict> = paths
        .iter()
        .map(|path| {
            let promise = specs.devices.iter().find(|d| &d.path == path);
            let (verdict, checks) = device_verdict(path, promise, reports, &runs, t);
            note_unjudged(&mut not_judged, &checks, Promiser::Volume);
            verdict
        })
        .collect();
    for d in &specs.devices {
        let measured = reports
            .iter()
            .flat_map(|r| &r.devices)
            .any(|m| m.path == d.path);
        if !measured {
            not_judged.push(NotJudged::unmeasured(&d.path));
        }
    }
    let host_promise_checks = check_promise(&specs.host.expected(), &runs, None, t);
    note_unjudged(&mut not_judged, &host_promise_checks, Promiser::Host);
    let host = host_verdict(specs, reports, &paths);
    let bursts = reports
        .iter()
        .zip(&runs)
        .flat_map(|(report, run)| {
            let found = report_bursts(&BurstRule::default(), report);
            let host = found.host.map(|burst| BurstFinding {
                run: run.label.clone(),
                device: None,
                burst,
            });
            let devices = found.devices.into_iter().map(|(path, burst)| BurstFinding {
                run: run.label.clone(),
                device: Some(path),
                burst,
            });
            host.into_iter().chain(devices).collect::<Vec<_>>()
        })
        .collect();
    let mut verdict = Verdict {
        judgement: devices
            .iter()
            .fold(host.judgement, |all, d| all.and(d.judgement)),
        tolerance: t,
        host,
        devices,
        not_judged,
        consistency: None,
        bursts,
        latency_time: latency_time(reports),
    };
    if reports.iter().any(|r| r.interrupted) {
        verdict.withhold();
    }
    verdict
}

/// Response time when some run offered a rate and timed its I/Os (its latency figures are
/// response times, [`crate::OpSummary::judged_latency`]), else service time.
fn latency_time(reports: &[&HostReport]) -> LatencyTime {
    let paced = reports
        .iter()
        .any(|r| r.host.ops.values().any(|o| o.response_ns.is_some()));
    match paced {
        true => LatencyTime::Response,
        false => LatencyTime::Service,
    }
}

/// Adds each kind of promise `checks` could not judge to `not_judged`, once.
fn note_unjudged(not_judged: &mut Vec<NotJudged>, checks: &[FigureCheck], promiser: Promiser) {
    for c in checks.iter().filter(|c| c.measured.is_none()) {
        let entry = NotJudged::new(promiser, c.figure.rule());
        if !not_judged.contains(&entry) {
            not_judged.push(entry);
        }
    }
}

/// The verdict of the device at `path` (what it `promise`s, if anything) over `runs` (made
/// from `reports`), and the checks it was given.
fn device_verdict(
    path: &str,
    promise: Option<&DeviceExpectation>,
    reports: &[&HostReport],
    runs: &[JudgedRun],
    t: Tolerance,
) -> (DeviceVerdict, Vec<FigureCheck>) {
    let given = reports
        .iter()
        .flat_map(|r| &r.devices)
        .find(|d| d.path == path)
        .and_then(|d| d.given.clone());
    let Some(exp) = promise else {
        // Nothing promised: nothing judged.
        let verdict = DeviceVerdict {
            path: path.to_string(),
            given,
            judgement: Judgement::NotJudged,
            ..DeviceVerdict::default()
        };
        return (verdict, Vec::new());
    };
    let e = exp.expected();
    // The device in every report that measured it.
    let measured = || {
        reports
            .iter()
            .flat_map(|r| &r.devices)
            .filter(|d| d.path == path)
    };
    let checks = check_promise(&e, runs, Some(path), t);
    // A run where every worker driving it was saturated and it fell short cannot show its
    // promise: hostmax, not the volume, was the limit there. Its promise is judged on the
    // other runs; a shortfall in a run whose workers kept up is the volume's, whatever
    // another run's CPUs did.
    let excused: Vec<usize> = (0..runs.len())
        .filter(|&i| {
            let saturated = reports[i]
                .devices
                .iter()
                .any(|d| d.path == path && d.load_generator_saturated);
            saturated
                && checks
                    .iter()
                    .any(|c| shortfall_runs(c, runs, Some(path), t).any(|short| short == i))
        })
        .collect();
    let others: Vec<JudgedRun> = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !excused.contains(i))
        .map(|(_, r)| r.clone())
        .collect();
    let on_others = check_promise(&e, &others, Some(path), t);
    let excuse = !excused.is_empty() && on_others.iter().all(|c| c.pass != Some(false));
    let mut figures = VerdictFigures::new(false);
    for kind in RuleKind::ALL {
        figures.expected[kind] = kind.expected(&e);
    }
    // Excused: what the other runs showed, else (for the table) the saturated runs' figures,
    // which the checks then leave out as not judged ([`device_checks`]).
    let shown = if excuse {
        on_others.iter().chain(&checks).collect::<Vec<_>>()
    } else {
        checks.iter().collect()
    };
    for c in shown.into_iter().rev() {
        if c.measured.is_some() || !excuse {
            figures.measured[c.figure] = c.measured;
            if c.rate_cap.is_some() {
                figures.rate_cap[c.figure.rule()] = c.rate_cap;
            }
        }
    }
    let v = DeviceVerdict {
        path: path.to_string(),
        given,
        judgement: Judgement::NotJudged,
        spec: exp.label.clone(),
        size_bytes: exp.spec.scales_with_size().then_some(exp.size_bytes),
        figures,
        stopped_at_secs: measured()
            .find(|d| d.failed)
            .map(|d| d.stopped_at_secs.unwrap_or(0.0)),
        stalled_in_flight: measured().filter_map(|d| d.stalled_in_flight).max(),
        errors: measured().map(|d| d.figures.errors).sum(),
        bottleneck: excuse.then_some(Bottleneck::LoadGenerator),
    };
    let v = DeviceVerdict {
        judgement: Judgement::of_checks(&device_checks(&v, t)),
        ..v
    };
    (v, checks)
}

/// The host's figure of `kind` in `run` (a kind a host promises has one figure): its
/// baseline's after a burst, as every check judges.
fn host_figure(run: &HostReport, kind: RuleKind) -> Option<f64> {
    let figure = kind.figures().next()?;
    let bursts = report_bursts(&BurstRule::default(), run);
    figure.of(&judged_figures(run, &bursts, None))
}

/// The run the host's check of `kind` compares (of those that judge it, the one whose host
/// figure is lowest); the bottleneck is read off it too.
fn worst_run<'r>(reports: &[&'r HostReport], kind: RuleKind) -> Option<&'r HostReport> {
    reports
        .iter()
        .copied()
        .filter(|r| kind.judged_by(&r.workload))
        .filter(|r| host_figure(r, kind).is_some())
        .min_by(|a, b| {
            let (a, b) = (host_figure(a, kind), host_figure(b, kind));
            a.unwrap_or(0.0).total_cmp(&b.unwrap_or(0.0))
        })
}

/// What the volumes at `paths` promise together of `kind`: only when every one has that kind
/// of rule (a sum over some of them says nothing about the host).
fn volumes_promise(specs: &SpecSet, paths: &[String], kind: RuleKind) -> Option<f64> {
    if paths.is_empty() {
        return None;
    }
    paths
        .iter()
        .map(|p| {
            specs
                .devices
                .iter()
                .find(|d| &d.path == p)
                .and_then(|d| kind.expected(&d.expected()))
        })
        .sum()
}

/// The host's verdict: its own promise on the worst run that judges it, what its volumes
/// promise together, and what kept it below that, for each kind a host can promise.
fn host_verdict(specs: &SpecSet, reports: &[&HostReport], paths: &[String]) -> HostVerdict {
    let t = specs.tolerance;
    let host_expected = specs.host.expected();
    let mut figures = VerdictFigures::new(true);
    let mut volumes = PerKind::<Option<f64>>::default();
    let mut runs = PerKind::<Option<&HostReport>>::default();
    for kind in RuleKind::ALL.into_iter().filter(|k| k.host_promises()) {
        let run = worst_run(reports, kind);
        runs[kind] = run;
        let expected = kind.expected(&host_expected);
        volumes[kind] = volumes_promise(specs, paths, kind);
        figures.expected[kind] = expected;
        for figure in kind.figures() {
            figures.measured[figure] = run.and_then(|r| figure.of(&MeasuredFigures::from(&r.host)));
        }
        // The host's cap from --rate-iops: per device times devices, when it is below the
        // host's promise or the volumes' sum (else it held nothing back).
        figures.rate_cap[kind] = run.and_then(|run| {
            let cap = rate_cap(run, kind)? * run.devices.len() as f64;
            [expected, volumes[kind]]
                .into_iter()
                .flatten()
                .any(|p| !t.reaches(cap, p))
                .then_some(cap)
        });
    }
    figures.volumes = Some(volumes);
    let mut host = HostVerdict {
        judgement: Judgement::NotJudged,
        figures,
        bottleneck: host_bottleneck(specs, &runs, &volumes),
    };
    host.judgement = Judgement::of_checks(&host_checks(&host, t));
    host
}

/// What kept the host below what its volumes promise together, read off the run judging the
/// first kind of the table a host promises whose volumes all promise it (IOPS, else
/// throughput): [`bottleneck`] on the volumes' shares, or the load generator when that run's
/// own CPUs were saturated.
fn host_bottleneck(
    specs: &SpecSet,
    runs: &PerKind<Option<&HostReport>>,
    volumes: &PerKind<Option<f64>>,
) -> Option<Bottleneck> {
    let (kind, run, per_second) = RuleKind::ALL.into_iter().find_map(|kind| {
        let per_second = kind.promise().host_per_second?;
        volumes[kind]?;
        Some((kind, runs[kind]?, per_second))
    })?;
    let figure: Figure = kind.figures().next()?;
    // A volume held by the run's own --rate-iops can show no more than the cap: the
    // bottleneck analysis weighs each volume against the lower of its promise and the cap.
    let cap = rate_cap(run, kind);
    let shares: Vec<VolumeShare> = run
        .devices
        .iter()
        .filter_map(|d| {
            let exp = specs.devices.iter().find(|x| x.path == d.path)?;
            Some(VolumeShare {
                expected: figure_to_reach(kind.expected(&exp.expected())?, cap),
                measured: figure.of(&MeasuredFigures::from(&d.figures))?,
            })
        })
        .collect();
    let seconds: Vec<f64> = run.time_series.iter().map(per_second).collect();
    let found = bottleneck(&shares, &seconds, specs.tolerance);
    // Short of the volumes' sum on a run whose own CPUs were saturated: what limited it was
    // the load generator, whatever the shape of the shortfall.
    let saturated = run.load_generator.as_ref().is_some_and(|g| g.saturated);
    if saturated {
        found.map(|_| Bottleneck::LoadGenerator)
    } else {
        found
    }
}

/// What the per-device IOPS cap a run was given (the workload's `rate_iops`) allows of `kind`.
fn rate_cap(run: &HostReport, kind: RuleKind) -> Option<f64> {
    let cap = run.workload.rate_iops? as f64;
    kind.promise().rate_cap.allows(cap, run.workload.block_size)
}

/// A verification's JSON root: the verdict over every phase (run), and each phase's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VerifyReport {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The host that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Run id and the window from the first phase's start to the last one's end, and the rest
    /// of [`crate::Provenance`] (each phase carries its own as well).
    #[serde(flatten)]
    pub provenance: Provenance,
    /// The verdict over all phases.
    pub verdict: Verdict,
    /// One report per phase, in the order they ran.
    pub phases: Vec<HostReport>,
    /// A signal stopped the verify: the phase it was running was cut short, and the verdict
    /// is no PASS (`verdict.pass` is false) however the figures measured compare.
    #[serde(default)]
    pub interrupted: bool,
    /// The phases that never ran, described ("throughput: 1m randread, depth 32"),
    /// interrupted runs only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases_not_measured: Vec<String>,
}

impl VerifyReport {
    /// The report of `verdict`, judged from `phases` (their reports, in order), of this
    /// crate's [`SCHEMA_VERSION`](crate::SCHEMA_VERSION), with no hostname or provenance, not
    /// interrupted and every phase measured (set those on the value or with the setters).
    pub fn new(verdict: Verdict, phases: Vec<HostReport>) -> VerifyReport {
        VerifyReport {
            schema_version: crate::SCHEMA_VERSION,
            hostname: None,
            provenance: Provenance::default(),
            verdict,
            phases,
            interrupted: false,
            phases_not_measured: Vec::new(),
        }
    }
}

with_setters!(VerifyReport {
    with_hostname => hostname: Option<String>,
    with_provenance => provenance: Provenance,
    with_interrupted => interrupted: bool,
    with_phases_not_measured => phases_not_measured: Vec<String>,
});

#[cfg(test)]
mod tests {
    use super::super::checks::check_figure;
    use super::super::promise::{OpFigures, RunShape};
    use super::*;
    use crate::report::Figures;
    use crate::report::WorkloadSummary;
    use crate::report::{DeviceReport, OpSummary, SCHEMA_VERSION};
    use crate::series::{OpSecond, OpSeconds, SecondPoint};
    use crate::spec::Expectation;
    use crate::spec::{HostSpec, Scaled, VolumeSpec};
    use hostmax_engine::{IoPattern, OpKind, PerOp, Workload};

    const T: Tolerance = Tolerance::DEFAULT;

    fn shape(block_size: u32, in_flight: u64) -> RunShape {
        RunShape {
            block_size,
            in_flight,
            record_latency: true,
        }
    }

    fn figures(iops: f64, bytes_per_sec: f64, p95: u64) -> Figures {
        Figures {
            iops,
            bytes_per_sec,
            errors: 0,
            ops: PerOp::from_fn(|op| match op {
                OpKind::Read => OpSummary {
                    ios: iops as u64,
                    iops,
                    bytes: bytes_per_sec as u64,
                    bytes_per_sec,
                    latency_ns: crate::LatencySummary {
                        p95,
                        ..Default::default()
                    },
                    response_ns: None,
                },
                _ => OpSummary::default(),
            }),
            ..Default::default()
        }
    }

    fn report(bs: u32, iodepth: u32, devices: &[(&str, f64)], seconds: &[u64]) -> HostReport {
        let w = Workload::default()
            .with_pattern(IoPattern::RandRead)
            .with_block_size(bs)
            .with_iodepth(iodepth);
        let devs: Vec<DeviceReport> = devices
            .iter()
            .map(|&(path, iops)| DeviceReport {
                path: path.into(),
                cpu: 0,
                figures: figures(iops, iops * bs as f64, 600_000),
                error_detail: Default::default(),
                failed: false,
                stopped_at_secs: None,
                given: None,
                host: None,
                verify: None,
                identity: None,
                trim_method: None,
                kernel: None,
                stalled_in_flight: None,
                unissued: None,
                drivers: Vec::new(),
                numa_node: None,
                load_generator_saturated: false,
            })
            .collect();
        let total: f64 = devices.iter().map(|d| d.1).sum();
        HostReport {
            schema_version: SCHEMA_VERSION,
            hostname: None,
            fleet: None,
            provenance: Default::default(),
            workload: WorkloadSummary::from(&w),
            measured_secs: seconds.len() as f64,
            interrupted: false,
            interrupted_by: None,
            host: figures(total, total * bs as f64, 600_000),
            devices: devs,
            time_series: seconds
                .iter()
                .enumerate()
                .map(|(i, &iops)| SecondPoint {
                    second: i as i64,
                    iops: iops as f64,
                    ops: OpSeconds(PerOp::from_fn(|op| OpSecond {
                        iops: if op == OpKind::Read { iops as f64 } else { 0.0 },
                        ..Default::default()
                    })),
                    bytes_per_sec: (iops * bs as u64) as f64,
                    errors: 0,
                    backlog: 0,
                    devices: vec![],
                    partial: false,
                    histograms: None,
                })
                .collect(),
            verdict: None,
            load_generator: None,
            verify: None,
        }
    }

    fn flat(iops: f64, label: &str, paths: &[&str]) -> Vec<DeviceExpectation> {
        paths
            .iter()
            .map(|p| DeviceExpectation {
                path: p.to_string(),
                size_bytes: 1 << 30,
                spec: VolumeSpec {
                    iops: Some(Scaled::Flat(iops)),
                    ..Default::default()
                },
                label: label.into(),
            })
            .collect()
    }

    #[test]
    fn a_volume_held_by_rate_iops_is_capped_not_failed_and_not_a_host_bottleneck() {
        // The issue's case: volumes promising 2,500 IOPS, run with --rate-iops 2000.
        let specs = SpecSet {
            devices: flat(2500.0, "flat", &["/dev/a", "/dev/b", "/dev/c"]),
            host: HostSpec {
                iops: Some(7000.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut run = report(
            4096,
            32,
            &[("/dev/a", 1999.0), ("/dev/b", 2000.0), ("/dev/c", 1998.0)],
            &[5997, 5998, 5996],
        );
        run.workload.rate_iops = Some(2000);
        let v = judge(&specs, &[&run]);
        assert!(v.judgement.passed(), "{:?}", v.failures());
        assert!(v
            .devices
            .iter()
            .all(|d| d.figures.rate_cap[RuleKind::Iops] == Some(2000.0)));
        assert_eq!(v.host.figures.rate_cap[RuleKind::Iops], Some(6000.0));
        assert_eq!(v.host.bottleneck, None, "the cap, not the host, held them");
        // Short of the cap itself is still a failure, of that volume only.
        run.devices[1].figures.iops = 1000.0;
        let v = judge(&specs, &[&run]);
        assert_eq!(v.failures(), vec!["/dev/b IOPS".to_string()]);
        assert_eq!(v.host.bottleneck, Some(Bottleneck::Volumes));
        // A cap above the promise holds nothing back: judged as usual.
        run.workload.rate_iops = Some(5000);
        let v = judge(&specs, &[&run]);
        assert!(v
            .devices
            .iter()
            .all(|d| d.figures.rate_cap[RuleKind::Iops].is_none()));
        assert!(v.host.figures.rate_cap[RuleKind::Iops].is_none());
        assert!(v.judgement.failed());
    }

    #[test]
    fn a_volume_taken_out_after_a_failed_io_fails_whatever_its_rate() {
        let specs = SpecSet {
            devices: flat(2000.0, "flat", &["/dev/a", "/dev/b"]),
            ..Default::default()
        };
        let mut run = report(4096, 32, &[("/dev/a", 2000.0), ("/dev/b", 2000.0)], &[4000]);
        assert!(judge(&specs, &[&run]).judgement.passed());
        // Its rate over its own 1.5 s is the promise, but it stopped there.
        run.devices[1].failed = true;
        run.devices[1].stopped_at_secs = Some(1.5);
        let v = judge(&specs, &[&run]);
        assert!(v.judgement.failed());
        assert_eq!(v.devices[1].stopped_at_secs, Some(1.5));
        assert_eq!(
            v.failures(),
            vec!["/dev/b taken out after a failed I/O".to_string()]
        );
    }

    #[test]
    fn a_volume_that_stopped_answering_or_failed_io_never_passes() {
        let specs = SpecSet {
            devices: flat(2000.0, "flat", &["/dev/a", "/dev/b"]),
            ..Default::default()
        };
        let healthy = report(4096, 32, &[("/dev/a", 2000.0), ("/dev/b", 2000.0)], &[4000]);
        assert!(judge(&specs, &[&healthy]).judgement.passed());
        // Its figures keep the promise, but 32 of its I/Os never came back.
        let mut stalled = healthy.clone();
        stalled.devices[1].stalled_in_flight = Some(32);
        let v = judge(&specs, &[&stalled]);
        assert!(v.judgement.failed() && v.devices[1].judgement.failed());
        assert!(v.devices[0].judgement.passed());
        assert_eq!(v.devices[1].stalled_in_flight, Some(32));
        assert_eq!(v.failures(), ["/dev/b stopped answering"]);
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["pass"], false);
        assert_eq!(json["devices"][1]["stalled_in_flight"], 32);
        // In one phase of several is enough.
        let v = judge(&specs, &[&healthy, &stalled]);
        assert!(v.devices[1].judgement.failed());
        // Failed I/Os the run went on past (--on-error continue) fail it too.
        let mut erring = healthy.clone();
        erring.devices[0].figures.errors = 3;
        let v = judge(&specs, &[&erring]);
        assert_eq!(v.failures(), ["/dev/a failed I/Os"]);
        assert_eq!(v.devices[0].errors, 3);
        // Saturated workers excuse a shortfall, never a fault.
        let mut saturated = stalled.clone();
        saturated.devices[1].load_generator_saturated = true;
        saturated.devices[1].figures.iops = 100.0;
        let v = judge(&specs, &[&saturated]);
        assert!(v.devices[1].judgement.failed(), "{:?}", v.devices[1]);
    }

    #[test]
    fn judges_each_volume_and_names_the_one_that_fails() {
        let specs = SpecSet {
            devices: flat(2000.0, "flat", &["/dev/a", "/dev/b", "/dev/c"]),
            ..Default::default()
        };
        let run = report(
            4096,
            32,
            &[("/dev/a", 1990.0), ("/dev/b", 1000.0), ("/dev/c", 2003.0)],
            &[4993, 4990, 4996],
        );
        let v = judge(&specs, &[&run]);
        assert!(v.judgement.failed());
        assert!(
            v.devices[0].judgement.passed()
                && v.devices[1].judgement.failed()
                && v.devices[2].judgement.passed()
        );
        assert_eq!(v.failures(), vec!["/dev/b IOPS".to_string()]);
        assert_eq!(
            v.host.judgement,
            Judgement::NotJudged,
            "no host figure given"
        );
        assert_eq!(
            v.host.figures.volumes.unwrap()[RuleKind::Iops],
            Some(6000.0)
        );
        assert_eq!(v.host.bottleneck, Some(Bottleneck::Volumes));
        assert!(v.not_judged.is_empty());

        // The same run at 64k judges nothing and says what would.
        let big = report(64 << 10, 32, &[("/dev/a", 1.0)], &[]);
        let v = judge(&specs, &[&big]);
        assert_eq!(
            v.judgement,
            Judgement::NotJudged,
            "nothing judged is no pass"
        );
        assert_eq!(v.devices[0].figures.measured[Figure::Iops], None);
        assert!(
            v.not_judged[0]
                .to_string()
                .contains("4 KiB blocks or smaller"),
            "{:?}",
            v.not_judged
        );
    }

    #[test]
    fn a_short_host_on_saturated_workers_blames_the_load_generator() {
        let specs = SpecSet {
            devices: flat(2000.0, "x", &["/dev/a", "/dev/b"]),
            host: HostSpec::default(),
            tolerance: Tolerance::new(0.1).unwrap(),
        };
        let mut run = report(
            4096,
            32,
            &[("/dev/a", 1250.0), ("/dev/b", 1260.0)],
            &[2510; 4],
        );
        assert_eq!(
            judge(&specs, &[&run]).host.bottleneck,
            Some(Bottleneck::Host)
        );
        let worker = |saturated| crate::WorkerReport {
            cpu: 0,
            devices: vec![0, 1],
            ring: Default::default(),
            user_secs: 1.0,
            system_secs: 2.0,
            busy_share: 0.6,
            cpu_busy_share: Some(if saturated { 0.99 } else { 0.5 }),
            saturated,
            ..Default::default()
        };
        run.load_generator = Some(crate::LoadGenerator {
            saturated: false,
            workers: vec![worker(false)],
            ..Default::default()
        });
        assert_eq!(
            judge(&specs, &[&run]).host.bottleneck,
            Some(Bottleneck::Host)
        );
        run.load_generator = Some(crate::LoadGenerator {
            saturated: true,
            workers: vec![worker(true)],
            ..Default::default()
        });
        let v = judge(&specs, &[&run]);
        assert_eq!(v.host.bottleneck, Some(Bottleneck::LoadGenerator));
        assert_eq!(
            serde_json::to_value(&v).unwrap()["host"]["bottleneck"],
            "load_generator"
        );
    }

    #[test]
    fn a_volume_short_on_saturated_workers_is_not_judged_and_names_the_load_generator() {
        let specs = SpecSet {
            devices: flat(200_000.0, "x", &["/dev/zram0", "/dev/b"]),
            ..Default::default()
        };
        let mut run = report(
            4096,
            32,
            &[("/dev/zram0", 100_000.0), ("/dev/b", 100_000.0)],
            &[200_000; 3],
        );
        assert_eq!(
            judge(&specs, &[&run]).failures(),
            ["/dev/zram0 IOPS", "/dev/b IOPS"]
        );
        // Every worker of the first volume saturated: its promise is not judged.
        run.devices[0].load_generator_saturated = true;
        let v = judge(&specs, &[&run]);
        assert_eq!(v.failures(), ["/dev/b IOPS"]);
        assert_eq!(
            v.devices[0].judgement,
            Judgement::NotJudged,
            "its only promise was not judged: no pass"
        );
        assert_eq!(v.devices[0].bottleneck, Some(Bottleneck::LoadGenerator));
        assert_eq!(
            v.devices[0].not_judged_reason(),
            Some("not judged: load generator saturated")
        );
        assert_eq!(
            serde_json::to_value(&v).unwrap()["devices"][0]["bottleneck"],
            "load_generator"
        );
        assert_eq!(v.devices[1].bottleneck, None);
        // A volume that kept its promise needs no excuse.
        run.devices[0].figures.iops = 200_000.0;
        assert_eq!(judge(&specs, &[&run]).devices[0].bottleneck, None);
    }

    #[test]
    fn host_figures_and_rules_judged_on_their_own_phases() {
        let mut devices = flat(2000.0, "x", &["/dev/a", "/dev/b"]);
        for d in &mut devices {
            d.spec.mbps = Some(Scaled::Flat(100.0));
            d.spec.p95_ms = Some(0.5);
        }
        let specs = SpecSet {
            devices,
            host: HostSpec {
                iops: Some(5000.0),
                bytes_per_sec: Some(150e6),
            },
            tolerance: Tolerance::new(0.1).unwrap(),
        };
        let small = report(
            4096,
            32,
            &[("/dev/a", 1250.0), ("/dev/b", 1260.0)],
            &[2510; 4],
        );
        // 1 MiB at 100 IOPS = 104.9 MB/s each.
        let large = report(
            1 << 20,
            32,
            &[("/dev/a", 100.0), ("/dev/b", 100.0)],
            &[200; 4],
        );
        let qd1 = report(4096, 1, &[("/dev/a", 900.0), ("/dev/b", 900.0)], &[1800; 4]);
        let v = judge(&specs, &[&small, &large, &qd1]);
        assert_eq!(v.host.figures.measured[Figure::Iops], Some(2510.0));
        assert!(v.host.judgement.failed(), "2510 of 5000 IOPS");
        assert_eq!(v.host.bottleneck, Some(Bottleneck::Host));
        let d = &v.devices[0];
        assert_eq!(
            d.figures.measured[Figure::BytesPerSec],
            Some(100.0 * 1048576.0)
        );
        // p95 0.6 ms against 0.5 ms (+10%): fails; IOPS 1250 of 2000: fails; MB/s passes.
        assert_eq!(d.figures.measured[Figure::ReadP95Ns], Some(600_000.0));
        assert_eq!(
            d.figures.measured[Figure::WriteP95Ns],
            None,
            "a read-only run"
        );
        assert_eq!(
            v.failures(),
            vec![
                "/dev/a IOPS",
                "/dev/a read p95",
                "/dev/b IOPS",
                "/dev/b read p95",
                "host IOPS"
            ]
        );
        // The 4k depth-32 run does not judge latency: only the depth-1 run does.
        let v = judge(&specs, &[&small, &large]);
        assert!(v
            .not_judged
            .iter()
            .map(|n| n.to_string())
            .any(|n| n.contains("p95 latency: needs") && n.contains("queue depth 1")));
    }

    #[test]
    fn verdict_json_has_the_documented_shape() {
        let specs = SpecSet {
            devices: flat(2000.0, "flat", &["/dev/a"]),
            host: HostSpec {
                iops: Some(1000.0),
                bytes_per_sec: None,
            },
            ..Default::default()
        };
        let run = report(4096, 32, &[("/dev/a", 1990.0)], &[1990; 3]);
        let json = serde_json::to_value(judge(&specs, &[&run])).unwrap();
        assert_eq!(json["pass"], true);
        assert_eq!(json["host"]["pass"], true);
        assert_eq!(json["host"]["expected_iops"], 1000.0);
        assert_eq!(json["host"]["measured_iops"], 1990.0);
        assert!(json["host"]["bottleneck"].is_null());
        assert_eq!(json["devices"][0]["path"], "/dev/a");
        assert_eq!(json["devices"][0]["expected_iops"], 2000.0);
        assert_eq!(json["devices"][0]["measured_iops"], 1990.0);
        assert_eq!(json["devices"][0]["pass"], true);
        assert_eq!(json["devices"][0]["verdict"], "pass");
        assert_eq!(json["verdict"], "pass");
    }

    fn p95_only(paths: &[&str], p95_ms: f64) -> SpecSet {
        let mut devices = flat(1.0, "x", paths);
        for d in &mut devices {
            d.spec.iops = None;
            d.spec.p95_ms = Some(p95_ms);
        }
        SpecSet {
            devices,
            ..Default::default()
        }
    }

    #[test]
    fn numjobs_times_iodepth_is_the_depth_a_promise_is_judged_at() {
        // 0.6 ms p95 against a 1 ms promise: kept, were the run at depth 1.
        let specs = p95_only(&["/dev/a"], 1.0);
        let mut run = report(4096, 1, &[("/dev/a", 2000.0)], &[2000; 3]);
        assert!(judge(&specs, &[&run]).judgement.passed());
        // --numjobs 4 --iodepth 1: four I/Os in flight, which shows a queue's wait, not the
        // volume's latency.
        run.workload.numjobs = Some(4);
        let v = judge(&specs, &[&run]);
        assert_eq!(v.judgement, Judgement::NotJudged);
        assert_eq!(v.devices[0].figures.measured[Figure::ReadP95Ns], None);
        assert_eq!(
            v.not_judged,
            [NotJudged::new(Promiser::Volume, RuleKind::Latency)]
        );
        // And the same four jobs judge an IOPS promise (depth above 1), which depth 1 cannot.
        let iops = SpecSet {
            devices: flat(2000.0, "x", &["/dev/a"]),
            ..Default::default()
        };
        assert!(judge(&iops, &[&run]).judgement.passed());
        run.workload.numjobs = None;
        assert_eq!(judge(&iops, &[&run]).judgement, Judgement::NotJudged);
    }

    #[test]
    fn a_verdict_that_judged_nothing_is_not_a_pass() {
        // The device's only promise is short on saturated workers: nothing is judged.
        let specs = SpecSet {
            devices: flat(2000.0, "x", &["/dev/a"]),
            ..Default::default()
        };
        let mut run = report(4096, 32, &[("/dev/a", 1000.0)], &[1000; 3]);
        run.devices[0].load_generator_saturated = true;
        let v = judge(&specs, &[&run]);
        assert_eq!(v.devices[0].judgement, Judgement::NotJudged);
        assert_eq!(v.host.judgement, Judgement::NotJudged, "no host promise");
        assert_eq!(v.judgement, Judgement::NotJudged);
        assert!(v.failures().is_empty());
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["pass"], serde_json::Value::Null);
        assert_eq!(json["verdict"], "not_judged");
        assert_eq!(json["devices"][0]["pass"], serde_json::Value::Null);
        assert_eq!(json["devices"][0]["verdict"], "not_judged");
        assert_eq!(serde_json::from_value::<Verdict>(json).unwrap(), v);
        // A device nothing was promised of is not judged either, not passed.
        let other = report(4096, 32, &[("/dev/a", 2000.0), ("/dev/b", 1.0)], &[2001; 3]);
        let v = judge(&specs, &[&other]);
        assert_eq!(v.devices[1].judgement, Judgement::NotJudged);
        assert_eq!(
            v.judgement,
            Judgement::Pass,
            "/dev/a was judged and kept it"
        );
    }

    #[test]
    fn a_report_written_before_the_verdict_field_reads_from_pass() {
        let specs = SpecSet {
            devices: flat(2000.0, "x", &["/dev/a"]),
            ..Default::default()
        };
        let run = report(4096, 32, &[("/dev/a", 2000.0)], &[2000; 3]);
        let mut json = serde_json::to_value(judge(&specs, &[&run])).unwrap();
        for pointer in ["", "/devices/0", "/host"] {
            let v = json.pointer_mut(pointer).unwrap();
            v.as_object_mut().unwrap().remove("verdict");
        }
        json["host"]["pass"] = true.into();
        let old: Verdict = serde_json::from_value(json).unwrap();
        assert_eq!(old.judgement, Judgement::Pass);
        assert_eq!(old.devices[0].judgement, Judgement::Pass);
        assert_eq!(old.host.judgement, Judgement::Pass);
    }

    #[test]
    fn a_shortfall_is_excused_only_by_saturation_in_the_run_that_showed_it() {
        let specs = SpecSet {
            devices: flat(2000.0, "x", &["/dev/a"]),
            ..Default::default()
        };
        let mut saturated = report(4096, 32, &[("/dev/a", 1000.0)], &[1000; 3]);
        saturated.devices[0].load_generator_saturated = true;
        // Short in a run whose workers kept up: the volume's shortfall, whatever the other
        // run's CPUs did.
        let short = report(4096, 32, &[("/dev/a", 1500.0)], &[1500; 3]);
        let v = judge(&specs, &[&saturated, &short]);
        assert_eq!(v.devices[0].judgement, Judgement::Fail);
        assert_eq!(v.devices[0].bottleneck, None);
        assert_eq!(v.failures(), ["/dev/a IOPS"]);
        assert_eq!(v.judgement, Judgement::Fail);
        // Kept where the workers kept up, short only where they were saturated: excused, and
        // what it kept is judged.
        let kept = report(4096, 32, &[("/dev/a", 2000.0)], &[2000; 3]);
        let v = judge(&specs, &[&saturated, &kept]);
        assert_eq!(v.devices[0].bottleneck, Some(Bottleneck::LoadGenerator));
        assert_eq!(v.devices[0].judgement, Judgement::Pass);
        assert!(v.failures().is_empty());
    }

    #[test]
    fn a_promise_whose_path_no_report_has_is_listed_not_judged() {
        let specs = SpecSet {
            devices: flat(2000.0, "x", &["/dev/disk/by-id/nvme-x", "/dev/a"]),
            ..Default::default()
        };
        let run = report(4096, 32, &[("/dev/a", 2000.0)], &[2000; 3]);
        let v = judge(&specs, &[&run]);
        assert_eq!(
            v.not_judged,
            [NotJudged::unmeasured("/dev/disk/by-id/nvme-x")]
        );
        let text = v.not_judged[0].to_string();
        assert!(
            text.starts_with("volume /dev/disk/by-id/nvme-x: no run measured it"),
            "{text}"
        );
        let json = serde_json::to_value(&v.not_judged).unwrap();
        assert_eq!(
            serde_json::from_value::<Vec<NotJudged>>(json).unwrap(),
            v.not_judged
        );
    }

    #[test]
    fn a_run_cut_short_passes_nothing() {
        let specs = SpecSet {
            devices: flat(2000.0, "x", &["/dev/a"]),
            host: HostSpec {
                iops: Some(1000.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut run = report(4096, 32, &[("/dev/a", 2000.0)], &[2000; 3]);
        run.interrupted = true;
        let v = judge(&specs, &[&run]);
        assert_eq!(v.judgement, Judgement::NotJudged);
        assert_eq!(v.host.judgement, Judgement::NotJudged);
        assert_eq!(v.devices[0].judgement, Judgement::NotJudged);
        assert_eq!(
            v.devices[0].figures.measured[Figure::Iops],
            Some(2000.0),
            "what it measured is still shown"
        );
        let json = serde_json::to_string(&v).unwrap();
        assert!(!json.contains("\"pass\":true"), "{json}");
        // Short and cut short: no FAIL either.
        run.devices[0].figures.iops = 10.0;
        assert!(judge(&specs, &[&run]).failures().is_empty());
    }

    fn one_device_run(label: &str, shape: RunShape, figures: MeasuredFigures) -> JudgedRun {
        JudgedRun {
            label: label.into(),
            shape,
            rate_iops: None,
            host: figures,
            devices: vec![("/dev/a".into(), figures)],
        }
    }

    fn rate(iops: f64, block_size: u32) -> MeasuredFigures {
        MeasuredFigures {
            iops,
            bytes_per_sec: iops * f64::from(block_size),
            ..Default::default()
        }
    }

    #[test]
    fn the_worst_run_that_can_show_a_promise_judges_it() {
        let expected = Expectation {
            iops: Some(3000.0),
            ..Default::default()
        };
        let runs = [
            one_device_run("4k_100_0", shape(4096, 32), rate(3100.0, 4096)),
            one_device_run("4k_0_100", shape(4096, 32), rate(2000.0, 4096)),
            one_device_run("512b_100_0", shape(512, 32), rate(3050.0, 512)),
            // 8k runs and depth-1 runs judge no IOPS, however low.
            one_device_run("8k_100_0", shape(8192, 32), rate(100.0, 8192)),
            one_device_run("4k_qd1", shape(4096, 1), rate(900.0, 4096)),
        ];
        let checks = check_promise(&expected, &runs, Some("/dev/a"), T);
        assert_eq!(checks.len(), 1);
        let c = &checks[0];
        assert_eq!(c.figure, Figure::Iops);
        assert_eq!(c.measured, Some(2000.0));
        assert_eq!(c.runs, ["4k_100_0", "4k_0_100", "512b_100_0"]);
        assert_eq!(c.pass, Some(false));
        // Without the write-heavy run every run that judges keeps it: 3050 is the worst.
        let kept_runs = [runs[0].clone(), runs[2].clone(), runs[3].clone()];
        let kept = check_figure(Figure::Iops, 3000.0, &kept_runs, Some("/dev/a"), T);
        assert_eq!((kept.measured, kept.pass), (Some(3050.0), Some(true)));
        // A device no run measured is not judged.
        let none = check_figure(Figure::Iops, 3000.0, &runs, Some("/dev/x"), T);
        assert_eq!((none.measured, none.pass), (None, None));
        assert!(none.runs.is_empty());
    }

    #[test]
    fn p95_is_judged_for_reads_and_writes_apart() {
        let expected = Expectation {
            p95_ns: Some(1_000_000),
            ..Default::default()
        };
        // A 96/4 mix at depth 1: reads at 0.4 ms, writes at 1.5 ms. The p95 of both together
        // would be 0.4 ms (writes are under 5% of the I/Os) and hide the slow writes.
        let p95 = |ns| OpFigures {
            latency_ns: crate::LatencySummary {
                p95: ns,
                ..Default::default()
            },
            ..Default::default()
        };
        let mixed = MeasuredFigures {
            iops: 2000.0,
            bytes_per_sec: 2000.0 * 4096.0,
            ops: PerOp::from_fn(|op| match op {
                OpKind::Read => Some(p95(400_000)),
                OpKind::Write => Some(p95(1_500_000)),
                _ => None,
            }),
        };
        let runs = [one_device_run("4k_96_4", shape(4096, 1), mixed)];
        let got: Vec<_> = check_promise(&expected, &runs, Some("/dev/a"), T)
            .iter()
            .map(|c| (c.figure, c.measured, c.pass))
            .collect();
        assert_eq!(
            got,
            [
                (Figure::ReadP95Ns, Some(400_000.0), Some(true)),
                (Figure::WriteP95Ns, Some(1_500_000.0), Some(false)),
            ]
        );
        // A read-only latency run promises nothing of writes: no write check.
        let mut reads = mixed;
        reads.ops[OpKind::Write] = None;
        let runs = [one_device_run("4k_100_0", shape(4096, 1), reads)];
        let checks = check_promise(&expected, &runs, Some("/dev/a"), T);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].figure, Figure::ReadP95Ns);
        // No latency run at all: both directions listed, unjudged.
        let runs = [one_device_run("4k_100_0", shape(4096, 32), mixed)];
        let checks = check_promise(&expected, &runs, Some("/dev/a"), T);
        assert_eq!(checks.len(), 2);
        assert!(checks.iter().all(|c| c.pass.is_none()));

        // Through judge(): the verdict names the direction that failed.
        let mut devices = flat(2000.0, "x", &["/dev/a"]);
        devices[0].spec.iops = None;
        devices[0].spec.p95_ms = Some(1.0);
        let specs = SpecSet {
            devices,
            ..Default::default()
        };
        let mut qd1 = report(4096, 1, &[("/dev/a", 2000.0)], &[2000; 3]);
        qd1.devices[0].figures.ops[OpKind::Read].latency_ns.p95 = 400_000;
        qd1.devices[0].figures.ops[OpKind::Write] = OpSummary {
            ios: 80,
            latency_ns: crate::LatencySummary {
                p95: 1_500_000,
                ..Default::default()
            },
            ..Default::default()
        };
        let v = judge(&specs, &[&qd1]);
        assert_eq!(
            v.devices[0].figures.measured[Figure::ReadP95Ns],
            Some(400_000.0)
        );
        assert_eq!(
            v.devices[0].figures.measured[Figure::WriteP95Ns],
            Some(1_500_000.0)
        );
        assert_eq!(v.failures(), vec!["/dev/a write p95".to_string()]);
        assert_eq!(v.latency_time, LatencyTime::Service);

        // With an offered rate, the response time is judged (a stall's wait counts), and
        // the verdict says so.
        let mut paced = qd1.clone();
        paced.workload.rate_iops = Some(1000);
        for op in [OpKind::Read, OpKind::Write] {
            let o = &mut paced.devices[0].figures.ops[op];
            o.response_ns = Some(crate::LatencySummary {
                p95: o.latency_ns.p95 + 900_000,
                ..Default::default()
            });
        }
        paced.host.ops[OpKind::Read].response_ns = Some(crate::LatencySummary::default());
        let v = judge(&specs, &[&paced]);
        assert_eq!(v.latency_time, LatencyTime::Response);
        assert_eq!(
            v.devices[0].figures.measured[Figure::ReadP95Ns],
            Some(1_300_000.0)
        );
        assert_eq!(
            v.failures(),
            vec![
                "/dev/a read p95".to_string(),
                "/dev/a write p95".to_string()
            ]
        );
        assert_eq!(
            serde_json::to_value(&v).unwrap()["latency_time"],
            "response"
        );
    }
}
