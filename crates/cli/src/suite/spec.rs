//! The suite's figures against what each volume and the host promise (the spec options of the
//! main run, [`crate::verify::SpecArgs`]).
//!
//! A promise is judged on every cell that can show it, and must hold in each: IOPS on the 4k
//! cells (the providers' "at 4K"), throughput on cells of 256k blocks and up, p95 latency on
//! 4k cells at queue depth 1 (the latency test). The lowest IOPS or throughput (the highest
//! p95) across those cells is what is compared, so "pass" means every mix delivered it.

use hostmax_aggregate::spec::{Expectation, HostSpec, Tolerance};
use hostmax_aggregate::verdict::THROUGHPUT_BLOCK_MIN;
use hostmax_engine::TargetInfo;
use serde::{Deserialize, Serialize};

use super::report::{CellReport, SuiteReport};
use crate::plan::BadInput;
use crate::verify::SpecArgs;

/// The block size whose cells judge IOPS promises.
const IOPS_BLOCK: u32 = 4096;

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

/// One promised figure against the suite's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureCheck {
    /// `iops`, `bytes_per_sec` or `p95_ns`.
    pub figure: String,
    /// The promise.
    pub expected: f64,
    /// The worst figure across the cells that judge it (`null` when no cell can).
    pub measured: Option<f64>,
    /// Those cells.
    pub cells: Vec<String>,
    /// Whether it holds within the tolerance (`null` when not judged).
    pub pass: Option<bool>,
}

/// A volume's (or the host's) checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromiseCheck {
    /// The device, or `host`.
    pub path: String,
    /// Where the promise came from.
    pub label: String,
    /// Each promised figure.
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

/// Compares the report's cells with the promises. `device` picks a device's figures from a
/// cell (by index), `None` the host's.
pub fn compare(promises: &Promises, report: &SuiteReport) -> SpecComparison {
    let tolerance = Tolerance::new(promises.tolerance).unwrap_or_default();
    let cells: Vec<(&String, &CellReport)> = report
        .cell_order
        .iter()
        .filter_map(|k| report.cells.get(k).map(|c| (k, c)))
        .filter(|(_, c)| !c.rounds.is_empty())
        .collect();
    let iodepth_one = report.settings.iodepth == 1;
    let check = |figure: &str,
                 expected: Option<f64>,
                 judges: &dyn Fn(&CellReport) -> bool,
                 value: &dyn Fn(&CellReport) -> Option<f64>,
                 ceiling: bool|
     -> Option<FigureCheck> {
        let expected = expected?;
        let judged: Vec<(&String, f64)> = cells
            .iter()
            .filter(|(_, c)| judges(c))
            .filter_map(|(k, c)| value(c).map(|v| (*k, v)))
            .collect();
        let worst =
            judged
                .iter()
                .map(|(_, v)| *v)
                .reduce(if ceiling { f64::max } else { f64::min });
        Some(FigureCheck {
            figure: figure.to_string(),
            expected,
            measured: worst,
            cells: judged.iter().map(|(k, _)| (*k).clone()).collect(),
            pass: worst.map(|m| {
                if ceiling {
                    tolerance.stays_under(m, expected)
                } else {
                    tolerance.reaches(m, expected)
                }
            }),
        })
    };
    let is_iops_cell = |c: &CellReport| c.block_size == IOPS_BLOCK;
    let is_tp_cell = |c: &CellReport| c.block_size >= THROUGHPUT_BLOCK_MIN;
    let is_latency_cell = |c: &CellReport| c.block_size == IOPS_BLOCK && iodepth_one;
    let volumes = promises
        .volumes
        .iter()
        .filter_map(|v| {
            let index = report.device_index(&v.path)?;
            let dev = |c: &CellReport| c.devices.get(index).cloned();
            let e = &v.expected;
            let checks = [
                check(
                    "iops",
                    e.iops,
                    &is_iops_cell,
                    &|c| dev(c).map(|d| d.iops),
                    false,
                ),
                check(
                    "bytes_per_sec",
                    e.bytes_per_sec,
                    &is_tp_cell,
                    &|c| dev(c).map(|d| d.bytes_per_sec),
                    false,
                ),
                check(
                    "p95_ns",
                    e.p95_ns.map(|n| n as f64),
                    &is_latency_cell,
                    &|c| dev(c).and_then(|d| p95(&d.histograms)),
                    true,
                ),
            ];
            Some(PromiseCheck {
                path: v.path.clone(),
                label: v.label.clone(),
                checks: checks.into_iter().flatten().collect(),
            })
        })
        .collect();
    let host_checks: Vec<FigureCheck> = [
        check(
            "iops",
            promises.host.iops,
            &is_iops_cell,
            &|c| Some(c.iops),
            false,
        ),
        check(
            "bytes_per_sec",
            promises.host.bytes_per_sec,
            &is_tp_cell,
            &|c| Some(c.bytes_per_sec),
            false,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
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

/// The 95th percentile of all of a device's I/Os in the cell (reads and writes together),
/// from its merged histograms.
fn p95(histograms: &hostmax_aggregate::EncodedHistograms) -> Option<f64> {
    let (mut all, write) = histograms.decode().ok()?;
    hostmax_aggregate::add_exact(&mut all, &write);
    (!all.is_empty()).then(|| all.value_at_quantile(0.95) as f64)
}

/// Judges `--consistency` over the seconds of the cells that judge the IOPS promises (4k),
/// else the throughput ones (256k and up), in rounds `rounds` (the averaging window). `None`
/// without a required share, a promise of that figure, or any such second.
pub fn judge_consistency(
    promises: &Promises,
    records: &[&super::state::CellRound],
    paths: &[String],
) -> Option<hostmax_aggregate::consistency::ConsistencyVerdict> {
    use hostmax_aggregate::consistency::{judge_series, SecondFigure};
    let required = promises.consistency?;
    let any_iops =
        promises.host.iops.is_some() || promises.volumes.iter().any(|v| v.expected.iops.is_some());
    let by_bytes = !any_iops;
    let judged: Vec<&super::state::CellRound> = records
        .iter()
        .copied()
        .filter(|r| {
            if by_bytes {
                r.cell.block_size >= THROUGHPUT_BLOCK_MIN
            } else {
                r.cell.block_size == IOPS_BLOCK
            }
        })
        .collect();
    let seconds =
        |value: &dyn Fn(&hostmax_aggregate::SecondPoint, u32) -> f64| -> Vec<SecondFigure> {
            judged
                .iter()
                .flat_map(|r| {
                    let label = format!("{} round {}", r.cell.key(), r.round);
                    r.report
                        .time_series
                        .iter()
                        .filter(|p| !p.partial)
                        .map(move |p| SecondFigure {
                            second: p.second,
                            value: value(p, r.cell.block_size),
                            run: Some(label.clone()),
                        })
                })
                .collect()
        };
    let devices: Vec<(String, Vec<SecondFigure>, Option<f64>)> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let per_second = seconds(&|p, bs| {
                let ios = p.devices.get(i).map_or(0.0, |d| d.iops);
                if by_bytes {
                    ios * f64::from(bs)
                } else {
                    ios
                }
            });
            let expected = promises
                .volumes
                .iter()
                .find(|v| &v.path == path)
                .and_then(|v| {
                    if by_bytes {
                        v.expected.bytes_per_sec
                    } else {
                        v.expected.iops
                    }
                });
            (path.clone(), per_second, expected)
        })
        .collect();
    let host = seconds(&|p, _| {
        if by_bytes {
            p.bytes_per_sec
        } else {
            p.iops
        }
    });
    if host.is_empty() {
        return None;
    }
    let host_expected = if by_bytes {
        promises.host.bytes_per_sec
    } else {
        promises.host.iops
    };
    Some(judge_series(
        devices,
        (host, host_expected),
        promises.tolerance,
        required,
        by_bytes,
    ))
}
