//! The suite's report ([`SuiteReport`], the JSON root of `hostmax suite --json`), built from
//! the checkpoint's records alone, so a resumed suite reports exactly what a straight one would.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hostmax_aggregate::spec::{Expectation, Tolerance};
use hostmax_aggregate::verdict::{self, JudgedRun, MeasuredFigures, OpFigures, RunShape};
use hostmax_aggregate::{
    add_exact, EncodedHistograms, Figures, LatencySummary, SteadyState, SteadyStateRule, WindowFit,
};
use hostmax_engine::{new_latency_histogram, IoPattern, OpKind, PerOp, Workload};
use serde::{Deserialize, Serialize};

use super::matrix::{size_label, CellSpec, SuiteTest, TrackedMetric};
use super::spec::{PromiseCheck, Promises, SpecComparison};
use super::state::{CellRound, DeviceRecord, PrepRecord, SuiteConfig};

/// Version of the suite report's JSON layout (`schema_version`, under the name every hostmax
/// report uses; before it was `"schema": "hostmax-suite/1"`).
pub const SUITE_SCHEMA_VERSION: u32 = 1;

/// The suite's findings: the JSON root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    /// [`SUITE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The host that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Run id (kept through `--resume`), the window from the first measured cell's start to
    /// the last one's end, version, command line (of the last invocation), kernel.
    #[serde(flatten)]
    pub provenance: hostmax_aggregate::Provenance,
    /// The test that ran.
    pub test: SuiteTest,
    /// Whether the suite ended (steady state or the last round) rather than being interrupted.
    pub complete: bool,
    /// Whether a signal stopped it (resume it with `--resume`).
    pub interrupted: bool,
    /// The signal that stopped it (`SIGINT`, `SIGHUP`, ...), when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    /// When interrupted: the cells of the round in progress that were not measured (that
    /// round, and every later one, is left out of the figures and the steady state).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells_not_measured: Vec<String>,
    /// Whether writes were ruled out (only 100/0 ran).
    pub read_only: bool,
    /// How the suite was set up, in words.
    pub notes: Vec<String>,
    /// The settings.
    pub settings: SuiteSettings,
    /// The devices.
    pub devices: Vec<DeviceRecord>,
    /// Purge and preconditioning.
    pub preparation: Preparation,
    /// The steady-state verdict on the tracked cell.
    pub steady_state: SteadyStateReport,
    /// The cell keys in the order they ran (mix outer, block size inner).
    pub cell_order: Vec<String>,
    /// Every cell by key (`4k_100_0`).
    pub cells: BTreeMap<String, CellReport>,
    /// The figures against what the volumes and the host promise, when spec options were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<SpecComparison>,
}

impl SuiteReport {
    /// The position of the device at `path` (as the spec names it) in [`SuiteReport::devices`]
    /// and in every cell's per-device figures.
    pub fn device_index(&self, path: &str) -> Option<usize> {
        self.devices
            .iter()
            .position(|d| d.path.to_string_lossy() == path)
    }
}

/// What the suite's outputs are written from: the report (the JSON root: `--json` writes it
/// alone) and every cell's rounds, in the order they ran, for `--fio-json`.
#[derive(Debug, Clone)]
pub struct SuiteResult {
    /// The report.
    pub report: SuiteReport,
    /// Each measured cell's report, round by round.
    pub rounds: Vec<hostmax_aggregate::HostReport>,
}

impl serde::Serialize for SuiteResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.report.serialize(serializer)
    }
}

impl crate::output::fio_json::FioRuns for SuiteResult {
    const FOLDER: bool = true;
    fn fio_runs(&self) -> Vec<&hostmax_aggregate::HostReport> {
        self.rounds.iter().collect()
    }
}

/// The settings a suite ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSettings {
    /// Idle seconds after each cell (`--sleep-between`).
    #[serde(default)]
    pub sleep_between_secs: f64,
    /// Measured seconds per cell.
    pub cell_secs: f64,
    /// Unmeasured seconds before each cell.
    pub ramp_secs: f64,
    /// Queue depth per device, or per job with `numjobs`.
    pub iodepth: u32,
    /// Jobs per device (`--numjobs`), each at `iodepth`; absent: placed by queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numjobs: Option<u32>,
    /// Tested bytes per device, from its start.
    pub range_bytes: u64,
    /// Most rounds.
    pub max_rounds: u32,
    /// Random (else sequential) offsets.
    pub random: bool,
    /// Whether each cell ran the devices one at a time.
    pub one_device_at_a_time: bool,
    /// Base seed.
    pub seed: u64,
    /// Block sizes, as labels (`4k`), in order.
    pub block_sizes: Vec<String>,
    /// Mixes, as `READ/WRITE`, in order.
    pub mixes: Vec<String>,
}

/// What happened before the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preparation {
    /// The purge.
    pub purge: PrepOutcome,
    /// The workload-independent preconditioning.
    pub precondition: PrepOutcome,
}

/// One preparation step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrepOutcome {
    /// Whether it was asked for.
    pub planned: bool,
    /// Whether it was done (in this or an earlier, resumed run).
    pub done: bool,
    /// What was done per device, and how long it took.
    pub record: Option<PrepRecord>,
}

/// The steady-state verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyStateReport {
    /// Whether it was reached.
    pub reached: bool,
    /// The last round of the reported window: the round steady state was reached at, or the
    /// last round run when it was not.
    pub rounds: u32,
    /// The tracked figure in the window's rounds (up to 5 values).
    pub window: Vec<f64>,
    /// First and last round of the window.
    pub window_rounds: [u32; 2],
    /// The window's mean, slope and intercept (the fitted line is slope x round + intercept).
    pub mean: f64,
    /// Slope per round.
    pub slope: f64,
    /// Intercept.
    pub intercept: f64,
    /// Whether max - min <= 20% of the mean.
    pub range_ok: bool,
    /// Whether |slope| x 4 <= 10% of the mean.
    pub slope_ok: bool,
    /// The tracked cell's key.
    pub tracked: String,
    /// The figure tracked.
    pub metric: TrackedMetric,
    /// The tracked figure of every complete round, from round 1.
    pub series: Vec<f64>,
    /// Complete rounds.
    pub rounds_run: u32,
    /// Most rounds allowed.
    pub max_rounds: u32,
    /// What happened, for people: "steady state reached at round N", "steady state not
    /// achieved in N rounds (--max-rounds N)", or "stopped after N rounds, before the 5-round
    /// window" (then nothing was fitted: no range or slope verdict).
    pub status: String,
    /// Whether a 5-round window was fitted (false when fewer rounds ran): only then do
    /// `range_ok` and `slope_ok` say anything.
    #[serde(default)]
    pub fitted: bool,
}

/// One cell: its figure of every round, and averages over the reported window's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellReport {
    /// Bytes per I/O.
    pub block_size: u32,
    /// Read share in percent.
    pub read_percent: u8,
    /// The engine's pattern.
    pub pattern: IoPattern,
    /// Read plus write IOPS of every round it ran, from round 1.
    pub rounds: Vec<f64>,
    /// IOPS averaged over the window's rounds.
    pub iops: f64,
    /// Bytes per second of every round.
    pub bytes_per_sec_rounds: Vec<f64>,
    /// Bytes per second averaged over the window's rounds.
    pub bytes_per_sec: f64,
    /// Mean latency of every round, ns.
    pub mean_latency_ns_rounds: Vec<f64>,
    /// The rounds averaged (first, last).
    pub window_rounds: [u32; 2],
    /// Read latency over the window's rounds (histograms merged exactly).
    pub read_latency_ns: LatencySummary,
    /// Write latency over the window's rounds.
    pub write_latency_ns: LatencySummary,
    /// Mean latency averaged over the window's rounds, ns (each round's mean of all its I/Os,
    /// the figure the latency test's steady state judges).
    pub mean_latency_ns: f64,
    /// Failed I/Os in the window's rounds.
    pub errors: u64,
    /// Per device, averaged over the window's rounds.
    pub devices: Vec<DeviceCellFigures>,
    /// The window's merged read and write histograms (HdrHistogram V2 + DEFLATE, base64).
    pub histograms: EncodedHistograms,
}

impl CellReport {
    /// The mix as `READ/WRITE`, as [`SuiteSettings::mixes`] lists it.
    pub fn mix_label(&self) -> String {
        format!("{}/{}", self.read_percent, 100 - self.read_percent)
    }
}

/// One device's figures in a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceCellFigures {
    /// The device.
    pub path: String,
    /// Read plus write IOPS.
    pub iops: f64,
    /// Read IOPS.
    pub read_iops: f64,
    /// Write IOPS.
    pub write_iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Read latency over the window's rounds (its histograms merged exactly).
    pub read_latency_ns: LatencySummary,
    /// Write latency over the window's rounds.
    pub write_latency_ns: LatencySummary,
    /// Failed I/Os.
    pub errors: u64,
    /// Its merged read and write histograms.
    pub histograms: EncodedHistograms,
}

/// The tracked figure of one round's record.
pub fn metric_value(metric: TrackedMetric, record: &CellRound) -> f64 {
    let host = &record.report.host;
    match metric {
        TrackedMetric::Iops => host.iops,
        TrackedMetric::BytesPerSec => host.bytes_per_sec,
        TrackedMetric::MeanLatencyNs => mean_latency(host),
    }
}

/// The mean latency of every I/O of `figures`, whatever its kind.
fn mean_latency(figures: &Figures) -> f64 {
    let ios = figures.ios();
    if ios == 0 {
        return 0.0;
    }
    let weighted: f64 = figures
        .ops
        .values()
        .map(|o| o.ios as f64 * o.latency_ns.mean)
        .sum();
    weighted / ios as f64
}

/// Records by (round, key), as the checkpoint yields them.
pub type Records = BTreeMap<(u32, String), CellRound>;

/// Rounds 1..=N all of whose cells are recorded.
pub fn complete_rounds(config: &SuiteConfig, records: &Records) -> u32 {
    (1..=config.max_rounds)
        .take_while(|&r| {
            config
                .cells
                .iter()
                .all(|c| records.contains_key(&(r, c.key())))
        })
        .last()
        .unwrap_or(0)
}

/// The steady-state verdict over the first `rounds` rounds of the tracked cell.
pub fn steady_state(config: &SuiteConfig, records: &Records, rounds: u32) -> SteadyState {
    let key = config.tracked.key();
    let series: Vec<f64> = (1..=rounds)
        .map_while(|r| records.get(&(r, key.clone())))
        .map(|rec| metric_value(config.metric, rec))
        .collect();
    SteadyStateRule::default().evaluate(&series, config.max_rounds)
}

/// The suite's provenance: its run id and the window its cells were measured in (each cell's
/// end less its measured time, to the last cell's end).
fn suite_provenance(config: &SuiteConfig, records: &Records) -> hostmax_aggregate::Provenance {
    use std::time::{Duration, SystemTime};
    let at = |ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
    let ends = records.values().map(|r| at(r.finished_unix_ms));
    let starts = records.values().map(|r| {
        at(r.finished_unix_ms)
            .checked_sub(Duration::from_secs_f64(r.report.measured_secs.max(0.0)))
            .unwrap_or(SystemTime::UNIX_EPOCH)
    });
    let now = SystemTime::now();
    let mut provenance =
        crate::provenance::for_window(starts.min().unwrap_or(now), ends.max().unwrap_or(now));
    if records.is_empty() {
        provenance.started_at = None;
        provenance.ended_at = None;
    }
    if let Some(id) = &config.run_id {
        provenance.run_id = Some(id.clone());
    }
    provenance
}

/// Builds the report from the settings, the preparation records and the cell records;
/// `signal` is the one that stopped the suite (0 if none).
pub fn build(
    config: &SuiteConfig,
    records: &Records,
    purge: Option<PrepRecord>,
    precondition: Option<PrepRecord>,
    signal: i32,
) -> anyhow::Result<SuiteReport> {
    let interrupted = signal != 0;
    let rounds_run = complete_rounds(config, records);
    let steady = steady_state(config, records, rounds_run);
    let key = config.tracked.key();
    let series: Vec<f64> = (1..=rounds_run)
        .filter_map(|r| records.get(&(r, key.clone())))
        .map(|rec| metric_value(config.metric, rec))
        .collect();
    // The rounds every cell's figure is averaged over: the steady window, else the last five
    // complete rounds (or all of them when fewer ran).
    let window_rounds = match &steady.window {
        Some(w) => [w.first_round, w.last_round],
        None if rounds_run > 0 => [1, rounds_run],
        None => [0, 0],
    };
    let fit: Option<&WindowFit> = steady.window.as_ref();
    let window: Vec<f64> = match fit {
        Some(w) => w.values.clone(),
        None => series.clone(),
    };
    let mean = match fit {
        Some(w) => w.mean,
        None if !window.is_empty() => window.iter().sum::<f64>() / window.len() as f64,
        None => 0.0,
    };
    let window_len = SteadyStateRule::default().window;
    let rounds = |n: u32| format!("{n} round{}", if n == 1 { "" } else { "s" });
    let status = match (steady.round, fit) {
        (Some(r), _) => format!("steady state reached at round {r}"),
        (None, None) => format!(
            "stopped after {}, before the {window_len}-round window{}",
            rounds(rounds_run),
            if interrupted { " (interrupted)" } else { "" }
        ),
        (None, Some(_)) if rounds_run >= config.max_rounds => format!(
            "steady state not achieved in {} (--max-rounds {})",
            rounds(rounds_run),
            config.max_rounds
        ),
        (None, Some(_)) => format!(
            "stopped after {}, steady state not reached yet{}",
            rounds(rounds_run),
            if interrupted { " (interrupted)" } else { "" }
        ),
    };
    let steady_report = SteadyStateReport {
        reached: steady.reached,
        rounds: window_rounds[1],
        window,
        window_rounds,
        mean,
        slope: fit.map_or(0.0, |w| w.slope),
        intercept: fit.map_or(mean, |w| w.intercept),
        range_ok: fit.is_some_and(|w| w.range_ok),
        slope_ok: fit.is_some_and(|w| w.slope_ok),
        tracked: key,
        metric: config.metric,
        series,
        rounds_run,
        max_rounds: config.max_rounds,
        status,
        fitted: fit.is_some(),
    };
    let mut cells = BTreeMap::new();
    for cell in &config.cells {
        cells.insert(
            cell.key(),
            cell_report(config, cell, records, window_rounds)?,
        );
    }
    let mut report = SuiteReport {
        schema_version: SUITE_SCHEMA_VERSION,
        hostname: crate::provenance::hostname(),
        provenance: suite_provenance(config, records),
        test: config.test,
        complete: !interrupted,
        interrupted,
        interrupted_by: interrupted.then(|| crate::signals::signal_name(signal)),
        cells_not_measured: if interrupted {
            config
                .cells
                .iter()
                .map(CellSpec::key)
                .filter(|k| !records.contains_key(&(rounds_run + 1, k.clone())))
                .collect()
        } else {
            Vec::new()
        },
        read_only: config.read_only,
        notes: config.notes.clone(),
        settings: SuiteSettings {
            sleep_between_secs: config.sleep_between_ms as f64 / 1000.0,
            cell_secs: config.cell_time_ms as f64 / 1000.0,
            ramp_secs: config.ramp_ms as f64 / 1000.0,
            iodepth: config.iodepth,
            numjobs: config.numjobs,
            range_bytes: config.range,
            max_rounds: config.max_rounds,
            random: config.random,
            one_device_at_a_time: config.test.one_device_at_a_time(),
            seed: config.seed,
            block_sizes: unique(config.cells.iter().map(|c| size_label(c.block_size))),
            mixes: unique(config.cells.iter().map(|c| c.mix.to_string())),
        },
        devices: config.devices.clone(),
        preparation: Preparation {
            purge: PrepOutcome {
                planned: config.purge,
                done: purge.is_some(),
                record: purge,
            },
            precondition: PrepOutcome {
                planned: config.precondition,
                done: precondition.is_some(),
                record: precondition,
            },
        },
        steady_state: steady_report,
        cell_order: config.cells.iter().map(CellSpec::key).collect(),
        cells,
        spec: None,
    };
    report.spec = config.promises.as_ref().map(|p| compare(p, &report));
    if let (Some(spec), Some(promises)) = (report.spec.as_mut(), config.promises.as_ref()) {
        let in_window: Vec<&CellRound> = records
            .values()
            .filter(|r| (window_rounds[0]..=window_rounds[1]).contains(&r.round))
            .collect();
        spec.consistency = judge_consistency(promises, &in_window);
    }
    Ok(report)
}

fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn cell_report(
    config: &SuiteConfig,
    cell: &CellSpec,
    records: &Records,
    window_rounds: [u32; 2],
) -> anyhow::Result<CellReport> {
    let key = cell.key();
    let all: Vec<&CellRound> = (1..=config.max_rounds)
        .map_while(|r| records.get(&(r, key.clone())))
        .collect();
    let in_window: Vec<&CellRound> = all
        .iter()
        .copied()
        .filter(|r| (window_rounds[0]..=window_rounds[1]).contains(&r.round))
        .collect();
    let avg = |f: &dyn Fn(&CellRound) -> f64| -> f64 {
        if in_window.is_empty() {
            0.0
        } else {
            in_window.iter().map(|r| f(r)).sum::<f64>() / in_window.len() as f64
        }
    };
    let host_latency = merged(in_window.iter().map(|r| &r.report.host))?;
    let device_count = config.devices.len();
    let devices = (0..device_count)
        .map(|i| {
            let dev = |r: &CellRound| r.report.devices.get(i).cloned();
            let latency = merged(
                in_window
                    .iter()
                    .filter_map(|r| r.report.devices.get(i))
                    .map(|d| &d.figures),
            )?;
            Ok(DeviceCellFigures {
                path: config.devices[i].path.to_string_lossy().into_owned(),
                iops: avg(&|r| dev(r).map_or(0.0, |d| d.figures.iops)),
                read_iops: avg(&|r| dev(r).map_or(0.0, |d| d.figures.ops[OpKind::Read].iops)),
                write_iops: avg(&|r| dev(r).map_or(0.0, |d| d.figures.ops[OpKind::Write].iops)),
                bytes_per_sec: avg(&|r| dev(r).map_or(0.0, |d| d.figures.bytes_per_sec)),
                read_latency_ns: LatencySummary::from_histogram(&latency[OpKind::Read]),
                write_latency_ns: LatencySummary::from_histogram(&latency[OpKind::Write]),
                errors: in_window
                    .iter()
                    .filter_map(|r| dev(r))
                    .map(|d| d.figures.errors)
                    .sum(),
                histograms: EncodedHistograms::encode(&latency)?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let read_latency_ns = LatencySummary::from_histogram(&host_latency[OpKind::Read]);
    let write_latency_ns = LatencySummary::from_histogram(&host_latency[OpKind::Write]);
    Ok(CellReport {
        block_size: cell.block_size,
        read_percent: cell.mix.read,
        pattern: cell.pattern(config.random),
        rounds: all.iter().map(|r| r.report.host.iops).collect(),
        iops: avg(&|r| r.report.host.iops),
        bytes_per_sec_rounds: all.iter().map(|r| r.report.host.bytes_per_sec).collect(),
        bytes_per_sec: avg(&|r| r.report.host.bytes_per_sec),
        mean_latency_ns_rounds: all
            .iter()
            .map(|r| metric_value(TrackedMetric::MeanLatencyNs, r))
            .collect(),
        window_rounds,
        mean_latency_ns: avg(&|r| metric_value(TrackedMetric::MeanLatencyNs, r)),
        read_latency_ns,
        write_latency_ns,
        errors: in_window.iter().map(|r| r.report.host.errors).sum(),
        devices,
        histograms: EncodedHistograms::encode(&host_latency)?,
    })
}

/// Each kind's histograms of several rounds' figures, added bin by bin. A round without
/// histograms (recorded by an older hostmax) is an error rather than silently left out.
fn merged<'a>(figures: impl Iterator<Item = &'a Figures>) -> anyhow::Result<PerOp<Histogram<u64>>> {
    let mut sum = PerOp::from_fn(|_| new_latency_histogram());
    for f in figures {
        let decoded = f
            .histograms
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a checkpointed round has no histograms"))?
            .decode()?;
        for (op, h) in sum.iter_mut() {
            add_exact(h, &decoded[op]);
        }
    }
    Ok(sum)
}

// The suite's figures against the promises, judged by the rules `hostmax verify` uses
// (`hostmax_aggregate::verdict`): each cell is a run of its block size at the suite's queue
// depth, its figures averaged over the reported rounds. A promise is judged on every cell that
// can show it and must hold in each, so "pass" means every mix delivered it.

/// The cells of `report` that ran, as the verdict's rules see runs (named by their keys).
fn judged_runs(report: &SuiteReport) -> Vec<JudgedRun> {
    // A kind of I/O's figures, when the cell did any of it (its share of the mix, or its rate).
    let op = |share: f64, iops: f64, bytes_per_sec: f64, latency: &LatencySummary| {
        (share > 0.0).then_some(OpFigures::new(iops, bytes_per_sec, *latency))
    };
    report
        .cell_order
        .iter()
        .filter_map(|k| report.cells.get(k).map(|c| (k, c)))
        .filter(|(_, c)| !c.rounds.is_empty())
        .map(|(key, c)| {
            let share = |percent: f64| percent / 100.0;
            let reads = share(f64::from(c.read_percent));
            let writes = 1.0 - reads;
            let shape = RunShape::new(
                c.block_size,
                Workload::in_flight(report.settings.iodepth, report.settings.numjobs),
                true,
            );
            let host = MeasuredFigures::new(
                c.iops,
                c.bytes_per_sec,
                PerOp::from_fn(|kind| match kind {
                    OpKind::Read => op(
                        reads,
                        c.iops * reads,
                        c.bytes_per_sec * reads,
                        &c.read_latency_ns,
                    ),
                    OpKind::Write => op(
                        writes,
                        c.iops * writes,
                        c.bytes_per_sec * writes,
                        &c.write_latency_ns,
                    ),
                    _ => None,
                }),
            );
            let devices = c
                .devices
                .iter()
                .map(|d| {
                    let block = f64::from(c.block_size);
                    let figures = MeasuredFigures::new(
                        d.iops,
                        d.bytes_per_sec,
                        PerOp::from_fn(|kind| match kind {
                            OpKind::Read => op(
                                d.read_iops,
                                d.read_iops,
                                d.read_iops * block,
                                &d.read_latency_ns,
                            ),
                            OpKind::Write => op(
                                d.write_iops,
                                d.write_iops,
                                d.write_iops * block,
                                &d.write_latency_ns,
                            ),
                            _ => None,
                        }),
                    );
                    (d.path.clone(), figures)
                })
                .collect();
            JudgedRun::new(key.clone(), shape, host, devices)
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
    records: &[&CellRound],
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
