//! Judging runs against specs: a [`SpecSet`] (each device's [`DeviceExpectation`], the
//! [`HostSpec`], the [`Tolerance`]) and one or more [`HostReport`]s give a [`Verdict`]: per
//! device and for the host, measured against expected, pass or fail, and, when the host falls
//! short of what its volumes promise together, the [`Bottleneck`].
//!
//! Which run judges which rule (the providers' own conditions):
//! - IOPS on runs of 4 KiB blocks or smaller: the published IOPS are "at 4K", and a larger
//!   block can meet the throughput cap first (a 50 GB OCI volume: 3,000 x 8 KiB = 24.6 MB/s,
//!   above its 24 MB/s);
//! - throughput on runs of 256 KiB blocks and larger ("256k or larger block sizes should be
//!   used" to show throughput limits);
//! - p95 latency on 4 KiB runs at queue depth 1: at depth N a volume capped at C IOPS answers
//!   in about N/C seconds (Little's law), so a sub-millisecond promise means one I/O at a time.
//!
//! When several reports qualify for a rule the first one judges it.

use serde::{Deserialize, Serialize};

use crate::report::{DeviceReport, Figures, HostReport, WorkloadSummary};
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
    /// IOPS (4 KiB runs).
    Iops,
    /// Throughput (256 KiB+ runs).
    Throughput,
    /// p95 latency (4 KiB runs at depth 1).
    Latency,
}

impl RuleKind {
    /// Whether a run of `workload` judges this kind of rule.
    pub fn judged_by(self, workload: &WorkloadSummary) -> bool {
        match self {
            RuleKind::Iops => workload.block_size <= IOPS_BLOCK_MAX,
            RuleKind::Throughput => workload.block_size >= THROUGHPUT_BLOCK_MIN,
            RuleKind::Latency => {
                workload.block_size <= IOPS_BLOCK_MAX
                    && workload.iodepth == 1
                    && workload.record_latency
            }
        }
    }

    /// What a run needs to judge this kind, for people.
    pub fn needs(self) -> &'static str {
        match self {
            RuleKind::Iops => "a run of 4k blocks (--bs 4k)",
            RuleKind::Throughput => "a run of 256k blocks or larger (--bs 1m)",
            RuleKind::Latency => "a 4k run at queue depth 1 (--bs 4k --iodepth 1)",
        }
    }
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceVerdict {
    /// The device.
    pub path: String,
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
    /// p95 latency promised (at most), ns.
    pub expected_p95_ns: Option<u64>,
    /// p95 latency measured (the worse of reads and writes), ns.
    pub measured_p95_ns: Option<u64>,
    /// IOPS the run's own `--rate-iops` allowed, when that is below the promise: the volume is
    /// judged against this cap (it cannot show more), and reaching it is "capped", not a
    /// failed promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_iops: Option<f64>,
    /// Bytes per second `--rate-iops` allowed (cap x block size), when below the promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_bytes_per_sec: Option<f64>,
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
    if let (Some(e), Some(m)) = (d.expected_iops, d.measured_iops) {
        out.push(("IOPS", t.reaches(m, figure_to_reach(e, d.rate_cap_iops))));
    }
    if let (Some(e), Some(m)) = (d.expected_bytes_per_sec, d.measured_bytes_per_sec) {
        let to_reach = figure_to_reach(e, d.rate_cap_bytes_per_sec);
        out.push(("MB/s", t.reaches(m, to_reach)));
    }
    if let (Some(e), Some(m)) = (d.expected_p95_ns, d.measured_p95_ns) {
        out.push(("p95", t.stays_under(m as f64, e as f64)));
    }
    out
}

fn host_checks(h: &HostVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
    let mut out = Vec::new();
    if let (Some(e), Some(m)) = (h.expected_iops, h.measured_iops) {
        out.push(("IOPS", t.reaches(m, figure_to_reach(e, h.rate_cap_iops))));
    }
    if let (Some(e), Some(m)) = (h.expected_bytes_per_sec, h.measured_bytes_per_sec) {
        let to_reach = figure_to_reach(e, h.rate_cap_bytes_per_sec);
        out.push(("MB/s", t.reaches(m, to_reach)));
    }
    out
}

/// The worse p95 of the kinds of I/O a device did, ns.
fn p95_ns(f: &Figures) -> u64 {
    let mut worst = 0;
    if f.read.ios > 0 {
        worst = worst.max(f.read.latency_ns.p95);
    }
    if f.write.ios > 0 {
        worst = worst.max(f.write.latency_ns.p95);
    }
    worst
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
    let pick = |kind: RuleKind| {
        reports
            .iter()
            .copied()
            .find(|r| kind.judged_by(&r.workload))
    };
    let iops_run = pick(RuleKind::Iops);
    let bw_run = pick(RuleKind::Throughput);
    let lat_run = pick(RuleKind::Latency);
    let find = |run: Option<&HostReport>, path: &str| -> Option<Figures> {
        run.and_then(|r| r.devices.iter().find(|d| d.path == path))
            .map(|d: &DeviceReport| d.figures.clone())
    };

    let paths: Vec<String> = reports
        .first()
        .map(|r| r.devices.iter().map(|d| d.path.clone()).collect())
        .unwrap_or_default();
    let mut devices = Vec::new();
    let mut not_judged = Vec::new();
    let mut note = |kind: RuleKind, what: String| {
        let line = format!("{what}: needs {}", kind.needs());
        if !not_judged.contains(&line) {
            not_judged.push(line);
        }
    };
    for path in &paths {
        let Some(exp) = specs.devices.iter().find(|d| &d.path == path) else {
            devices.push(DeviceVerdict {
                path: path.clone(),
                pass: true,
                spec: String::new(),
                size_bytes: None,
                expected_iops: None,
                measured_iops: None,
                expected_bytes_per_sec: None,
                measured_bytes_per_sec: None,
                expected_p95_ns: None,
                measured_p95_ns: None,
                rate_cap_iops: None,
                rate_cap_bytes_per_sec: None,
            });
            continue;
        };
        let e = exp.expected();
        let iops = find(iops_run, path);
        let bw = find(bw_run, path);
        let lat = find(lat_run, path);
        if e.iops.is_some() && iops.is_none() {
            note(RuleKind::Iops, "volume IOPS".into());
        }
        if e.bytes_per_sec.is_some() && bw.is_none() {
            note(RuleKind::Throughput, "volume MB/s".into());
        }
        if e.p95_ns.is_some() && lat.is_none() {
            note(RuleKind::Latency, "volume p95 latency".into());
        }
        let mut v = DeviceVerdict {
            path: path.clone(),
            pass: true,
            spec: exp.label.clone(),
            size_bytes: exp.spec.scales_with_size().then_some(exp.size_bytes),
            expected_iops: e.iops,
            measured_iops: iops.as_ref().map(|f| f.iops),
            expected_bytes_per_sec: e.bytes_per_sec,
            measured_bytes_per_sec: bw.as_ref().map(|f| f.bytes_per_sec),
            expected_p95_ns: e.p95_ns,
            measured_p95_ns: lat.as_ref().map(p95_ns),
            rate_cap_iops: rate_cap_below(iops_run.and_then(rate_cap_iops), e.iops, t),
            rate_cap_bytes_per_sec: rate_cap_below(
                bw_run.and_then(rate_cap_bytes_per_sec),
                e.bytes_per_sec,
                t,
            ),
        };
        v.pass = device_checks(&v, t).iter().all(|(_, ok)| *ok);
        devices.push(v);
    }

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
    if specs.host.iops.is_some() && iops_run.is_none() {
        note(RuleKind::Iops, "host IOPS".into());
    }
    if specs.host.bytes_per_sec.is_some() && bw_run.is_none() {
        note(RuleKind::Throughput, "host MB/s".into());
    }

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
    use crate::report::{OpSummary, SCHEMA_VERSION};
    use crate::series::SecondPoint;
    use crate::spec::Scaled;
    use hostmax_engine::{IoPattern, Workload};

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
            read: OpSummary {
                ios: iops as u64,
                iops,
                bytes: bytes_per_sec as u64,
                bytes_per_sec,
                latency_ns: crate::LatencySummary {
                    p95,
                    ..Default::default()
                },
            },
            write: OpSummary::default(),
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
                    read_iops: iops as f64,
                    write_iops: 0.0,
                    bytes_per_sec: (iops * bs as u64) as f64,
                    errors: 0,
                    read_p50_ns: 0,
                    read_p99_ns: 0,
                    write_p50_ns: 0,
                    write_p99_ns: 0,
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
        assert!(v.not_judged[0].contains("--bs 4k"), "{:?}", v.not_judged);
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
        assert_eq!(d.measured_p95_ns, Some(600_000));
        assert_eq!(
            v.failures(),
            vec![
                "/dev/a IOPS",
                "/dev/a p95",
                "/dev/b IOPS",
                "/dev/b p95",
                "host IOPS"
            ]
        );
        // The 4k depth-32 run does not judge latency: only the depth-1 run does.
        let v = judge(&specs, &[&small, &large]);
        assert!(v.not_judged.iter().any(|n| n.contains("--iodepth 1")));
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
}
