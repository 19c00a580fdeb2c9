//! What a verdict says: each promised [`Figure`] against the runs that can show it
//! ([`FigureCheck`]), each device's and the host's verdict, the rules no run could judge
//! ([`NotJudged`]), and [`Verdict`], which a report carries. Nothing here reads a report.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::bottleneck::Bottleneck;
use super::promise::RuleKind;
use crate::consistency::ConsistencyVerdict;
use crate::spec::Tolerance;

/// A figure a promise names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
        self.rule().promise().ceiling
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

/// One promised figure against the runs that can show it (the suite's JSON `spec` lists them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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

/// One device's verdict. A figure is `null` when no rule or no qualifying run covers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// IOPS the run's own cap (the workload's `rate_iops`) allowed, when that is below the promise: the volume is
    /// judged against this cap (it cannot show more), and reaching it is "capped", not a
    /// failed promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_iops: Option<f64>,
    /// Bytes per second the `rate_iops` cap allowed (cap x block size), when below the promise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_bytes_per_sec: Option<f64>,
    /// Taken out of a judged run after a failed I/O, this many seconds into its window
    /// (`devices[].stopped_at_secs`): a volume that failed under load has not kept its
    /// promise, whatever its rate over the time it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_secs: Option<f64>,
}

/// The host's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostVerdict {
    /// Every judged host figure passed (true when the host promises nothing).
    pub pass: bool,
    /// IOPS the host promises ([`HostSpec::iops`](crate::spec::HostSpec::iops)).
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
    /// when it reached it, or reached what the workload's `rate_iops` allowed.
    pub bottleneck: Option<Bottleneck>,
    /// IOPS the workload's `rate_iops` allowed the host (cap x devices), when below its promise or below
    /// what its volumes promise together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_iops: Option<f64>,
    /// Bytes per second the workload's `rate_iops` allowed the host, when below its promise or the
    /// volumes' sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cap_bytes_per_sec: Option<f64>,
}

/// The verdict over one or more runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    pub not_judged: Vec<NotJudged>,
    /// How often each volume and the host kept the promise, second by second
    /// (when a [`Consistency`](crate::spec::Consistency) rule is given); its failures fail the verdict too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<ConsistencyVerdict>,
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

/// The figure a measurement must reach: the promise, or what the workload's `rate_iops` allowed when that
/// is lower (a capped run cannot show more).
pub fn figure_to_reach(expected: f64, rate_cap: Option<f64>) -> f64 {
    rate_cap.map_or(expected, |cap| cap.min(expected))
}

/// (figure name, passed) of each judged figure of a device.
pub(super) fn device_checks(d: &DeviceVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
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

pub(super) fn host_checks(h: &HostVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
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

/// Whose promise a [`NotJudged`] entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promiser {
    /// A volume's (one entry however many volumes promise it).
    Volume,
    /// The host's.
    Host,
}

impl Promiser {
    /// "volume", "host".
    pub fn name(self) -> &'static str {
        match self {
            Promiser::Volume => "volume",
            Promiser::Host => "host",
        }
    }
}

/// A kind of promise no run could judge. Its JSON is its text, "volume MB/s: needs a run of
/// 256 KiB blocks or larger at a queue depth above 1"; a program reads [`NotJudged::kind`]
/// (and its [`RuleKind::promise`] row) instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotJudged {
    /// Whose promise.
    pub promiser: Promiser,
    /// Which kind.
    pub kind: RuleKind,
}

impl NotJudged {
    /// `promiser`'s promise of `kind`, not judged.
    pub fn new(promiser: Promiser, kind: RuleKind) -> NotJudged {
        NotJudged { promiser, kind }
    }

    /// Every entry there can be.
    fn all() -> impl Iterator<Item = NotJudged> {
        [Promiser::Volume, Promiser::Host]
            .into_iter()
            .flat_map(|promiser| RuleKind::ALL.map(|kind| NotJudged { promiser, kind }))
    }
}

impl fmt::Display for NotJudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: needs {}",
            self.promiser.name(),
            self.kind.name(),
            self.kind.promise().needs
        )
    }
}

impl Serialize for NotJudged {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NotJudged {
    /// The entry whose text this is, exactly.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        NotJudged::all()
            .find(|n| n.to_string() == text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown not_judged entry: {text}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_judged_is_written_as_its_text_and_read_back() {
        let entry = NotJudged {
            promiser: Promiser::Volume,
            kind: RuleKind::Throughput,
        };
        let json = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            json,
            "\"volume MB/s: needs a run of 256 KiB blocks or larger at a queue depth above 1\""
        );
        assert_eq!(serde_json::from_str::<NotJudged>(&json).unwrap(), entry);
        assert!(serde_json::from_str::<NotJudged>("\"volume MB/s: soon\"").is_err());
    }
}
