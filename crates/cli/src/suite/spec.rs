//! The suite's figures against what each volume and the host promise (the spec options of the
//! main run, [`crate::verify::SpecArgs`]), judged by the rules `hostmax verify` uses
//! ([`hostmax_aggregate::verdict`]): each cell is a run of its block size at the suite's queue
//! depth, its figures averaged over the reported rounds. A promise is judged on every cell that
//! can show it and must hold in each, so "pass" means every mix delivered it.

use hostmax_aggregate::spec::{Expectation, HostSpec, Tolerance};
use hostmax_aggregate::verdict::{self, FigureCheck, JudgedRun, MeasuredFigures, RunShape};
use hostmax_aggregate::LatencySummary;
use hostmax_engine::TargetInfo;
use serde::{Deserialize, Serialize};

use super::report::SuiteReport;
use crate::error::BadInput;
use crate::verify::SpecArgs;

/// What the volumes and the host promise, resolved for the suite's devices (kept in
/// `suite.json`, so a resumed suite judges against the same figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promises {
    /// How far below a promise a figure may fall and still pass (a fraction).
    pub tolerance: f64,
    /// The host's promise.
    pub host: HostSpec,
    /// Each volume's, in device order (a device without one is left out).
    pub volumes: Vec<VolumePromise>,
    /// The share of seconds the promises must hold in (`--consistency`), if judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<hostmax_aggregate::consistency::Consistency>,
}

/// One volume's promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumePromise {
    /// The device.
    pub path: String,
    /// Where the figures came from (a profile, a spec string, a flat option).
    pub label: String,
    /// The figures expected at its provisioned size.
    pub expected: Expectation,
}

/// Resolves the spec options for the targets; `None` when none was given.
pub fn promises(args: &SpecArgs, targets: &[TargetInfo]) -> Result<Option<Promises>, BadInput> {
    let Some(set) = args.spec_set(targets)? else {
        args.consistency()?;
        return Ok(None);
    };
    Ok(Some(Promises {
        consistency: args.consistency()?,
        tolerance: set.tolerance.fraction(),
        host: set.host,
        volumes: set
            .devices
            .iter()
            .map(|d| VolumePromise {
                path: d.path.clone(),
                label: d.label.clone(),
                expected: d.expected(),
            })
            .collect(),
    }))
}

/// A volume's (or the host's) checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromiseCheck {
    /// The device, or `host`.
    pub path: String,
    /// Where the promise came from.
    pub label: String,
    /// Each promised figure; its `runs` are the cells that judge it.
    pub checks: Vec<FigureCheck>,
}

/// The suite against the promises: the report's `spec` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecComparison {
    /// The tolerance used.
    pub tolerance: f64,
    /// Every promising volume.
    pub volumes: Vec<PromiseCheck>,
    /// The host, when it promises anything.
    pub host: Option<PromiseCheck>,
    /// With `--consistency`: how often each volume and the host kept its IOPS (else
    /// throughput) promise, over every second of the cells that judge it, in the rounds the
    /// figures are averaged over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<hostmax_aggregate::consistency::ConsistencyVerdict>,
}

/// The cells of `report` that ran, as the verdict's rules see runs (named by their keys).
fn judged_runs(report: &SuiteReport) -> Vec<JudgedRun> {
    let p95 = |ios: f64, latency: &LatencySummary| (ios > 0.0).then_some(latency.p95);
    report
        .cell_order
        .iter()
        .filter_map(|k| report.cells.get(k).map(|c| (k, c)))
        .filter(|(_, c)| !c.rounds.is_empty())
        .map(|(key, c)| {
            let reads = f64::from(c.read_percent);
            JudgedRun {
                label: key.clone(),
                shape: RunShape {
                    block_size: c.block_size,
                    iodepth: report.settings.iodepth,
                    record_latency: true,
                },
                rate_iops: None,
                host: MeasuredFigures {
                    iops: c.iops,
                    bytes_per_sec: c.bytes_per_sec,
                    read_p95_ns: p95(reads, &c.read_latency_ns),
                    write_p95_ns: p95(100.0 - reads, &c.write_latency_ns),
                },
                devices: c
                    .devices
                    .iter()
                    .map(|d| {
                        let figures = MeasuredFigures {
                            iops: d.iops,
                            bytes_per_sec: d.bytes_per_sec,
                            read_p95_ns: p95(d.read_iops, &d.read_latency_ns),
                            write_p95_ns: p95(d.write_iops, &d.write_latency_ns),
                        };
                        (d.path.clone(), figures)
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Compares the report's cells with the promises.
pub fn compare(promises: &Promises, report: &SuiteReport) -> SpecComparison {
    let tolerance = Tolerance::new(promises.tolerance).unwrap_or_default();
    let runs = judged_runs(report);
    let checks = |expected: &Expectation, device: Option<&str>| {
        verdict::check_promise(expected, &runs, device, tolerance)
    };
    let volumes = promises
        .volumes
        .iter()
        .filter(|v| report.device_index(&v.path).is_some())
        .map(|v| PromiseCheck {
            path: v.path.clone(),
            label: v.label.clone(),
            checks: checks(&v.expected, Some(&v.path)),
        })
        .collect();
    let host_checks = checks(&promises.host.expected(), None);
    SpecComparison {
        consistency: None,
        tolerance: promises.tolerance,
        volumes,
        host: (!host_checks.is_empty()).then(|| PromiseCheck {
            path: "host".into(),
            label: "the host's promise".into(),
            checks: host_checks,
        }),
    }
}

/// Judges `--consistency` over every second of the cells' rounds `rounds` (the averaging
/// window) that judge the IOPS promises (else the throughput ones), by the rules `hostmax
/// verify` uses. `None` without a required share or any such second.
pub fn judge_consistency(
    promises: &Promises,
    records: &[&super::state::CellRound],
) -> Option<hostmax_aggregate::consistency::ConsistencyVerdict> {
    let required = promises.consistency?;
    let volumes: Vec<(String, Expectation)> = promises
        .volumes
        .iter()
        .map(|v| (v.path.clone(), v.expected))
        .collect();
    let host = promises.host.expected();
    let runs: Vec<(Option<String>, &hostmax_aggregate::HostReport)> = records
        .iter()
        .map(|r| {
            (
                Some(format!("{} round {}", r.cell.key(), r.round)),
                &r.report,
            )
        })
        .collect();
    hostmax_aggregate::consistency::judge_runs(&volumes, &host, &runs, promises.tolerance, required)
}
