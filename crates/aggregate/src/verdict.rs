//! Judging runs against specs: a [`SpecSet`] (each device's [`DeviceExpectation`], the
//! [`HostSpec`], the [`Tolerance`]) and one or more [`HostReport`]s give a [`Verdict`]: per
//! device and for the host, measured against expected, pass or fail, and, when the host falls
//! short of what its volumes promise together, the [`Bottleneck`].
//!
//! The rules, the one place both `hostmax verify` (its phases, through [`judge`]) and the
//! suite (its cells, through [`check_promise`]) judge a promise by:
//! - IOPS on runs of 4 KiB blocks or smaller: the published IOPS are "at 4K" (OCI; AWS counts
//!   an SSD volume's IOPS on small I/O too), and a larger block can meet the throughput cap
//!   first (a 50 GB OCI volume: 3,000 x 8 KiB = 24.6 MB/s, above its 24 MB/s); a 512-byte run
//!   moves less data per I/O, so it must show the IOPS as well;
//! - throughput on runs of 256 KiB blocks and larger ("256k or larger block sizes should be
//!   used" to show throughput limits);
//! - IOPS and throughput only on runs with more than one I/O in flight: at depth 1 a volume
//!   delivers 1/latency I/Os a second whatever its cap, which shows its latency, not its rate;
//! - p95 latency on runs of 4 KiB blocks or smaller at queue depth 1: at depth N a volume
//!   capped at C IOPS answers in about N/C seconds (Little's law), so a sub-millisecond promise
//!   means one I/O at a time. Reads and writes are judged apart, each from its own histogram,
//!   and each must keep the promise: a few slow writes in a mostly-read mix would hide in a
//!   p95 of both together.
//!
//! A promise must hold on every run that can show it: the worst of those runs' figures (the
//! lowest rate, the highest p95) is the one compared.

use serde::{Deserialize, Serialize};

use hostmax_engine::OpKind;

use crate::report::{Figures, HostReport, WorkloadSummary};
use crate::spec::{Expectation, HostSpec, Tolerance, VolumeSpec};

/// Largest block size whose runs judge IOPS rules.
pub const IOPS_BLOCK_MAX: u32 = 4096;
/// Smallest block size whose runs judge throughput rules.
pub const THROUGHPUT_BLOCK_MIN: u32 = 256 << 10;
/// Largest coefficient of variation of the host's per-second IOPS that counts as flat.
pub const FLAT_CV: f64 = 0.10;

/// One device's promise: its class applied to its provisioned size.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceExpectation {
    /// The device's path as the report names it.
    pub path: String,
    /// Provisioned size in bytes (the device's own size unless a spec file says otherwise).
    pub size_bytes: u64,
    /// The class's rules.
    pub spec: VolumeSpec,
    /// Where the rules came from ("oci-balanced", a spec string, "--expect-volume-iops").
    pub label: String,
}

impl DeviceExpectation {
    /// The figures expected of this device.
    pub fn expected(&self) -> Expectation {
        self.spec.expected(self.size_bytes)
    }
}

/// Everything a run is judged against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecSet {
    /// Per device (devices without an entry are reported but not judged).
    pub devices: Vec<DeviceExpectation>,
    /// The host's promise.
    pub host: HostSpec,
    /// How far below its figure a measurement may fall.
    pub tolerance: Tolerance,
}

/// What kind of rule a run can judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// IOPS (runs of 4 KiB blocks or smaller, more than one I/O in flight).
    Iops,
    /// Throughput (runs of 256 KiB blocks or larger, more than one I/O in flight).
    Throughput,
    /// p95 latency (runs of 4 KiB blocks or smaller at queue depth 1).
    Latency,
}

/// What of a run decides which rules it judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    /// Bytes per I/O.
    pub block_size: u32,
    /// I/Os in flight per device.
    pub iodepth: u32,
    /// Whether latencies were recorded.
    pub record_latency: bool,
}

impl From<&WorkloadSummary> for RunShape {
    fn from(w: &WorkloadSummary) -> Self {
        RunShape {
            block_size: w.block_size,
            iodepth: w.iodepth,
            record_latency: w.record_latency,
        }
    }
}

impl RuleKind {
    /// Whether a run of this shape judges this kind of rule (the module docs say why).
    pub fn judges(self, run: RunShape) -> bool {
        let loaded = run.iodepth > 1;
        match self {
            RuleKind::Iops => run.block_size <= IOPS_BLOCK_MAX && loaded,
            RuleKind::Throughput => run.block_size >= THROUGHPUT_BLOCK_MIN && loaded,
            RuleKind::Latency => {
                run.block_size <= IOPS_BLOCK_MAX && run.iodepth == 1 && run.record_latency
            }
        }
    }

    /// Whether a run of `workload` judges this kind of rule.
    pub fn judged_by(self, workload: &WorkloadSummary) -> bool {
        self.judges(workload.into())
    }

    /// What a run needs to judge this kind, for people (in the workload's terms; a command
    /// line tool adds its own options).
    pub fn needs(self) -> &'static str {
        match self {
            RuleKind::Iops => "a run of 4 KiB blocks or smaller at a queue depth above 1",
            RuleKind::Throughput => "a run of 256 KiB blocks or larger at a queue depth above 1",
            RuleKind::Latency => "a run of 4 KiB blocks or smaller at queue depth 1",
        }
    }
}

/// A figure a promise names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Read plus write IOPS, at least.
    Iops,
    /// Bytes per second, at least.
    BytesPerSec,
    /// The reads' 95th percentile latency, at most, ns.
    ReadP95Ns,
    /// The writes' 95th percentile latency, at most, ns.
    WriteP95Ns,
}

impl Figure {
    /// The JSON name (`iops`, `bytes_per_sec`, `read_p95_ns`, `write_p95_ns`).
    pub fn name(self) -> &'static str {
        match self {
            Figure::Iops => "iops",
            Figure::BytesPerSec => "bytes_per_sec",
            Figure::ReadP95Ns => "read_p95_ns",
            Figure::WriteP95Ns => "write_p95_ns",
        }
    }

    /// The kind of rule that judges it.
    pub fn rule(self) -> RuleKind {
        match self {
            Figure::Iops => RuleKind::Iops,
            Figure::BytesPerSec => RuleKind::Throughput,
            Figure::ReadP95Ns | Figure::WriteP95Ns => RuleKind::Latency,
        }
    }

    /// Whether the promise is a ceiling (latency) rather than a floor (rates).
    pub fn is_ceiling(self) -> bool {
        self.rule() == RuleKind::Latency
    }

    /// This figure of `m`; `None` when the run did no I/O of that direction.
    pub fn of(self, m: &MeasuredFigures) -> Option<f64> {
        match self {
            Figure::Iops => Some(m.iops),
            Figure::BytesPerSec => Some(m.bytes_per_sec),
            Figure::ReadP95Ns => m.read_p95_ns.map(|n| n as f64),
            Figure::WriteP95Ns => m.write_p95_ns.map(|n| n as f64),
        }
    }
}

/// The figures of a device (or the host) in one run that promises are compared with.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeasuredFigures {
    /// Read plus write IOPS.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// The reads' p95 latency, ns; `None` without reads.
    pub read_p95_ns: Option<u64>,
    /// The writes' p95 latency, ns; `None` without writes.
    pub write_p95_ns: Option<u64>,
}

impl From<&Figures> for MeasuredFigures {
    fn from(f: &Figures) -> Self {
        MeasuredFigures {
            iops: f.iops,
            bytes_per_sec: f.bytes_per_sec,
            read_p95_ns: (f.ops[OpKind::Read].ios > 0)
                .then_some(f.ops[OpKind::Read].latency_ns.p95),
            write_p95_ns: (f.ops[OpKind::Write].ios > 0)
                .then_some(f.ops[OpKind::Write].latency_ns.p95),
        }
    }
}

/// One run as the rules see it: a phase of `hostmax verify`, a main run, a suite cell.
#[derive(Debug, Clone, PartialEq)]
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
    /// The run of `report`, named `label`.
    pub fn from_report(label: impl Into<String>, report: &HostReport) -> JudgedRun {
        JudgedRun {
            label: label.into(),
            shape: RunShape::from(&report.workload),
            rate_iops: report.workload.rate_iops,
            host: MeasuredFigures::from(&report.host),
            devices: report
                .devices
                .iter()
                .map(|d| (d.path.clone(), MeasuredFigures::from(&d.figures)))
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
        match figure {
            Figure::Iops => Some(cap),
            Figure::BytesPerSec => Some(cap * f64::from(self.shape.block_size)),
            Figure::ReadP95Ns | Figure::WriteP95Ns => None,
        }
    }
}

/// One promised figure against the runs that can show it (the suite's JSON `spec` lists them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureCheck {
    /// The figure.
    pub figure: Figure,
    /// The promise.
    pub expected: f64,
    /// The worst figure across the runs that judge it (`None` when none can).
    pub measured: Option<f64>,
    /// Those runs' labels (a suite's cell keys), in the order given.
    pub runs: Vec<String>,
    /// What the runs' own IOPS cap allowed, when that is below the promise (beyond the
    /// tolerance): the figure is judged against the cap and reaching it is "capped".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap: Option<f64>,
    /// Whether it holds within the tolerance (`None` when not judged).
    pub pass: Option<bool>,
}

/// Whether `measured` keeps the promise of `figure`: a rate reaches `expected` (or the lower
/// `rate_cap`), a latency stays under it, both within `t`.
pub fn keeps(
    figure: Figure,
    expected: f64,
    measured: f64,
    rate_cap: Option<f64>,
    t: Tolerance,
) -> bool {
    if figure.is_ceiling() {
        t.stays_under(measured, expected)
    } else {
        t.reaches(measured, figure_to_reach(expected, rate_cap))
    }
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

/// Checks every figure `expected` promises of the device at `device` (the host for `None`):
/// IOPS, throughput, and a p95 promise once for reads and once for writes. A latency check
/// is left out for a direction no latency run did while the other was judged (a read-only
/// run promises nothing of writes); with neither judged both are given, unjudged.
pub fn check_promise(
    expected: &Expectation,
    runs: &[JudgedRun],
    device: Option<&str>,
    t: Tolerance,
) -> Vec<FigureCheck> {
    let mut checks = Vec::new();
    let rates = [
        (Figure::Iops, expected.iops),
        (Figure::BytesPerSec, expected.bytes_per_sec),
    ];
    for (figure, promise) in rates {
        if let Some(e) = promise {
            checks.push(check_figure(figure, e, runs, device, t));
        }
    }
    if let Some(p95) = expected.p95_ns {
        let both = [Figure::ReadP95Ns, Figure::WriteP95Ns]
            .map(|f| check_figure(f, p95 as f64, runs, device, t));
        let any_judged = both.iter().any(|c| c.measured.is_some());
        checks.extend(
            both.into_iter()
                .filter(|c| !any_judged || c.measured.is_some()),
        );
    }
    checks
}

impl SpecSet {
    /// Whether anything is promised at all.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty() && self.devices.iter().all(|d| d.spec.is_empty())
    }

    /// The kinds of rule this set holds.
    pub fn rule_kinds(&self) -> Vec<RuleKind> {
        let any = |f: &dyn Fn(&Expectation) -> bool| self.devices.iter().any(|d| f(&d.expected()));
        let mut kinds = Vec::new();
        if self.host.iops.is_some() || any(&|e| e.iops.is_some()) {
            kinds.push(RuleKind::Iops);
        }
        if self.host.bytes_per_sec.is_some() || any(&|e| e.bytes_per_sec.is_some()) {
            kinds.push(RuleKind::Throughput);
        }
        if any(&|e| e.p95_ns.is_some()) {
            kinds.push(RuleKind::Latency);
        }
        kinds
    }
}

/// Which limit kept the host below what its volumes promise together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// The volumes: the short ones each stopped at a limit of their own.
    Volumes,
    /// The host: the short volumes are uniformly below their figures while the total is flat.
    Host,
    /// The load generator: a worker's CPU was saturated, so the run cannot tell what the
    /// storage could do (more CPUs, `--cpus`, or fewer volumes per host would).
    LoadGenerator,
}

impl Bottleneck {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::Volumes => "volumes",
            Bottleneck::Host => "host",
            Bottleneck::LoadGenerator => "load_generator",
        }
    }
}

/// One volume's figures in the bottleneck analysis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VolumeShare {
    /// What it promises.
    pub expected: f64,
    /// What it delivered.
    pub measured: f64,
}

/// Decides the bottleneck when the host total falls short of what its volumes promise.
///
/// `None` when the total reaches the volumes' sum within the tolerance. Otherwise the short
/// volumes are those below their own figure (within the tolerance), and the host is the
/// bottleneck when all of these hold, else the volumes are:
/// 1. at least two volumes are short (one short volume is its own limit);
/// 2. the volumes are uniformly below their figures: none that reached its figure got more
///    than the best of the short ones (within the tolerance). Under a shared limit only a
///    volume whose figure is below the common share reaches it; a volume at its figure above
///    the short ones shows they are held by limits of their own;
/// 3. the host's per-second total is flat: coefficient of variation at most [`FLAT_CV`]
///    (not judged with fewer than 3 seconds).
///
/// The shares themselves are not compared: a shared limit hands them out unevenly (on the
/// simulated host, 4 volumes behind a 5,000 IOPS cap got 1,239-1,292 IOPS each in one run and
/// 1,829, 1,819, 680 and 672 in another, by which CPU's worker drove them). So one run cannot
/// tell volumes that are each held below their figures, at a flat total, from a host limit;
/// `hostmax sweep` can (with a host limit the total stops growing as volumes are added).
pub fn bottleneck(
    volumes: &[VolumeShare],
    per_second_total: &[f64],
    tolerance: Tolerance,
) -> Option<Bottleneck> {
    let promised: f64 = volumes.iter().map(|v| v.expected).sum();
    let total: f64 = volumes.iter().map(|v| v.measured).sum();
    if volumes.is_empty() || tolerance.reaches(total, promised) {
        return None;
    }
    let (short, met): (Vec<&VolumeShare>, Vec<&VolumeShare>) = volumes
        .iter()
        .partition(|v| !tolerance.reaches(v.measured, v.expected));
    if short.len() < 2 {
        return Some(Bottleneck::Volumes);
    }
    let best_short = short.iter().map(|v| v.measured).fold(0.0, f64::max);
    let uniform = met
        .iter()
        .all(|v| v.measured <= best_short * (1.0 + tolerance.fraction()));
    let flat = per_second_total.len() < 3 || coefficient_of_variation(per_second_total) <= FLAT_CV;
    if uniform && flat {
        Some(Bottleneck::Host)
    } else {
        Some(Bottleneck::Volumes)
    }
}

/// Standard deviation over mean; 0 for nothing or a zero mean.
pub fn coefficient_of_variation(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    var.sqrt() / mean
}

/// One device's verdict. A figure is `null` when no rule or no qualifying run covers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceVerdict {
    /// The device.
    pub path: String,
    /// The name the user gave it, when another (`devices[].given`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<String>,
    /// Every judged figure passed (true when nothing was judged).
    pub pass: bool,
    /// Where its rules came from; empty when it has none.
    pub spec: String,
    /// Provisioned size the per-GB rules were applied to, bytes; `null` when every rule is flat.
    pub size_bytes: Option<u64>,
    /// IOPS promised.
    pub expected_iops: Option<f64>,
    /// IOPS measured on the run that judged them.
    pub measured_iops: Option<f64>,
    /// Bytes per second promised.
    pub expected_bytes_per_sec: Option<f64>,
    /// Bytes per second measured.
    pub measured_bytes_per_sec: Option<f64>,
    /// p95 latency promised (at most), ns: reads and writes must each keep it.
    pub expected_p95_ns: Option<u64>,
    /// The reads' p95 latency measured, ns (`null` when the latency run did no reads).
    pub measured_read_p95_ns: Option<u64>,
    /// The writes' p95 latency measured, ns (`null` when the latency run did no writes).
    pub measured_write_p95_ns: Option<u64>,
    /// IOPS the run's own `--rate-iops` allowed, when that is below the promise: the volume is
    /// judged against this cap (it cannot show more), and reaching it is "capped", not a
    /// failed promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_iops: Option<f64>,
    /// Bytes per second `--rate-iops` allowed (cap x block size), when below the promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_bytes_per_sec: Option<f64>,
    /// Taken out of a judged run after a failed I/O, this many seconds into its window
    /// (`devices[].stopped_at_secs`): a volume that failed under load has not kept its
    /// promise, whatever its rate over the time it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_secs: Option<f64>,
}

/// The host's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostVerdict {
    /// Every judged host figure passed (true when the host promises nothing).
    pub pass: bool,
    /// IOPS the host promises (`--expect-host-iops`).
    pub expected_iops: Option<f64>,
    /// The host's total IOPS on the run that judged IOPS.
    pub measured_iops: Option<f64>,
    /// Bytes per second the host promises.
    pub expected_bytes_per_sec: Option<f64>,
    /// The host's total bytes per second on the run that judged throughput.
    pub measured_bytes_per_sec: Option<f64>,
    /// What the volumes promise together, IOPS (when every judged volume has an IOPS rule).
    pub volumes_iops: Option<f64>,
    /// What the volumes promise together, bytes per second.
    pub volumes_bytes_per_sec: Option<f64>,
    /// What kept the host below the volumes' sum (IOPS if judged, else throughput); `null`
    /// when it reached it, or reached what `--rate-iops` allowed.
    pub bottleneck: Option<Bottleneck>,
    /// IOPS `--rate-iops` allowed the host (cap x devices), when below its promise or below
    /// what its volumes promise together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_iops: Option<f64>,
    /// Bytes per second `--rate-iops` allowed the host, when below its promise or the
    /// volumes' sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_bytes_per_sec: Option<f64>,
}

/// The verdict over one or more runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The host and every device passed.
    pub pass: bool,
    /// The tolerance used, as a fraction (0.05 is 5%).
    pub tolerance: f64,
    /// The host.
    pub host: HostVerdict,
    /// Each device, in report order.
    pub devices: Vec<DeviceVerdict>,
    /// Rules no run could judge, with what would judge them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<String>,
    /// How often each volume and the host kept the promise, second by second
    /// (`--consistency`); its failures fail the verdict too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<crate::consistency::ConsistencyVerdict>,
}

impl Verdict {
    /// Paths (and "host") that failed, with the figure: "/dev/sdc IOPS".
    pub fn failures(&self) -> Vec<String> {
        let t = Tolerance::new(self.tolerance).unwrap_or_default();
        let mut out = Vec::new();
        for d in &self.devices {
            for (name, ok) in device_checks(d, t) {
                if !ok {
                    out.push(format!("{} {name}", d.path));
                }
            }
        }
        for (name, ok) in host_checks(&self.host, t) {
            if !ok {
                out.push(format!("host {name}"));
            }
        }
        if let Some(c) = &self.consistency {
            out.extend(c.failures());
        }
        out
    }
}

/// The figure a measurement must reach: the promise, or what `--rate-iops` allowed when that
/// is lower (a capped run cannot show more).
pub fn figure_to_reach(expected: f64, rate_cap: Option<f64>) -> f64 {
    rate_cap.map_or(expected, |cap| cap.min(expected))
}

/// What `--rate-iops` allows when it keeps a run from showing `expected` (the cap is below it
/// beyond the tolerance), else `None`.
fn rate_cap_below(cap: Option<f64>, expected: Option<f64>, t: Tolerance) -> Option<f64> {
    match (cap, expected) {
        (Some(cap), Some(e)) if !t.reaches(cap, e) => Some(cap),
        _ => None,
    }
}

/// (figure name, passed) of each judged figure of a device.
fn device_checks(d: &DeviceVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
    let mut out = Vec::new();
    if d.stopped_at_secs.is_some() {
        out.push(("taken out after a failed I/O", false));
    }
    if let (Some(e), Some(m)) = (d.expected_iops, d.measured_iops) {
        out.push(("IOPS", keeps(Figure::Iops, e, m, d.rate_cap_iops, t)));
    }
    if let (Some(e), Some(m)) = (d.expected_bytes_per_sec, d.measured_bytes_per_sec) {
        let cap = d.rate_cap_bytes_per_sec;
        out.push(("MB/s", keeps(Figure::BytesPerSec, e, m, cap, t)));
    }
    let p95 = [
        ("read p95", Figure::ReadP95Ns, d.measured_read_p95_ns),
        ("write p95", Figure::WriteP95Ns, d.measured_write_p95_ns),
    ];
    for (name, figure, measured) in p95 {
        if let (Some(e), Some(m)) = (d.expected_p95_ns, measured) {
            out.push((name, keeps(figure, e as f64, m as f64, None, t)));
        }
    }
    out
}

fn host_checks(h: &HostVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
    let mut out = Vec::new();
    if let (Some(e), Some(m)) = (h.expected_iops, h.measured_iops) {
        out.push(("IOPS", keeps(Figure::Iops, e, m, h.rate_cap_iops, t)));
    }
    if let (Some(e), Some(m)) = (h.expected_bytes_per_sec, h.measured_bytes_per_sec) {
        let cap = h.rate_cap_bytes_per_sec;
        out.push(("MB/s", keeps(Figure::BytesPerSec, e, m, cap, t)));
    }
    out
}

/// The per-device IOPS cap a run was given (`--rate-iops`).
fn rate_cap_iops(run: &HostReport) -> Option<f64> {
    run.workload.rate_iops.map(|c| c as f64)
}

/// The per-device throughput cap `--rate-iops` sets: cap x block size.
fn rate_cap_bytes_per_sec(run: &HostReport) -> Option<f64> {
    rate_cap_iops(run).map(|c| c * f64::from(run.workload.block_size))
}

/// Judges `reports` (one run, or the phases of `hostmax verify`) against `specs`.
///
/// Devices are listed as the first report lists them; a device with no entry in `specs`
/// passes unjudged. A rule no report qualifies for is listed in `not_judged` and does not
/// fail the verdict.
pub fn judge(specs: &SpecSet, reports: &[&HostReport]) -> Verdict {
    let t = specs.tolerance;
    let runs: Vec<JudgedRun> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| JudgedRun::from_report(format!("run {}", i + 1), r))
        .collect();
    // The bottleneck is read off one run: of those that judge the figure, the one whose host
    // total is lowest (the one the host's check compares).
    let worst_run = |kind: RuleKind, figure: fn(&Figures) -> f64| {
        reports
            .iter()
            .copied()
            .filter(|r| kind.judged_by(&r.workload))
            .min_by(|a, b| figure(&a.host).total_cmp(&figure(&b.host)))
    };
    let iops_run = worst_run(RuleKind::Iops, |f| f.iops);
    let bw_run = worst_run(RuleKind::Throughput, |f| f.bytes_per_sec);

    let paths: Vec<String> = reports
        .first()
        .map(|r| r.devices.iter().map(|d| d.path.clone()).collect())
        .unwrap_or_default();
    let given = |path: &String| {
        reports
            .iter()
            .flat_map(|r| &r.devices)
            .find(|d| &d.path == path)
            .and_then(|d| d.given.clone())
    };
    let mut devices = Vec::new();
    let mut not_judged = Vec::new();
    let mut note = |checks: &[FigureCheck], whose: &str| {
        for c in checks.iter().filter(|c| c.measured.is_none()) {
            let what = match c.figure.rule() {
                RuleKind::Iops => "IOPS",
                RuleKind::Throughput => "MB/s",
                RuleKind::Latency => "p95 latency",
            };
            let line = format!("{whose} {what}: needs {}", c.figure.rule().needs());
            if !not_judged.contains(&line) {
                not_judged.push(line);
            }
        }
    };
    for path in &paths {
        let Some(exp) = specs.devices.iter().find(|d| &d.path == path) else {
            // Nothing promised: nothing judged, nothing failed.
            devices.push(DeviceVerdict {
                path: path.clone(),
                given: given(path),
                pass: true,
                ..DeviceVerdict::default()
            });
            continue;
        };
        let e = exp.expected();
        let checks = check_promise(&e, &runs, Some(path), t);
        note(&checks, "volume");
        let check = |f: Figure| checks.iter().find(|c| c.figure == f);
        let measured = |f: Figure| check(f).and_then(|c| c.measured);
        let mut v = DeviceVerdict {
            path: path.clone(),
            given: given(path),
            pass: true,
            spec: exp.label.clone(),
            size_bytes: exp.spec.scales_with_size().then_some(exp.size_bytes),
            expected_iops: e.iops,
            measured_iops: measured(Figure::Iops),
            expected_bytes_per_sec: e.bytes_per_sec,
            measured_bytes_per_sec: measured(Figure::BytesPerSec),
            expected_p95_ns: e.p95_ns,
            measured_read_p95_ns: measured(Figure::ReadP95Ns).map(|n| n as u64),
            measured_write_p95_ns: measured(Figure::WriteP95Ns).map(|n| n as u64),
            rate_cap_iops: check(Figure::Iops).and_then(|c| c.rate_cap),
            rate_cap_bytes_per_sec: check(Figure::BytesPerSec).and_then(|c| c.rate_cap),
            stopped_at_secs: reports
                .iter()
                .flat_map(|r| &r.devices)
                .find(|d| &d.path == path && d.failed)
                .map(|d| d.stopped_at_secs.unwrap_or(0.0)),
        };
        v.pass = device_checks(&v, t).iter().all(|(_, ok)| *ok);
        devices.push(v);
    }
    let host_promise_checks = check_promise(&specs.host.expected(), &runs, None, t);
    note(&host_promise_checks, "host");

    // What the volumes promise together: only when every device has that kind of rule
    // (a sum over some of them says nothing about the host).
    let all_have = |f: fn(&Expectation) -> Option<f64>| -> Option<f64> {
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
                    .and_then(|d| f(&d.expected()))
            })
            .sum()
    };
    let volumes_iops = all_have(|e| e.iops);
    let volumes_bw = all_have(|e| e.bytes_per_sec);

    // A volume held by the run's own --rate-iops can show no more than the cap: the
    // bottleneck analysis weighs each volume against the lower of its promise and the cap.
    let shares = |run: &HostReport,
                  f: fn(&Expectation) -> Option<f64>,
                  m: fn(&Figures) -> f64,
                  cap: Option<f64>| {
        run.devices
            .iter()
            .filter_map(|d| {
                let exp = specs.devices.iter().find(|x| x.path == d.path)?;
                Some(VolumeShare {
                    expected: figure_to_reach(f(&exp.expected())?, cap),
                    measured: m(&d.figures),
                })
            })
            .collect::<Vec<_>>()
    };
    let bottleneck_found = match (iops_run, volumes_iops, bw_run, volumes_bw) {
        (Some(run), Some(_), _, _) => {
            let per_second: Vec<f64> = run.time_series.iter().map(|p| p.iops).collect();
            let cap = rate_cap_iops(run);
            bottleneck(&shares(run, |e| e.iops, |f| f.iops, cap), &per_second, t)
        }
        (_, _, Some(run), Some(_)) => {
            let per_second: Vec<f64> = run.time_series.iter().map(|p| p.bytes_per_sec).collect();
            let cap = rate_cap_bytes_per_sec(run);
            bottleneck(
                &shares(run, |e| e.bytes_per_sec, |f| f.bytes_per_sec, cap),
                &per_second,
                t,
            )
        }
        _ => None,
    };
    // Short of the volumes' sum on a run whose own CPUs were saturated: what limited it was
    // the load generator, whatever the shape of the shortfall.
    let judging_run = iops_run.filter(|_| volumes_iops.is_some()).or(bw_run);
    let bottleneck_found = match bottleneck_found {
        Some(_)
            if judging_run
                .and_then(|r| r.load_generator.as_ref())
                .is_some_and(|g| g.saturated) =>
        {
            Some(Bottleneck::LoadGenerator)
        }
        found => found,
    };
    // The host's cap from --rate-iops: per device times devices, when it is below the host's
    // promise or the volumes' sum (else it held nothing back).
    let host_cap = |run: Option<&HostReport>,
                    per_device: fn(&HostReport) -> Option<f64>,
                    promises: [Option<f64>; 2]| {
        let run = run?;
        let cap = per_device(run)? * run.devices.len() as f64;
        promises
            .into_iter()
            .flatten()
            .any(|p| !t.reaches(cap, p))
            .then_some(cap)
    };
    let mut host = HostVerdict {
        pass: true,
        expected_iops: specs.host.iops,
        measured_iops: iops_run.map(|r| r.host.iops),
        expected_bytes_per_sec: specs.host.bytes_per_sec,
        measured_bytes_per_sec: bw_run.map(|r| r.host.bytes_per_sec),
        volumes_iops,
        volumes_bytes_per_sec: volumes_bw,
        bottleneck: bottleneck_found,
        rate_cap_iops: host_cap(iops_run, rate_cap_iops, [specs.host.iops, volumes_iops]),
        rate_cap_bytes_per_sec: host_cap(
            bw_run,
            rate_cap_bytes_per_sec,
            [specs.host.bytes_per_sec, volumes_bw],
        ),
    };
    host.pass = host_checks(&host, t).iter().all(|(_, ok)| *ok);
    Verdict {
        pass: host.pass && devices.iter().all(|d| d.pass),
        tolerance: t.fraction(),
        host,
        devices,
        not_judged,
        consistency: None,
    }
}

/// The JSON root of `hostmax verify`: the verdict over every phase, and each phase's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The host that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Run id and the window from the first phase's start to the last one's end, and the rest
    /// of [`crate::Provenance`] (each phase carries its own as well).
    #[serde(flatten)]
    pub provenance: crate::Provenance,
    /// The verdict over all phases.
    pub verdict: Verdict,
    /// One report per phase, in the order they ran.
    pub phases: Vec<HostReport>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DeviceReport, OpSummary, SCHEMA_VERSION};
    use crate::series::{OpSecond, OpSeconds, SecondPoint};
    use crate::spec::Scaled;
    use hostmax_engine::{IoPattern, PerOp, Workload};

    fn share(expected: f64, measured: f64) -> VolumeShare {
        VolumeShare { expected, measured }
    }

    const T: Tolerance = Tolerance::DEFAULT;

    #[test]
    fn no_bottleneck_when_the_host_delivers_the_volumes_sum() {
        let v = [share(2000.0, 1990.0), share(2000.0, 1985.0)];
        assert_eq!(bottleneck(&v, &[3975.0; 5], T), None);
        // One volume short but the sum still within 5%: nothing to explain.
        let v = [share(2000.0, 1850.0), share(2000.0, 2000.0)];
        assert_eq!(bottleneck(&v, &[], T), None);
    }

    #[test]
    fn a_host_cap_shared_evenly_is_the_host() {
        // 4 x 2000 behind 5000: each gets about 1250.
        let v = [1240.0, 1265.0, 1251.0, 1244.0].map(|m| share(2000.0, m));
        assert_eq!(
            bottleneck(&v, &[5001.0, 4998.0, 5003.0], T),
            Some(Bottleneck::Host)
        );
        // As measured on the simulated host: shares uneven by CPU.
        let v = [1829.5, 672.5, 1819.0, 680.0].map(|m| share(2000.0, m));
        assert_eq!(bottleneck(&v, &[5000.0; 2], T), Some(Bottleneck::Host));
        // Different figures, the small one met, the rest sharing what is left equally
        // (the demo's shape): still the host.
        let v = [
            share(1000.0, 1000.0),
            share(3000.0, 2330.0),
            share(4000.0, 2340.0),
            share(5000.0, 2330.0),
        ];
        assert_eq!(bottleneck(&v, &[8000.0; 4], T), Some(Bottleneck::Host));
        // Proportional shares (equal ratios, unequal IOPS) are a shared limit too.
        let v = [share(1000.0, 500.0), share(4000.0, 2010.0)];
        assert_eq!(bottleneck(&v, &[], T), Some(Bottleneck::Host));
    }

    #[test]
    fn volumes_each_at_their_own_limit_are_the_volumes() {
        // One volume throttled below its figure.
        let v = [
            share(2000.0, 1000.0),
            share(2000.0, 1995.0),
            share(2000.0, 1990.0),
        ];
        assert_eq!(bottleneck(&v, &[4985.0; 3], T), Some(Bottleneck::Volumes));
        // Several short, each at a different level, one met above the short ones' best.
        let v = [1000.0, 1500.0, 1900.0, 700.0].map(|m| share(2000.0, m));
        assert_eq!(bottleneck(&v, &[5100.0; 3], T), Some(Bottleneck::Volumes));
        // The documented limit of one run: every volume short, at a flat total, reads as the
        // host even if each has a limit of its own (the sweep tells them apart).
        let v = [400.0, 1500.0, 1800.0].map(|m| share(2000.0, m));
        assert_eq!(bottleneck(&v, &[3700.0; 3], T), Some(Bottleneck::Host));
        // Two short at the same level, but a met volume got twice theirs: not a shared limit.
        let v = [
            share(2000.0, 1000.0),
            share(2000.0, 1010.0),
            share(2000.0, 2000.0),
        ];
        assert_eq!(bottleneck(&v, &[4010.0; 3], T), Some(Bottleneck::Volumes));
        // Uniform shares but a total swinging from second to second: not a steady ceiling.
        let v = [1250.0, 1250.0].map(|m| share(2000.0, m));
        assert_eq!(
            bottleneck(&v, &[1500.0, 3500.0, 2000.0, 3000.0], T),
            Some(Bottleneck::Volumes)
        );
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
                },
                _ => OpSummary::default(),
            }),
            ..Default::default()
        }
    }

    fn report(bs: u32, iodepth: u32, devices: &[(&str, f64)], seconds: &[u64]) -> HostReport {
        let w = Workload {
            pattern: IoPattern::RandRead,
            block_size: bs,
            iodepth,
            ..Workload::default()
        };
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
        // The case: volumes promising 2,500 IOPS, run with --rate-iops 2000.
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
        assert!(v.pass, "{:?}", v.failures());
        assert!(v.devices.iter().all(|d| d.rate_cap_iops == Some(2000.0)));
        assert_eq!(v.host.rate_cap_iops, Some(6000.0));
        assert_eq!(v.host.bottleneck, None, "the cap, not the host, held them");
        // Short of the cap itself is still a failure, of that volume only.
        run.devices[1].figures.iops = 1000.0;
        let v = judge(&specs, &[&run]);
        assert_eq!(v.failures(), vec!["/dev/b IOPS".to_string()]);
        assert_eq!(v.host.bottleneck, Some(Bottleneck::Volumes));
        // A cap above the promise holds nothing back: judged as usual.
        run.workload.rate_iops = Some(5000);
        let v = judge(&specs, &[&run]);
        assert!(v.devices.iter().all(|d| d.rate_cap_iops.is_none()));
        assert!(v.host.rate_cap_iops.is_none());
        assert!(!v.pass);
    }

    #[test]
    fn a_volume_taken_out_after_a_failed_io_fails_whatever_its_rate() {
        let specs = SpecSet {
            devices: flat(2000.0, "flat", &["/dev/a", "/dev/b"]),
            ..Default::default()
        };
        let mut run = report(4096, 32, &[("/dev/a", 2000.0), ("/dev/b", 2000.0)], &[4000]);
        assert!(judge(&specs, &[&run]).pass);
        // Its rate over its own 1.5 s is the promise, but it stopped there.
        run.devices[1].failed = true;
        run.devices[1].stopped_at_secs = Some(1.5);
        let v = judge(&specs, &[&run]);
        assert!(!v.pass);
        assert_eq!(v.devices[1].stopped_at_secs, Some(1.5));
        assert_eq!(
            v.failures(),
            vec!["/dev/b taken out after a failed I/O".to_string()]
        );
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
        assert!(!v.pass);
        assert!(v.devices[0].pass && !v.devices[1].pass && v.devices[2].pass);
        assert_eq!(v.failures(), vec!["/dev/b IOPS".to_string()]);
        assert!(v.host.pass, "no host figure given");
        assert_eq!(v.host.volumes_iops, Some(6000.0));
        assert_eq!(v.host.bottleneck, Some(Bottleneck::Volumes));
        assert!(v.not_judged.is_empty());

        // The same run at 64k judges nothing and says what would.
        let big = report(64 << 10, 32, &[("/dev/a", 1.0)], &[]);
        let v = judge(&specs, &[&big]);
        assert!(v.pass);
        assert_eq!(v.devices[0].measured_iops, None);
        assert!(
            v.not_judged[0].contains("4 KiB blocks or smaller"),
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
        };
        run.load_generator = Some(crate::LoadGenerator {
            saturated: false,
            workers: vec![worker(false)],
        });
        assert_eq!(
            judge(&specs, &[&run]).host.bottleneck,
            Some(Bottleneck::Host)
        );
        run.load_generator = Some(crate::LoadGenerator {
            saturated: true,
            workers: vec![worker(true)],
        });
        let v = judge(&specs, &[&run]);
        assert_eq!(v.host.bottleneck, Some(Bottleneck::LoadGenerator));
        assert_eq!(
            serde_json::to_value(&v).unwrap()["host"]["bottleneck"],
            "load_generator"
        );
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
        assert_eq!(v.host.measured_iops, Some(2510.0));
        assert!(!v.host.pass, "2510 of 5000 IOPS");
        assert_eq!(v.host.bottleneck, Some(Bottleneck::Host));
        let d = &v.devices[0];
        assert_eq!(d.measured_bytes_per_sec, Some(100.0 * 1048576.0));
        // p95 0.6 ms against 0.5 ms (+10%): fails; IOPS 1250 of 2000: fails; MB/s passes.
        assert_eq!(d.measured_read_p95_ns, Some(600_000));
        assert_eq!(d.measured_write_p95_ns, None, "a read-only run");
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
    }

    fn shape(block_size: u32, iodepth: u32) -> RunShape {
        RunShape {
            block_size,
            iodepth,
            record_latency: true,
        }
    }

    #[test]
    fn which_block_sizes_and_depths_judge_which_rules() {
        // IOPS: 4 KiB blocks and smaller, more than one I/O in flight.
        assert!(RuleKind::Iops.judges(shape(4096, 32)));
        assert!(RuleKind::Iops.judges(shape(512, 2)));
        assert!(
            !RuleKind::Iops.judges(shape(8192, 32)),
            "8k can hit the MB/s cap first"
        );
        assert!(
            !RuleKind::Iops.judges(shape(4096, 1)),
            "depth 1 shows latency"
        );
        // Throughput: 256 KiB blocks and larger, more than one I/O in flight.
        assert!(RuleKind::Throughput.judges(shape(256 << 10, 32)));
        assert!(!RuleKind::Throughput.judges(shape(128 << 10, 32)));
        assert!(!RuleKind::Throughput.judges(shape(1 << 20, 1)));
        // Latency: 4 KiB blocks and smaller, one at a time, timed.
        assert!(RuleKind::Latency.judges(shape(4096, 1)));
        assert!(RuleKind::Latency.judges(shape(512, 1)));
        assert!(!RuleKind::Latency.judges(shape(8192, 1)));
        assert!(!RuleKind::Latency.judges(shape(4096, 2)));
        let untimed = RunShape {
            record_latency: false,
            ..shape(4096, 1)
        };
        assert!(!RuleKind::Latency.judges(untimed));
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
        let mixed = MeasuredFigures {
            iops: 2000.0,
            bytes_per_sec: 2000.0 * 4096.0,
            read_p95_ns: Some(400_000),
            write_p95_ns: Some(1_500_000),
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
        let reads = MeasuredFigures {
            write_p95_ns: None,
            ..mixed
        };
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
        assert_eq!(v.devices[0].measured_read_p95_ns, Some(400_000));
        assert_eq!(v.devices[0].measured_write_p95_ns, Some(1_500_000));
        assert_eq!(v.failures(), vec!["/dev/a write p95".to_string()]);
    }
}
