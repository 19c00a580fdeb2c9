//! hostmax-engine drives many block volumes at once with io_uring and measures every I/O.
//!
//! [`measure`] is the one call that runs a measurement: write safety, preparing the run, a
//! last safety check while the written targets are held, start, every interval to an
//! [`Observer`], the result. Underneath, a run probes its targets
//! ([`hostmax_device::probe`], [`TargetInfo`]), places them on CPUs from their blk-mq maps
//! ([`placement::Placement`]: a device gets a [`DeviceShare`] on each CPU its queues serve
//! while CPUs are free, or [`Workload::numjobs`] of them, each its own part of the device),
//! and starts one OS thread per used CPU. Each worker pins itself, builds its own io_uring
//! inside itself, registers its files and one aligned buffer arena, and keeps every share's
//! queue full with the [`Workload`]'s I/O; a device's result is its shares' added up
//! ([`DeviceResult::drivers`] says who did what). A completion counts only when its result equals the requested length; anything else
//! goes to the device's [`ErrorLog`].
//!
//! The control side holds a [`RunHandle`]: it reads one-second [`DeviceInterval`]s while the
//! workers go on, can [`RunHandle::stop`] the run, and [`RunHandle::wait`]s for the
//! [`RunResult`] with per-device [`OpResult`]s and exact HDR latency histograms
//! ([`new_latency_histogram`] gives the bin layout every histogram shares). Every figure of a
//! kind of I/O (read, write, trim: [`OpKind`]) lives in a [`PerOp`] table indexed by it.
//!
//! Before a workload writes, [`measure`] asks the device crate's write safety
//! ([`hostmax_device::check_write_safety`]) which targets it must not touch (mounted, held,
//! swap, the root filesystem, or carrying data without consent: [`WriteSafety`]). What a
//! target is ([`TargetInfo`]), the sysfs facts placement reads and the consent types are
//! `hostmax_device`'s; the ones this crate's API names are re-exported here. The checks read
//! devices through [`UringReads`] ([`bounded_sources`]): a device that stopped answering is
//! refused within [`READ_PATIENCE`], never waited on in the kernel. A purge before a
//! benchmark clears ranges of a target with [`discard`] or [`zero_out`]; [`read_pass`] reads
//! every block of volumes restored from snapshots once before they are measured
//! ([`ReadPass`], resumable from its [`PassProgress`]; it never writes).
//! [`measure_issue_ceiling`] runs the worker loop with io_uring NOPs and no device: the load
//! generator's own ceiling per CPU ([`IssueCeiling`]).
//!
//! All `unsafe` io_uring code lives in the private `ring` module.
//!
//! # Example
//!
//! Random 4 KiB reads at depth 4 for a third of a second on a scratch file (a regular file
//! needs no root; a block device such as `/dev/nvme0n1` is measured the same way):
//!
//! ```
//! use std::time::Duration;
//!
//! use hostmax_engine::{measure, DeviceInterval, IoPattern, MeasureRequest, OpKind, Workload};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = std::env::temp_dir().join(format!("hostmax-engine-doc-{}.img", std::process::id()));
//! std::fs::File::create(&file)?.set_len(16 << 20)?;
//!
//! let workload = Workload::default()
//!     .with_pattern(IoPattern::RandRead)
//!     .with_iodepth(4)
//!     .with_runtime(Duration::from_millis(300))
//!     .with_ramp(Duration::ZERO);
//! let mut intervals = 0;
//! let result = measure(
//!     MeasureRequest::new(vec![file.clone()], workload),
//!     // Each device's one-second figures arrive here while the run goes on.
//!     &mut |_: DeviceInterval| intervals += 1,
//! );
//! std::fs::remove_file(&file)?;
//!
//! let reads = &result?.devices[0].ops[OpKind::Read];
//! assert!(reads.ios > 0);
//! println!(
//!     "{} reads, p99 {} ns ({intervals} intervals)",
//!     reads.ios,
//!     reads.latency.value_at_quantile(0.99)
//! );
//! # Ok(())
//! # }
//! ```
//!
//! `hostmax_aggregate::summarize` turns the [`RunResult`] into host and per-device figures.
//!
//! # Growing without breaking you
//!
//! Every public struct with public fields is `#[non_exhaustive]`: outside this crate you build
//! one with its `new` or [`Default`] and the chaining `with_*` setters
//! (`Workload::default().with_iodepth(4)`, [`MeasureRequest::new`] then
//! [`MeasureRequest::with_consent`]), never a struct literal; its fields stay public, to read
//! and to assign on a value you hold. Results ([`RunResult`], [`DeviceResult`], [`OpResult`],
//! [`DeviceInterval`]) have constructors too, for tools and tests that build or replay them.
//! Every public enum that may gain variants ([`EngineError`], [`IoPattern`], [`OpKind`],
//! [`Misfit`], ...) is `#[non_exhaustive]`: give a `match` on it a `_` arm. So a new field or
//! variant is not a breaking change. Every type this API names is reachable from this crate's
//! root, hostmax-device's ones too ([`hostmax_device`] itself is re-exported).
//!
//! # Cargo features
//!
//! - `test-hooks` (off by default): makes public a few items the repository's own tests,
//!   benches and fuzzers use (`validate`, the workload check alone; `OffsetStream`;
//!   `BlockMaker`; `record_latency`). None does I/O: with or without the feature, a run starts
//!   only through [`measure`], after its write-safety checks. They are not part of the stable
//!   API.

#![warn(missing_docs)]
// Every unsafe block says why it is sound (`UringIo::buffer`'s callers name the slot rule):
// the workspace denies `clippy::undocumented_unsafe_blocks` (the root Cargo.toml).

// The README's example is compiled and run as a doc test too, so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// Chaining setters for public fields of a `#[non_exhaustive]` struct: `with_FIELD(value)`
/// returns the value with that field set, so users outside this crate, who cannot write a
/// struct literal, still build one in a single expression (see the crate overview's "Growing
/// without breaking you").
macro_rules! with_setters {
    ($ty:ident { $($setter:ident => $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("The same value with [`", stringify!($ty), "::", stringify!($field), "`] set to `", stringify!($field), "`.")]
                #[must_use]
                pub fn $setter(mut self, $field: $t) -> $ty {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

mod availability;
mod bounded_read;
mod ceiling;
mod cpu_use;
mod data;
mod measure;
mod memory;
mod mismatch;
mod op;
pub mod placement;
mod read_pass;
mod result;
mod ring;
mod run;
mod schedule;
mod setting;
mod shared;
mod submit_times;
mod target;
mod worker;
mod workload;

/// The HDR histogram crate every latency histogram of this API is from
/// ([`OpResult::latency`] is a `hdrhistogram::Histogram<u64>`): use it through this
/// re-export to read percentiles or merge histograms without pinning a version of your own.
pub use hdrhistogram;

pub use availability::{check_io_uring, IoUringUnavailable};
pub use bounded_read::UringReads;
pub use ceiling::{measure_issue_ceiling, CeilingConfig, CpuCeiling, IssueCeiling};
pub use data::{WriteData, COMPRESS_CHUNK, STAMP_SPACING};
pub use measure::{bounded_sources, measure, MeasureRequest, Observer, SafetyCheck, TICK};
pub use mismatch::{MismatchKind, VerifyMismatch};
pub use op::{KeyedVisitor, OpKind, PerOp};
pub use placement::{DeviceShare, Placement, ThreadLayout, WorkerPlan};
pub use read_pass::{read_pass, PassProgress, ReadPass};
pub use result::{
    new_latency_histogram, CpuUse, DeviceDriver, DeviceInterval, DeviceResult, ErrorLog, IoCounts,
    IoErrorSample, NotReadBack, OpResult, ReadSamples, RunResult, VerifyLog, WorkerSummary,
    CPU_SATURATED, LATENCY_HIGHEST_NS, LATENCY_SIGFIG,
};
pub use ring::{probe_kernel_ring, KernelRingSupport, Polling, RingFeatures, TrimMethod};
pub use run::{
    check_fits, check_memory, refuse_duplicate_targets, Misfit, PreparedRun, RunConfig, RunHandle,
    StopHandle,
};
pub use schedule::{Arrival, Schedule};
pub use setting::{Setting, SettingError};
pub use target::{discard, zero_out};
pub use workload::{
    ErrorPolicy, IoPattern, UnknownPattern, Workload, BACKLOG_LIMIT, DRAIN_LIMIT, MAX_BLOCK_SIZE,
    MAX_IODEPTH, MAX_NUMJOBS, MAX_RATE_IOPS, MAX_RUN_TIME, MIN_BLOCK_SIZE, READ_BACK_STOP_GRACE,
};

// Test hooks: the repository's tests, benches and fuzzers reach inside the engine through
// these (the workload check alone, the offset and block generators, one latency recorded).
// None does I/O: any crate in a user's graph can turn a feature on, so a run with no write
// safety check is never among them. Not part of the stable API: the non-default
// `test-hooks` feature turns them on, and they may change in any release.
#[cfg(feature = "test-hooks")]
pub use data::BlockMaker;
#[cfg(feature = "test-hooks")]
pub use result::record_latency;
#[cfg(feature = "test-hooks")]
pub use run::validate;
#[cfg(feature = "test-hooks")]
pub use worker::OffsetStream;

/// The device crate whose types this API names ([`TargetInfo`], [`WriteSafety`],
/// [`WriteRefused`], [`SystemSources`], ...): the ones a caller needs are re-exported at this
/// crate's root too, and the rest (its `safety` and `media` modules) are reachable through
/// this re-export, so a user of this crate need not depend on hostmax-device.
pub use hostmax_device;

// The device crate's types this crate's API names (targets, consent, the refusal and its
// reasons, how devices are read).
pub use hostmax_device::{
    ConsentWords, DeviceReads, ExtVersion, FatKind, Patience, ProbeError, Refusal, RefusalReason,
    Signature, SystemSources, TargetChanged, TargetInfo, TargetKind, WriteRefused, WriteSafety,
    READ_PATIENCE,
};

use std::path::PathBuf;

/// Everything that can stop a run from starting or finishing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A target could not be probed (it does not exist, cannot be read, or is neither a block
    /// device nor a regular file).
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// A target could not be opened for the run.
    #[error("{}: {source}", path.display())]
    Open {
        /// The target as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The same device or file was named twice (by any path: compared by device number, or
    /// by device and inode for a file); nothing was opened or written.
    #[error("{}: the same {what} as {} (named earlier): name each target once", path.display(), first.display())]
    DuplicateTarget {
        /// The target as given the second time.
        path: PathBuf,
        /// The target as given the first time.
        first: PathBuf,
        /// "device" or "file".
        what: &'static str,
    },
    /// No target was given: a run needs at least one device or file.
    #[error("no targets: give at least one device or file to measure")]
    NoTargets,
    /// The workload does not fit a target or is out of range ([`SettingError::settings`]
    /// say what to change; `source()` is the [`SettingError`] too).
    #[error("{0}")]
    InvalidWorkload(#[source] SettingError),
    /// The CPU set is empty or names CPUs that are not online.
    #[error("{0}")]
    InvalidCpus(#[source] SettingError),
    /// A read of [`read_pass`] failed.
    #[error("{}: read at byte {offset} failed: {source}", path.display())]
    Read {
        /// The target.
        path: PathBuf,
        /// Where the failed read started.
        offset: u64,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// io_uring could not be set up (kernel too old, disabled, or out of memory).
    #[error("io_uring setup failed: {0}")]
    Ring(std::io::Error),
    /// Discarding or zeroing a range of a target failed ([`discard`], [`zero_out`]);
    /// `EOPNOTSUPP` when the device cannot do it.
    #[error("{}: cannot {what}: {source}", path.display())]
    Clear {
        /// The target.
        path: PathBuf,
        /// "discard" or "zero out".
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A write workload would touch a target it must not
    /// ([`hostmax_device::check_write_safety`]); nothing was written.
    #[error(transparent)]
    WriteRefused(#[from] WriteRefused),
    /// A target's path led elsewhere when it was opened for the run than when it was probed
    /// and checked (renamed onto, a device replaced); nothing was written to it.
    #[error(transparent)]
    TargetChanged(#[from] TargetChanged),
    /// The [`Observer`] called the run off before its first I/O.
    #[error("the run was called off before it started")]
    CalledOff,
    /// A worker thread could not be started or pinned, or panicked.
    #[error("worker on CPU {cpu}: {message}")]
    Worker {
        /// The CPU the worker was meant for.
        cpu: usize,
        /// What went wrong.
        message: String,
    },
}
