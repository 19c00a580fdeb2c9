//! The kinds of promise, as one table ([`PROMISE_KINDS`]): what each measures and which run
//! can show it (the module docs of [`crate::verdict`] say why). Everything that asks "can this
//! run judge that promise?" or "what run would?" reads it: the checks, the verdict's
//! `not_judged` entries, and a front end's phases and hints.

use std::fmt;

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
pub enum DepthClass {
    /// More than one (a rate, not 1/latency).
    AboveOne,
    /// Exactly one (a latency, not a queue's wait).
    One,
}

impl DepthClass {
    /// Whether a run at `iodepth` is of this class.
    pub fn admits(self, iodepth: u32) -> bool {
        match self {
            DepthClass::AboveOne => iodepth > 1,
            DepthClass::One => iodepth == 1,
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
pub struct RunNeeds {
    /// Its block sizes.
    pub blocks: BlockSizes,
    /// Its queue depth.
    pub depth: DepthClass,
    /// Whether it must record latencies.
    pub timed: bool,
    /// The block size of a run made to judge it (`hostmax verify`'s phase; what a hint names).
    pub block_size: u32,
}

impl RunNeeds {
    /// Whether a run of `shape` is such a run.
    pub fn admits(&self, shape: RunShape) -> bool {
        self.blocks.admits(shape.block_size)
            && self.depth.admits(shape.iodepth)
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

/// One kind of promise: a row of [`PROMISE_KINDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// Every kind of promise, in [`RuleKind`]'s order (the order `hostmax verify` runs phases in).
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
    },
];

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

impl RuleKind {
    /// Every kind, in the table's order.
    pub const ALL: [RuleKind; 3] = [RuleKind::Iops, RuleKind::Throughput, RuleKind::Latency];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_rule_kind_order() {
        for (i, kind) in RuleKind::ALL.into_iter().enumerate() {
            assert_eq!(PROMISE_KINDS[i].kind, kind);
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
}
