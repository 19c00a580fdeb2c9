//! The host report: per-device and host figures of a run, the JSON root.

use hdrhistogram::Histogram;
use hostmax_engine::{
    new_latency_histogram, CpuUse, DeviceResult, ErrorLog, IoCounts, IoPattern, OpResult, PerOp,
    ReadSamples, RingFeatures, RunResult, TrimMethod, WorkerSummary, Workload,
};
use serde::{Deserialize, Serialize};

use crate::histogram_codec::EncodedHistograms;
use crate::latency::{add_exact, LatencySummary};
use crate::rfc3339::format_rfc3339;
use crate::series::SecondPoint;
use crate::verdict::Verdict;

/// Version of the JSON layout of [`HostReport`]; bumped when a field changes meaning, type or
/// shape, or goes. 2: `time_series` rates are floats and each second's `devices` entries are
/// objects naming their device (they were bare integers matched to `devices` by position).
pub const SCHEMA_VERSION: u32 = 2;

/// Counts, rates and latency of one kind of I/O over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OpSummary {
    /// Successful I/Os in the measured window.
    pub ios: u64,
    /// `ios` per measured second.
    pub iops: f64,
    /// Bytes those I/Os moved.
    pub bytes: u64,
    /// `bytes` per measured second.
    pub bytes_per_sec: f64,
    /// Their latency percentiles: the service time, from each I/O's submission to its
    /// completion.
    pub latency_ns: LatencySummary,
    /// With an offered rate (`workload.rate_iops`): their response-time percentiles, from
    /// each I/O's intended start on the rate's schedule to its completion, so the time an
    /// I/O waited for a stalled device counts. Absent without a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_ns: Option<LatencySummary>,
}

impl OpSummary {
    /// Summarizes `ios` I/Os of `bytes` whose latencies are in `latency`, over
    /// `measured_secs` seconds (rates are zero when the window is empty).
    pub fn new(ios: u64, bytes: u64, latency: &Histogram<u64>, measured_secs: f64) -> OpSummary {
        OpSummary {
            ios,
            iops: per_second(ios, measured_secs),
            bytes,
            bytes_per_sec: per_second(bytes, measured_secs),
            latency_ns: LatencySummary::from_histogram(latency),
            response_ns: None,
        }
    }

    /// The same, with the response-time percentiles of `response` (a run with an offered
    /// rate).
    pub fn with_response(mut self, response: &Histogram<u64>) -> OpSummary {
        self.response_ns = Some(LatencySummary::from_histogram(response));
        self
    }

    fn from_op(op: &OpResult, measured_secs: f64, paced: bool) -> OpSummary {
        let summary = OpSummary::new(op.ios, op.bytes, &op.latency, measured_secs);
        match paced {
            true => summary.with_response(&op.response),
            false => summary,
        }
    }

    /// The percentiles of the time a run judges by: response time with an offered rate (when
    /// recorded), service time otherwise.
    pub fn judged_latency(&self) -> &LatencySummary {
        self.response_ns.as_ref().unwrap_or(&self.latency_ns)
    }
}

fn per_second(count: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}

/// The figures of a device or of the whole host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Figures {
    /// IOPS of every kind together.
    pub iops: f64,
    /// Bytes per second of every kind together.
    pub bytes_per_sec: f64,
    /// Failed I/Os over the whole run, ramp included (none of them counts as an I/O).
    pub errors: u64,
    /// Each kind's figures, under its name at this level (`read`, `write`, `trim`).
    #[serde(flatten)]
    pub ops: PerOp<OpSummary>,
    /// Each kind's full latency histogram (HdrHistogram V2 + DEFLATE, base64), from
    /// which [`crate::merge_reports`] adds reports exactly; absent in reports of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<EncodedHistograms>,
    /// With an offered rate: each kind's full response-time histogram, encoded like
    /// `histograms`, so merges add response times exactly too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_histograms: Option<EncodedHistograms>,
    /// Successful I/Os that completed during the ramp (not in any rate).
    #[serde(default)]
    pub ramp: IoCounts,
    /// Successful I/Os that completed after the measured window (drained; not in any rate).
    /// `ramp + read.ios/write.ios + drained + errors` is every I/O hostmax issued that
    /// completed; the kernel's count (`/sys/block/DEV/stat` fields 1+2, 5+6, 12+13: a
    /// device's [`DeviceReport::kernel`]) is the same number when no I/O was larger than the
    /// device takes in one piece and nothing else used the device.
    #[serde(default)]
    pub drained: IoCounts,
    /// Sampled reads and how many of them were all zeros (blocks never written).
    #[serde(default)]
    pub read_samples: ReadSamples,
}

impl Figures {
    pub(crate) fn new(ops: PerOp<OpSummary>, errors: u64) -> Figures {
        Figures {
            iops: ops.values().map(|o| o.iops).sum(),
            bytes_per_sec: ops.values().map(|o| o.bytes_per_sec).sum(),
            errors,
            ops,
            histograms: None,
            response_histograms: None,
            ramp: IoCounts::default(),
            drained: IoCounts::default(),
            read_samples: ReadSamples::default(),
        }
    }

    /// Every successful I/O of the run, ramp and drain included, plus the failed ones: what
    /// the kernel completed.
    pub fn all_ios(&self) -> u64 {
        self.ramp.total() + self.ios() + self.drained.total() + self.errors
    }

    /// Whether reads were sampled and every one came back all zeros: the blocks were never
    /// written, and a thin or cloud volume serves them without touching its media.
    pub fn reads_all_zero(&self) -> bool {
        self.read_samples.all_zero()
    }

    /// Successful I/Os of every kind in the measured window.
    pub fn ios(&self) -> u64 {
        self.ops.values().map(|o| o.ios).sum()
    }
}

/// What a device is (WWID, serial, by-id names, size...): the device crate reads it
/// ([`hostmax_device::identity::identify`]); the aggregator only carries it.
pub use hostmax_device::DeviceIdentity;

/// The kernel's own count of a device's completed I/Os ([`hostmax_device::KernelCounts`],
/// read by the device crate from `/sys/block/DEV/stat`, merges included).
pub use hostmax_device::KernelCounts;

/// The kernel's count of a device's I/Os over a run, beside hostmax's, and why the two
/// differ. Taken by the caller (before the write-safety probe and after the drain, as the
/// hostmax tool does); the aggregator only carries it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KernelCount {
    /// `reads`, `writes`, `discards` as the kernel counted them.
    #[serde(flatten)]
    pub counts: KernelCounts,
    /// Why they are not hostmax's own (ramp, measured, drained and failed I/Os of the kind):
    /// I/Os split by the device's limits, the safety probe's reads, other processes' I/O.
    /// Absent when they are the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differs: Option<String>,
}

impl KernelCount {
    /// `counts`, with why they differ from hostmax's when they do.
    pub fn new(counts: KernelCounts, differs: Option<String>) -> KernelCount {
        KernelCount { counts, differs }
    }
}

/// One device's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeviceReport {
    /// The path the device was opened by, canonical (lossy if it is not UTF-8).
    pub path: String,
    /// The name the user gave it, when that is another name for `path` (a
    /// `/dev/disk/by-id/...` link, say); set by the caller, absent when it is `path` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<String>,
    /// The host the device is on; set in merged (fleet) reports, absent in a single host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The CPU its worker was pinned to.
    pub cpu: usize,
    /// IOPS, throughput, errors and latency, at the same JSON level as `path`.
    #[serde(flatten)]
    pub figures: Figures,
    /// Failed I/Os by errno (0 stands for short transfers), with the first few offsets.
    pub error_detail: ErrorLog,
    /// Whether the device was taken out of the run after a failed I/O
    /// ([`hostmax_engine::ErrorPolicy::StopDevice`]).
    #[serde(default)]
    pub failed: bool,
    /// When it was taken out, in seconds from the start of the measured window (negative:
    /// during the ramp); absent when it ran to the end. Its rates are then over its own
    /// active time (from the window's start to this, within the window), not the window's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_secs: Option<f64>,
    /// The verify checks of this device ([`hostmax_engine::WriteData::verify`]); absent
    /// without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<hostmax_engine::VerifyLog>,
    /// What the device is (WWID, serial, by-id names, size...), set by the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<DeviceIdentity>,
    /// How its trims were issued; absent when the run did not trim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim_method: Option<TrimMethod>,
    /// The kernel's count of the device's I/Os over the run, set by the caller; absent for a
    /// regular file (the kernel counts a file's I/O on the device under its filesystem,
    /// beside everything else there) and in reports made through the libraries alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCount>,
    /// The device stopped answering: the I/Os it still had in flight when the run stopped
    /// waiting ([`hostmax_engine::DRAIN_LIMIT`] after its end, or as long without a completion
    /// during the `--verify` read-back). Absent when every I/O completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_in_flight: Option<u64>,
    /// With an offered rate: I/Os due within the runtime that were never issued (a backlog
    /// still waiting [`hostmax_engine::BACKLOG_LIMIT`] after the end, or at a stop). Absent
    /// when every due I/O went out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unissued: Option<u64>,
    /// The workers that drove it, one per share of the device, each with its CPU and its
    /// part of the device's I/Os (absent in reports of older versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<DriverReport>,
    /// The NUMA node whose CPUs drove it, when its queues served every allowed CPU or it had
    /// no queue map and sysfs named its node; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// Whether every worker that drove it had a saturated CPU: its figures may be the load
    /// generator's limit, not the device's, and a promise it falls short of is not judged.
    #[serde(default)]
    pub load_generator_saturated: bool,
}

impl DeviceReport {
    /// hostmax's own count of kind `op` over the whole run: ramp, measured window and drain
    /// (failed I/Os are counted apart, in `errors`). What the kernel's count is compared with.
    pub fn whole_run_ios(&self, op: hostmax_engine::OpKind) -> u64 {
        self.figures.ramp.0[op] + self.figures.ops[op].ios + self.figures.drained.0[op]
    }
}

/// One worker's part in driving a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DriverReport {
    /// The CPU the worker was pinned to.
    pub cpu: usize,
    /// Its I/Os in flight on this device.
    pub iodepth: u32,
    /// Its successful I/Os in the measured window.
    pub ios: u64,
    /// Its share of the device's I/Os in the window (0..1).
    pub share: f64,
    /// Whether its CPU was saturated.
    pub saturated: bool,
}

impl DriverReport {
    /// The drivers of `device`: its result's shares, their CPUs' saturation from `workers`.
    fn of(device: &hostmax_engine::DeviceResult, workers: &[WorkerSummary]) -> Vec<DriverReport> {
        let total: u64 = device.drivers.iter().map(|d| d.ios).sum();
        device
            .drivers
            .iter()
            .map(|d| DriverReport {
                cpu: d.cpu,
                iodepth: d.iodepth,
                ios: d.ios,
                share: if total == 0 {
                    0.0
                } else {
                    d.ios as f64 / total as f64
                },
                saturated: workers
                    .iter()
                    .any(|w| w.cpu == d.cpu && w.cpu_use.saturated()),
            })
            .collect()
    }
}

/// One worker thread: where it ran, what io_uring gave it, and how much CPU it used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerReport {
    /// The CPU it was pinned to.
    pub cpu: usize,
    /// Indices (in `devices`) of the devices it drove.
    pub devices: Vec<usize>,
    /// The io_uring features the kernel accepted for its ring.
    pub ring: RingFeatures,
    /// User CPU seconds of the worker thread over the run (ramp, window and drain).
    pub user_secs: f64,
    /// System CPU seconds of the worker thread (submitting and reaping).
    pub system_secs: f64,
    /// Share of the run's wall time the worker thread was on its CPU (0..1).
    pub busy_share: f64,
    /// Share of the time its CPU was busy with anything (the devices' kernel threads and
    /// interrupts too), from `/proc/stat`; `null` where unreadable.
    pub cpu_busy_share: Option<f64>,
    /// Whether its CPU had no time to spare ([`hostmax_engine::CPU_SATURATED`] or more busy):
    /// the load generator may be what limited the figures.
    pub saturated: bool,
    /// Every I/O it completed over the run (ramp, window, drain, failed ones and
    /// `--verify`'s read-back): what `user_secs` and `system_secs` paid for. 0 in reports of
    /// older versions.
    #[serde(default)]
    pub ios: u64,
    /// Its CPU time per I/O, `(user_secs + system_secs) / ios`, in nanoseconds; `null`
    /// without I/Os (and in reports of older versions).
    #[serde(default)]
    pub cpu_ns_per_io: Option<f64>,
}

/// `cpu_ns` nanoseconds of CPU time over `ios` I/Os; `None` without I/Os.
pub fn cpu_ns_per_io(cpu_ns: f64, ios: u64) -> Option<f64> {
    (ios > 0).then(|| cpu_ns / ios as f64)
}

impl WorkerReport {
    /// Worker `w`, which completed `ios` I/Os over the run.
    fn new(w: &WorkerSummary, ios: u64) -> WorkerReport {
        let c: &CpuUse = &w.cpu_use;
        WorkerReport {
            cpu: w.cpu,
            devices: w.devices.clone(),
            ring: w.ring,
            user_secs: c.user_ns as f64 / 1e9,
            system_secs: c.system_ns as f64 / 1e9,
            busy_share: c.busy_share(),
            cpu_busy_share: c.cpu_busy_share(),
            saturated: c.saturated(),
            ios,
            cpu_ns_per_io: cpu_ns_per_io((c.user_ns + c.system_ns) as f64, ios),
        }
    }

    /// User plus system CPU time, in nanoseconds.
    pub fn cpu_ns(&self) -> f64 {
        (self.user_secs + self.system_secs) * 1e9
    }
}

/// The load generator itself: its workers, and whether it was the limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoadGenerator {
    /// Whether any worker's CPU was saturated: then the figures may be the load generator's
    /// limit, not the storage's.
    pub saturated: bool,
    /// One entry per worker thread.
    pub workers: Vec<WorkerReport>,
    /// hostmax's CPU time per I/O over the run, in nanoseconds: every worker's user and
    /// system time over every I/O they completed (not each worker's figure averaged). Compare
    /// it with `hostmax doctor`'s load generator ceiling, stated as CPU time per NOP: the
    /// nearer, the more of the run's CPU the loop itself took. `null` without I/Os (and in
    /// reports of older versions).
    #[serde(default)]
    pub cpu_ns_per_io: Option<f64>,
}

impl LoadGenerator {
    /// The load generator of a run: its `workers`, and from `devices`' drivers the I/Os each
    /// completed.
    pub fn new(workers: &[WorkerSummary], devices: &[DeviceResult]) -> LoadGenerator {
        let workers: Vec<WorkerReport> = workers
            .iter()
            .map(|w| WorkerReport::new(w, worker_run_ios(w, devices)))
            .collect();
        LoadGenerator {
            saturated: workers.iter().any(|w| w.saturated),
            cpu_ns_per_io: cpu_ns_per_io(
                workers.iter().map(WorkerReport::cpu_ns).sum(),
                workers.iter().map(|w| w.ios).sum(),
            ),
            workers,
        }
    }

    /// The io_uring features every worker got, and the ones hostmax always tries that some
    /// worker did not get (a fallback: e.g. fixed buffers refused by `RLIMIT_MEMLOCK`), as
    /// `(got, fell_back)` lists of names. SQPOLL and IOPOLL are only tried when asked for,
    /// and a ring the kernel refuses them is an error, never a fallback.
    pub fn ring_features(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        type Has = fn(&RingFeatures) -> bool;
        let sqpoll = self.workers.iter().any(|w| w.ring.sqpoll);
        let features: [(&'static str, Has, bool); 6] = [
            ("fixed buffers", |f| f.fixed_buffers, true),
            ("registered files", |f| f.fixed_files, true),
            // The kernel refuses DEFER_TASKRUN with SQPOLL, so it is not tried then.
            (
                "single issuer + defer taskrun",
                |f| f.defer_taskrun,
                !sqpoll,
            ),
            // Linux 6.6+; a kernel without it loses little, so it is no fallback to name.
            ("no SQ array", |f| f.no_sqarray, false),
            ("sqpoll", |f| f.sqpoll, false),
            ("iopoll", |f| f.iopoll, false),
        ];
        let mut got = Vec::new();
        let mut fell_back = Vec::new();
        for (name, has, always_tried) in features {
            let n = self.workers.iter().filter(|w| has(&w.ring)).count();
            if n > 0 && n == self.workers.len() {
                got.push(name);
            } else if always_tried && !self.workers.is_empty() {
                fell_back.push(name);
            }
        }
        (got, fell_back)
    }
}

/// The I/Os worker `w` completed over the run: those of the drivers of its shares (by part:
/// with `--numjobs` above the CPUs two workers of a device can share a CPU), or, in results
/// without shares, of its devices' drivers on its CPU.
fn worker_run_ios(w: &WorkerSummary, devices: &[DeviceResult]) -> u64 {
    let drivers = |i: usize| devices.get(i).into_iter().flat_map(|d| d.drivers.iter());
    if w.shares.is_empty() {
        return w
            .devices
            .iter()
            .flat_map(|&i| drivers(i).filter(|x| x.cpu == w.cpu))
            .map(|x| x.run_ios)
            .sum();
    }
    w.shares
        .iter()
        .flat_map(|s| drivers(s.device).filter(move |x| x.part == s.part && x.cpu == w.cpu))
        .map(|x| x.run_ios)
        .sum()
}

/// The workload as the report records it: durations in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkloadSummary {
    /// Access pattern, fio's name.
    pub pattern: IoPattern,
    /// Read share in percent the pattern gives (100 for reads, 0 for writes).
    pub rwmixread: u8,
    /// Bytes per I/O.
    pub block_size: u32,
    /// I/Os in flight per device, or per job when `numjobs` is set.
    pub iodepth: u32,
    /// Jobs per device (fio's numjobs), each keeping `iodepth` in flight; absent when the
    /// engine placed the workers by queue and split `iodepth` among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numjobs: Option<u32>,
    /// Bytes per device that I/O touches; `null` is the whole device.
    pub working_set: Option<u64>,
    /// Planned measured time.
    pub runtime_secs: f64,
    /// Ramp time before it.
    pub ramp_secs: f64,
    /// Seed of the random offsets.
    pub seed: u64,
    /// Offered IOPS per device, if any (each I/O then has an intended start, and the
    /// figures carry `response_ns`).
    pub rate_iops: Option<u64>,
    /// How the offered rate's I/Os arrived (`even` or `poisson`); absent without a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<hostmax_engine::Arrival>,
    /// Whether latencies were recorded (if not, every latency figure is zero).
    pub record_latency: bool,
    /// Completions each worker waited for before reaping ([`Workload::complete_batch`]):
    /// above 1, a latency includes the wait for the rest of its batch. Absent when 1.
    #[serde(default = "one_completion", skip_serializing_if = "is_one")]
    pub complete_batch: u32,
}

/// [`WorkloadSummary::complete_batch`] of a report that does not give it.
fn one_completion() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl WorkloadSummary {
    /// I/Os each device kept in flight: every job's depth
    /// ([`Workload::in_flight_per_target`]).
    pub fn in_flight_per_device(&self) -> u64 {
        Workload::in_flight(self.iodepth, self.numjobs)
    }
}

impl From<&Workload> for WorkloadSummary {
    fn from(w: &Workload) -> Self {
        WorkloadSummary {
            pattern: w.pattern,
            rwmixread: w.pattern.read_percent(w.rwmixread),
            block_size: w.block_size,
            iodepth: w.iodepth,
            numjobs: w.numjobs,
            working_set: w.working_set,
            runtime_secs: w.runtime.as_secs_f64(),
            ramp_secs: w.ramp.as_secs_f64(),
            seed: w.seed,
            rate_iops: w.rate_iops,
            arrival: w.rate_iops.map(|_| w.arrival),
            record_latency: w.record_latency,
            complete_batch: w.complete_batch,
        }
    }
}

/// Where a report came from: what lets a reader trace it to its run, and lets
/// [`crate::merge_reports`] refuse the same run twice or runs that did not run together.
/// Every field is optional: reports of older versions have none of them, and the aggregator
/// does no I/O, so the caller fills them in (the `hostmax` tool does). Flattened into the
/// report's root object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Provenance {
    /// A random id of this run, new for every run and every merge: 128 bits (32 hex digits)
    /// from the `hostmax` tool, the engine's 64-bit run id (16 hex digits) in a report made
    /// by [`summarize`] alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Wall-clock start of the measured window (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Wall-clock end of the measured window (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The hostmax version that wrote the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostmax_version: Option<String>,
    /// The commit the `hostmax` tool that wrote the report was built from: the full 40-hex
    /// sha (or what a packager gave), with `-dirty` appended when the tree had uncommitted
    /// changes. `None` when the build could not tell, in reports of older versions, and in a
    /// report made by this library alone ([`Provenance::of_run`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostmax_commit: Option<String>,
    /// The command line, one element per argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<Vec<String>>,
    /// The kernel release (`uname -r`) of the host that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

impl Provenance {
    /// What a report made by [`summarize`] knows of its run without doing I/O: the engine's
    /// run id ([`RunResult::run_id`], the one stamped into every block the run wrote, as 16
    /// hex digits; none for a result that carries none), the measured window the engine
    /// recorded ([`RunResult::measured_from`] plus [`RunResult::measured`]) and this
    /// library's version. The library does not know which commit the program using it was
    /// built from, so [`Provenance::hostmax_commit`] is left `None`. The command line and
    /// kernel are the caller's to add (the `hostmax` tool replaces the whole with its own,
    /// [`Provenance::run_id`] and its commit included).
    pub fn of_run(result: &RunResult) -> Provenance {
        Provenance {
            run_id: (result.run_id != 0).then(|| format!("{:016x}", result.run_id)),
            started_at: result.measured_from.map(format_rfc3339),
            ended_at: result
                .measured_from
                .map(|from| format_rfc3339(from + result.measured)),
            hostmax_version: Some(env!("CARGO_PKG_VERSION").to_string()),
            ..Provenance::default()
        }
    }
}

/// Everything a run found, per device and for the host: the root of a run's JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The host that ran it (set by the caller: the aggregator does no I/O); absent in a merged
    /// report, whose devices name their hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// In a merged report ([`crate::merge_reports`]): the hosts it adds up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetSummary>,
    /// Run id, measured window's wall-clock start and end, version and commit, command line,
    /// kernel.
    #[serde(flatten)]
    pub provenance: Provenance,
    /// What ran.
    pub workload: WorkloadSummary,
    /// Length of the measured window in seconds; every rate is per this (a device taken out
    /// early: per its own active time, see [`DeviceReport::stopped_at_secs`]).
    pub measured_secs: f64,
    /// Whether the run was stopped before its planned runtime.
    #[serde(default)]
    pub interrupted: bool,
    /// The signal that stopped it (`SIGINT`, `SIGTERM`, `SIGHUP`, `SIGQUIT`), set by the
    /// caller that heard it; absent when none did, and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    /// The host: sums over devices, latency from the exactly merged histograms.
    pub host: Figures,
    /// One entry per device, in the order the targets were given.
    pub devices: Vec<DeviceReport>,
    /// One host point per measured second.
    pub time_series: Vec<SecondPoint>,
    /// The verdict, when the run was judged against a spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The workers' CPU use and io_uring features; absent in merged reports and older ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_generator: Option<LoadGenerator>,
    /// The verify checks over every device ([`hostmax_engine::WriteData::verify`]); absent
    /// without them. A mismatch is bad data on the device: [`HostReport::verify_failed`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<hostmax_engine::VerifyLog>,
}

impl HostReport {
    /// Whether the verify checks found any block wrong.
    pub fn verify_failed(&self) -> bool {
        self.verify.as_ref().is_some_and(|v| v.mismatches > 0)
    }

    /// Whether a device stopped answering: it still had I/O in flight when the run stopped
    /// waiting for it ([`DeviceReport::stalled_in_flight`]).
    pub fn stalled(&self) -> bool {
        self.devices.iter().any(|d| d.stalled_in_flight.is_some())
    }
}

/// The sum of the devices' verify logs, if any device has one.
pub(crate) fn sum_verify<'a>(
    logs: impl Iterator<Item = Option<&'a hostmax_engine::VerifyLog>>,
) -> Option<hostmax_engine::VerifyLog> {
    let mut sum: Option<hostmax_engine::VerifyLog> = None;
    for log in logs.flatten() {
        sum.get_or_insert_with(Default::default).add(log);
    }
    sum
}

/// The host's latency histogram of each kind: the bin-by-bin sum of every device's.
///
/// Kept apart from [`HostReport`] (which only carries their percentiles) so that a caller can
/// serialize or compare the full histograms.
#[derive(Debug, Clone)]
pub struct HostHistograms(pub PerOp<Histogram<u64>>);

impl HostHistograms {
    /// Adds up each kind's histograms of every device of `result`.
    pub fn merge(result: &RunResult) -> HostHistograms {
        let mut sum = PerOp::from_fn(|_| new_latency_histogram());
        for device in &result.devices {
            for (op, h) in sum.iter_mut() {
                add_exact(h, &device.ops[op].latency);
            }
        }
        HostHistograms(sum)
    }

    /// Adds up each kind's response-time histograms of every device of `result` (empty
    /// without an offered rate).
    pub fn merge_response(result: &RunResult) -> PerOp<Histogram<u64>> {
        let mut sum = PerOp::from_fn(|_| new_latency_histogram());
        for device in &result.devices {
            for (op, h) in sum.iter_mut() {
                add_exact(h, &device.ops[op].response);
            }
        }
        sum
    }
}

/// Builds the report of a run: per-device figures, host figures from the merged histograms,
/// and the time series collected during the run (see [`crate::TimeSeries`]). The workload
/// the report records is the one the run carries ([`RunResult::workload`]).
pub fn summarize(result: &RunResult, series: Vec<SecondPoint>) -> HostReport {
    summarize_with_histograms(result, series).0
}

/// [`summarize`], also handing back the merged host histograms.
pub fn summarize_with_histograms(
    result: &RunResult,
    mut series: Vec<SecondPoint>,
) -> (HostReport, HostHistograms) {
    let workload = &result.workload;
    // The series knows devices by index only: name each second's entries like `devices`.
    for point in &mut series {
        for (entry, device) in point.devices.iter_mut().zip(&result.devices) {
            if entry.path.is_empty() {
                entry.path = device.path.to_string_lossy().into_owned();
            }
        }
    }
    let secs = result.measured.as_secs_f64();
    let ramp = workload.ramp.as_secs_f64();
    // Response times exist when a rate was offered and I/Os were timed.
    let paced = workload.rate_iops.is_some() && workload.record_latency;
    let devices = result
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let drivers = DriverReport::of(d, &result.workers);
            let stopped_at_secs = d.stopped_after.map(|t| t.as_secs_f64() - ramp);
            // A device taken out early is rated over the part of the window it ran in.
            let active_secs = stopped_at_secs.map_or(secs, |t| t.clamp(0.0, secs));
            DeviceReport {
                path: d.path.to_string_lossy().into_owned(),
                given: None,
                host: None,
                cpu: d.cpu,
                figures: Figures {
                    // Encoding only fails for a count above i64::MAX, which no run reaches.
                    histograms: EncodedHistograms::encode(&d.ops.map(|_, o| &o.latency)).ok(),
                    response_histograms: paced
                        .then(|| EncodedHistograms::encode(&d.ops.map(|_, o| &o.response)).ok())
                        .flatten(),
                    ramp: d.ramp,
                    drained: d.drained,
                    read_samples: d.read_samples,
                    ..Figures::new(
                        d.ops.map(|_, o| OpSummary::from_op(o, active_secs, paced)),
                        d.errors.count,
                    )
                },
                error_detail: d.errors.clone(),
                failed: d.failed,
                stopped_at_secs,
                verify: d.verify.clone(),
                identity: None,
                trim_method: d.trim_method,
                kernel: None,
                stalled_in_flight: d.stalled_in_flight,
                unissued: (d.unissued > 0).then_some(d.unissued),
                load_generator_saturated: !drivers.is_empty()
                    && drivers.iter().all(|d| d.saturated),
                drivers,
                numa_node: result.numa_nodes.get(i).copied().flatten(),
            }
        })
        .collect::<Vec<_>>();

    let histograms = HostHistograms::merge(result);
    let response = HostHistograms::merge_response(result);
    let host_ops = histograms.0.map(|op, latency| {
        let (ios, bytes) = result.devices.iter().fold((0, 0), |(ios, bytes), d| {
            (ios + d.ops[op].ios, bytes + d.ops[op].bytes)
        });
        let summary = OpSummary::new(ios, bytes, latency, secs);
        match paced {
            true => summary.with_response(&response[op]),
            false => summary,
        }
    });
    let host = Figures {
        histograms: EncodedHistograms::encode(&histograms.0).ok(),
        response_histograms: paced
            .then(|| EncodedHistograms::encode(&response).ok())
            .flatten(),
        ..sum_counts(devices.iter().map(|d| &d.figures)).with_ops(
            host_ops,
            result.devices.iter().map(|d| d.errors.count).sum(),
        )
    };

    let report = HostReport {
        schema_version: SCHEMA_VERSION,
        hostname: None,
        fleet: None,
        provenance: Provenance::of_run(result),
        workload: WorkloadSummary::from(workload),
        measured_secs: secs,
        interrupted: result.stopped_early,
        interrupted_by: None,
        host,
        devices,
        time_series: series,
        verdict: None,
        load_generator: (!result.workers.is_empty())
            .then(|| LoadGenerator::new(&result.workers, &result.devices)),
        verify: sum_verify(result.devices.iter().map(|d| d.verify.as_ref())),
    };
    (report, histograms)
}

/// Figures whose ramp, drained and read-sample counts are the sums of `parts`' (the rest is
/// filled in by [`Figures::with_ops`]).
pub(crate) fn sum_counts<'a>(parts: impl Iterator<Item = &'a Figures>) -> Figures {
    let mut sum = Figures::default();
    for f in parts {
        sum.ramp.add(&f.ramp);
        sum.drained.add(&f.drained);
        sum.read_samples.add(&f.read_samples);
    }
    sum
}

impl Figures {
    /// These counts with the given summaries of each kind and error count.
    pub(crate) fn with_ops(self, ops: PerOp<OpSummary>, errors: u64) -> Figures {
        Figures {
            ramp: self.ramp,
            drained: self.drained,
            read_samples: self.read_samples,
            ..Figures::new(ops, errors)
        }
    }
}

/// One host of a merged report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FleetHost {
    /// Its hostname (or, for a report without one, the name it was given to the merge).
    pub hostname: String,
    /// Its measured window in seconds.
    pub measured_secs: f64,
    /// Whether its run was interrupted.
    pub interrupted: bool,
    /// How many devices it ran.
    pub devices: usize,
    /// Its successful reads plus writes.
    pub ios: u64,
    /// Its IOPS.
    pub iops: f64,
    /// Its bytes per second.
    pub bytes_per_sec: f64,
    /// Its failed I/Os.
    pub errors: u64,
    /// Where its report came from: run id, measured window, version, command line, kernel
    /// (absent in reports of older versions). Flattened: the same keys as a report's root.
    #[serde(flatten)]
    pub provenance: Provenance,
    /// The seed of its random offsets (seeds may differ between hosts; each is listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// What a merged report adds up: the `fleet` object of its JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FleetSummary {
    /// One entry per host, in the order the reports were given (a merged report given to a
    /// merge contributes all its hosts).
    pub hosts: Vec<FleetHost>,
}

with_setters!(Provenance {
    with_run_id => run_id: Option<String>,
    with_started_at => started_at: Option<String>,
    with_ended_at => ended_at: Option<String>,
    with_hostmax_version => hostmax_version: Option<String>,
    with_hostmax_commit => hostmax_commit: Option<String>,
    with_command_line => command_line: Option<Vec<String>>,
    with_kernel => kernel: Option<String>,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_batch_is_in_the_json_when_it_is_not_one() {
        let summary = |batch| {
            serde_json::to_value(WorkloadSummary::from(
                &Workload::default().with_complete_batch(batch),
            ))
            .unwrap()
        };
        assert_eq!(summary(8)["complete_batch"], 8);
        let mut one = summary(1);
        assert!(one.get("complete_batch").is_none(), "{one}");
        // A report of a version that did not say reaped completion by completion.
        one.as_object_mut().unwrap().remove("complete_batch");
        let read: WorkloadSummary = serde_json::from_value(one).unwrap();
        assert_eq!(read.complete_batch, 1);
    }
    use hostmax_engine::{DeviceResult, IoErrorSample, OpKind};
    use std::path::PathBuf;
    use std::time::Duration;

    fn op(latencies: &[u64], bs: u64) -> OpResult {
        let mut o = OpResult::default();
        for &l in latencies {
            o.latency.record(l).unwrap();
        }
        o.ios = latencies.len() as u64;
        o.bytes = o.ios * bs;
        o
    }

    fn device(path: &str, cpu: usize, read: OpResult, write: OpResult) -> DeviceResult {
        DeviceResult::new(
            PathBuf::from(path),
            cpu,
            PerOp::from_fn(|op| match op {
                OpKind::Read => read.clone(),
                OpKind::Write => write.clone(),
                _ => OpResult::default(),
            }),
        )
    }

    /// Deterministic, widely spread latencies (a few hundred ns to a few hundred ms).
    fn latencies(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let exp = x % 20; // 2^0 .. 2^19 times a base
                200 + (x >> 32) % 1_000 * (1 << exp)
            })
            .collect()
    }

    fn run(devices: Vec<DeviceResult>, secs: u64) -> RunResult {
        run_of(devices, secs, Workload::default())
    }

    /// A run of `workload` (a `RunResult` is the engine's to build: its fields are set here).
    fn run_of(devices: Vec<DeviceResult>, secs: u64, workload: Workload) -> RunResult {
        let mut result = RunResult::default();
        result.devices = devices;
        result.measured = Duration::from_secs(secs);
        result.workload = workload;
        result
    }

    /// With an offered rate, each device's and the host's response times are read off the
    /// response histograms (the host's added bin by bin), beside the service times; without
    /// one there are none.
    #[test]
    fn response_times_are_reported_and_merged_exactly_only_with_a_rate() {
        let paced = |service: &[u64], waited: u64| {
            let response: Vec<u64> = service.iter().map(|s| s + waited).collect();
            let mut h = new_latency_histogram();
            response.iter().for_each(|&v| h.record(v).unwrap());
            op(service, 4096).with_response(h)
        };
        let (a, b) = (latencies(1, 5_000), latencies(2, 3_000));
        let devices = vec![
            device("/dev/a", 0, paced(&a, 0), OpResult::default()),
            device("/dev/b", 1, paced(&b, 400_000_000), OpResult::default()),
        ];
        let rated = Workload::default().with_rate_iops(Some(1000));
        let report = summarize(&run_of(devices.clone(), 8, rated), vec![]);
        let mut all = new_latency_histogram();
        for (values, waited) in [(&a, 0), (&b, 400_000_000)] {
            values.iter().for_each(|&v| all.record(v + waited).unwrap());
        }
        let host = &report.host.ops[OpKind::Read];
        assert_eq!(host.response_ns, Some(LatencySummary::from_histogram(&all)));
        assert_eq!(Some(host.judged_latency()), host.response_ns.as_ref());
        assert!(
            host.latency_ns.p50 < host.judged_latency().p50,
            "service time is apart"
        );
        assert_eq!(
            report.devices[0].figures.ops[OpKind::Read].response_ns,
            Some(report.devices[0].figures.ops[OpKind::Read].latency_ns),
            "no wait: response is service"
        );
        let unrated = summarize(&run_of(devices, 8, Workload::default()), vec![]);
        assert_eq!(unrated.host.ops[OpKind::Read].response_ns, None);
        assert!(unrated.host.response_histograms.is_none());
    }

    #[test]
    fn merged_host_percentiles_equal_one_histogram_fed_every_value() {
        let a = latencies(1, 50_000);
        let b: Vec<u64> = latencies(2, 30_000).iter().map(|v| v * 3).collect();
        let wa = latencies(3, 7_000);
        let wb = latencies(4, 11_000);
        let result = run(
            vec![
                device("/dev/a", 0, op(&a, 4096), op(&wa, 4096)),
                device("/dev/b", 1, op(&b, 4096), op(&wb, 4096)),
            ],
            10,
        );
        let (report, hist) = summarize_with_histograms(&result, vec![]);

        let mut direct_read = new_latency_histogram();
        for v in a.iter().chain(&b) {
            direct_read.record(*v).unwrap();
        }
        let mut direct_write = new_latency_histogram();
        for v in wa.iter().chain(&wb) {
            direct_write.record(*v).unwrap();
        }
        // Same bins, same counts: the merge is exact, not an approximation.
        assert_eq!(hist.0[OpKind::Read], direct_read);
        assert_eq!(hist.0[OpKind::Write], direct_write);
        assert_eq!(
            report.host.ops[OpKind::Read].latency_ns,
            LatencySummary::from_histogram(&direct_read)
        );
        assert_eq!(
            report.host.ops[OpKind::Write].latency_ns,
            LatencySummary::from_histogram(&direct_write)
        );
        // The host p99 is not the mean of the devices' p99s (b's values are 3x a's).
        let mean_p99 = (report.devices[0].figures.ops[OpKind::Read].latency_ns.p99
            + report.devices[1].figures.ops[OpKind::Read].latency_ns.p99)
            / 2;
        assert_ne!(report.host.ops[OpKind::Read].latency_ns.p99, mean_p99);
        assert_eq!(report.host.ops[OpKind::Read].ios, 80_000);
        assert_eq!(report.host.ops[OpKind::Write].ios, 18_000);
    }

    #[test]
    fn device_without_writes_has_zero_write_figures() {
        let result = run(
            vec![device(
                "/dev/r",
                3,
                op(&latencies(5, 1000), 4096),
                OpResult::default(),
            )],
            2,
        );
        let report = summarize(&result, vec![]);
        let d = &report.devices[0];
        assert_eq!(d.figures.ops[OpKind::Write], OpSummary::default());
        assert_eq!(
            d.figures.ops[OpKind::Write].latency_ns,
            LatencySummary::default()
        );
        assert_eq!(report.host.ops[OpKind::Write], OpSummary::default());
        assert!(d.figures.ops[OpKind::Read].latency_ns.p50 > 0);
    }

    #[test]
    fn iops_and_throughput_are_per_measured_second() {
        let mut result = run(
            vec![
                device(
                    "/dev/a",
                    0,
                    op(&vec![1000; 3000], 4096),
                    op(&[5000; 1000], 8192),
                ),
                device(
                    "/dev/b",
                    1,
                    op(&vec![2000; 1500], 4096),
                    OpResult::default(),
                ),
            ],
            0,
        );
        result.measured = Duration::from_millis(1500);
        result.stopped_early = true;
        let report = summarize(&result, vec![]);
        let a = &report.devices[0].figures;
        assert_eq!(a.ops[OpKind::Read].iops, 2000.0);
        assert_eq!(a.ops[OpKind::Write].iops, 1000.0 / 1.5);
        assert_eq!(a.iops, 2000.0 + 1000.0 / 1.5);
        assert_eq!(a.ops[OpKind::Read].bytes_per_sec, 2000.0 * 4096.0);
        assert_eq!(a.bytes_per_sec, 2000.0 * 4096.0 + 1000.0 * 8192.0 / 1.5);
        let h = &report.host;
        assert_eq!(h.ops[OpKind::Read].ios, 4500);
        assert_eq!(h.ops[OpKind::Read].iops, 3000.0);
        assert_eq!(h.iops, 3000.0 + 1000.0 / 1.5);
        assert_eq!(report.measured_secs, 1.5);
        assert!(report.interrupted);

        let mut empty = result;
        empty.measured = Duration::ZERO;
        let report = summarize(&empty, vec![]);
        assert_eq!(report.host.iops, 0.0);
        assert_eq!(report.host.ops[OpKind::Read].ios, 4500);
    }

    #[test]
    fn a_device_taken_out_early_is_rated_over_its_own_active_time() {
        // 1 s of ramp, then a 4 s window; the device failed 3 s into the run (2 s into the
        // window) after 1000 reads, the other ran the whole window.
        let mut stopped = device(
            "/dev/s",
            0,
            op(&vec![1000; 1000], 4096),
            OpResult::default(),
        );
        stopped.failed = true;
        stopped.stopped_after = Some(Duration::from_secs(3));
        let whole = device(
            "/dev/w",
            1,
            op(&vec![1000; 4000], 4096),
            OpResult::default(),
        );
        let workload = Workload::default().with_ramp(Duration::from_secs(1));
        let report = summarize(&run_of(vec![stopped, whole], 4, workload.clone()), vec![]);
        let (s, w) = (&report.devices[0], &report.devices[1]);
        assert_eq!(s.stopped_at_secs, Some(2.0));
        assert_eq!(
            s.figures.iops, 500.0,
            "1000 reads over its 2 s, not the 4 s window"
        );
        assert_eq!(s.figures.ops[OpKind::Read].bytes_per_sec, 500.0 * 4096.0);
        assert_eq!((w.stopped_at_secs, w.figures.iops), (None, 1000.0));
        // The host's rate stays over the window: 5000 I/Os in 4 s.
        assert_eq!(report.host.iops, 1250.0);
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["devices"][0]["stopped_at_secs"], 2.0);
        assert!(v["devices"][1].get("stopped_at_secs").is_none());

        // Taken out during the ramp: it stopped before the window, and ran none of it.
        let mut early = device("/dev/e", 0, OpResult::default(), OpResult::default());
        early.stopped_after = Some(Duration::from_millis(250));
        let report = summarize(&run_of(vec![early], 4, workload), vec![]);
        assert_eq!(report.devices[0].stopped_at_secs, Some(-0.75));
        assert_eq!(report.devices[0].figures.iops, 0.0);
    }

    #[test]
    fn errors_are_summed_and_detailed() {
        let mut d = device("/dev/e", 0, op(&[1000], 4096), OpResult::default());
        for offset in [0u64, 4096, 8192] {
            d.errors
                .record(IoErrorSample::new(OpKind::Read, offset, 4096, 5, 0));
        }
        let clean = device("/dev/c", 1, op(&[1000], 4096), OpResult::default());
        let report = summarize(&run(vec![d, clean], 1), vec![]);
        assert_eq!(report.host.errors, 3);
        assert_eq!(report.devices[0].figures.errors, 3);
        assert_eq!(report.devices[0].error_detail.by_errno.get(&5), Some(&3));
        assert_eq!(report.devices[0].error_detail.first[2].offset, 8192);
        assert_eq!(report.devices[1].figures.errors, 0);
    }

    fn sample_report() -> HostReport {
        let mut d = device(
            "/dev/loop0",
            2,
            op(&latencies(6, 500), 4096),
            op(&latencies(7, 200), 4096),
        );
        d.errors
            .record(IoErrorSample::new(OpKind::Write, 12288, 4096, 0, 512));
        let point = SecondPoint {
            second: 0,
            iops: 700.0,
            ops: crate::series::OpSeconds(PerOp::from_fn(|op| match op {
                OpKind::Read => crate::series::OpSecond {
                    iops: 500.0,
                    p50_ns: 1000,
                    p99_ns: 2000,
                },
                OpKind::Write => crate::series::OpSecond {
                    iops: 200.0,
                    p50_ns: 3000,
                    p99_ns: 4000,
                },
                _ => Default::default(),
            })),
            bytes_per_sec: 700.0 * 4096.0,
            errors: 1,
            backlog: 0,
            devices: vec![crate::series::DeviceSecond {
                iops: 700.0,
                ops: crate::series::OpRates(PerOp::from_fn(|op| match op {
                    OpKind::Read => 500.0,
                    OpKind::Write => 200.0,
                    _ => 0.0,
                })),
                bytes_per_sec: 700.0 * 4096.0,
                ..Default::default()
            }],
            partial: false,
            histograms: None,
        };
        let workload = Workload::default()
            .with_pattern(IoPattern::RandRw)
            .with_rwmixread(70)
            .with_working_set(Some(1 << 30))
            .with_rate_iops(Some(1000));
        summarize(&run_of(vec![d], 1, workload), vec![point])
    }

    #[test]
    fn json_round_trips() {
        let report = sample_report();
        let text = serde_json::to_string_pretty(&report).unwrap();
        let back: HostReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn json_has_the_documented_keys() {
        let v = serde_json::to_value(sample_report()).unwrap();
        assert_eq!(v["schema_version"], 2);
        assert_eq!(v["interrupted"], false);
        assert_eq!(v["measured_secs"], 1.0);
        for key in [
            "pattern",
            "rwmixread",
            "block_size",
            "iodepth",
            "working_set",
            "runtime_secs",
            "ramp_secs",
            "seed",
            "rate_iops",
        ] {
            assert!(!v["workload"][key].is_null(), "workload.{key} missing");
        }
        assert_eq!(v["workload"]["pattern"], "randrw");
        assert_eq!(v["workload"]["rwmixread"], 70);

        let figures_keys = |f: &serde_json::Value, at: &str| {
            for key in ["iops", "bytes_per_sec", "errors"] {
                assert!(f[key].is_number(), "{at}.{key} missing");
            }
            for op in ["read", "write", "trim"] {
                for key in ["ios", "iops", "bytes", "bytes_per_sec"] {
                    assert!(f[op][key].is_number(), "{at}.{op}.{key} missing");
                }
                // The sample offers a rate: response times beside service times.
                for time in ["latency_ns", "response_ns"] {
                    for key in ["p50", "p90", "p99", "p99_9", "p99_99", "max", "min", "mean"] {
                        assert!(
                            f[op][time][key].is_number(),
                            "{at}.{op}.{time}.{key} missing"
                        );
                    }
                }
                assert!(f["response_histograms"][op].is_string(), "{at} {op}");
            }
        };
        figures_keys(&v["host"], "host");
        let dev = &v["devices"][0];
        figures_keys(dev, "devices[0]");
        assert_eq!(dev["path"], "/dev/loop0");
        assert_eq!(dev["cpu"], 2);
        assert_eq!(dev["read"]["ios"], 500);
        assert_eq!(dev["error_detail"]["count"], 1);
        assert_eq!(dev["error_detail"]["by_errno"]["0"], 1);
        assert_eq!(dev["error_detail"]["first"][0]["offset"], 12288);
        assert_eq!(v["host"]["errors"], 1);

        let p = &v["time_series"][0];
        for key in [
            "second",
            "iops",
            "read_iops",
            "write_iops",
            "bytes_per_sec",
            "errors",
            "backlog",
            "read_p50_ns",
            "read_p99_ns",
            "write_p50_ns",
            "write_p99_ns",
            "trim_iops",
            "trim_p50_ns",
            "trim_p99_ns",
        ] {
            assert!(p[key].is_number(), "time_series[0].{key} missing");
        }
        // Rates are floats, and each device's entry names it as `devices[]` does.
        for key in ["iops", "read_iops", "write_iops", "bytes_per_sec"] {
            assert!(
                p[key].is_f64(),
                "time_series[0].{key} is not a float: {}",
                p[key]
            );
        }
        assert_eq!(
            p["devices"],
            serde_json::json!([{"path": "/dev/loop0", "iops": 700.0, "read_iops": 500.0,
                "write_iops": 200.0, "trim_iops": 0.0, "bytes_per_sec": 2_867_200.0,
                "backlog": 0}])
        );
        // Ramp and drained counts are named by each kind's plural.
        assert_eq!(
            v["host"]["ramp"],
            serde_json::json!({"reads": 0, "writes": 0, "trims": 0})
        );
        for key in ["read", "write", "trim"] {
            assert!(v["host"]["histograms"][key].is_string(), "histograms.{key}");
        }
    }

    #[test]
    fn a_schema_2_report_without_trims_still_loads() {
        let mut v = serde_json::to_value(sample_report()).unwrap();
        for at in ["/host", "/devices/0"] {
            let f = v.pointer_mut(at).unwrap().as_object_mut().unwrap();
            f.remove("trim");
            f["ramp"].as_object_mut().unwrap().remove("trims");
            f["histograms"].as_object_mut().unwrap().remove("trim");
            // Nor response times, which came later.
            f.remove("response_histograms");
            for op in ["read", "write"] {
                f[op].as_object_mut().unwrap().remove("response_ns");
            }
        }
        let p = v["time_series"][0].as_object_mut().unwrap();
        for key in ["trim_iops", "trim_p50_ns", "trim_p99_ns"] {
            p.remove(key);
        }
        let back: HostReport = serde_json::from_value(v).unwrap();
        let sample = sample_report();
        let without_response = sample.host.ops.map(|_, o| OpSummary {
            response_ns: None,
            ..o.clone()
        });
        assert_eq!(back.host.ops, without_response);
        assert_eq!(back.host.ramp, sample.host.ramp);
        assert_eq!(back.time_series[0].ops, sample.time_series[0].ops);
        let h = back.host.histograms.as_ref().unwrap().decode().unwrap();
        assert_eq!(h[OpKind::Trim].len(), 0);
    }

    #[test]
    fn interrupted_defaults_to_false_when_absent() {
        let mut v = serde_json::to_value(sample_report()).unwrap();
        v.as_object_mut().unwrap().remove("interrupted");
        let back: HostReport = serde_json::from_value(v).unwrap();
        assert!(!back.interrupted);
    }

    /// A worker of the engine's (built from JSON: its fields are the engine's to set).
    fn worker(cpu: usize, user_ns: u64, system_ns: u64, shares: &[(usize, u32)]) -> WorkerSummary {
        let mut devices: Vec<usize> = shares.iter().map(|&(d, _)| d).collect();
        devices.dedup();
        serde_json::from_value(serde_json::json!({
            "cpu": cpu,
            "devices": devices,
            "shares": shares
                .iter()
                .map(|&(device, part)| serde_json::json!({"device": device, "part": part, "parts": 2}))
                .collect::<Vec<_>>(),
            "ring": RingFeatures::default(),
            "cpu_use": {"user_ns": user_ns, "system_ns": system_ns, "wall_ns": 1_000_000_000u64,
                        "cpu_busy_ns": null, "cpu_total_ns": null},
        }))
        .unwrap()
    }

    /// Each worker's CPU time per I/O is its own time over the I/Os of its own shares (ramp
    /// and drain included); the load generator's is all their time over all their I/Os, not
    /// the workers' figures averaged. Two workers on one CPU (--numjobs above the CPUs) are
    /// told apart by their parts.
    #[test]
    fn cpu_time_per_io_is_each_workers_time_over_its_own_ios() {
        let driver = |cpu, part, run_ios| {
            hostmax_engine::DeviceDriver::new(cpu, part, 16, run_ios / 2).with_run_ios(run_ios)
        };
        let mut a = device("/dev/a", 0, OpResult::default(), OpResult::default());
        a.drivers = vec![driver(0, 0, 1_000), driver(1, 1, 2_000)];
        let mut b = device("/dev/b", 1, OpResult::default(), OpResult::default());
        b.drivers = vec![driver(1, 0, 1_500), driver(1, 1, 500)];
        let workers = [
            worker(0, 1_000_000, 3_000_000, &[(0, 0)]),
            worker(1, 2_000_000, 4_000_000, &[(0, 1), (1, 0)]),
            worker(1, 500_000, 500_000, &[(1, 1)]),
        ];
        let generator = LoadGenerator::new(&workers, &[a, b]);
        let ios: Vec<u64> = generator.workers.iter().map(|w| w.ios).collect();
        assert_eq!(ios, [1_000, 3_500, 500]);
        let per_io: Vec<f64> = generator
            .workers
            .iter()
            .map(|w| w.cpu_ns_per_io.unwrap())
            .collect();
        for (got, want) in per_io.iter().zip([4_000.0, 6_000_000.0 / 3_500.0, 2_000.0]) {
            assert!((got - want).abs() < 1e-6, "{per_io:?}");
        }
        // 11 ms over 5,000 I/Os, where the workers' mean would say 2,571 ns.
        assert!((generator.cpu_ns_per_io.unwrap() - 2_200.0).abs() < 1e-6);
        assert_eq!(cpu_ns_per_io(1e6, 0), None);
        assert_eq!(
            LoadGenerator::new(&[worker(0, 5, 5, &[(0, 0)])], &[]).cpu_ns_per_io,
            None
        );
    }

    /// Reports written before the CPU time per I/O load, without it.
    #[test]
    fn a_load_generator_without_cpu_time_per_io_still_loads() {
        let generator = LoadGenerator::new(&[worker(0, 4_000, 0, &[(0, 0)])], &[]);
        let mut v = serde_json::to_value(&generator).unwrap();
        v.as_object_mut().unwrap().remove("cpu_ns_per_io");
        for w in v["workers"].as_array_mut().unwrap() {
            let w = w.as_object_mut().unwrap();
            w.remove("ios");
            w.remove("cpu_ns_per_io");
        }
        let back: LoadGenerator = serde_json::from_value(v).unwrap();
        assert_eq!(back.cpu_ns_per_io, None);
        assert_eq!(
            (back.workers[0].ios, back.workers[0].cpu_ns_per_io),
            (0, None)
        );
    }
}
