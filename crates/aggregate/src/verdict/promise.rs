//! The kinds of promise, as one table ([`PROMISE_KINDS`]): what each measures and which run
//! can show it (the module docs of [`crate::verdict`] say why). Everything that asks "can this
//! run judge that promise?" or "what run would?" reads it: the checks, the verdict's
//! `not_judged` entries, and a front end's phases and hints. Each row also names the figures
//! it promises ([`FIGURES`]), how each is read off a run ([`MeasuredFigures`]), what a spec
//! expects of it and how a verdict writes it: the checks, the verdicts and their JSON loop
//! over the table, so a new kind of promise is a row here (and its figures' rows) plus what a
//! spec says of it ([`Expectation`], in `spec.rs`).

use std::fmt;
use std::ops::{Index, IndexMut};

use hostmax_engine::{OpKind, PerOp};

use crate::latency::LatencySummary;
use crate::series::SecondPoint;
use crate::spec::Expectation;

/// Largest block size whose runs judge IOPS rules.
pub const IOPS_BLOCK_MAX: u32 = 4096;
/// Smallest block size whose runs judge throughput rules.
pub const THROUGHPUT_BLOCK_MIN: u32 = 256 << 10;

/// What kind of rule a run can judge (its row of [`PROMISE_KINDS`]: [`RuleKind::promise`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleKind {
    /// IOPS (runs of 4 KiB blocks or smaller, more than one I/O in flight).
    Iops,
    /// Throughput (runs of 256 KiB blocks or larger, more than one I/O in flight).
    Throughput,
    /// p95 latency (runs of 4 KiB blocks or smaller at queue depth 1).
    Latency,
}

/// The block sizes a run may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockSizes {
    /// This many bytes or fewer.
    AtMost(u32),
    /// This many bytes or more.
    AtLeast(u32),
}

impl BlockSizes {
    /// Whether `block_size` is one of them.
    pub fn admits(self, block_size: u32) -> bool {
        match self {
            BlockSizes::AtMost(max) => block_size <= max,
            BlockSizes::AtLeast(min) => block_size >= min,
        }
    }
}

/// How many I/Os a run keeps in flight per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DepthClass {
    /// More than one (a rate, not 1/latency).
    AboveOne,
    /// Exactly one (a latency, not a queue's wait).
    One,
}

impl DepthClass {
    /// Whether a run keeping `in_flight` I/Os per device is of this class.
    pub fn admits(self, in_flight: u64) -> bool {
        match self {
            DepthClass::AboveOne => in_flight > 1,
            DepthClass::One => in_flight == 1,
        }
    }

    /// The depth a run made for it must have; `None` when any depth of the class will do.
    pub fn fixed(self) -> Option<u32> {
        match self {
            DepthClass::AboveOne => None,
            DepthClass::One => Some(1),
        }
    }
}

/// The run a kind of promise needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunNeeds {
    /// Its block sizes.
    pub blocks: BlockSizes,
    /// Its queue depth.
    pub depth: DepthClass,
    /// Whether it must record latencies.
    pub timed: bool,
    /// The block size of a run made to judge it (a verification's phase; what a hint names).
    pub block_size: u32,
}

impl RunNeeds {
    /// Whether a run of `shape` is such a run.
    pub fn admits(&self, shape: RunShape) -> bool {
        self.blocks.admits(shape.block_size)
            && self.depth.admits(shape.in_flight)
            && (!self.timed || shape.record_latency)
    }
}

impl fmt::Display for RunNeeds {
    /// "a run of 4 KiB blocks or smaller at a queue depth above 1".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (size, bound) = match self.blocks {
            BlockSizes::AtMost(b) => (b, "smaller"),
            BlockSizes::AtLeast(b) => (b, "larger"),
        };
        let depth = match self.depth {
            DepthClass::AboveOne => "at a queue depth above 1",
            DepthClass::One => "at queue depth 1",
        };
        write!(f, "a run of {} blocks or {bound} {depth}", kib(size))
    }
}

/// "4 KiB", "1 MiB", "512 bytes".
fn kib(bytes: u32) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// A figure a promise names: a row of [`FIGURES`] ([`Figure::row`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// What a kind's figures count, which says how they are written for people and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unit {
    /// I/Os a second.
    Iops,
    /// Bytes a second (promised in MB/s, 10^6 bytes).
    BytesPerSec,
    /// Nanoseconds (whole numbers in JSON).
    Nanoseconds,
}

/// What a run's own per-device IOPS cap (`rate_iops`) allows of a kind's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateCap {
    /// The cap itself (I/Os a second).
    Ios,
    /// The cap times the run's block size (bytes a second).
    Bytes,
    /// Nothing: a cap on the rate does not bound the figure (latency).
    Unbounded,
}

impl RateCap {
    /// What `iops_cap` allows of the figure on a run of `block_size`.
    pub fn allows(self, iops_cap: f64, block_size: u32) -> Option<f64> {
        match self {
            RateCap::Ios => Some(iops_cap),
            RateCap::Bytes => Some(iops_cap * f64::from(block_size)),
            RateCap::Unbounded => None,
        }
    }
}

/// One figure: a row of [`FIGURES`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct FigureRow {
    /// The figure.
    pub figure: Figure,
    /// The kind of promise it belongs to.
    pub kind: RuleKind,
    /// Its JSON name (`iops`, `read_p95_ns`); a verdict writes it as `measured_<name>`.
    pub name: &'static str,
    /// How a verdict's failures and table name it ("IOPS", "read p95").
    pub check: &'static str,
    /// How prose names it ("IOPS", "throughput", "read p95 latency").
    pub title: &'static str,
    /// Its value on a run; `None` when the run did no I/O of its kind.
    pub read: fn(&MeasuredFigures) -> Option<f64>,
}

/// A figure's p95 latency of `op`, ns.
fn p95(m: &MeasuredFigures, op: OpKind) -> Option<f64> {
    m.ops[op].map(|o| o.latency_ns.p95 as f64)
}

/// Every figure, in [`Figure`]'s order (a kind's figures together, kinds in table order).
pub const FIGURES: [FigureRow; 4] = [
    FigureRow {
        figure: Figure::Iops,
        kind: RuleKind::Iops,
        name: "iops",
        check: "IOPS",
        title: "IOPS",
        read: |m| Some(m.iops),
    },
    FigureRow {
        figure: Figure::BytesPerSec,
        kind: RuleKind::Throughput,
        name: "bytes_per_sec",
        check: "MB/s",
        title: "throughput",
        read: |m| Some(m.bytes_per_sec),
    },
    FigureRow {
        figure: Figure::ReadP95Ns,
        kind: RuleKind::Latency,
        name: "read_p95_ns",
        check: "read p95",
        title: "read p95 latency",
        read: |m| p95(m, OpKind::Read),
    },
    FigureRow {
        figure: Figure::WriteP95Ns,
        kind: RuleKind::Latency,
        name: "write_p95_ns",
        check: "write p95",
        title: "write p95 latency",
        read: |m| p95(m, OpKind::Write),
    },
];

impl Figure {
    /// Every figure, in the table's order.
    pub fn all() -> impl Iterator<Item = Figure> {
        FIGURES.iter().map(|r| r.figure)
    }

    /// Its row of [`FIGURES`].
    pub fn row(self) -> &'static FigureRow {
        &FIGURES[self as usize]
    }

    /// The JSON name (`iops`, `bytes_per_sec`, `read_p95_ns`, `write_p95_ns`).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The kind of rule that judges it.
    pub fn rule(self) -> RuleKind {
        self.row().kind
    }

    /// Whether the promise is a ceiling (latency) rather than a floor (rates).
    pub fn is_ceiling(self) -> bool {
        self.rule().promise().ceiling
    }

    /// This figure of `m`; `None` when the run did no I/O of that direction.
    pub fn of(self, m: &MeasuredFigures) -> Option<f64> {
        (self.row().read)(m)
    }
}

/// One kind of I/O's figures in a run, as promises read them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct OpFigures {
    /// Its I/Os a second.
    pub iops: f64,
    /// Bytes a second.
    pub bytes_per_sec: f64,
    /// Its latency.
    pub latency_ns: LatencySummary,
}

/// The figures of a device (or the host) in one run that promises are compared with: what
/// every row of [`FIGURES`] reads its value from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct MeasuredFigures {
    /// IOPS of every kind together.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Each kind of I/O's own figures; `None` for a kind the run did none of.
    pub ops: PerOp<Option<OpFigures>>,
}

/// One value per kind of promise, indexed by [`RuleKind`] (a verdict's expected figures and
/// caps).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PerKind<T>(pub [T; PROMISE_KINDS.len()]);

impl<T> Index<RuleKind> for PerKind<T> {
    type Output = T;
    fn index(&self, kind: RuleKind) -> &T {
        &self.0[kind as usize]
    }
}

impl<T> IndexMut<RuleKind> for PerKind<T> {
    fn index_mut(&mut self, kind: RuleKind) -> &mut T {
        &mut self.0[kind as usize]
    }
}

impl<T> PerKind<T> {
    /// `f` of every kind.
    pub fn from_fn(mut f: impl FnMut(RuleKind) -> T) -> Self {
        PerKind(std::array::from_fn(|i| f(PROMISE_KINDS[i].kind)))
    }
}

/// One value per figure, indexed by [`Figure`] (a verdict's measured figures).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PerFigure<T>(pub [T; FIGURES.len()]);

impl<T> Index<Figure> for PerFigure<T> {
    type Output = T;
    fn index(&self, figure: Figure) -> &T {
        &self.0[figure as usize]
    }
}

impl<T> IndexMut<Figure> for PerFigure<T> {
    fn index_mut(&mut self, figure: Figure) -> &mut T {
        &mut self.0[figure as usize]
    }
}

impl<T> PerFigure<T> {
    /// `f` of every figure.
    pub fn from_fn(mut f: impl FnMut(Figure) -> T) -> Self {
        PerFigure(std::array::from_fn(|i| f(FIGURES[i].figure)))
    }
}

/// One kind of promise: a row of [`PROMISE_KINDS`]. Rows are equal when their kinds are.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PromiseKind {
    /// The kind.
    pub kind: RuleKind,
    /// How a verdict names its figures ("IOPS", "MB/s", "p95 latency").
    pub name: &'static str,
    /// How a run made to judge it is named ("IOPS", "throughput", "latency").
    pub phase: &'static str,
    /// What it measures.
    pub measures: &'static str,
    /// Whether the promise is a ceiling (latency) rather than a floor (rates).
    pub ceiling: bool,
    /// The run that can show it.
    pub needs: RunNeeds,
    /// How a verdict's JSON names its promise: `expected_<key>`, `rate_cap_<key>`,
    /// `volumes_<key>` (`iops`, `bytes_per_sec`, `p95_ns`).
    pub key: &'static str,
    /// What its figures count.
    pub unit: Unit,
    /// What a spec expects of it.
    pub expected: fn(&Expectation) -> Option<f64>,
    /// What a run's own IOPS cap allows of it.
    pub rate_cap: RateCap,
    /// When a host can promise it too (its figures are then in the host's verdict, and the
    /// volumes' sum with them): the host's figure in each second of a run, which the
    /// bottleneck analysis reads.
    pub host_per_second: Option<fn(&SecondPoint) -> f64>,
}

impl PartialEq for PromiseKind {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

impl Eq for PromiseKind {}

/// Every kind of promise, in [`RuleKind`]'s order (the order a verification runs its phases
/// in).
pub const PROMISE_KINDS: [PromiseKind; 3] = [
    PromiseKind {
        kind: RuleKind::Iops,
        name: "IOPS",
        phase: "IOPS",
        measures: "read plus write I/Os a second, at least",
        ceiling: false,
        needs: RunNeeds {
            blocks: BlockSizes::AtMost(IOPS_BLOCK_MAX),
            depth: DepthClass::AboveOne,
            timed: false,
            block_size: 4096,
        },
        key: "iops",
        unit: Unit::Iops,
        expected: |e| e.iops,
        rate_cap: RateCap::Ios,
        host_per_second: Some(|p| p.iops),
    },
    PromiseKind {
        kind: RuleKind::Throughput,
        name: "MB/s",
        phase: "throughput",
        measures: "bytes a second, at least",
        ceiling: false,
        needs: RunNeeds {
            blocks: BlockSizes::AtLeast(THROUGHPUT_BLOCK_MIN),
            depth: DepthClass::AboveOne,
            timed: false,
            block_size: 1 << 20,
        },
        key: "bytes_per_sec",
        unit: Unit::BytesPerSec,
        expected: |e| e.bytes_per_sec,
        rate_cap: RateCap::Bytes,
        host_per_second: Some(|p| p.bytes_per_sec),
    },
    PromiseKind {
        kind: RuleKind::Latency,
        name: "p95 latency",
        phase: "latency",
        measures: "the 95th percentile latency of reads and of writes, each at most",
        ceiling: true,
        needs: RunNeeds {
            blocks: BlockSizes::AtMost(IOPS_BLOCK_MAX),
            depth: DepthClass::One,
            timed: true,
            block_size: 4096,
        },
        key: "p95_ns",
        unit: Unit::Nanoseconds,
        expected: |e| e.p95_ns.map(|n| n as f64),
        rate_cap: RateCap::Unbounded,
        host_per_second: None,
    },
];

/// What of a run decides which rules it judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunShape {
    /// Bytes per I/O.
    pub block_size: u32,
    /// I/Os in flight per device: every job's depth
    /// ([`hostmax_engine::Workload::in_flight_per_target`]), not one job's.
    pub in_flight: u64,
    /// Whether latencies were recorded.
    pub record_latency: bool,
}

impl RuleKind {
    /// Every kind, in the table's order.
    pub const ALL: [RuleKind; 3] = [RuleKind::Iops, RuleKind::Throughput, RuleKind::Latency];

    /// Its figures, in the table's order.
    pub fn figures(self) -> impl Iterator<Item = Figure> {
        FIGURES
            .iter()
            .filter(move |r| r.kind == self)
            .map(|r| r.figure)
    }

    /// What `expected` promises of this kind.
    pub fn expected(self, expected: &Expectation) -> Option<f64> {
        (self.promise().expected)(expected)
    }

    /// Whether a host can promise this kind.
    pub fn host_promises(self) -> bool {
        self.promise().host_per_second.is_some()
    }

    /// Its row of [`PROMISE_KINDS`].
    pub fn promise(self) -> &'static PromiseKind {
        &PROMISE_KINDS[self as usize]
    }

    /// Whether a run of this shape judges this kind of rule.
    pub fn judges(self, run: RunShape) -> bool {
        self.promise().needs.admits(run)
    }

    /// What a run needs to judge this kind, for people (in the workload's terms; a command
    /// line tool adds its own options).
    pub fn needs(self) -> String {
        self.promise().needs.to_string()
    }

    /// How a verdict names its figures ("IOPS", "MB/s", "p95 latency").
    pub fn name(self) -> &'static str {
        self.promise().name
    }
}

impl OpFigures {
    /// One kind's `iops`, `bytes_per_sec` and latencies.
    pub fn new(iops: f64, bytes_per_sec: f64, latency_ns: LatencySummary) -> OpFigures {
        OpFigures {
            iops,
            bytes_per_sec,
            latency_ns,
        }
    }
}

impl MeasuredFigures {
    /// Every kind's `iops` and `bytes_per_sec` added up, and each kind's own figures in
    /// `ops` (`None` for a kind the run did not do).
    pub fn new(iops: f64, bytes_per_sec: f64, ops: PerOp<Option<OpFigures>>) -> MeasuredFigures {
        MeasuredFigures {
            iops,
            bytes_per_sec,
            ops,
        }
    }
}

impl RunShape {
    /// A run of `block_size`-byte I/Os keeping `in_flight` per device, recording latencies
    /// or not (`record_latency`).
    pub const fn new(block_size: u32, in_flight: u64, record_latency: bool) -> RunShape {
        RunShape {
            block_size,
            in_flight,
            record_latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_rule_kind_order() {
        for (i, row) in PROMISE_KINDS.iter().enumerate() {
            assert_eq!(row.kind as usize, i);
        }
        for (i, row) in FIGURES.iter().enumerate() {
            assert_eq!(row.figure as usize, i);
        }
        assert_eq!(
            RuleKind::Iops.needs(),
            "a run of 4 KiB blocks or smaller at a queue depth above 1"
        );
        assert_eq!(
            RuleKind::Throughput.needs(),
            "a run of 256 KiB blocks or larger at a queue depth above 1"
        );
        assert_eq!(
            RuleKind::Latency.needs(),
            "a run of 4 KiB blocks or smaller at queue depth 1"
        );
    }

    fn shape(block_size: u32, in_flight: u64) -> RunShape {
        RunShape {
            block_size,
            in_flight,
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
}
