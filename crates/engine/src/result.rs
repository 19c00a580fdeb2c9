//! What a run measured: per-device counts, latency histograms and errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::mismatch::{MismatchKind, VerifyMismatch};
use crate::op::{KeyedVisitor, OpKind, PerOp};
use crate::workload::Workload;

/// Highest latency the histograms track: one hour, in nanoseconds. Higher values are clamped
/// to it and still counted (no I/O is ever dropped from a histogram).
pub const LATENCY_HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant figures of every latency histogram (0.1% resolution).
pub const LATENCY_SIGFIG: u8 = 3;
/// How many failed I/Os per device keep their offset in [`ErrorLog::first`].
pub(crate) const ERROR_SAMPLES: usize = 8;

/// A latency histogram as every hostmax histogram is made: nanoseconds from 1 ns, 3
/// significant figures, growing its range as larger values arrive (up to
/// [`LATENCY_HIGHEST_NS`], where the engine clamps). All of them share one bin layout,
/// so adding any two is exact; memory follows the largest latency seen (about 150 KiB for
/// 100 ms) instead of the whole hour, which keeps 32 devices' histograms small.
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new(LATENCY_SIGFIG).expect("constant histogram precision is valid")
}

/// Records one latency, clamped to [`LATENCY_HIGHEST_NS`] (a test hook: public with the
/// `test-hooks` feature).
#[inline]
pub fn record_latency(histogram: &mut Histogram<u64>, nanos: u64) {
    // Cannot fail: the value is within the clamped range, and growing only allocates.
    let _ = histogram.record(nanos.min(LATENCY_HIGHEST_NS));
}

/// Records `count` latencies of `nanos` nanoseconds at once, as [`record_latency`] would one
/// by one.
pub(crate) fn record_latencies(histogram: &mut Histogram<u64>, nanos: u64, count: u64) {
    // Cannot fail, as above.
    let _ = histogram.record_n(nanos.min(LATENCY_HIGHEST_NS), count);
}

/// Successful I/Os of one kind on one device in the measured window.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpResult {
    /// I/Os whose result equalled the requested length and completed in the window.
    pub ios: u64,
    /// Bytes those I/Os moved.
    pub bytes: u64,
    /// Their latencies in nanoseconds, submit to reap (empty when latency recording is off):
    /// the service time. With an offered rate, also those of the I/Os due within the window
    /// that completed after its end (counted in [`DeviceResult::drained`]), so that a stall
    /// at the end shows in full: the histogram may then hold more than `ios`.
    pub latency: Histogram<u64>,
    /// Their response times in nanoseconds, from each I/O's intended start on the offered
    /// rate's schedule ([`crate::Workload::rate_iops`]) to its reap: the service time plus
    /// any wait for a slot, which is where a stall shows. Empty without a rate (every I/O
    /// starts as soon as a slot frees, so response is service) or latency recording. Like
    /// `latency`, it holds the I/Os due within the window that completed after it.
    pub response: Histogram<u64>,
}

impl OpResult {
    /// `ios` I/Os that moved `bytes`, with their latencies (a histogram of the common layout,
    /// [`new_latency_histogram`]): for tools and tests that build or replay results.
    pub fn new(ios: u64, bytes: u64, latency: Histogram<u64>) -> OpResult {
        OpResult {
            ios,
            bytes,
            latency,
            response: new_latency_histogram(),
        }
    }

    /// The same, with `response` times from the I/Os' intended starts (a run with an offered
    /// rate; a histogram of the common layout).
    pub fn with_response(mut self, response: Histogram<u64>) -> OpResult {
        self.response = response;
        self
    }

    /// Adds another count of the same kind: counts summed, histograms bin by bin.
    pub fn add(&mut self, other: &OpResult) {
        self.ios += other.ios;
        self.bytes += other.bytes;
        // Same bounds by construction, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        if !other.response.is_empty() {
            let _ = self.response.add(&other.response);
        }
    }
}

impl Default for OpResult {
    /// No I/O, and an empty histogram of the common layout ([`new_latency_histogram`]).
    fn default() -> Self {
        OpResult {
            ios: 0,
            bytes: 0,
            latency: new_latency_histogram(),
            response: new_latency_histogram(),
        }
    }
}

/// One failed I/O kept as an example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IoErrorSample {
    /// What the I/O was.
    pub op: OpKind,
    /// Byte offset on the device.
    pub offset: u64,
    /// Requested length.
    pub len: u32,
    /// The positive errno, or 0 for a short transfer.
    pub errno: i32,
    /// Bytes transferred when the transfer was short, else 0.
    pub transferred: u32,
}

impl IoErrorSample {
    /// A failed `op` of `len` bytes at `offset`: `errno` (positive), or 0 with the bytes
    /// `transferred` for a short transfer.
    pub fn new(op: OpKind, offset: u64, len: u32, errno: i32, transferred: u32) -> IoErrorSample {
        IoErrorSample {
            op,
            offset,
            len,
            errno,
            transferred,
        }
    }
}

/// A device's verify results ([`crate::WriteData::verify`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VerifyLog {
    /// Reads checked during the run (of blocks this run wrote, with no write in flight).
    pub checked_during_run: u64,
    /// Blocks read back and checked after the run (every block this run wrote, once).
    pub checked_after_run: u64,
    /// Blocks whose content could not be predicted (a failed write, or overlapping writes to
    /// one block) and so were not checked.
    pub unknown: u64,
    /// Written blocks never read back after the run, by why: the read-back of a device that
    /// stopped answering, or one a stop ended, checks only part of what was written, and says
    /// how much it left.
    #[serde(default)]
    pub not_read_back: NotReadBack,
    /// Reads of the read-back given up on and left to the kernel: in flight when their device
    /// stopped answering, or still in flight [`crate::READ_BACK_STOP_GRACE`] after a stop.
    /// Their blocks are counted in [`VerifyLog::not_read_back`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reads_left_in_flight: u64,
    /// Checks that failed, in all.
    pub mismatches: u64,
    /// Failed checks by kind.
    pub corruption: u64,
    /// See [`MismatchKind::Misdirected`].
    pub misdirected: u64,
    /// See [`MismatchKind::LostWrite`].
    pub lost_write: u64,
    /// The first 8 failures.
    pub first: Vec<VerifyMismatch>,
}

impl VerifyLog {
    /// Counts one failure, keeping it as an example while there is room.
    pub fn record(&mut self, m: VerifyMismatch) {
        self.mismatches += 1;
        match m.kind {
            MismatchKind::Corruption => self.corruption += 1,
            MismatchKind::Misdirected => self.misdirected += 1,
            MismatchKind::LostWrite => self.lost_write += 1,
        }
        if self.first.len() < ERROR_SAMPLES {
            self.first.push(m);
        }
    }

    /// Adds another device's results (keeping the first examples).
    pub fn add(&mut self, other: &VerifyLog) {
        self.checked_during_run += other.checked_during_run;
        self.checked_after_run += other.checked_after_run;
        self.unknown += other.unknown;
        self.not_read_back.stalled += other.not_read_back.stalled;
        self.not_read_back.interrupted += other.not_read_back.interrupted;
        self.reads_left_in_flight += other.reads_left_in_flight;
        self.mismatches += other.mismatches;
        self.corruption += other.corruption;
        self.misdirected += other.misdirected;
        self.lost_write += other.lost_write;
        for m in &other.first {
            if self.first.len() < ERROR_SAMPLES {
                self.first.push(m.clone());
            }
        }
    }
}

/// Written blocks the read-back after a `--verify` run did not check ([`VerifyLog`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NotReadBack {
    /// Blocks of a device that stopped answering, during the run
    /// ([`DeviceResult::stalled_in_flight`]: none of its blocks is read back) or during the
    /// read-back (no completion for [`crate::DRAIN_LIMIT`]).
    pub stalled: u64,
    /// Blocks still unchecked when a stop from outside (SIGINT, SIGTERM,
    /// [`crate::RunHandle::stop`]) ended the read-back, or came before it.
    pub interrupted: u64,
}

impl NotReadBack {
    /// Every block not read back, whatever the reason.
    pub fn total(&self) -> u64 {
        self.stalled + self.interrupted
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Every I/O on a device whose result was not its requested length, at any time of the run
/// (ramp included): none of them counts as an I/O.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorLog {
    /// Failed I/Os in all.
    pub count: u64,
    /// Failed I/Os per errno (0 stands for short transfers).
    pub by_errno: BTreeMap<i32, u64>,
    /// The first 8 failures.
    pub first: Vec<IoErrorSample>,
}

impl ErrorLog {
    /// Counts one failure, keeping it as an example while there is room.
    pub fn record(&mut self, sample: IoErrorSample) {
        self.count += 1;
        *self.by_errno.entry(sample.errno).or_insert(0) += 1;
        if self.first.len() < ERROR_SAMPLES {
            self.first.push(sample);
        }
    }

    /// Adds another log's failures to this one.
    pub fn merge(&mut self, other: &ErrorLog) {
        self.count += other.count;
        for (errno, n) in &other.by_errno {
            *self.by_errno.entry(*errno).or_insert(0) += n;
        }
        for s in &other.first {
            if self.first.len() < ERROR_SAMPLES {
                self.first.push(s.clone());
            }
        }
    }
}

/// Successful I/Os outside the measured window, per kind: the ramp before it, or drained
/// after it. With the window's own I/Os and the errors they add up to every I/O the kernel
/// completed for the device. In JSON each kind is counted under its plural (`reads`,
/// `writes`, `trims`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounts(pub PerOp<u64>);

impl IoCounts {
    /// Every kind's count added up.
    pub fn total(&self) -> u64 {
        self.0.total()
    }

    /// Adds another count to this one.
    pub fn add(&mut self, other: &IoCounts) {
        self.0.add(&other.0);
    }
}

impl std::ops::Index<OpKind> for IoCounts {
    type Output = u64;

    fn index(&self, op: OpKind) -> &u64 {
        &self.0[op]
    }
}

impl std::ops::IndexMut<OpKind> for IoCounts {
    fn index_mut(&mut self, op: OpKind) -> &mut u64 {
        &mut self.0[op]
    }
}

impl Serialize for IoCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(OpKind::COUNT))?;
        self.0
            .serialize_keyed(&mut map, |op| format!("{}s", op.name()))?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for IoCounts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(KeyedVisitor {
                key: |key: &str| key.strip_suffix('s').and_then(OpKind::from_name),
                marker: std::marker::PhantomData,
            })
            .map(IoCounts)
    }
}

/// What the sampled reads of a device brought back: a read of a block that was never
/// written returns zeros (thin and cloud volumes serve it from metadata, without touching
/// media), so a run whose every sampled read was zeros measured nothing real.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadSamples {
    /// Successful reads checked (one in 8, ramp included).
    pub sampled: u64,
    /// Of those, the ones whose first and last 8 bytes were all zero.
    pub zero: u64,
}

impl ReadSamples {
    /// Whether reads were sampled and every one of them was zeros.
    pub fn all_zero(&self) -> bool {
        self.sampled > 0 && self.zero == self.sampled
    }

    /// Adds another device's samples.
    pub fn add(&mut self, other: &ReadSamples) {
        self.sampled += other.sampled;
        self.zero += other.zero;
    }
}

/// What one device did in a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DeviceResult {
    /// The path the device was opened by (canonical).
    pub path: PathBuf,
    /// The CPU its (first) worker was pinned to; every one is in [`DeviceResult::drivers`].
    pub cpu: usize,
    /// Each kind's I/Os in the measured window.
    pub ops: PerOp<OpResult>,
    /// Failed I/Os over the whole run.
    pub errors: ErrorLog,
    /// Whether the device was taken out of the run after a failure (`ErrorPolicy::StopDevice`).
    pub failed: bool,
    /// When it was taken out, from the start of the run (ramp included): the completion of
    /// the failed I/O was reaped then. Its I/O in flight still completes and counts.
    pub stopped_after: Option<Duration>,
    /// Successful I/Os that completed during the ramp.
    pub ramp: IoCounts,
    /// Successful I/Os that completed after the measured window (drained, or after a stop).
    /// With an offered rate these include the backlog worked off after the end
    /// ([`crate::BACKLOG_LIMIT`]): in no second and no rate, though their times are in the
    /// window's histograms ([`OpResult::latency`]).
    pub drained: IoCounts,
    /// Whether reads returned data or only zeros.
    pub read_samples: ReadSamples,
    /// The verify checks' results ([`crate::WriteData::verify`]); `None` without them.
    pub verify: Option<VerifyLog>,
    /// How its trims were issued; `None` when the workload does not trim.
    pub trim_method: Option<crate::TrimMethod>,
    /// The I/Os it still had in flight when the run gave up waiting for them
    /// ([`crate::DRAIN_LIMIT`] after the end, or as long without a completion during the
    /// `--verify` read-back): the device stopped answering. `None` when every I/O it was given
    /// completed.
    pub stalled_in_flight: Option<u64>,
    /// With an offered rate: I/Os due within the runtime that were never issued (the backlog
    /// still waiting [`crate::BACKLOG_LIMIT`] after the end, or at a stop). 0 otherwise.
    pub unissued: u64,
    /// The workers that drove it, one per share in share order, each with its part of the
    /// I/Os; the figures above are theirs added up (histograms bin by bin).
    pub drivers: Vec<DeviceDriver>,
}

/// One worker's share of a device ([`crate::DeviceShare`]) and what it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeviceDriver {
    /// The CPU the worker was pinned to.
    pub cpu: usize,
    /// Its part of the device, `0..parts`.
    pub part: u32,
    /// Successful I/Os of every kind it completed in the measured window.
    pub ios: u64,
    /// Its I/Os in flight ([`crate::Workload::iodepth`], or its part of it).
    pub iodepth: u32,
    /// Every I/O it completed over the whole run: ramp, window and drain, failed ones and
    /// `--verify`'s read-back too; the I/Os its worker's CPU time ([`CpuUse`]) paid for. 0
    /// in results of older versions.
    #[serde(default)]
    pub run_ios: u64,
}

impl DeviceDriver {
    /// The worker on `cpu` that drove part `part` at depth `iodepth` and completed `ios` in
    /// the window, and nothing outside it (`run_ios` is `ios` until
    /// [`DeviceDriver::with_run_ios`] says otherwise).
    pub fn new(cpu: usize, part: u32, iodepth: u32, ios: u64) -> DeviceDriver {
        DeviceDriver {
            cpu,
            part,
            ios,
            iodepth,
            run_ios: ios,
        }
    }

    /// The same, having completed `run_ios` I/Os over the whole run (see
    /// [`DeviceDriver::run_ios`]).
    pub fn with_run_ios(mut self, run_ios: u64) -> DeviceDriver {
        self.run_ios = run_ios;
        self
    }
}

impl DeviceResult {
    /// A device at `path`, driven from `cpu`, that did `ops` and nothing else (no errors, no
    /// ramp or drained I/O, not taken out): for tools and tests that build or replay results.
    pub fn new(path: PathBuf, cpu: usize, ops: PerOp<OpResult>) -> DeviceResult {
        DeviceResult {
            path,
            cpu,
            ops,
            ..DeviceResult::default()
        }
    }

    /// Adds what another worker's share of the same device did: counts and bytes summed,
    /// histograms added bin by bin (the same layout, so exactly), errors and verify results
    /// merged, taken out if either was (at the earlier time), its drivers appended.
    pub fn absorb(&mut self, other: DeviceResult) {
        for (op, theirs) in other.ops.iter() {
            self.ops[op].add(theirs);
        }
        self.unissued += other.unissued;
        self.errors.merge(&other.errors);
        self.failed |= other.failed;
        self.stopped_after = match (self.stopped_after, other.stopped_after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.ramp.add(&other.ramp);
        self.drained.add(&other.drained);
        self.read_samples.add(&other.read_samples);
        self.verify = match (self.verify.take(), other.verify) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        self.trim_method = self.trim_method.or(other.trim_method);
        // A device stalls as a whole: its I/Os still in flight are every worker's added up.
        self.stalled_in_flight = match (self.stalled_in_flight, other.stalled_in_flight) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.drivers.extend(other.drivers);
        self.drivers.sort_by_key(|d| d.part);
    }
}

/// What one worker thread was and ran with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerSummary {
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Indices of the targets it drove.
    pub devices: Vec<usize>,
    /// The shares of those targets it drove.
    #[serde(default)]
    pub shares: Vec<crate::DeviceShare>,
    /// The ring features the kernel accepted.
    pub ring: crate::RingFeatures,
    /// The CPU time the worker used and how busy its CPU was.
    pub cpu_use: CpuUse,
}

/// CPU use of one worker thread from its start signal to the end of its loop (ramp, window
/// and drain): its own time (`getrusage(RUSAGE_THREAD)`), and how busy its CPU was with every
/// task on it (`/proc/stat`: the devices' kernel threads and interrupts share the CPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CpuUse {
    /// User time of the worker thread, in nanoseconds.
    pub user_ns: u64,
    /// System time of the worker thread (submitting and reaping I/O), in nanoseconds.
    pub system_ns: u64,
    /// Wall time over which both were measured, in nanoseconds.
    pub wall_ns: u64,
    /// Busy time of the whole CPU (all but idle and iowait) over the same span, in
    /// nanoseconds; `None` when `/proc/stat` could not be read.
    pub cpu_busy_ns: Option<u64>,
    /// All time of the CPU (busy plus idle) over that span, in nanoseconds.
    pub cpu_total_ns: Option<u64>,
}

impl CpuUse {
    /// Share of the wall time the worker thread ran (user plus system), 0..=1.
    pub fn busy_share(&self) -> f64 {
        if self.wall_ns == 0 {
            return 0.0;
        }
        ((self.user_ns + self.system_ns) as f64 / self.wall_ns as f64).min(1.0)
    }

    /// Share of its time the worker's CPU was busy with anything, 0..=1.
    pub fn cpu_busy_share(&self) -> Option<f64> {
        match (self.cpu_busy_ns, self.cpu_total_ns) {
            (Some(busy), Some(total)) if total > 0 => Some((busy as f64 / total as f64).min(1.0)),
            _ => None,
        }
    }

    /// Whether the worker's CPU had no time to spare while the worker had work for it: then
    /// the load generator, not the storage, may be what limits the figures. A worker that
    /// mostly slept (a rate cap, a slow device) is not limited by a CPU other tasks kept busy.
    pub fn saturated(&self) -> bool {
        match self.cpu_busy_share() {
            Some(cpu) => cpu >= CPU_SATURATED && self.busy_share() >= WORKER_BUSY_FLOOR,
            None => self.busy_share() >= CPU_SATURATED,
        }
    }
}

/// Share of the run a worker thread must have been on its CPU for a saturated CPU to count as
/// the load generator's limit.
pub const WORKER_BUSY_FLOOR: f64 = 0.1;

/// Busy share of a worker's CPU at or above which it counts as saturated.
pub const CPU_SATURATED: f64 = 0.9;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_cpu_saturates_only_a_worker_that_had_work() {
        let used = |thread_ms: u64, cpu_busy_ms: u64| CpuUse {
            user_ns: thread_ms * 500_000,
            system_ns: thread_ms * 500_000,
            wall_ns: 1_000_000_000,
            cpu_busy_ns: Some(cpu_busy_ms * 1_000_000),
            cpu_total_ns: Some(1_000_000_000),
        };
        assert!(used(400, 990).saturated());
        assert!(
            !used(20, 1000).saturated(),
            "a rate-capped worker on a busy CPU"
        );
        assert!(!used(400, 700).saturated());
        let no_proc = CpuUse {
            cpu_busy_ns: None,
            cpu_total_ns: None,
            ..used(950, 0)
        };
        assert!(no_proc.saturated());
    }
}

/// One in this many successful reads of a device has its buffer checked for zeros.
pub(crate) const READ_SAMPLE_EVERY: u64 = 8;

/// The result of a whole run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunResult {
    /// One entry per target, in the order the targets were given.
    pub devices: Vec<DeviceResult>,
    /// Length of the measured window: the runtime, or shorter when the run was stopped early
    /// or ran out of its I/O limit. Never longer: with an offered rate, a backlog worked off
    /// after the end counts as drained ([`DeviceResult::drained`], [`crate::BACKLOG_LIMIT`]).
    pub measured: Duration,
    /// Whether [`crate::RunHandle::stop`] ended the run before its runtime.
    pub stopped_early: bool,
    /// One entry per worker thread.
    pub workers: Vec<WorkerSummary>,
    /// The run's random id, mixed into every written block.
    pub run_id: u64,
    /// Wall-clock start of the measured window (the run's start plus its ramp; it lasted
    /// [`RunResult::measured`]); `None` in a result no run made.
    pub measured_from: Option<std::time::SystemTime>,
    /// The workload every target ran, as given (the report of a run is built from it).
    pub workload: Workload,
    /// Per target, the NUMA node whose CPUs drove it ([`crate::Placement::numa_nodes`]).
    pub numa_nodes: Vec<Option<u32>>,
    /// Whether some target had more workers than CPUs to give them
    /// ([`crate::Placement::oversubscribed`]).
    pub oversubscribed: bool,
}

impl RunResult {
    /// The result of `workload` on `devices` (in target order) over a measured window of
    /// `measured`, and nothing else (no workers, not stopped early, run id 0, no start time):
    /// for tools and tests that build or replay results. Set the rest on the value.
    pub fn new(workload: Workload, devices: Vec<DeviceResult>, measured: Duration) -> RunResult {
        RunResult {
            devices,
            measured,
            workload,
            ..RunResult::default()
        }
    }
}

/// One second of one device, sent while the run goes on (see [`crate::RunHandle::recv_interval`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DeviceInterval {
    /// Index of the device in the run's target list.
    pub device: usize,
    /// Second index: 0 is the first second after the ramp; negative seconds are ramp.
    pub second: i64,
    /// Each kind's successful I/Os that completed in this second, their bytes and latencies.
    pub ops: PerOp<OpResult>,
    /// Failed I/Os in this second.
    pub errors: u64,
    /// With an offered rate: I/Os due before the second's end that were not issued yet (the
    /// backlog, waiting for a slot). 0 without a rate.
    pub backlog: u64,
}

impl DeviceInterval {
    /// Adds another worker's counts of the same device and second (histograms bin by bin).
    pub(crate) fn absorb(&mut self, other: &DeviceInterval) {
        for (op, theirs) in other.ops.iter() {
            self.ops[op].add(theirs);
        }
        self.errors += other.errors;
        self.backlog += other.backlog;
    }

    /// Second `second` of device `device`: `ops` and `errors` failed I/Os (for tools and
    /// tests that feed a time series).
    pub fn new(device: usize, second: i64, ops: PerOp<OpResult>, errors: u64) -> DeviceInterval {
        DeviceInterval {
            device,
            second,
            ops,
            errors,
            backlog: 0,
        }
    }

    /// The same, with `backlog` I/Os due and not yet issued at the second's end.
    pub fn with_backlog(mut self, backlog: u64) -> DeviceInterval {
        self.backlog = backlog;
        self
    }
}
