//! What to run against every target: the access pattern, sizes, depths and times.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::op::{BufferUse, OpKind, PerOp};
use crate::setting::{Setting, SettingError};

/// Largest block size the engine accepts (8 MiB).
pub const MAX_BLOCK_SIZE: u32 = 8 << 20;
/// Smallest block size the engine accepts (512 B).
pub const MIN_BLOCK_SIZE: u32 = 512;
/// Largest per-device queue depth; bounded by the ring size the kernel allows
/// (`IORING_MAX_ENTRIES`, 32768) shared by all devices of one worker.
pub const MAX_IODEPTH: u32 = 4096;
/// Most workers per target ([`Workload::numjobs`]).
pub const MAX_NUMJOBS: u32 = 256;
/// Longest ramp, and longest measured time, the engine runs (365 days each): the run's end is
/// an `Instant` ramp plus runtime away, which must not overflow, and a year of one-second
/// intervals is already more than any report holds usefully.
pub const MAX_RUN_TIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long a run waits, after its end (or a stop), for the I/O still in flight: a device
/// that has not completed it by then stopped answering (a stalled path, a suspended
/// device-mapper table, a dead disk), and the run ends without it. Its result says how many
/// I/Os it gave up on ([`crate::DeviceResult::stalled_in_flight`]); every other device's
/// counts are whole. The `--verify` read-back gives up on a device after as long without a
/// completion. Ten seconds is far beyond any healthy device's completion time at any
/// queue depth the engine allows, and well below the 30 s a SCSI or NVMe command may take
/// before the kernel times it out.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// How long a stop from outside (SIGINT, SIGTERM) waits for the `--verify` read-back's reads
/// in flight before leaving them to the kernel ([`crate::VerifyLog::reads_left_in_flight`]): a
/// healthy device completes them in milliseconds, and an interrupted command should end
/// within about a second.
pub const READ_BACK_STOP_GRACE: Duration = Duration::from_secs(1);
/// How long after its end a run with an offered rate keeps issuing the I/Os that fell due
/// within its runtime and had not gone out yet (a stall's backlog): they are part of the
/// offered load, and leaving them out would hide the stall's worst response times. They
/// complete after the measured window, so they count as drained
/// ([`crate::DeviceResult::drained`]), in no second and in no rate, while their service and
/// response times join the window's histograms. What is still due after this is counted as
/// never issued ([`crate::DeviceResult::unissued`]); the drain of the I/O in flight
/// ([`DRAIN_LIMIT`]) follows.
pub const BACKLOG_LIMIT: Duration = Duration::from_secs(5);
/// Highest `rate_iops` the engine paces (10^9 per target, far beyond any device): the pacing
/// arithmetic (elapsed seconds times the rate) stays well inside a `u64` for a
/// [`MAX_RUN_TIME`] run.
pub const MAX_RATE_IOPS: u64 = 1_000_000_000;

/// The access pattern, named as fio names it (its `rw` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum IoPattern {
    /// Uniformly random reads.
    RandRead,
    /// Uniformly random writes.
    RandWrite,
    /// Uniformly random reads and writes; the read share is [`Workload::rwmixread`].
    RandRw,
    /// Sequential reads, wrapping at the end of the working set.
    Read,
    /// Sequential writes, wrapping at the end of the working set.
    Write,
    /// Sequential trims, wrapping at the end of the working set.
    Trim,
    /// Uniformly random trims.
    RandTrim,
}

impl IoPattern {
    /// All patterns, in the order front ends list them: randread, randwrite, randrw, read,
    /// write, trim, randtrim.
    pub const ALL: [IoPattern; 7] = [
        IoPattern::RandRead,
        IoPattern::RandWrite,
        IoPattern::RandRw,
        IoPattern::Read,
        IoPattern::Write,
        IoPattern::Trim,
        IoPattern::RandTrim,
    ];

    /// fio's name for the pattern.
    pub fn name(self) -> &'static str {
        match self {
            IoPattern::RandRead => "randread",
            IoPattern::RandWrite => "randwrite",
            IoPattern::RandRw => "randrw",
            IoPattern::Read => "read",
            IoPattern::Write => "write",
            IoPattern::Trim => "trim",
            IoPattern::RandTrim => "randtrim",
        }
    }

    /// The share in percent of each kind of I/O the pattern issues (they add up to 100),
    /// with `rwmixread` the read share of `randrw`.
    pub fn op_share(self, rwmixread: u8) -> PerOp<u8> {
        let only = |kind: OpKind| PerOp::from_fn(|op| if op == kind { 100 } else { 0 });
        match self {
            IoPattern::RandRead | IoPattern::Read => only(OpKind::Read),
            IoPattern::RandWrite | IoPattern::Write => only(OpKind::Write),
            IoPattern::Trim | IoPattern::RandTrim => only(OpKind::Trim),
            IoPattern::RandRw => {
                let read = rwmixread.min(100);
                PerOp::from_fn(|op| match op {
                    OpKind::Read => read,
                    OpKind::Write => 100 - read,
                    _ => 0,
                })
            }
        }
    }

    /// Whether the pattern ever issues `op` (with `randrw` counting as both reads and writes).
    pub fn issues(self, op: OpKind) -> bool {
        self.op_share(50)[op] > 0
    }

    /// Whether the pattern ever changes data (writes or trims), and so needs write access,
    /// consent and the safety checks.
    pub fn writes(self) -> bool {
        OpKind::ALL
            .into_iter()
            .any(|op| op.changes_data() && self.issues(op))
    }

    /// Whether the pattern ever reads.
    pub fn reads(self) -> bool {
        self.issues(OpKind::Read)
    }

    /// Whether offsets are random (otherwise sequential).
    pub fn is_random(self) -> bool {
        matches!(
            self,
            IoPattern::RandRead | IoPattern::RandWrite | IoPattern::RandRw | IoPattern::RandTrim
        )
    }

    /// The read share in percent this pattern gives, with `rwmixread` used for `randrw`.
    pub fn read_percent(self, rwmixread: u8) -> u8 {
        self.op_share(rwmixread)[OpKind::Read]
    }
}

impl fmt::Display for IoPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown pattern name ([`IoPattern::from_str`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown I/O pattern '{0}': use one of randread, randwrite, randrw, read, write, trim, randtrim"
)]
#[non_exhaustive]
pub struct UnknownPattern(pub String);

impl FromStr for IoPattern {
    type Err = UnknownPattern;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IoPattern::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPattern(s.to_string()))
    }
}

/// One workload, applied to every target of a run with each target's own queue, random
/// stream and counters.
///
/// [`Workload::default`] is 4 KiB random reads ([`IoPattern::RandRead`]) at depth 32 over the
/// whole of each target (workers chosen by the engine), a 5 s ramp then 30 s measured, no IOPS cap, no I/O limit, every I/O
/// timed, seed `0x5eed_f405_ca1e`, a 50% read share (used by [`IoPattern::RandRw`] only) and
/// [`WriteData::default`](crate::WriteData) for writes (unique, incompressible, not verified).
/// Set the fields you care about with the `with_*` setters (or on the value) and take the
/// rest from it:
///
/// ```
/// use std::time::Duration;
///
/// use hostmax_engine::{IoPattern, Workload};
///
/// let workload = Workload::default()
///     .with_pattern(IoPattern::RandWrite)
///     .with_block_size(16 << 10)
///     .with_runtime(Duration::from_secs(10));
/// assert_eq!(workload.iodepth, 32);
/// assert_eq!(workload.ramp, Duration::from_secs(5));
///
/// let mut slower = workload.clone();
/// slower.iodepth = 1;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Workload {
    /// Access pattern.
    pub pattern: IoPattern,
    /// Read share in percent for [`IoPattern::RandRw`] (0..=100); ignored otherwise.
    pub rwmixread: u8,
    /// Bytes per I/O: a multiple of every target's logical block size, 512 B..=8 MiB.
    pub block_size: u32,
    /// I/Os kept in flight: per target when [`Workload::numjobs`] is `None` (split among the
    /// target's workers), per worker (fio's job) when it is given.
    pub iodepth: u32,
    /// Workers per target, fio's `numjobs`: each on its own CPU of the target's queue map
    /// where it has enough, each keeping [`Workload::iodepth`] in flight over its own part of
    /// the working set. `None` (the default) lets the engine choose: one worker per queue CPU
    /// the target may use, while CPUs are free (see the placement in `RunConfig`).
    #[serde(default)]
    pub numjobs: Option<u32>,
    /// Bytes at the start of each target that I/O touches; `None` is the whole target.
    pub working_set: Option<u64>,
    /// Measured time, after the ramp.
    pub runtime: Duration,
    /// Time whose I/O is done but not counted, before the measured window.
    pub ramp: Duration,
    /// Seed of the random offsets: the same seed gives every target the same offsets.
    pub seed: u64,
    /// Optional offered rate in I/Os per second, per target (shared by its workers). With
    /// it, every I/O has an intended start on a schedule fixed in advance
    /// ([`Workload::arrival`]), which a slow or stalled device never moves: I/Os that fall
    /// due while every slot is busy wait and go out as slots free, and each I/O's response
    /// time ([`crate::OpResult::response`]) runs from its intended start, so a stall shows
    /// in full (no coordinated omission). The I/Os due within the runtime are all issued,
    /// even when the backlog of a stall must be worked off after the nominal end (see
    /// [`BACKLOG_LIMIT`]); each second and the achieved rate count what completed within
    /// them.
    pub rate_iops: Option<u64>,
    /// How the I/Os of [`Workload::rate_iops`] arrive: evenly spaced (the default) or as a
    /// Poisson process seeded from [`Workload::seed`]. Ignored without a rate.
    #[serde(default)]
    pub arrival: crate::Arrival,
    /// Whether to time every I/O into the latency histograms (costs two clock reads per batch).
    pub record_latency: bool,
    /// Completions a worker waits for before it reaps, when it has that many in flight
    /// (fio's `iodepth_batch_complete_min`, t/io_uring's `-c`): 1 (the default) wakes it for
    /// every completion; more wake it once a batch, which costs less CPU per I/O where wakes
    /// are dear (completions from io_uring's worker threads, as on zram) but stamps every
    /// completion of a batch when the batch is reaped, so a latency includes the wait for the
    /// rest of its batch. A wait still ends at the next second's boundary or rate-limited
    /// I/O, so the live view and a rate's schedule are kept.
    #[serde(default = "one_completion")]
    pub complete_batch: u32,
    /// Bytes each target may be given, ramp included (fio's `io_size`, here shared by the
    /// target's workers): a target stops once
    /// that many bytes were submitted, and the run ends when every target has stopped (or the
    /// runtime is over, whichever is first). `None` is no limit.
    #[serde(default)]
    pub io_limit: Option<u64>,
    /// What written blocks contain: unique and incompressible unless asked otherwise.
    #[serde(default)]
    pub write_data: crate::WriteData,
}

/// [`Workload::complete_batch`]'s default, for reports of versions that did not say.
fn one_completion() -> u32 {
    1
}

impl Default for Workload {
    /// 4 KiB random reads at depth 32 on the whole target, 5 s ramp, 30 s measured, timed,
    /// uncapped (see [`Workload`]).
    fn default() -> Self {
        Workload {
            pattern: IoPattern::RandRead,
            rwmixread: 50,
            block_size: 4096,
            iodepth: 32,
            numjobs: None,
            working_set: None,
            runtime: Duration::from_secs(30),
            ramp: Duration::from_secs(5),
            seed: 0x5eed_f405_ca1e,
            rate_iops: None,
            arrival: crate::Arrival::Even,
            record_latency: true,
            complete_batch: 1,
            io_limit: None,
            write_data: crate::WriteData::default(),
        }
    }
}

with_setters!(Workload {
    with_pattern => pattern: IoPattern,
    with_rwmixread => rwmixread: u8,
    with_block_size => block_size: u32,
    with_iodepth => iodepth: u32,
    with_numjobs => numjobs: Option<u32>,
    with_working_set => working_set: Option<u64>,
    with_runtime => runtime: Duration,
    with_ramp => ramp: Duration,
    with_seed => seed: u64,
    with_rate_iops => rate_iops: Option<u64>,
    with_arrival => arrival: crate::Arrival,
    with_record_latency => record_latency: bool,
    with_complete_batch => complete_batch: u32,
    with_io_limit => io_limit: Option<u64>,
    with_write_data => write_data: crate::WriteData,
});

impl Workload {
    /// Checks every number against the engine's limits, the ones a workload has whatever it
    /// runs on (what fits a target is [`crate::check_fits`]): block size, queue depth,
    /// workers and the I/Os they keep in flight together, read share, times, rate, data
    /// options. The one place these ranges are written; front ends word its refusal with
    /// their own names for the settings ([`SettingError::naming`]).
    pub fn check(&self) -> Result<(), SettingError> {
        let w = self;
        use Setting::*;
        let bad = |m: String, settings: &[Setting]| Err(SettingError::new(m, settings));
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&w.block_size) {
            return bad(
                format!(
                    "block size {} is out of range: use 512 B to 8 MiB",
                    w.block_size
                ),
                &[BlockSize],
            );
        }
        if !w.block_size.is_multiple_of(MIN_BLOCK_SIZE) {
            return bad(
                format!(
                    "block size {} is not a multiple of {MIN_BLOCK_SIZE} bytes: use e.g. {} or {}",
                    w.block_size,
                    w.block_size / MIN_BLOCK_SIZE * MIN_BLOCK_SIZE,
                    (w.block_size / MIN_BLOCK_SIZE + 1) * MIN_BLOCK_SIZE
                ),
                &[BlockSize],
            );
        }
        if w.iodepth == 0 || w.iodepth > MAX_IODEPTH {
            return bad(
                format!(
                    "queue depth {} is out of range: use 1 to {MAX_IODEPTH}",
                    w.iodepth
                ),
                &[Iodepth],
            );
        }
        if let Some(n) = w.numjobs.filter(|n| !(1..=MAX_NUMJOBS).contains(n)) {
            return bad(
                format!("{n} workers per target is out of range: use 1 to {MAX_NUMJOBS}"),
                &[Numjobs],
            );
        }
        if let Some(n) = w.numjobs {
            let total = w.in_flight_per_target();
            if total > u64::from(MAX_IODEPTH) {
                return bad(
                    format!(
                        "{n} workers x queue depth {} = {total} I/Os in flight per target, above the most the engine keeps ({MAX_IODEPTH}): lower one of them",
                        w.iodepth
                    ),
                    &[Numjobs, Iodepth],
                );
            }
        }
        if w.complete_batch == 0 || w.complete_batch > MAX_IODEPTH {
            return bad(
                format!(
                    "completion batch of {} is out of range: use 1 to {MAX_IODEPTH}",
                    w.complete_batch
                ),
                &[CompleteBatch],
            );
        }
        if w.rwmixread > 100 {
            return bad(
                format!("read share {}% is over 100%: use 0 to 100", w.rwmixread),
                &[Rwmixread],
            );
        }
        if w.runtime.is_zero() {
            return bad(
                "runtime is zero: give a positive runtime".into(),
                &[Runtime],
            );
        }
        for (what, d, setting) in [("runtime", w.runtime, Runtime), ("ramp", w.ramp, Ramp)] {
            if d > MAX_RUN_TIME {
                return bad(
                    format!(
                        "{what} of {} s is longer than the engine runs: use at most {} s (365 days)",
                        d.as_secs(),
                        MAX_RUN_TIME.as_secs()
                    ),
                    &[setting],
                );
            }
        }
        if let Some(limit) = w.io_limit {
            if limit < u64::from(w.block_size) {
                return bad(
                    format!(
                        "I/O limit of {limit} bytes is less than one block of {} bytes: give a larger limit",
                        w.block_size
                    ),
                    &[IoLimit],
                );
            }
        }
        if w.rate_iops == Some(0) {
            return bad(
                "rate of 0 IOPS would never submit: give a positive rate".into(),
                &[RateIops],
            );
        }
        if let Some(rate) = w.rate_iops.filter(|&r| r > MAX_RATE_IOPS) {
            return bad(
                format!(
                    "rate of {rate} IOPS is beyond what the engine paces: use at most {MAX_RATE_IOPS}"
                ),
                &[RateIops],
            );
        }
        let data = &w.write_data;
        if data.compress_percent > 100 || data.dedupe_percent > 100 {
            return bad(
                format!(
                    "compress {}% / dedupe {}%: use 0 to 100",
                    data.compress_percent, data.dedupe_percent
                ),
                &[CompressPercent, DedupePercent],
            );
        }
        if data.verify && !w.pattern.issues(OpKind::Write) {
            return bad(
                format!(
                    "data verification checks what this run writes, and {} writes nothing: use randwrite, randrw or write",
                    w.pattern
                ),
                &[Verify, Pattern],
            );
        }
        if data.verify && data.dedupe_percent > 0 {
            return bad(
                "data verification gives every block its own header, so no block can repeat another: drop deduplication or verification".into(),
                &[DedupePercent, Verify],
            );
        }
        Ok(())
    }

    /// I/Os each target keeps in flight: [`Workload::iodepth`], times
    /// [`Workload::numjobs`] when given (each job keeps the whole depth, fio's meaning).
    /// What a verdict's depth rules, a suite, fio's JSON and the tables read.
    pub fn in_flight_per_target(&self) -> u64 {
        Workload::in_flight(self.iodepth, self.numjobs)
    }

    /// Bytes of I/O buffers a run of this workload over `targets` targets allocates (and
    /// registers with its rings, so pins: what a memlock limit must allow): one buffer per
    /// I/O in flight ([`Workload::in_flight_per_target`]) per kind that carries data, so a
    /// read and a write buffer when the pattern does both (a write never carries back what a
    /// read brought), none for trims. What the engine's memory check and `hostmax doctor`'s
    /// memlock check both read.
    pub fn buffer_bytes(&self, targets: usize) -> u64 {
        let kinds = OpKind::ALL
            .into_iter()
            .filter(|&op| op.buffer_use() != BufferUse::None && self.pattern.issues(op))
            .count() as u64;
        targets as u64 * self.in_flight_per_target() * u64::from(self.block_size) * kinds
    }

    /// [`Workload::in_flight_per_target`] of a workload with this `iodepth` and `numjobs`,
    /// for those that keep only the two numbers (a report's summary, a suite's settings).
    pub fn in_flight(iodepth: u32, numjobs: Option<u32>) -> u64 {
        u64::from(iodepth) * u64::from(numjobs.unwrap_or(1))
    }
}

/// What a worker does when one of its devices fails an I/O ([`crate::RunConfig::on_error`]).
/// The default is [`ErrorPolicy::StopDevice`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ErrorPolicy {
    /// Keep submitting to the device; every failure is counted.
    Continue,
    /// Stop submitting to the failing device (its in-flight I/O drains); the others go on.
    #[default]
    StopDevice,
    /// Stop the whole run at the first failure.
    StopAll,
}

impl ErrorPolicy {
    /// The policy's name, as [`ErrorPolicy::from_str`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorPolicy::Continue => "continue",
            ErrorPolicy::StopDevice => "stop-device",
            ErrorPolicy::StopAll => "stop-all",
        }
    }
}

impl FromStr for ErrorPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            ErrorPolicy::Continue,
            ErrorPolicy::StopDevice,
            ErrorPolicy::StopAll,
        ]
        .into_iter()
        .find(|p| p.name() == s)
        .ok_or_else(|| format!("unknown error policy '{s}': use continue, stop-device or stop-all"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_batch_is_one_to_the_most_in_flight() {
        for ok in [1, 8, MAX_IODEPTH] {
            assert!(Workload::default().with_complete_batch(ok).check().is_ok());
        }
        for bad in [0, MAX_IODEPTH + 1] {
            let err = Workload::default()
                .with_complete_batch(bad)
                .check()
                .unwrap_err();
            assert_eq!(err.settings, vec![Setting::CompleteBatch], "{bad}");
        }
        assert_eq!(Workload::default().complete_batch, 1);
    }

    #[test]
    fn a_device_keeps_every_jobs_depth_in_flight_and_the_check_counts_it() {
        let w = |iodepth, numjobs| Workload {
            iodepth,
            numjobs,
            ..Workload::default()
        };
        assert_eq!(w(32, None).in_flight_per_target(), 32);
        assert_eq!(w(1, Some(4)).in_flight_per_target(), 4);
        assert!(w(1024, Some(4)).check().is_ok());
        let err = w(1025, Some(4)).check().unwrap_err();
        assert_eq!(err.settings, [Setting::Numjobs, Setting::Iodepth]);
        assert!(err.message.contains("4100 I/Os in flight"), "{err}");
        for bad in [0, MAX_IODEPTH + 1] {
            assert_eq!(
                w(bad, None).check().unwrap_err().settings,
                [Setting::Iodepth]
            );
        }
        let odd = Workload {
            block_size: 3000,
            ..Workload::default()
        };
        assert!(odd.check().unwrap_err().message.contains("2560 or 3072"));
    }
}
