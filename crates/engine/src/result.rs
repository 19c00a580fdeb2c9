//! What a run measured: per-device counts, latency histograms and errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histograms track: one hour, in nanoseconds. Higher values are clamped
/// to it and still counted (no I/O is ever dropped from a histogram).
pub const LATENCY_HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant figures of every latency histogram (0.1% resolution).
pub const LATENCY_SIGFIG: u8 = 3;
/// How many failed I/Os per device keep their offset in [`ErrorLog::first`].
pub const ERROR_SAMPLES: usize = 8;

/// A latency histogram as every hostmax histogram is made: nanoseconds from 1 ns, 3
/// significant figures, growing its range as larger values arrive (up to
/// [`LATENCY_HIGHEST_NS`], where [`record_latency`] clamps). All of them share one bin layout,
/// so adding any two is exact; memory follows the largest latency seen (about 150 KiB for
/// 100 ms) instead of the whole hour, which keeps 32 devices' histograms small.
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new(LATENCY_SIGFIG).expect("constant histogram precision is valid")
}

/// Records one latency, clamped to [`LATENCY_HIGHEST_NS`].
#[inline]
pub fn record_latency(histogram: &mut Histogram<u64>, nanos: u64) {
    // Cannot fail: the value is within the clamped range, and growing only allocates.
    let _ = histogram.record(nanos.min(LATENCY_HIGHEST_NS));
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// A read.
    Read,
    /// A write.
    Write,
}

/// Successful I/Os of one kind on one device in the measured window.
#[derive(Debug, Clone)]
pub struct OpResult {
    /// I/Os whose result equalled the requested length and completed in the window.
    pub ios: u64,
    /// Bytes those I/Os moved.
    pub bytes: u64,
    /// Their latencies in nanoseconds, submit to reap (empty when latency recording is off).
    pub latency: Histogram<u64>,
}

impl Default for OpResult {
    fn default() -> Self {
        OpResult {
            ios: 0,
            bytes: 0,
            latency: new_latency_histogram(),
        }
    }
}

/// One failed I/O kept as an example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoErrorSample {
    /// Read or write.
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

/// Every I/O on a device whose result was not its requested length, at any time of the run
/// (ramp included): none of them counts as an I/O.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorLog {
    /// Failed I/Os in all.
    pub count: u64,
    /// Failed I/Os per errno (0 stands for short transfers).
    pub by_errno: BTreeMap<i32, u64>,
    /// The first [`ERROR_SAMPLES`] failures.
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

/// What one device did in a run.
#[derive(Debug, Clone)]
pub struct DeviceResult {
    /// The path the device was opened by (canonical).
    pub path: PathBuf,
    /// The CPU its worker was pinned to.
    pub cpu: usize,
    /// Reads in the measured window.
    pub read: OpResult,
    /// Writes in the measured window.
    pub write: OpResult,
    /// Failed I/Os over the whole run.
    pub errors: ErrorLog,
    /// Whether the device was taken out of the run after a failure (`ErrorPolicy::StopDevice`).
    pub failed: bool,
}

/// What one worker thread was and ran with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerSummary {
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Indices of the targets it drove.
    pub devices: Vec<usize>,
    /// The ring features the kernel accepted.
    pub ring: crate::RingFeatures,
}

/// The result of a whole run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// One entry per target, in the order the targets were given.
    pub devices: Vec<DeviceResult>,
    /// Length of the measured window (shorter than the runtime when the run was stopped early).
    pub measured: Duration,
    /// Whether [`crate::RunHandle::stop`] ended the run before its runtime.
    pub stopped_early: bool,
    /// One entry per worker thread.
    pub workers: Vec<WorkerSummary>,
}

/// One second of one device, sent while the run goes on (see [`crate::RunHandle::recv_interval`]).
#[derive(Debug, Clone)]
pub struct DeviceInterval {
    /// Index of the device in the run's target list.
    pub device: usize,
    /// Second index: 0 is the first second after the ramp; negative seconds are ramp.
    pub second: i64,
    /// Successful reads that completed in this second.
    pub read_ios: u64,
    /// Successful writes that completed in this second.
    pub write_ios: u64,
    /// Bytes read in this second.
    pub read_bytes: u64,
    /// Bytes written in this second.
    pub write_bytes: u64,
    /// Failed I/Os in this second.
    pub errors: u64,
    /// Read latencies of this second.
    pub read_latency: Histogram<u64>,
    /// Write latencies of this second.
    pub write_latency: Histogram<u64>,
}
