//! What a verdict says: each promised [`Figure`] against the runs that can show it
//! ([`FigureCheck`]), each device's and the host's verdict, the rules no run could judge
//! ([`NotJudged`]), and [`Verdict`], which a report carries. Nothing here reads a report.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::bottleneck::Bottleneck;
use super::promise::{
    Figure, FigureRow, PerFigure, PerKind, RuleKind, Unit, FIGURES, PROMISE_KINDS,
};
use crate::burst::Burst;
use crate::consistency::ConsistencyVerdict;
use crate::spec::Tolerance;

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

/// A verdict's figures, per kind of promise ([`PROMISE_KINDS`]) and per figure
/// ([`FIGURES`]). In JSON each is a field of the verdict that holds it: `expected_<key>`,
/// `measured_<figure>`, `volumes_<key>` (the host's), `rate_cap_<key>` (only when set), the
/// host's for the kinds a host can promise only.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct VerdictFigures {
    /// What each kind promises (`null` when nothing).
    pub expected: PerKind<Option<f64>>,
    /// Each figure measured on the run that judged it (the worst of them).
    pub measured: PerFigure<Option<f64>>,
    /// What the volumes promise together (the host's verdict: when every judged volume has
    /// that kind of rule); `None` in a device's verdict.
    pub volumes: Option<PerKind<Option<f64>>>,
    /// What the run's own `rate_iops` allowed, when that is below the promise: the figure is
    /// judged against this cap (it cannot show more), and reaching it is "capped", not a
    /// failed promise.
    pub rate_cap: PerKind<Option<f64>>,
}

impl VerdictFigures {
    /// Empty figures of a device (`volumes: None`) or of the host.
    pub fn new(host: bool) -> VerdictFigures {
        VerdictFigures {
            volumes: host.then(PerKind::default),
            ..VerdictFigures::default()
        }
    }

    /// Whether `kind`'s fields are written: every kind for a device, the kinds a host can
    /// promise for the host.
    fn writes(&self, kind: RuleKind) -> bool {
        self.volumes.is_none() || kind.host_promises()
    }

    /// Each figure that was both promised and measured, in the table's order: its row, the
    /// promise and the measurement.
    pub fn judged(&self) -> impl Iterator<Item = (&'static FigureRow, f64, f64)> + '_ {
        FIGURES
            .iter()
            .filter(|row| self.writes(row.kind))
            .filter_map(|row| Some((row, self.expected[row.kind]?, self.measured[row.figure]?)))
    }

    /// (how the check is named, passed) of each figure that was both promised and measured.
    pub fn checks(&self, t: Tolerance) -> Vec<(&'static str, bool)> {
        self.judged()
            .map(|(row, e, m)| {
                let cap = self.rate_cap[row.kind];
                (row.check, keeps(row.figure, e, m, cap, t))
            })
            .collect()
    }
}

/// `value` as a kind of `unit` is written: nanoseconds whole.
fn write_value<M: SerializeMap>(
    map: &mut M,
    key: &str,
    unit: Unit,
    value: Option<f64>,
) -> Result<(), M::Error> {
    match unit {
        Unit::Nanoseconds => map.serialize_entry(key, &value.map(|v| v as u64)),
        Unit::Iops | Unit::BytesPerSec => map.serialize_entry(key, &value),
    }
}

impl Serialize for VerdictFigures {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let kinds = || PROMISE_KINDS.iter().filter(|p| self.writes(p.kind));
        for p in kinds() {
            let key = format!("expected_{}", p.key);
            write_value(&mut map, &key, p.unit, self.expected[p.kind])?;
            for figure in p.kind.figures() {
                let key = format!("measured_{}", figure.name());
                write_value(&mut map, &key, p.unit, self.measured[figure])?;
            }
        }
        if let Some(volumes) = &self.volumes {
            for p in kinds() {
                let key = format!("volumes_{}", p.key);
                write_value(&mut map, &key, p.unit, volumes[p.kind])?;
            }
        }
        for p in kinds() {
            if let Some(cap) = self.rate_cap[p.kind] {
                write_value(&mut map, &format!("rate_cap_{}", p.key), p.unit, Some(cap))?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for VerdictFigures {
    /// Reads the fields [`Serialize`] writes (a `volumes_` field makes them the host's) and
    /// passes over any other.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = VerdictFigures;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a verdict's figures")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<VerdictFigures, A::Error> {
                let mut out = VerdictFigures::default();
                while let Some(key) = map.next_key::<String>()? {
                    let kind = |prefix: &str| {
                        let rest = key.strip_prefix(prefix)?;
                        PROMISE_KINDS.iter().find(|p| p.key == rest).map(|p| p.kind)
                    };
                    let figure = key
                        .strip_prefix("measured_")
                        .and_then(|rest| FIGURES.iter().find(|r| r.name == rest))
                        .map(|r| r.figure);
                    if let Some(k) = kind("expected_") {
                        out.expected[k] = map.next_value()?;
                    } else if let Some(f) = figure {
                        out.measured[f] = map.next_value()?;
                    } else if let Some(k) = kind("volumes_") {
                        out.volumes.get_or_insert_with(PerKind::default)[k] = map.next_value()?;
                    } else if let Some(k) = kind("rate_cap_") {
                        out.rate_cap[k] = map.next_value()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// What a verdict found: every judged figure kept (pass), one did not (fail), or nothing
/// was judged. Never a pass by default: a verdict that judged nothing says so.
///
/// Its JSON is two fields beside the verdict's others: `"pass": true | false | null` (a
/// program that asks "did it pass?" gets no `true` from nothing judged) and `"verdict":
/// "pass" | "fail" | "not_judged"`. Reports written before `verdict` existed are read from
/// `"pass"` alone (`true`, `false`; `null` is not judged).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Judgement {
    /// Every judged figure kept its promise, and something was judged.
    Pass,
    /// Some judged figure fell short.
    Fail,
    /// Nothing was judged.
    #[default]
    NotJudged,
}

impl Judgement {
    /// Of `checks` (each judged figure's `(name, kept)`): not judged when there are none.
    pub fn of_checks<N>(checks: &[(N, bool)]) -> Judgement {
        if checks.is_empty() {
            Judgement::NotJudged
        } else if checks.iter().all(|(_, kept)| *kept) {
            Judgement::Pass
        } else {
            Judgement::Fail
        }
    }

    /// Of a check that was made: pass when it held.
    pub fn of(kept: bool) -> Judgement {
        if kept {
            Judgement::Pass
        } else {
            Judgement::Fail
        }
    }

    /// Two findings together: fail when either failed, else pass when either passed.
    pub fn and(self, other: Judgement) -> Judgement {
        match (self, other) {
            (Judgement::Fail, _) | (_, Judgement::Fail) => Judgement::Fail,
            (Judgement::Pass, _) | (_, Judgement::Pass) => Judgement::Pass,
            _ => Judgement::NotJudged,
        }
    }

    /// Whether it passed (something was judged, and all of it held).
    pub fn passed(self) -> bool {
        self == Judgement::Pass
    }

    /// Whether it failed.
    pub fn failed(self) -> bool {
        self == Judgement::Fail
    }

    /// Whether it was judged at all.
    pub fn judged(self) -> bool {
        self != Judgement::NotJudged
    }

    /// The JSON `"pass"`: `None` when not judged.
    pub fn pass(self) -> Option<bool> {
        self.judged().then_some(self.passed())
    }

    /// Its name in JSON's `"verdict"`: `pass`, `fail`, `not_judged`.
    pub fn name(self) -> &'static str {
        match self {
            Judgement::Pass => "pass",
            Judgement::Fail => "fail",
            Judgement::NotJudged => "not_judged",
        }
    }
}

impl fmt::Display for Judgement {
    /// `PASS`, `FAIL`, `NOT JUDGED`, as verdict tables say it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Judgement::Pass => "PASS",
            Judgement::Fail => "FAIL",
            Judgement::NotJudged => "NOT JUDGED",
        })
    }
}

impl Serialize for Judgement {
    /// `{"pass": true | false | null, "verdict": "pass" | "fail" | "not_judged"}`, flattened
    /// into the verdict that holds it.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("pass", &self.pass())?;
        map.serialize_entry("verdict", self.name())?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Judgement {
    /// `"verdict"` when there, else `"pass"` (older reports); any other field passed over.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Judgement;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a verdict's \"pass\" and \"verdict\"")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Judgement, A::Error> {
                let (mut pass, mut named) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "pass" => pass = map.next_value::<Option<bool>>()?,
                        "verdict" => {
                            let name = map.next_value::<String>()?;
                            let found = [Judgement::Pass, Judgement::Fail, Judgement::NotJudged]
                                .into_iter()
                                .find(|j| j.name() == name)
                                .ok_or_else(|| {
                                    serde::de::Error::custom(format!("unknown verdict: {name}"))
                                })?;
                            named = Some(found);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(named.unwrap_or(match pass {
                    Some(kept) => Judgement::of(kept),
                    None => Judgement::NotJudged,
                }))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// One device's verdict. A figure is `null` when no rule or no qualifying run covers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeviceVerdict {
    /// The device.
    pub path: String,
    /// The name the user gave it, when another (`devices[].given`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<String>,
    /// Pass, fail, or not judged (nothing promised, no run could show its promise, every
    /// shortfall excused by saturated workers, a run cut short): JSON `"pass": true | false |
    /// null` and `"verdict": "pass" | "fail" | "not_judged"`.
    #[serde(flatten)]
    pub judgement: Judgement,
    /// Where its rules came from; empty when it has none.
    pub spec: String,
    /// Provisioned size the per-GB rules were applied to, bytes; `null` when every rule is flat.
    pub size_bytes: Option<u64>,
    /// What it promises and what was measured, per kind of promise (`expected_iops`,
    /// `measured_iops`, ..., `expected_p95_ns`, `measured_read_p95_ns`,
    /// `measured_write_p95_ns`, `rate_cap_iops`, ...). A p95 promise holds for reads and
    /// writes each; a direction the latency run did not do is `null`.
    #[serde(flatten)]
    pub figures: VerdictFigures,
    /// Taken out of a judged run after a failed I/O, this many seconds into its window
    /// (`devices[].stopped_at_secs`): a volume that failed under load has not kept its
    /// promise, whatever its rate over the time it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_secs: Option<f64>,
    /// It stopped answering in a judged run: the I/Os it still had in flight when the run
    /// gave up on them (`devices[].stalled_in_flight`, the most of any run). A volume that
    /// stops answering has not kept its promise, whatever it did before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_in_flight: Option<u64>,
    /// Its failed I/Os over the judged runs (`devices[].errors`): a volume that fails I/O
    /// under load has not kept its promise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
    /// What held it below its promise when that was not the volume: the load generator when
    /// every worker driving it had a saturated CPU (`devices[].load_generator_saturated`).
    /// Its figures are then not judged (the volume may deliver more than hostmax could ask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl DeviceVerdict {
    /// What the verdict table and messages say of a promise this device was not judged on.
    pub fn not_judged_reason(&self) -> Option<&'static str> {
        (self.bottleneck == Some(Bottleneck::LoadGenerator))
            .then_some("not judged: load generator saturated")
    }

    /// What went wrong with it under load, each a failed check whatever its figures: taken
    /// out after a failed I/O, stopped answering, failed I/Os (the last only when it was not
    /// taken out for them).
    pub fn faults(&self) -> Vec<DeviceFault> {
        let mut out = Vec::new();
        if let Some(at_secs) = self.stopped_at_secs {
            out.push(DeviceFault::TakenOut { at_secs });
        }
        if let Some(in_flight) = self.stalled_in_flight {
            out.push(DeviceFault::StoppedAnswering { in_flight });
        }
        if self.errors > 0 && self.stopped_at_secs.is_none() {
            out.push(DeviceFault::FailedIos { count: self.errors });
        }
        out
    }
}

/// A device's failure under load ([`DeviceVerdict::faults`]): it fails its verdict whatever
/// its figures.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum DeviceFault {
    /// Taken out of the run after a failed I/O, this many seconds into its window.
    TakenOut {
        /// When (`stopped_at_secs`).
        at_secs: f64,
    },
    /// It stopped answering with this many I/Os in flight.
    StoppedAnswering {
        /// The I/Os the run gave up on.
        in_flight: u64,
    },
    /// This many of its I/Os failed (the run went on, `--on-error continue`).
    FailedIos {
        /// How many.
        count: u64,
    },
}

impl DeviceFault {
    /// The check it fails, as verdicts name it: "taken out after a failed I/O", "stopped
    /// answering", "failed I/Os".
    pub fn check(self) -> &'static str {
        match self {
            DeviceFault::TakenOut { .. } => "taken out after a failed I/O",
            DeviceFault::StoppedAnswering { .. } => "stopped answering",
            DeviceFault::FailedIos { .. } => "failed I/Os",
        }
    }
}

impl Default for DeviceVerdict {
    fn default() -> Self {
        DeviceVerdict {
            path: String::new(),
            given: None,
            judgement: Judgement::NotJudged,
            spec: String::new(),
            size_bytes: None,
            figures: VerdictFigures::new(false),
            stopped_at_secs: None,
            stalled_in_flight: None,
            errors: 0,
            bottleneck: None,
        }
    }
}

/// The host's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostVerdict {
    /// Pass, fail, or not judged (the host promises nothing, or no run could show it), as a
    /// device's ([`DeviceVerdict::judgement`]).
    #[serde(flatten)]
    pub judgement: Judgement,
    /// What the host promises ([`HostSpec::iops`](crate::spec::HostSpec::iops)), what its volumes promise together and
    /// what the worst run judging each showed, for the kinds a host can promise
    /// (`expected_iops`, `measured_iops`, `volumes_iops`, `rate_cap_iops`, the same for
    /// `bytes_per_sec`). A rate cap is the host's (cap x devices), given when below its
    /// promise or below what its volumes promise together.
    #[serde(flatten)]
    pub figures: VerdictFigures,
    /// What kept the host below the volumes' sum (IOPS if judged, else throughput); `null`
    /// when it reached it, or reached what the workload's `rate_iops` allowed.
    pub bottleneck: Option<Bottleneck>,
}

impl Default for HostVerdict {
    fn default() -> Self {
        HostVerdict {
            judgement: Judgement::NotJudged,
            figures: VerdictFigures::new(true),
            bottleneck: None,
        }
    }
}

/// The verdict over one or more runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Verdict {
    /// Fail when the host, a device or the consistency failed; else pass when any of them
    /// passed; else not judged (nothing could be, or a run was cut short): never a pass
    /// from nothing judged. JSON as a device's ([`DeviceVerdict::judgement`]).
    #[serde(flatten)]
    pub judgement: Judgement,
    /// The tolerance used (in JSON its fraction: 0.05 is 5%).
    pub tolerance: Tolerance,
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
    /// Where a run's IOPS dropped after a sustained start (burst credits spent): its rates
    /// were judged over the baseline after the drop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bursts: Vec<BurstFinding>,
    /// Which time latency promises were judged by: `response` when the runs offered a rate
    /// (from each I/O's intended start, so a stall counts), else `service` (from its
    /// submission).
    #[serde(default)]
    pub latency_time: LatencyTime,
}

/// Which of a run's two latencies a verdict judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LatencyTime {
    /// Submission to completion (`latency_ns`): runs without an offered rate.
    #[default]
    Service,
    /// Intended start on the offered rate's schedule to completion (`response_ns`).
    Response,
}

impl LatencyTime {
    /// Its name in JSON and tables: `service` or `response`.
    pub fn word(self) -> &'static str {
        match self {
            LatencyTime::Service => "service",
            LatencyTime::Response => "response",
        }
    }
}

/// A drop found in one run's series, of the host or one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BurstFinding {
    /// The run, as checks name it (`run 1`, a verify phase).
    pub run: String,
    /// The device's path; `None` for the host.
    pub device: Option<String>,
    /// When the drop came, and the levels before and after.
    #[serde(flatten)]
    pub burst: Burst,
}

impl Verdict {
    /// Withholds every finding: the verdict of runs cut short (a signal), whose figures cover
    /// part of the time. Its figures stay, for what they show; nothing passes or fails.
    pub fn withhold(&mut self) {
        self.judgement = Judgement::NotJudged;
        self.host.judgement = Judgement::NotJudged;
        for d in &mut self.devices {
            d.judgement = Judgement::NotJudged;
        }
    }

    /// Paths (and "host") that failed, with the figure: "/dev/sdc IOPS"; none unless the
    /// verdict failed (a withheld one's shortfalls are not failures).
    pub fn failures(&self) -> Vec<String> {
        if !self.judgement.failed() {
            return Vec::new();
        }
        let t = self.tolerance;
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

impl fmt::Display for Verdict {
    /// The verdict in one line: `PASS: every judged figure is within 5% of its promise`,
    /// `FAIL: /dev/sdc IOPS, host IOPS` ([`Verdict::failures`]), or `NOT JUDGED: no promise
    /// could be judged` followed by what no run could show ([`Verdict::not_judged`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let judgement = self.judgement;
        match judgement {
            Judgement::Pass => write!(
                f,
                "{judgement}: every judged figure is within {} of its promise",
                self.tolerance
            ),
            Judgement::Fail => write!(f, "{judgement}: {}", self.failures().join(", ")),
            _ => {
                write!(f, "{judgement}: no promise could be judged")?;
                for (i, n) in self.not_judged.iter().enumerate() {
                    f.write_str(if i == 0 { " (" } else { "; " })?;
                    write!(f, "{n}")?;
                }
                if !self.not_judged.is_empty() {
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

/// The figure a measurement must reach: the promise, or what the workload's `rate_iops` allowed when that
/// is lower (a capped run cannot show more).
pub fn figure_to_reach(expected: f64, rate_cap: Option<f64>) -> f64 {
    rate_cap.map_or(expected, |cap| cap.min(expected))
}

/// (figure name, passed) of each judged figure of a device.
pub(super) fn device_checks(d: &DeviceVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
    let mut out: Vec<(&'static str, bool)> =
        d.faults().into_iter().map(|f| (f.check(), false)).collect();
    // Saturated workers in every run that showed a shortfall: those runs cannot tell what
    // the volume could do, so its shortfalls are left out; what it kept still counts.
    let excused = d.bottleneck == Some(Bottleneck::LoadGenerator);
    out.extend(
        d.figures
            .checks(t)
            .into_iter()
            .filter(|(_, ok)| *ok || !excused),
    );
    out
}

pub(super) fn host_checks(h: &HostVerdict, t: Tolerance) -> Vec<(&'static str, bool)> {
    h.figures.checks(t)
}

/// Whose promise a [`NotJudged`] entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

/// A promise no run could judge. Its JSON is its text: "volume MB/s: needs a run of 256 KiB
/// blocks or larger at a queue depth above 1", or "volume /dev/sdx: no run measured it ..."
/// for a promise whose path no report has; a program reads the variant (and a kind's
/// [`RuleKind::promise`] row) instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotJudged {
    /// A kind of promise no run could show (wrong block size or depth).
    Kind {
        /// Whose promise.
        promiser: Promiser,
        /// Which kind.
        kind: RuleKind,
    },
    /// A volume's promise whose path no report measured: reports name devices by their
    /// canonical path (`/dev/sdb`, not a `/dev/disk/by-id` link).
    Unmeasured {
        /// The path the promise names.
        path: String,
    },
}

/// The end of an [`NotJudged::Unmeasured`] entry's text.
const UNMEASURED: &str =
    ": no run measured it (reports name devices by canonical path: name it so in the spec)";

impl NotJudged {
    /// `promiser`'s promise of `kind`, not judged.
    pub fn new(promiser: Promiser, kind: RuleKind) -> NotJudged {
        NotJudged::Kind { promiser, kind }
    }

    /// The promise of the volume at `path`, which no run measured.
    pub fn unmeasured(path: impl Into<String>) -> NotJudged {
        NotJudged::Unmeasured { path: path.into() }
    }

    /// The kind of promise, when that is what no run could show.
    pub fn kind(&self) -> Option<RuleKind> {
        match self {
            NotJudged::Kind { kind, .. } => Some(*kind),
            NotJudged::Unmeasured { .. } => None,
        }
    }

    /// Every kind entry there can be.
    fn kinds() -> impl Iterator<Item = NotJudged> {
        [Promiser::Volume, Promiser::Host]
            .into_iter()
            .flat_map(|promiser| RuleKind::ALL.map(|kind| NotJudged::new(promiser, kind)))
    }
}

impl fmt::Display for NotJudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotJudged::Kind { promiser, kind } => write!(
                f,
                "{} {}: needs {}",
                promiser.name(),
                kind.name(),
                kind.promise().needs
            ),
            NotJudged::Unmeasured { path } => write!(f, "volume {path}{UNMEASURED}"),
        }
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
        let unmeasured = text
            .strip_prefix("volume ")
            .and_then(|rest| rest.strip_suffix(UNMEASURED))
            .map(NotJudged::unmeasured);
        unmeasured
            .or_else(|| NotJudged::kinds().find(|n| n.to_string() == text))
            .ok_or_else(|| serde::de::Error::custom(format!("unknown not_judged entry: {text}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_figures_keep_their_json_keys_and_read_back() {
        let mut d = DeviceVerdict::default();
        d.figures.expected[RuleKind::Latency] = Some(1_000_000.0);
        d.figures.measured[Figure::ReadP95Ns] = Some(400_000.0);
        d.figures.rate_cap[RuleKind::Iops] = Some(2000.0);
        let json = serde_json::to_value(&d).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        // Today's keys, each still there (a kind added to the table adds its own).
        let want = [
            "path",
            "pass",
            "spec",
            "size_bytes",
            "expected_iops",
            "measured_iops",
            "expected_bytes_per_sec",
            "measured_bytes_per_sec",
            "expected_p95_ns",
            "measured_read_p95_ns",
            "measured_write_p95_ns",
            "rate_cap_iops",
        ];
        for key in want {
            assert!(keys.contains(&key), "{key}: {keys:?}");
        }
        assert!(
            !keys.contains(&"rate_cap_bytes_per_sec"),
            "unset caps are left out"
        );
        assert!(
            !keys.iter().any(|k| k.starts_with("volumes_")),
            "a device's"
        );
        assert_eq!(json["expected_p95_ns"], 1_000_000, "nanoseconds are whole");
        assert_eq!(json["measured_read_p95_ns"], 400_000);
        assert_eq!(serde_json::from_value::<DeviceVerdict>(json).unwrap(), d);

        let mut h = HostVerdict::default();
        h.figures.expected[RuleKind::Iops] = Some(6000.0);
        h.figures.volumes.as_mut().unwrap()[RuleKind::Throughput] = Some(1e8);
        let json = serde_json::to_value(&h).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let want = [
            "pass",
            "expected_iops",
            "measured_iops",
            "expected_bytes_per_sec",
            "measured_bytes_per_sec",
            "volumes_iops",
            "volumes_bytes_per_sec",
            "bottleneck",
        ];
        for key in want {
            assert!(keys.contains(&key), "{key}: {keys:?}");
        }
        assert!(
            !keys.iter().any(|k| k.contains("p95")),
            "a host promises no latency: {keys:?}"
        );
        assert_eq!(serde_json::from_value::<HostVerdict>(json).unwrap(), h);
    }

    #[test]
    fn not_judged_is_written_as_its_text_and_read_back() {
        let entry = NotJudged::new(Promiser::Volume, RuleKind::Throughput);
        let json = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            json,
            "\"volume MB/s: needs a run of 256 KiB blocks or larger at a queue depth above 1\""
        );
        assert_eq!(serde_json::from_str::<NotJudged>(&json).unwrap(), entry);
        assert!(serde_json::from_str::<NotJudged>("\"volume MB/s: soon\"").is_err());
    }
}
