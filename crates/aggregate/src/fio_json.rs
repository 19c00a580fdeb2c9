//! A [`HostReport`] in fio's JSON (`--output-format=json+`), for the tools that read fio's
//! results (fio-plot, PerfKitBenchmarker, pbench, in-house scripts): [`fio_json`] gives the
//! whole run, one job per device and the host as the last job, named `All clients` (the name
//! fio gives the sum of several sources); [`fio_json_of_device`] gives one device alone.
//!
//! Every figure is hostmax's own: counts, rates and latency statistics from the report,
//! percentiles and json+'s `bins` read off its exact histograms (the host's are the devices'
//! added bin by bin). What fio measures and hostmax does not is written as zero, with fio's
//! type, so that a reader finds every key it expects: submission latency (`slat_ns`),
//! context switches and page faults (`ctx`, `majf`, `minf`), submit and complete batch sizes
//! (`iodepth_submit`, `iodepth_complete`), and the kernel's merges, ticks and utilisation in
//! `disk_util`. hostmax times each I/O from the batch that submitted it to its reaping: that
//! latency (the service time) is `clat_ns`, and also `lat_ns` without an offered rate. With
//! one (`--rate-iops`), `lat_ns` is the response time instead, from each I/O's intended start
//! on the rate's schedule to its reaping, with its percentiles and bins (as fio writes them
//! with `lat_percentiles=1`): fio's total latency is the one a wait before submission counts
//! in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use hostmax_engine::{OpKind, PerOp};
use serde_json::{json, Map, Value};

use crate::histogram_codec::HistogramCodecError;
use crate::report::{DeviceReport, Figures, HostReport, Provenance};
use crate::rfc3339::{civil_from_days, parse_rfc3339};
use crate::series::SecondPoint;

/// fio's default percentile list, each with the quantile hostmax's own report reads off the
/// same histogram for it (the same floating-point numbers, so `99.900000` is exactly
/// `latency_ns.p99_9`).
pub const FIO_PERCENTILES: [(f64, f64); 17] = [
    (1.0, 0.01),
    (5.0, 0.05),
    (10.0, 0.1),
    (20.0, 0.2),
    (30.0, 0.3),
    (40.0, 0.4),
    (50.0, 0.5),
    (60.0, 0.6),
    (70.0, 0.7),
    (80.0, 0.8),
    (90.0, 0.9),
    (95.0, 0.95),
    (99.0, 0.99),
    (99.5, 0.995),
    (99.9, 0.999),
    (99.95, 0.9995),
    (99.99, 0.9999),
];

/// The job name fio gives the sum of several sources; fio-plot takes a job of this name as
/// the totals and charts it instead of adding the others up.
pub const HOST_JOB_NAME: &str = "All clients";

/// The run in fio's json+ layout: one job per device, then the host as [`HOST_JOB_NAME`].
///
/// Errors when a histogram the report carries cannot be decoded; a report without
/// histograms (written by an old version) gives its percentiles as zero.
pub fn fio_json(report: &HostReport) -> Result<Value, HistogramCodecError> {
    let mut jobs = Vec::with_capacity(report.devices.len() + 1);
    for index in 0..report.devices.len() {
        jobs.push(device_job(report, index)?);
    }
    jobs.push(host_job(report)?);
    Ok(document(report, jobs, &report.devices))
}

/// One device of the run in fio's json+ layout, as the run's only job (its figures are those
/// of [`fio_json`]'s job for it). Panics if `device` is not an index of `report.devices`.
pub fn fio_json_of_device(
    report: &HostReport,
    device: usize,
) -> Result<Value, HistogramCodecError> {
    let job = device_job(report, device)?;
    Ok(document(
        report,
        vec![job],
        std::slice::from_ref(&report.devices[device]),
    ))
}

/// A block size as fio's options spell one: `4k`, `1m`, or bytes.
pub fn fio_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(
            || bytes.to_string(),
            |(unit, s)| format!("{}{s}", bytes / unit),
        )
}

/// The job name of a device: its file name (`loop3`, `nvme0n1`), led by its host in a merged
/// report (`db1:nvme0n1`).
pub fn device_job_name(device: &DeviceReport) -> String {
    let name = std::path::Path::new(&device.path)
        .file_name()
        .map_or_else(|| device.path.clone(), |n| n.to_string_lossy().into_owned());
    match &device.host {
        Some(host) => format!("{host}:{name}"),
        None => name,
    }
}

fn document(report: &HostReport, jobs: Vec<Value>, devices: &[DeviceReport]) -> Value {
    let ended = report
        .provenance
        .ended_at
        .as_deref()
        .or(report.provenance.started_at.as_deref())
        .and_then(|t| parse_rfc3339(t).ok())
        .unwrap_or(UNIX_EPOCH);
    let since = ended.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    json!({
        "fio version": fio_version(&report.provenance),
        "timestamp": since.as_secs(),
        "timestamp_ms": since.as_millis() as u64,
        "time": ctime(ended),
        "global options": Value::Object(global_options(report)),
        "jobs": jobs,
        "disk_util": devices.iter().filter_map(disk_util).collect::<Vec<_>>(),
    })
}

/// `fio version`: `hostmax-VERSION`, with the commit as semver build metadata when the report
/// names one (`hostmax-0.1.0+SHA`, `hostmax-0.1.0+SHA-dirty`); this library's version for a
/// report that names none.
fn fio_version(provenance: &Provenance) -> String {
    let version = provenance
        .hostmax_version
        .as_deref()
        .unwrap_or(env!("CARGO_PKG_VERSION"));
    match &provenance.hostmax_commit {
        Some(commit) => format!("hostmax-{version}+{commit}"),
        None => format!("hostmax-{version}"),
    }
}

/// The workload as fio options, every value a string as fio writes them.
fn global_options(report: &HostReport) -> Map<String, Value> {
    let w = &report.workload;
    let mut o = Map::new();
    let mut put = |k: &str, v: String| {
        o.insert(k.to_string(), Value::String(v));
    };
    put("rw", w.pattern.name().to_string());
    put("bs", fio_size(u64::from(w.block_size)));
    put("iodepth", w.iodepth.to_string());
    // One fio job per device, or numjobs of them each with its own iodepth (fio's meaning).
    let jobs = report.devices.len() as u64 * u64::from(w.numjobs.unwrap_or(1));
    put("numjobs", jobs.to_string());
    put("ioengine", "io_uring".into());
    put("direct", "1".into());
    put("time_based", "1".into());
    put("runtime", format!("{}", w.runtime_secs));
    put("ramp_time", format!("{}", w.ramp_secs));
    put("randseed", w.seed.to_string());
    if w.pattern.reads() && w.pattern.writes() {
        put("rwmixread", w.rwmixread.to_string());
    }
    if let Some(size) = w.working_set {
        put("size", fio_size(size));
    }
    if let Some(rate) = w.rate_iops {
        put("rate_iops", rate.to_string());
        // fio's name for how paced I/Os arrive: `linear` (even) or `poisson`.
        let process = match w.arrival {
            Some(hostmax_engine::Arrival::Poisson) => "poisson",
            _ => "linear",
        };
        put("rate_process", process.to_string());
    }
    o
}

fn job_options(report: &HostReport, name: &str, filename: Option<&str>) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::String(name.to_string()));
    if let Some(f) = filename {
        o.insert("filename".into(), Value::String(f.to_string()));
    }
    o.extend(global_options(report));
    Value::Object(o)
}

/// A device's `disk_util` entry: the I/Os it completed (ramp and drain included) and, for
/// what hostmax does not read (merges, ticks, queue time, utilisation), zero. Regular files
/// have none, as fio gives them their disk's.
fn disk_util(device: &DeviceReport) -> Option<Value> {
    if !device.path.starts_with("/dev/") {
        return None;
    }
    let f = &device.figures;
    let all = |op: OpKind| f.ramp[op] + f.ops[op].ios + f.drained[op];
    Some(json!({
        "name": device_job_name(device),
        "read_ios": all(OpKind::Read),
        "write_ios": all(OpKind::Write),
        "read_merges": 0,
        "write_merges": 0,
        "read_ticks": 0,
        "write_ticks": 0,
        "in_queue": 0,
        "util": 0.0,
    }))
}

/// What one job's figures come from.
struct JobSource<'a> {
    name: String,
    filename: Option<&'a str>,
    figures: &'a Figures,
    /// Each second's IOPS per kind (seconds every device reported).
    seconds: Vec<PerOp<f64>>,
    /// User and system CPU seconds.
    cpu: (f64, f64),
    /// Jobs the CPU figures are an average over (fio's group: the devices).
    cpu_jobs: usize,
    /// Bytes per second of the whole group, for `bw_agg`.
    group_bytes_per_sec: f64,
}

fn full_seconds(report: &HostReport) -> impl Iterator<Item = &SecondPoint> {
    report.time_series.iter().filter(|p| !p.partial)
}

fn device_job(report: &HostReport, index: usize) -> Result<Value, HistogramCodecError> {
    let device = &report.devices[index];
    let seconds = full_seconds(report)
        .filter_map(|p| p.devices.get(index))
        .map(|d| d.ops.0.map(|_, &v| v))
        .collect();
    let cpu = report.load_generator.as_ref().map_or((0.0, 0.0), |lg| {
        lg.workers
            .iter()
            .filter(|w| w.devices.contains(&index))
            .fold((0.0, 0.0), |(u, s), w| {
                let share = w.devices.len() as f64;
                (u + w.user_secs / share, s + w.system_secs / share)
            })
    });
    job(
        report,
        JobSource {
            name: device_job_name(device),
            filename: Some(&device.path),
            figures: &device.figures,
            seconds,
            cpu,
            cpu_jobs: 1,
            group_bytes_per_sec: report.host.bytes_per_sec,
        },
    )
}

fn host_job(report: &HostReport) -> Result<Value, HistogramCodecError> {
    let seconds = full_seconds(report)
        .map(|p| p.ops.0.map(|_, s| s.iops))
        .collect();
    let cpu = report.load_generator.as_ref().map_or((0.0, 0.0), |lg| {
        lg.workers
            .iter()
            .fold((0.0, 0.0), |(u, s), w| (u + w.user_secs, s + w.system_secs))
    });
    job(
        report,
        JobSource {
            name: HOST_JOB_NAME.to_string(),
            filename: None,
            figures: &report.host,
            seconds,
            cpu,
            cpu_jobs: report.devices.len().max(1),
            group_bytes_per_sec: report.host.bytes_per_sec,
        },
    )
}

fn job(report: &HostReport, src: JobSource<'_>) -> Result<Value, HistogramCodecError> {
    let histograms = match &src.figures.histograms {
        Some(encoded) => Some(encoded.decode()?),
        None => None,
    };
    let responses = match &src.figures.response_histograms {
        Some(encoded) => Some(encoded.decode()?),
        None => None,
    };
    let measured = report.measured_secs;
    let runtime_ms = (measured * 1000.0).round() as u64;
    let block_size = f64::from(report.workload.block_size);
    let mut every = hostmax_engine::new_latency_histogram();
    let mut job = Map::new();
    job.insert("jobname".into(), Value::String(src.name.clone()));
    job.insert("groupid".into(), json!(0));
    let first_errno = |f: &Figures| if f.errors > 0 { 5 } else { 0 };
    job.insert("error".into(), json!(first_errno(src.figures)));
    job.insert("eta".into(), json!(0));
    job.insert(
        "elapsed".into(),
        json!((report.workload.ramp_secs + measured).ceil() as u64),
    );
    job.insert("job_start".into(), json!(started_ms(report)));
    job.insert(
        "job options".into(),
        job_options(report, &src.name, src.filename),
    );
    for op in OpKind::ALL {
        let latency = histograms.as_ref().map(|h| &h[op]);
        if let Some(h) = latency {
            crate::latency::add_exact(&mut every, h);
        }
        let seconds: Vec<f64> = src.seconds.iter().map(|s| s[op]).collect();
        job.insert(
            op.name().into(),
            op_entry(
                &src,
                op,
                latency,
                responses.as_ref().map(|h| &h[op]),
                &seconds,
                measured,
                block_size,
            ),
        );
    }
    job.insert(
        "sync".into(),
        json!({"total_ios": 0, "lat_ns": empty_stats()}),
    );
    job.insert("job_runtime".into(), json!(runtime_ms));
    let cpu_share = |secs: f64| {
        if measured > 0.0 {
            secs * 100.0 / (measured * src.cpu_jobs as f64)
        } else {
            0.0
        }
    };
    job.insert("usr_cpu".into(), json!(cpu_share(src.cpu.0)));
    job.insert("sys_cpu".into(), json!(cpu_share(src.cpu.1)));
    for key in ["ctx", "majf", "minf"] {
        job.insert(key.into(), json!(0));
    }
    // A job here is a device (all its workers): the I/Os its queue held are every job's.
    job.insert(
        "iodepth_level".into(),
        iodepth_level(report.workload.in_flight_per_device()),
    );
    for key in ["iodepth_submit", "iodepth_complete"] {
        let zeros: Map<String, Value> = ["0", "4", "8", "16", "32", "64", ">=64"]
            .iter()
            .map(|k| (k.to_string(), json!(0.0)))
            .collect();
        job.insert(key.into(), Value::Object(zeros));
    }
    let [ns, us, ms] = latency_buckets(&every);
    job.insert("latency_ns".into(), ns);
    job.insert("latency_us".into(), us);
    job.insert("latency_ms".into(), ms);
    job.insert("latency_depth".into(), json!(report.workload.iodepth));
    job.insert("latency_target".into(), json!(0));
    job.insert("latency_percentile".into(), json!(100.0));
    job.insert("latency_window".into(), json!(0));
    Ok(Value::Object(job))
}

/// When the measured window started, in milliseconds since the epoch (fio's `job_start`,
/// written by fio 3.35 and later).
fn started_ms(report: &HostReport) -> u64 {
    report
        .provenance
        .started_at
        .as_deref()
        .and_then(|t| parse_rfc3339(t).ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn empty_stats() -> Value {
    json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0})
}

/// One kind's entry of a job (`read`, `write`, `trim`).
fn op_entry(
    src: &JobSource<'_>,
    op: OpKind,
    latency: Option<&Histogram<u64>>,
    response: Option<&Histogram<u64>>,
    seconds: &[f64],
    measured: f64,
    block_size: f64,
) -> Value {
    let s = &src.figures.ops[op];
    let bw_bytes = s.bytes_per_sec as u64;
    let mut clat = match latency.filter(|h| !h.is_empty()) {
        Some(h) => latency_stats(h),
        None => Map::new(),
    };
    if clat.is_empty() {
        if let Value::Object(m) = empty_stats() {
            clat = m;
        }
    }
    let mut lat = clat.clone();
    if let Some(h) = latency.filter(|h| !h.is_empty()) {
        add_percentiles_and_bins(&mut clat, h);
    }
    if let Some(h) = response.filter(|h| !h.is_empty()) {
        lat = latency_stats(h);
        add_percentiles_and_bins(&mut lat, h);
    }
    let lat = Value::Object(lat);
    let bw_kib: Vec<f64> = seconds.iter().map(|i| i * block_size / 1024.0).collect();
    let (bw_min, bw_max, bw_mean, bw_dev) = sample_stats(&bw_kib);
    let (iops_min, iops_max, iops_mean, iops_dev) = sample_stats(seconds);
    let bw_agg = if src.group_bytes_per_sec > 0.0 {
        s.bytes_per_sec * 100.0 / src.group_bytes_per_sec
    } else {
        0.0
    };
    let runtime_ms = if s.ios > 0 {
        (measured * 1000.0).round() as u64
    } else {
        0
    };
    json!({
        "io_bytes": s.bytes,
        "io_kbytes": s.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": s.iops,
        "runtime": runtime_ms,
        "total_ios": s.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": empty_stats(),
        "clat_ns": Value::Object(clat),
        "lat_ns": lat,
        "bw_min": bw_min as u64,
        "bw_max": bw_max as u64,
        "bw_agg": bw_agg,
        "bw_mean": bw_mean,
        "bw_dev": bw_dev,
        "bw_samples": seconds.len(),
        "iops_min": iops_min as u64,
        "iops_max": iops_max as u64,
        "iops_mean": iops_mean,
        "iops_stddev": iops_dev,
        "iops_samples": seconds.len(),
    })
}

/// fio's json+ `percentile` and `bins` of one latency, read off its histogram.
fn add_percentiles_and_bins(stats: &mut Map<String, Value>, h: &Histogram<u64>) {
    let percentiles: Map<String, Value> = FIO_PERCENTILES
        .iter()
        .map(|(p, q)| (format!("{p:.6}"), json!(h.value_at_quantile(*q))))
        .collect();
    stats.insert("percentile".into(), Value::Object(percentiles));
    let bins: Map<String, Value> = h
        .iter_recorded()
        .map(|b| (b.value_iterated_to().to_string(), json!(b.count_at_value())))
        .collect();
    stats.insert("bins".into(), Value::Object(bins));
}

fn latency_stats(h: &Histogram<u64>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("min".into(), json!(h.min()));
    m.insert("max".into(), json!(h.max()));
    m.insert("mean".into(), json!(h.mean()));
    m.insert("stddev".into(), json!(h.stdev()));
    m.insert("N".into(), json!(h.len()));
    m
}

/// Minimum, maximum, mean and sample standard deviation (fio's, over n - 1) of per-second
/// samples; zeros when there are none.
fn sample_stats(samples: &[f64]) -> (f64, f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = samples.len() as f64;
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = samples.iter().sum::<f64>() / n;
    let dev = if samples.len() > 1 {
        (samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (min, max, mean, dev)
}

/// fio's `iodepth_level`: hostmax refills each device's queue to its depth at every batch,
/// so every I/O is issued at the depth: its bucket holds 100 %.
fn iodepth_level(iodepth: u64) -> Value {
    const LEVELS: [(u64, &str); 7] = [
        (1, "1"),
        (2, "2"),
        (4, "4"),
        (8, "8"),
        (16, "16"),
        (32, "32"),
        (64, ">=64"),
    ];
    let at = LEVELS
        .iter()
        .rposition(|(low, _)| iodepth >= *low)
        .unwrap_or(0);
    let levels: Map<String, Value> = LEVELS
        .iter()
        .enumerate()
        .map(|(i, (_, k))| (k.to_string(), json!(if i == at { 100.0 } else { 0.0 })))
        .collect();
    Value::Object(levels)
}

/// fio's `latency_ns`, `latency_us` and `latency_ms`: the share (percent) of every I/O of
/// the job whose latency falls in each bucket; a key is the bucket's exclusive upper bound
/// in its unit (`"4"` of `latency_us` is 2 to 4 µs), as fio's `io_u_mark_lat_*` count them.
fn latency_buckets(h: &Histogram<u64>) -> [Value; 3] {
    const KEYS: [&str; 10] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    const BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    for bin in h.iter_recorded() {
        let value = h.median_equivalent(bin.value_iterated_to());
        let count = bin.count_at_value();
        let slot = |v: u64| BOUNDS.iter().position(|b| v < *b).unwrap_or(9);
        if value < 1000 {
            ns[slot(value)] += count;
        } else if value < 1_000_000 {
            us[slot(value / 1000)] += count;
        } else {
            let msec = value / 1_000_000;
            let i = if msec < 1000 {
                slot(msec)
            } else if msec < 2000 {
                10
            } else {
                11
            };
            ms[i] += count;
        }
    }
    let total = h.len();
    let share = |count: u64| {
        if total > 0 {
            count as f64 * 100.0 / total as f64
        } else {
            0.0
        }
    };
    let object = |counts: &[u64], keys: &[&str]| -> Value {
        Value::Object(
            keys.iter()
                .zip(counts)
                .map(|(k, &c)| (k.to_string(), json!(share(c))))
                .collect(),
        )
    };
    let ms_keys: Vec<&str> = KEYS.iter().copied().chain(["2000", ">=2000"]).collect();
    [
        object(&ns, &KEYS),
        object(&us, &KEYS),
        object(&ms, &ms_keys),
    ]
}

/// `t` as C's `ctime` writes it (`Wed Nov 25 18:25:50 2026`), in UTC.
fn ctime(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Service time is `clat_ns`; at an offered rate the response time is `lat_ns`, with its
    /// percentiles; without one `lat_ns` is the service time.
    #[test]
    fn response_time_is_fio_s_total_latency_at_an_offered_rate() {
        let mut service = hostmax_engine::new_latency_histogram();
        let mut response = hostmax_engine::new_latency_histogram();
        for i in 1..=100u64 {
            service.record(i * 1000).unwrap();
            response.record(i * 1000 + 500_000_000).unwrap();
        }
        let op = hostmax_engine::OpResult::new(100, 409_600, service).with_response(response);
        let device = hostmax_engine::DeviceResult::new(
            "/dev/loop0".into(),
            0,
            PerOp::default().with(OpKind::Read, op),
        );
        let mut result = hostmax_engine::RunResult::default();
        result.devices = vec![device];
        result.measured = Duration::from_secs(1);
        result.workload = hostmax_engine::Workload::default().with_rate_iops(Some(100));
        let report = crate::summarize(&result, vec![]);
        let fio = fio_json(&report).unwrap();
        let read = &fio["jobs"][0]["read"];
        let own = &report.devices[0].figures.ops[OpKind::Read];
        assert_eq!(
            read["clat_ns"]["percentile"]["99.000000"],
            own.latency_ns.p99
        );
        let response_p99 = own.response_ns.unwrap().p99;
        assert_eq!(read["lat_ns"]["percentile"]["99.000000"], response_p99);
        assert!(read["lat_ns"]["min"].as_u64().unwrap() >= 499_000_000);
        assert_eq!(fio["global options"]["rate_process"], "linear");
        result.workload.rate_iops = None;
        let unpaced = fio_json(&crate::summarize(&result, vec![])).unwrap();
        let read = &unpaced["jobs"][0]["read"];
        assert_eq!(read["lat_ns"]["max"], read["clat_ns"]["max"]);
        // A device's job counts every worker's depth in its iodepth_level: 4 jobs of depth 1
        // kept 4 in flight.
        result.workload.iodepth = 1;
        result.workload.numjobs = Some(4);
        let jobs = fio_json(&crate::summarize(&result, vec![])).unwrap();
        assert_eq!(jobs["jobs"][0]["iodepth_level"]["4"], 100.0);
        assert_eq!(jobs["global options"]["iodepth"], "1");
        assert!(read["lat_ns"]["percentile"].is_null());
    }

    #[test]
    fn ctime_is_c_s_layout() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_631_150);
        assert_eq!(ctime(t), "Wed Nov 25 18:25:50 2026");
        assert_eq!(ctime(UNIX_EPOCH), "Thu Jan  1 00:00:00 1970");
    }

    #[test]
    fn the_fio_version_names_hostmax_s_version_and_commit() {
        let mut provenance = Provenance {
            hostmax_version: Some("0.1.0".into()),
            ..Provenance::default()
        };
        assert_eq!(fio_version(&provenance), "hostmax-0.1.0");
        provenance.hostmax_commit = Some("2ab5ef6c1d2e3f405162738495a6b7c8d9e0f1a2-dirty".into());
        assert_eq!(
            fio_version(&provenance),
            "hostmax-0.1.0+2ab5ef6c1d2e3f405162738495a6b7c8d9e0f1a2-dirty"
        );
        assert_eq!(
            fio_version(&Provenance::default()),
            concat!("hostmax-", env!("CARGO_PKG_VERSION"))
        );
    }

    #[test]
    fn sizes_as_fio_spells_them() {
        assert_eq!(fio_size(4096), "4k");
        assert_eq!(fio_size(1 << 20), "1m");
        assert_eq!(fio_size(131_072), "128k");
        assert_eq!(fio_size(1536), "1536");
        assert_eq!(fio_size(512), "512");
    }

    #[test]
    fn latency_buckets_follow_fio_s_bounds() {
        let mut h = hostmax_engine::new_latency_histogram();
        h.record(1_500).unwrap(); // 1.5 us: latency_us "2"
        h.record(3_000).unwrap(); // 3 us: "4"
        h.record(150_000).unwrap(); // 150 us: "250"
        h.record(1_500_000_000).unwrap(); // 1.5 s: latency_ms "2000"
        let [ns, us, ms] = latency_buckets(&h);
        assert_eq!(ns["2"], 0.0);
        assert_eq!(us["2"], 25.0);
        assert_eq!(us["4"], 25.0);
        assert_eq!(us["250"], 25.0);
        assert_eq!(ms["2000"], 25.0);
        assert_eq!(ms[">=2000"], 0.0);
    }

    #[test]
    fn iodepth_level_holds_the_depth_s_bucket() {
        assert_eq!(iodepth_level(1)["1"], 100.0);
        assert_eq!(iodepth_level(3)["2"], 100.0);
        assert_eq!(iodepth_level(32)["32"], 100.0);
        assert_eq!(iodepth_level(128)[">=64"], 100.0);
        assert_eq!(iodepth_level(128)["32"], 0.0);
    }
}
