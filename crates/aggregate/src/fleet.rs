//! Merging the reports of many hosts into one fleet report ([`merge_reports`]).
//!
//! A report is a file anyone can edit: [`figures`] checks every figure before it is added,
//! [`duplicate`] finds a run given twice.

mod duplicate;
mod figures;
mod window;

pub use window::{measured_windows, overlap, MeasuredWindow, DEFAULT_MIN_OVERLAP};

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hostmax_engine::{new_latency_histogram, OpKind, PerOp, Setting};

use crate::histogram_codec::{EncodedHistograms, HistogramCodecError};
use crate::latency::{add_exact, LatencySummary};
use crate::report::{
    DeviceReport, Figures, FleetHost, FleetSummary, HostReport, OpSummary, SCHEMA_VERSION,
};
use crate::series::{DeviceSecond, SecondPoint};
use figures::{add_count, add_rate};

/// Why reports cannot be merged. `label` is the name the caller gave the report (its file).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no reports to merge")]
    NoReports,
    /// A report of another JSON layout.
    #[error("{label}: schema_version {found}, this hostmax reads {SCHEMA_VERSION}; merge reports written by the same hostmax version")]
    SchemaVersion {
        /// The report.
        label: String,
        /// Its schema version.
        found: u32,
    },
    /// Two reports ran different workloads.
    #[error("{0}")]
    WorkloadDiffers(Box<WorkloadDifference>),
    /// The same run given twice (the same run id, also inside a merged report).
    #[error("{label} is the same run as {first_label} (run_id {run_id}): each host's report counts once; give every report once")]
    SameRun {
        /// The report given second.
        label: String,
        /// The report that already holds the run.
        first_label: String,
        /// The run id they share.
        run_id: String,
    },
    /// The same run given twice without its run id: the same window, and on every device
    /// the same counts and latency histograms (for a run without I/O, also the same host).
    #[error("{label} holds the same run as {first_label} (host {host}: the same window and the same counts on every device): each host's report counts once; give every report once")]
    SameContent {
        /// The report given second.
        label: String,
        /// The report that already holds the run.
        first_label: String,
        /// The run's host.
        host: String,
    },
    /// A count that, added to the other reports', passes 2^64 - 1.
    #[error("{label}: {field} added to the other reports' passes 2^64 - 1; give reports written by hostmax")]
    CountOverflow {
        /// The report.
        label: String,
        /// The field (`host.read.ios`, `devices[/dev/sdb].drained.writes`...).
        field: String,
    },
    /// A figure that is not a finite non-negative number, or a rate above what its count
    /// over its window allows.
    #[error("{label}: {field} is {why}; give reports written by hostmax")]
    BadFigure {
        /// The report.
        label: String,
        /// The field (`host.iops`, `time_series[second 3].iops`...).
        field: String,
        /// Its value and what is wrong with it.
        why: String,
    },
    /// A report without full histograms (written by an older hostmax).
    #[error("{label}: {what} has no histograms (written by an older hostmax?); re-run with this version to merge")]
    MissingHistograms {
        /// The report.
        label: String,
        /// `host` or the device's path.
        what: String,
    },
    /// A report without a measured window (written by an older hostmax), while the windows
    /// are checked.
    #[error("{label}: no started_at/ended_at (written by an older hostmax), so whether it ran together with the others cannot be checked; merge reports of this version, or merge with a minimum overlap of 0 (merge_reports_with) to skip the check")]
    NoWindow {
        /// The report (and host, inside a merged report).
        label: String,
    },
    /// A measured window whose times do not parse, or end before they start.
    #[error("{label}: {why}; give reports as hostmax writes them")]
    BadWindow {
        /// The report (and host, inside a merged report).
        label: String,
        /// What is wrong with it.
        why: String,
    },
    /// Runs whose measured windows have less in common than the minimum overlap: they were
    /// not measured together (two runs of one host one after the other among them), and
    /// their rates would add to what no fleet did at once.
    #[error("{0}; run the hosts together (one start time), or merge with a lower minimum overlap (merge_reports_with)")]
    NotMeasuredTogether(String),
    /// A histogram that does not decode.
    #[error("{label}: the histograms of {what} do not decode: {source}")]
    BadHistogram {
        /// The report.
        label: String,
        /// `host` or the device's path.
        what: String,
        /// Why.
        #[source]
        source: HistogramCodecError,
    },
}

/// The first workload field in which a report differs from the first report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe(self.field))]
#[non_exhaustive]
pub struct WorkloadDifference {
    /// The report that differs.
    pub label: String,
    /// The first report, whose workload the others must match.
    pub first_label: String,
    /// The field of `workload` that differs.
    pub field: &'static str,
    /// The run setting behind it (a front end names its own option for it).
    pub setting: Setting,
    /// Its value in the first report.
    pub expected: String,
    /// Its value in this one.
    pub found: String,
}

impl WorkloadDifference {
    /// The refusal, naming the differing setting `setting_name` (the field's name, or a front
    /// end's option for [`WorkloadDifference::setting`]).
    pub fn describe(&self, setting_name: &str) -> String {
        format!(
            "{}: workload differs from {} in {setting_name}: {} vs {}; merge only runs of the same workload",
            self.label, self.first_label, self.found, self.expected
        )
    }
}

/// The workload fields that must match, with the setting behind each, and how to show it.
fn workload_fields(r: &HostReport) -> [(&'static str, Setting, String); 11] {
    let w = &r.workload;
    [
        ("pattern", Setting::Pattern, w.pattern.to_string()),
        ("block_size", Setting::BlockSize, w.block_size.to_string()),
        ("iodepth", Setting::Iodepth, w.iodepth.to_string()),
        // With numjobs the depth is per job, without it per device: runs that differ here
        // kept different numbers of I/Os in flight whatever their iodepth says.
        (
            "numjobs",
            Setting::Numjobs,
            w.numjobs.map_or_else(
                || "none (iodepth per device)".to_string(),
                |n| format!("{n} (iodepth per job)"),
            ),
        ),
        ("rwmixread", Setting::Rwmixread, w.rwmixread.to_string()),
        ("runtime_secs", Setting::Runtime, w.runtime_secs.to_string()),
        (
            "working_set",
            Setting::WorkingSet,
            w.working_set
                .map_or_else(|| "the whole device".to_string(), |b| format!("{b} bytes")),
        ),
        (
            "rate_iops",
            Setting::RateIops,
            w.rate_iops
                .map_or_else(|| "no cap".to_string(), |c| format!("{c} per device")),
        ),
        (
            "arrival",
            Setting::Arrival,
            w.arrival
                .map_or_else(|| "none".to_string(), |a| a.to_string()),
        ),
        (
            "record_latency",
            Setting::RecordLatency,
            w.record_latency.to_string(),
        ),
        (
            "complete_batch",
            Setting::CompleteBatch,
            w.complete_batch.to_string(),
        ),
    ]
}

/// Merges the reports of hosts that ran the same workload at the same time into one fleet
/// report. `reports` pairs each report with a label (its file name, say) for error messages
/// and for a report without a hostname.
///
/// Since the hosts ran together, each figure combines so:
/// - counts (I/Os, bytes, errors) add;
/// - rates add: the fleet's IOPS is the sum of each host's IOPS over that host's own window.
///   The windows differ by milliseconds at most, so `measured_secs` is the longest of them and
///   a rate is NOT `ios / measured_secs` in general;
/// - whole-run percentiles come from the hosts' histograms decoded and added bin by bin
///   ([`crate::add_exact`]);
/// - per-second points are matched by second index; their counts add and their percentiles
///   come from the second's histograms added bin by bin (the worst host's, for reports of
///   older versions that kept no per-second histograms).
///
/// The result's [`HostReport::fleet`] lists the hosts ([`FleetSummary`]).
///
/// Refused: an empty list, a report of another schema version, workloads that differ in any
/// of pattern, block size, iodepth, numjobs, rwmixread, runtime, working set, rate cap or
/// latency recording (seed and ramp may differ; each host's seed is listed), reports without full
/// histograms, figures no run can have written (a rate that is not a finite number or is
/// above its count over its window, counts whose sum passes 2^64 - 1), and the same run
/// twice (by run id, or without one by its window and its devices' exact counts and
/// histograms; also inside a merged report), and runs not measured together: all of them
/// must have run together for at least [`DEFAULT_MIN_OVERLAP`] of their span (two runs of one
/// host one after the other never did), which needs every report's window
/// ([`merge_reports_with`] sets another share).
///
/// # Example
///
/// Two "hosts" (two scratch files, each measured on a thread of its own) started together, as
/// a fleet run starts at one `--start-at`, then merged; a second run of one host after the
/// first is refused:
///
/// ```
/// use std::ops::ControlFlow;
/// use std::sync::Barrier;
/// use std::time::Duration;
///
/// use hostmax_aggregate::{merge_reports, summarize, HostReport, MergeError};
/// use hostmax_engine::{measure, MeasureRequest, Observer, PreparedRun, Workload};
///
/// /// Starts its run once every host is ready.
/// struct StartTogether<'a>(&'a Barrier);
///
/// impl Observer for StartTogether<'_> {
///     fn before_start(&mut self, _: &PreparedRun) -> ControlFlow<()> {
///         self.0.wait();
///         ControlFlow::Continue(())
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Scratch(Vec<std::path::PathBuf>);
/// # impl Drop for Scratch {
/// #     fn drop(&mut self) {
/// #         self.0.iter().for_each(|f| drop(std::fs::remove_file(f)));
/// #     }
/// # }
/// let files: Vec<_> = ["a", "b"]
///     .iter()
///     .map(|h| std::env::temp_dir().join(format!("hostmax-merge-doc-{}-{h}.img", std::process::id())))
///     .collect();
/// # let _scratch = Scratch(files.clone());
/// for file in &files {
///     std::fs::File::create(file)?.set_len(16 << 20)?;
/// }
/// let workload = Workload::default()
///     .with_iodepth(4)
///     .with_runtime(Duration::from_millis(500))
///     .with_ramp(Duration::ZERO);
/// let run = |file: &std::path::PathBuf, host: &str, ready: &Barrier| -> HostReport {
///     let request = MeasureRequest::new(vec![file.clone()], workload.clone());
///     let result = measure(request, &mut StartTogether(ready)).expect("measured");
///     let mut report = summarize(&result, Vec::new());
///     report.hostname = Some(host.to_string());
///     report
/// };
/// let ready = Barrier::new(2);
/// let (a, b) = std::thread::scope(|s| {
///     let a = s.spawn(|| run(&files[0], "host-a", &ready));
///     let b = s.spawn(|| run(&files[1], "host-b", &ready));
///     (a.join().unwrap(), b.join().unwrap())
/// });
/// let fleet = merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b)])?;
/// assert_eq!(fleet.devices.len(), 2);
/// assert_eq!(fleet.fleet.as_ref().map(|f| f.hosts.len()), Some(2));
///
/// // host-a again, after the first run: not measured together, so not added.
/// let alone = Barrier::new(1);
/// let later = run(&files[0], "host-a", &alone);
/// let refused = merge_reports(&[("a.json".into(), a), ("later.json".into(), later)]);
/// assert!(matches!(refused, Err(MergeError::NotMeasuredTogether(_))), "{refused:?}");
/// # Ok(())
/// # }
/// ```
pub fn merge_reports(reports: &[(String, HostReport)]) -> Result<HostReport, MergeError> {
    merge_reports_with(reports, DEFAULT_MIN_OVERLAP)
}

/// [`merge_reports`] with `min_overlap` (0 to 1) the share of the runs' span all of them
/// must have measured together; 0 skips that check (and lets reports without a window in).
pub fn merge_reports_with(
    reports: &[(String, HostReport)],
    min_overlap: f64,
) -> Result<HostReport, MergeError> {
    let (first_label, first) = reports.first().ok_or(MergeError::NoReports)?;
    let expected = workload_fields(first);
    // Every I/O of each host ([`Figures::all_ios`]): each kind of count is added checked
    // below, and then their total, which is the merged report's `all_ios`.
    let mut host_ios = Vec::with_capacity(reports.len());
    for (label, report) in reports {
        if report.schema_version != SCHEMA_VERSION {
            return Err(MergeError::SchemaVersion {
                label: label.clone(),
                found: report.schema_version,
            });
        }
        for ((field, setting, want), (_, _, got)) in expected.iter().zip(workload_fields(report)) {
            if *want != got {
                return Err(MergeError::WorkloadDiffers(Box::new(WorkloadDifference {
                    label: label.clone(),
                    first_label: first_label.clone(),
                    field,
                    setting: *setting,
                    expected: want.clone(),
                    found: got,
                })));
            }
        }
        host_ios.push(figures::check_report(label, report)?);
    }

    duplicate::refuse_repeated_runs(reports)?;
    // Last of the refusals about what the reports are: another workload, schema or a repeat
    // says more than that the windows differ too.
    if min_overlap > 0.0 {
        let mut windows = Vec::new();
        for (label, report) in reports {
            windows.extend(measured_windows(label, report)?);
        }
        window::check_overlap(&windows, min_overlap)?;
    }

    let mut latency = PerOp::from_fn(|_| new_latency_histogram());
    // Response times: added like latency when every host recorded them (a rate was offered;
    // the workloads are equal, so either all did or none).
    let mut response = PerOp::from_fn(|_| new_latency_histogram());
    let mut all_have_response = true;
    // Histograms add saturating: their counts are checked here, so that none saturates.
    let mut recorded = PerOp::<u64>::default();
    let mut devices = Vec::new();
    let mut hosts = Vec::new();
    for (label, report) in reports {
        let host = decode(label, "host", report.host.histograms.as_ref())?;
        for (op, h) in host.iter() {
            add_count(&mut recorded[op], h.len(), label, || {
                format!("host.histograms.{}", op.name())
            })?;
        }
        add_all(&mut latency, &host);
        match report.host.response_histograms.as_ref() {
            Some(encoded) => add_all(&mut response, &decode(label, "host", Some(encoded))?),
            None => all_have_response = false,
        }
        let hostname = report.hostname.clone().unwrap_or_else(|| label.clone());
        for device in &report.devices {
            decode(label, &device.path, device.figures.histograms.as_ref())?;
            devices.push(DeviceReport {
                // A device of a merged report keeps the host it already names.
                host: device.host.clone().or_else(|| Some(hostname.clone())),
                ..device.clone()
            });
        }
        match &report.fleet {
            Some(fleet) => hosts.extend(fleet.hosts.iter().cloned()),
            None => hosts.push(FleetHost {
                hostname,
                measured_secs: report.measured_secs,
                interrupted: report.interrupted,
                devices: report.devices.len(),
                ios: report.host.ios(),
                iops: report.host.iops,
                bytes_per_sec: report.host.bytes_per_sec,
                errors: report.host.errors,
                provenance: report.provenance.clone(),
                seed: Some(report.workload.seed),
            }),
        }
    }

    let mut ops = PerOp::<OpSummary>::default();
    for (op, h) in latency.iter() {
        ops[op] = sum_op(reports, op, h)?;
        if all_have_response {
            ops[op] = std::mem::take(&mut ops[op]).with_response(&response[op]);
        }
    }
    let host = Figures {
        // Encoding only fails for a count above i64::MAX.
        histograms: EncodedHistograms::encode(&latency).ok(),
        response_histograms: all_have_response
            .then(|| EncodedHistograms::encode(&response).ok())
            .flatten(),
        ..sum_counts(reports)?.with_ops(ops, sum_errors(reports)?)
    };
    let mut all_ios: u64 = 0;
    for ((label, _), ios) in reports.iter().zip(host_ios) {
        add_count(&mut all_ios, ios, label, || {
            "host I/Os (ramp, measured, drained and failed together)".into()
        })?;
    }
    Ok(HostReport {
        schema_version: SCHEMA_VERSION,
        hostname: None,
        fleet: Some(FleetSummary { hosts }),
        // The caller gives the merge its own run id and window.
        provenance: crate::report::Provenance::default(),
        workload: first.workload.clone(),
        measured_secs: reports
            .iter()
            .map(|(_, r)| r.measured_secs)
            .fold(0.0, f64::max),
        interrupted: reports.iter().any(|(_, r)| r.interrupted),
        // Each host's own signal is in its report; the fleet names the first one given.
        interrupted_by: reports.iter().find_map(|(_, r)| r.interrupted_by.clone()),
        host,
        devices,
        time_series: merge_series(reports)?,
        // Verdicts are per host and per spec; a fleet report carries none of its own.
        verdict: None,
        // Each host's workers are in its own report.
        load_generator: None,
        verify: sum_verify(reports)?,
    })
}

/// The hosts' ramp, drained and read-sample counts added up, checked (the rest is filled in
/// by [`Figures::with_ops`]).
fn sum_counts(reports: &[(String, HostReport)]) -> Result<Figures, MergeError> {
    let mut sum = Figures::default();
    for (label, r) in reports {
        let f = &r.host;
        for op in OpKind::ALL {
            let plural = format!("{}s", op.name());
            add_count(&mut sum.ramp[op], f.ramp[op], label, || {
                format!("host.ramp.{plural}")
            })?;
            add_count(&mut sum.drained[op], f.drained[op], label, || {
                format!("host.drained.{plural}")
            })?;
        }
        let (s, add) = (&mut sum.read_samples, &f.read_samples);
        add_count(&mut s.sampled, add.sampled, label, || {
            "host.read_samples.sampled".into()
        })?;
        add_count(&mut s.zero, add.zero, label, || {
            "host.read_samples.zero".into()
        })?;
    }
    Ok(sum)
}

/// The hosts' failed I/Os added up, checked.
fn sum_errors(reports: &[(String, HostReport)]) -> Result<u64, MergeError> {
    let mut sum = 0;
    for (label, r) in reports {
        add_count(&mut sum, r.host.errors, label, || "host.errors".into())?;
    }
    Ok(sum)
}

/// The hosts' verification counts added up, checked (`None` when no host verified).
fn sum_verify(
    reports: &[(String, HostReport)],
) -> Result<Option<hostmax_engine::VerifyLog>, MergeError> {
    let mut sum: Option<hostmax_engine::VerifyLog> = None;
    for (label, r) in reports {
        let Some(log) = &r.verify else { continue };
        let s = sum.get_or_insert_with(Default::default);
        let mut checked = s.clone();
        for (field, total, add) in [
            (
                "checked_during_run",
                &mut checked.checked_during_run,
                log.checked_during_run,
            ),
            (
                "checked_after_run",
                &mut checked.checked_after_run,
                log.checked_after_run,
            ),
            ("unknown", &mut checked.unknown, log.unknown),
            (
                "not_read_back.stalled",
                &mut checked.not_read_back.stalled,
                log.not_read_back.stalled,
            ),
            (
                "not_read_back.interrupted",
                &mut checked.not_read_back.interrupted,
                log.not_read_back.interrupted,
            ),
            (
                "reads_left_in_flight",
                &mut checked.reads_left_in_flight,
                log.reads_left_in_flight,
            ),
            ("mismatches", &mut checked.mismatches, log.mismatches),
            ("corruption", &mut checked.corruption, log.corruption),
            ("misdirected", &mut checked.misdirected, log.misdirected),
            ("lost_write", &mut checked.lost_write, log.lost_write),
        ] {
            add_count(total, add, label, || format!("verify.{field}"))?;
        }
        // The counts fit: add them (and the first mismatches) the log's own way.
        s.add(log);
    }
    Ok(sum)
}

fn decode(
    label: &str,
    what: &str,
    histograms: Option<&EncodedHistograms>,
) -> Result<PerOp<Histogram<u64>>, MergeError> {
    let histograms = histograms.ok_or_else(|| MergeError::MissingHistograms {
        label: label.to_string(),
        what: what.to_string(),
    })?;
    histograms
        .decode()
        .map_err(|source| MergeError::BadHistogram {
            label: label.to_string(),
            what: what.to_string(),
            source,
        })
}

/// One kind of I/O over all hosts: counts and rates summed, percentiles from `latency`.
fn sum_op(
    reports: &[(String, HostReport)],
    op: OpKind,
    latency: &Histogram<u64>,
) -> Result<OpSummary, MergeError> {
    let mut sum = OpSummary {
        latency_ns: crate::LatencySummary::from_histogram(latency),
        ..OpSummary::default()
    };
    for (label, r) in reports {
        let o = &r.host.ops[op];
        let field = |name: &str| format!("host.{}.{name}", op.name());
        add_count(&mut sum.ios, o.ios, label, || field("ios"))?;
        add_count(&mut sum.bytes, o.bytes, label, || field("bytes"))?;
        add_rate(&mut sum.iops, o.iops, label, || field("iops"))?;
        add_rate(&mut sum.bytes_per_sec, o.bytes_per_sec, label, || {
            field("bytes_per_sec")
        })?;
    }
    Ok(sum)
}

/// The hosts' per-second points matched by second index (the hosts started together).
/// Each device's entry keeps its name and gets its host, as `devices[]` does.
fn merge_series(reports: &[(String, HostReport)]) -> Result<Vec<SecondPoint>, MergeError> {
    let mut by_second: BTreeMap<i64, Vec<Option<&SecondPoint>>> = BTreeMap::new();
    for (i, (_, r)) in reports.iter().enumerate() {
        for p in &r.time_series {
            by_second
                .entry(p.second)
                .or_insert_with(|| vec![None; reports.len()])[i] = Some(p);
        }
    }
    by_second
        .into_iter()
        .map(|(second, points)| {
            let mut merged = SecondPoint::new(second);
            // Exact when every host logged this second's histograms (reports of this version);
            // else each percentile is the worst host's, an upper bound.
            let exact = exact_second_latency(&points);
            for (p, (label, r)) in points.iter().zip(reports) {
                let hostname = r.hostname.as_deref().unwrap_or(label);
                let Some(p) = p else {
                    // This host has no such second: its devices show zeros.
                    merged.partial = true;
                    merged.devices.extend(r.devices.iter().map(|d| {
                        DeviceSecond::idle(&d.path, d.host.as_deref().or(Some(hostname)))
                    }));
                    continue;
                };
                let field = |name: &str| format!("time_series[second {second}].{name}");
                add_rate(&mut merged.iops, p.iops, label, || field("iops"))?;
                for (op, m) in merged.ops.0.iter_mut() {
                    add_rate(&mut m.iops, p.ops[op].iops, label, || {
                        field(&format!("{}.iops", op.name()))
                    })?;
                    m.p50_ns = m.p50_ns.max(p.ops[op].p50_ns);
                    m.p99_ns = m.p99_ns.max(p.ops[op].p99_ns);
                }
                add_rate(&mut merged.bytes_per_sec, p.bytes_per_sec, label, || {
                    field("bytes_per_sec")
                })?;
                add_count(&mut merged.errors, p.errors, label, || field("errors"))?;
                add_count(&mut merged.backlog, p.backlog, label, || field("backlog"))?;
                // A device of a merged report keeps the host it already names.
                merged
                    .devices
                    .extend(p.devices.iter().map(|d| DeviceSecond {
                        host: d.host.clone().or_else(|| Some(hostname.to_string())),
                        ..d.clone()
                    }));
                merged.partial |= p.partial;
            }
            if let Some(latency) = exact {
                for (op, m) in merged.ops.0.iter_mut() {
                    let l = LatencySummary::from_histogram(&latency[op]);
                    (m.p50_ns, m.p99_ns) = (l.p50, l.p99);
                }
                merged.histograms = EncodedHistograms::encode(&latency).ok();
            }
            Ok(merged)
        })
        .collect()
}

/// The bin-by-bin sum of the hosts' histograms of one second, if every host that has the
/// second carries them (and they decode).
fn exact_second_latency(points: &[Option<&SecondPoint>]) -> Option<PerOp<Histogram<u64>>> {
    let mut latency = PerOp::from_fn(|_| new_latency_histogram());
    for p in points.iter().flatten() {
        add_all(&mut latency, &p.histograms.as_ref()?.decode().ok()?);
    }
    Some(latency)
}

/// Adds each kind's histogram of `other` into `sum`'s, bin by bin.
fn add_all(sum: &mut PerOp<Histogram<u64>>, other: &PerOp<Histogram<u64>>) {
    for (op, h) in sum.iter_mut() {
        add_exact(h, &other[op]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summarize;
    use crate::series::OpSeconds;
    use crate::LatencySummary;
    use hostmax_engine::{DeviceResult, IoPattern, OpResult, RunResult, Workload};
    use std::path::PathBuf;
    use std::time::Duration;

    fn op(seed: u64, n: usize, scale: u64) -> OpResult {
        let mut o = OpResult::default();
        let mut x = seed | 1;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            o.latency.record(1000 + (x >> 44) * scale).unwrap();
        }
        o.ios = n as u64;
        o.bytes = o.ios * 4096;
        o
    }

    fn host_report(
        name: &str,
        seed: u64,
        scale: u64,
        millis: u64,
        workload: &Workload,
    ) -> HostReport {
        let mut result = RunResult::default();
        result.devices = (0..2)
            .map(|i| {
                DeviceResult::new(
                    PathBuf::from(format!("/dev/loop{i}")),
                    i,
                    PerOp::from_fn(|kind| match kind {
                        OpKind::Read => op(seed + i as u64, 20_000 + 1000 * i, scale),
                        OpKind::Write => op(seed + 10 + i as u64, 5000, scale * 2),
                        _ => OpResult::default(),
                    }),
                )
            })
            .collect();
        if workload.rate_iops.is_some() {
            // At an offered rate: each I/O waited `seed` ms more than its service time.
            for d in &mut result.devices {
                for (_, o) in d.ops.iter_mut() {
                    let mut response = new_latency_histogram();
                    for v in o.latency.iter_recorded() {
                        let waited = v.value_iterated_to() + seed * 1_000_000;
                        response.record_n(waited, v.count_at_value()).unwrap();
                    }
                    o.response = response;
                }
            }
        }
        result.measured = Duration::from_millis(millis);
        result.workload = workload.clone();
        let points = (0..2)
            .map(|second| {
                // The two devices run at different rates, so a name on the wrong figures shows.
                let device = |share: u64| DeviceSecond {
                    iops: (share * seed) as f64,
                    ops: crate::series::OpRates(PerOp::from_fn(|op| match op {
                        OpKind::Read => (share * seed) as f64,
                        _ => 0.0,
                    })),
                    ..Default::default()
                };
                SecondPoint {
                    second,
                    iops: (100 * seed) as f64,
                    ops: OpSeconds(PerOp::from_fn(|op| match op {
                        OpKind::Read => crate::series::OpSecond {
                            iops: (60 * seed) as f64,
                            p50_ns: 1000 * seed,
                            p99_ns: 2000 * seed,
                        },
                        OpKind::Write => crate::series::OpSecond {
                            iops: (40 * seed) as f64,
                            p50_ns: 3000,
                            p99_ns: 4000,
                        },
                        _ => Default::default(),
                    })),
                    bytes_per_sec: (4096 * 100 * seed) as f64,
                    errors: 0,
                    backlog: 0,
                    devices: vec![device(30), device(70)],
                    partial: false,
                    histograms: None,
                }
            })
            .collect();
        let report = summarize(&result, points);
        HostReport {
            hostname: Some(name.to_string()),
            // Every host measured together, as merging asks.
            provenance: crate::report::Provenance {
                started_at: Some("2026-11-25T10:00:00Z".into()),
                ended_at: Some("2026-11-25T10:00:02Z".into()),
                ..report.provenance.clone()
            },
            ..report
        }
    }

    /// Each device entry of a second as (host, path, IOPS).
    fn named(p: &SecondPoint) -> Vec<(Option<&str>, &str, f64)> {
        p.devices
            .iter()
            .map(|d| (d.host.as_deref(), d.path.as_str(), d.iops))
            .collect()
    }

    /// Recorded bins as (value, count): growing histograms that hold the same counts may
    /// differ in the length of their counts arrays, which `==` compares.
    fn bins(h: &Histogram<u64>) -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    fn randrw() -> Workload {
        Workload::default().with_pattern(IoPattern::RandRw)
    }

    #[test]
    fn response_times_merge_exactly_and_arrivals_must_match() {
        let rated = randrw().with_rate_iops(Some(1000));
        let a = host_report("alpha", 1, 3, 2000, &rated);
        let b = host_report("beta", 2, 50, 2010, &rated);
        let merged =
            merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())]).unwrap();
        let mut read = new_latency_histogram();
        for r in [&a, &b] {
            let encoded = r.host.response_histograms.as_ref().unwrap();
            add_exact(&mut read, &encoded.decode().unwrap()[OpKind::Read]);
        }
        assert_eq!(
            merged.host.ops[OpKind::Read].response_ns,
            Some(LatencySummary::from_histogram(&read))
        );
        let decoded = merged.host.response_histograms.as_ref().unwrap().decode();
        assert_eq!(bins(&decoded.unwrap()[OpKind::Read]), bins(&read));
        // Service times are apart and unchanged by the wait.
        assert!(
            merged.host.ops[OpKind::Read].latency_ns.p50
                < merged.host.ops[OpKind::Read].response_ns.unwrap().p50
        );
        let poisson = rated.with_arrival(hostmax_engine::Arrival::Poisson);
        let c = host_report("gamma", 3, 3, 2000, &poisson);
        let err = merge_reports(&[("a.json".into(), a), ("c.json".into(), c)]).unwrap_err();
        assert!(
            err.to_string().contains("in arrival: poisson vs even"),
            "{err}"
        );
    }

    #[test]
    fn counts_and_rates_add_and_percentiles_come_from_added_histograms() {
        let a = host_report("alpha", 1, 3, 2000, &randrw());
        let b = host_report("beta", 2, 50, 2010, &randrw());
        let merged =
            merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())]).unwrap();

        assert_eq!(
            merged.host.ops[OpKind::Read].ios,
            a.host.ops[OpKind::Read].ios + b.host.ops[OpKind::Read].ios
        );
        assert_eq!(
            merged.host.ops[OpKind::Write].ios,
            a.host.ops[OpKind::Write].ios + b.host.ops[OpKind::Write].ios
        );
        assert_eq!(
            merged.host.ops[OpKind::Read].bytes,
            a.host.ops[OpKind::Read].bytes + b.host.ops[OpKind::Read].bytes
        );
        assert_eq!(merged.host.iops, a.host.iops + b.host.iops);
        assert_eq!(
            merged.host.bytes_per_sec,
            a.host.bytes_per_sec + b.host.bytes_per_sec
        );
        assert_eq!(merged.measured_secs, 2.01);

        // By hand: decode each host's histograms and add them.
        let mut read = new_latency_histogram();
        for r in [&a, &b] {
            let hr = r.host.histograms.as_ref().unwrap().decode().unwrap()[OpKind::Read].clone();
            read.add(&hr).unwrap();
        }
        assert_eq!(
            merged.host.ops[OpKind::Read].latency_ns,
            LatencySummary::from_histogram(&read)
        );
        let merged_read =
            merged.host.histograms.as_ref().unwrap().decode().unwrap()[OpKind::Read].clone();
        assert_eq!(bins(&merged_read), bins(&read));
        // b's latencies are much larger: the fleet p99 is not the mean of the hosts' p99s.
        let mean =
            (a.host.ops[OpKind::Read].latency_ns.p99 + b.host.ops[OpKind::Read].latency_ns.p99) / 2;
        assert_ne!(merged.host.ops[OpKind::Read].latency_ns.p99, mean);

        assert_eq!(merged.devices.len(), 4);
        assert_eq!(merged.devices[0].host.as_deref(), Some("alpha"));
        assert_eq!(merged.devices[3].host.as_deref(), Some("beta"));
        assert_eq!(merged.devices[3].figures, b.devices[1].figures);
        assert_eq!(merged.hostname, None);
        let fleet = merged.fleet.as_ref().unwrap();
        assert_eq!(fleet.hosts.len(), 2);
        assert_eq!(fleet.hosts[1].hostname, "beta");
        assert_eq!(fleet.hosts[1].ios, b.host.ios());

        let p = &merged.time_series[1];
        assert_eq!(p.iops, 300.0);
        assert_eq!(
            named(p),
            [
                (Some("alpha"), "/dev/loop0", 30.0),
                (Some("alpha"), "/dev/loop1", 70.0),
                (Some("beta"), "/dev/loop0", 60.0),
                (Some("beta"), "/dev/loop1", 140.0),
            ]
        );
        assert_eq!(p.ops[OpKind::Read].p99_ns, 4000);
        assert!(!p.partial);
    }

    /// `host`'s report with a time series built from per-device intervals (so each second
    /// carries its histograms), and those seconds' read histograms.
    fn host_with_series(name: &str, scale: u64) -> (HostReport, Vec<Histogram<u64>>) {
        let mut r = host_report(name, 1, scale, 2000, &randrw());
        let mut series = crate::TimeSeries::new(2);
        let mut seconds = Vec::new();
        for second in 0..2 {
            let mut read_of_second = new_latency_histogram();
            for device in 0..2 {
                let read = op(scale * 10 + second as u64 * 2 + device as u64, 3000, scale).latency;
                read_of_second.add(&read).unwrap();
                let mut ops = PerOp::<OpResult>::default();
                ops[OpKind::Read] = OpResult::new(read.len(), read.len() * 4096, read);
                series.push(hostmax_engine::DeviceInterval::new(device, second, ops, 0));
            }
            seconds.push(read_of_second);
        }
        r.time_series = series.finish();
        (r, seconds)
    }

    #[test]
    fn each_merged_second_has_percentiles_of_the_added_histograms() {
        let (a, a_seconds) = host_with_series("alpha", 3);
        let (b, b_seconds) = host_with_series("beta", 80);
        let merged = merge_reports(&[("a".into(), a.clone()), ("b".into(), b)]).unwrap();
        for second in 0..2 {
            let mut by_hand = a_seconds[second].clone();
            by_hand.add(&b_seconds[second]).unwrap();
            let p = &merged.time_series[second];
            let want = LatencySummary::from_histogram(&by_hand);
            assert_eq!(
                (p.ops[OpKind::Read].p50_ns, p.ops[OpKind::Read].p99_ns),
                (want.p50, want.p99)
            );
            let read = p.histograms.as_ref().unwrap().decode().unwrap()[OpKind::Read].clone();
            assert_eq!(
                bins(&read),
                bins(&by_hand),
                "the fleet second can be merged again"
            );
        }
        // A host of an older version (no per-second histograms): each percentile falls back
        // to the worst host's.
        let mut old = a;
        old.time_series.iter_mut().for_each(|p| p.histograms = None);
        let (b, _) = host_with_series("beta", 80);
        let mixed = merge_reports(&[("old".into(), old.clone()), ("b".into(), b.clone())]).unwrap();
        let p = &mixed.time_series[0];
        assert!(p.histograms.is_none());
        assert_eq!(
            p.ops[OpKind::Read].p99_ns,
            old.time_series[0].ops[OpKind::Read]
                .p99_ns
                .max(b.time_series[0].ops[OpKind::Read].p99_ns)
        );
    }

    #[test]
    fn a_report_carries_every_histogram_in_full() {
        let r = host_report("alpha", 4, 9, 1000, &randrw());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["hostname"], "alpha");
        assert!(v.get("fleet").is_none());
        assert!(v["devices"][0].get("host").is_none());
        for scope in [&v["host"], &v["devices"][0], &v["devices"][1]] {
            for op in ["read", "write"] {
                let text = scope["histograms"][op].as_str().unwrap();
                assert!(text.starts_with("HISTFAAA"));
            }
        }
        let mut sum = new_latency_histogram();
        for d in &r.devices {
            let read =
                d.figures.histograms.as_ref().unwrap().decode().unwrap()[OpKind::Read].clone();
            assert_eq!(read.len(), d.figures.ops[OpKind::Read].ios);
            assert_eq!(
                LatencySummary::from_histogram(&read),
                d.figures.ops[OpKind::Read].latency_ns
            );
            sum.add(&read).unwrap();
        }
        let host_read = r.host.histograms.as_ref().unwrap().decode().unwrap()[OpKind::Read].clone();
        assert_eq!(bins(&host_read), bins(&sum));
        let back: HostReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn merging_merged_reports_keeps_every_host() {
        let w = randrw();
        let ab = merge_reports(&[
            ("a".into(), host_report("alpha", 1, 3, 1000, &w)),
            ("b".into(), host_report("beta", 2, 5, 1000, &w)),
        ])
        .unwrap();
        let c = host_report("gamma", 3, 7, 1000, &w);
        let all = merge_reports(&[("ab".into(), ab.clone()), ("c".into(), c.clone())]).unwrap();
        let names: Vec<&str> = all
            .fleet
            .as_ref()
            .unwrap()
            .hosts
            .iter()
            .map(|h| h.hostname.as_str())
            .collect();
        assert_eq!(names, ["alpha", "beta", "gamma"]);
        assert_eq!(all.devices[1].host.as_deref(), Some("alpha"));
        assert_eq!(
            all.host.ops[OpKind::Read].ios,
            ab.host.ops[OpKind::Read].ios + c.host.ops[OpKind::Read].ios
        );
        // Each second's entries keep the hosts the first merge gave them.
        let hosts: Vec<&str> = all.time_series[0]
            .devices
            .iter()
            .filter_map(|d| d.host.as_deref())
            .collect();
        assert_eq!(hosts, ["alpha", "alpha", "beta", "beta", "gamma", "gamma"]);
    }

    #[test]
    fn a_missing_second_marks_the_point_partial() {
        let w = randrw();
        let a = host_report("alpha", 1, 3, 1000, &w);
        let mut b = host_report("beta", 2, 3, 1000, &w);
        b.time_series.truncate(1);
        let merged = merge_reports(&[("a".into(), a), ("b".into(), b)]).unwrap();
        assert!(!merged.time_series[0].partial);
        assert!(merged.time_series[1].partial);
        assert_eq!(
            named(&merged.time_series[1]),
            [
                (Some("alpha"), "/dev/loop0", 30.0),
                (Some("alpha"), "/dev/loop1", 70.0),
                (Some("beta"), "/dev/loop0", 0.0),
                (Some("beta"), "/dev/loop1", 0.0),
            ]
        );
    }

    #[test]
    fn a_refusal_says_sizes_and_caps_in_words() {
        let a = host_report("alpha", 1, 3, 1000, &randrw());
        let b = host_report(
            "beta",
            2,
            3,
            1000,
            &randrw().with_working_set(Some(64 << 20)),
        );
        let err = merge_reports(&[("a.json".into(), a), ("b.json".into(), b)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("in working_set: 67108864 bytes vs the whole device"),
            "{err}"
        );
        assert!(!err.contains("Some(") && !err.contains("None"), "{err}");
    }

    #[test]
    fn different_workloads_are_refused_naming_the_field() {
        let a = host_report("alpha", 1, 3, 1000, &randrw());
        for (workload, field) in [
            (
                randrw().with_block_size(8192),
                "in block_size: 8192 vs 4096",
            ),
            (
                randrw().with_pattern(IoPattern::RandRead),
                "in pattern: randread vs randrw",
            ),
            (randrw().with_iodepth(1), "in iodepth"),
            (
                randrw().with_numjobs(Some(2)),
                "in numjobs: 2 (iodepth per job) vs none (iodepth per device)",
            ),
            (randrw().with_rwmixread(70), "in rwmixread"),
            (
                randrw().with_runtime(Duration::from_secs(60)),
                "in runtime_secs",
            ),
        ] {
            let b = host_report("beta", 2, 3, 1000, &workload);
            let err = merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b)])
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("b.json: workload differs from a.json in "),
                "{err}"
            );
            // The report's own field names: a front end names its options instead.
            assert!(err.contains(field), "{err}");
        }
        // Seed and ramp may differ.
        let b = host_report(
            "beta",
            2,
            3,
            1000,
            &randrw().with_seed(99).with_ramp(Duration::ZERO),
        );
        assert!(merge_reports(&[("a".into(), a), ("b".into(), b)]).is_ok());
    }

    #[test]
    fn reports_without_histograms_or_of_another_schema_are_refused() {
        let w = randrw();
        let a = host_report("alpha", 1, 3, 1000, &w);
        let mut old = host_report("beta", 2, 3, 1000, &w);
        old.devices[1].figures.histograms = None;
        let err = merge_reports(&[("a".into(), a.clone()), ("old.json".into(), old)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("old.json: /dev/loop1 has no histograms"),
            "{err}"
        );

        let mut bad = host_report("beta", 2, 3, 1000, &w);
        bad.host.histograms.as_mut().unwrap().0[OpKind::Read] = "HISTFAAAnope".into();
        assert!(matches!(
            merge_reports(&[("a".into(), a.clone()), ("bad".into(), bad)]),
            Err(MergeError::BadHistogram { .. })
        ));

        let mut v3 = host_report("beta", 2, 3, 1000, &w);
        v3.schema_version = 3;
        let err = merge_reports(&[("a".into(), a), ("v3.json".into(), v3)])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("v3.json: schema_version 3"), "{err}");
        assert!(matches!(merge_reports(&[]), Err(MergeError::NoReports)));
    }

    #[test]
    fn counts_that_pass_2_64_are_refused_naming_file_and_field() {
        let w = randrw();
        let mut a = host_report("alpha", 1, 3, 1000, &w);
        let b = host_report("beta", 2, 3, 1000, &w);
        // alpha's I/Os add up to 2^64 - 1 exactly: its own report is sound.
        let rest = a.host.all_ios() - a.host.ops[OpKind::Read].ios;
        a.host.ops[OpKind::Read].ios = u64::MAX - rest;
        let err = merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())])
            .unwrap_err();
        assert!(
            matches!(&err, MergeError::CountOverflow { label, field } if label == "b.json" && field == "host.read.ios"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "b.json: host.read.ios added to the other reports' passes 2^64 - 1; give reports written by hostmax"
        );
        // Histograms whose counts pass it: three hosts' of i64::MAX reads each (the most one
        // encoding holds; each one's own sum is checked when decoded).
        let mut h: Histogram<u64> = new_latency_histogram();
        h.record_n(1000, i64::MAX as u64).unwrap();
        let text = crate::encode_histogram(&h).unwrap();
        let heavy: Vec<(String, HostReport)> = (1..=3)
            .map(|seed| {
                let mut r = host_report(&format!("host{seed}"), seed, 3, 1000, &w);
                r.host.histograms.as_mut().unwrap().0[OpKind::Read] = text.clone();
                (format!("h{seed}"), r)
            })
            .collect();
        let err = merge_reports(&heavy).unwrap_err();
        assert!(
            matches!(&err, MergeError::CountOverflow { label, field } if label == "h3" && field == "host.histograms.read"),
            "{err}"
        );
        // Counts that fit one by one, but not together.
        let (mut ramp, mut drained) = (b.clone(), host_report("gamma", 3, 3, 1000, &w));
        ramp.host.ramp[OpKind::Read] = 1 << 63;
        drained.host.drained[OpKind::Write] = 1 << 63;
        let err =
            merge_reports(&[("r.json".into(), ramp), ("d.json".into(), drained)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "d.json: host I/Os (ramp, measured, drained and failed together) added to the other reports' passes 2^64 - 1; give reports written by hostmax"
        );
        // One report whose own counts pass it, and each other count merge adds.
        let mut own = b.clone();
        own.host.drained[OpKind::Write] = u64::MAX;
        let err = merge_reports(&[("own.json".into(), own)]).unwrap_err();
        assert!(matches!(err, MergeError::CountOverflow { .. }), "{err}");
        for (field, edit) in [
            (
                "host.errors",
                (|r: &mut HostReport| r.host.errors = u64::MAX / 2 + 1) as fn(&mut HostReport),
            ),
            ("host.ramp.reads", |r| {
                r.host.ramp[OpKind::Read] = u64::MAX / 2 + 1
            }),
            ("host.drained.writes", |r| {
                r.host.drained[OpKind::Write] = u64::MAX / 2 + 1
            }),
            ("host.read_samples.zero", |r| {
                r.host.read_samples.zero = u64::MAX;
            }),
            ("time_series[second 0].errors", |r| {
                r.time_series[0].errors = u64::MAX
            }),
            ("verify.mismatches", |r| {
                let mut log = hostmax_engine::VerifyLog::default();
                log.mismatches = u64::MAX;
                r.verify = Some(log)
            }),
        ] {
            let (mut a, mut b) = (b.clone(), host_report("gamma", 3, 3, 1000, &w));
            edit(&mut a);
            edit(&mut b);
            let err = merge_reports(&[("a.json".into(), a), ("c.json".into(), b)]).unwrap_err();
            assert!(
                matches!(&err, MergeError::CountOverflow { label, field: f } if label == "c.json" && f == field),
                "{field}: {err}"
            );
        }
    }

    #[test]
    fn figures_no_run_can_have_are_refused_naming_file_and_field() {
        let w = randrw();
        let a = host_report("alpha", 1, 3, 1000, &w);
        for (field, why, edit) in [
            (
                "host.read.iops",
                "1e308, more than its count",
                (|r: &mut HostReport| r.host.ops[OpKind::Read].iops = 1e308) as fn(&mut HostReport),
            ),
            ("host.iops", "inf, not a finite", |r| {
                r.host.iops = f64::INFINITY
            }),
            (
                "devices[/dev/loop1].bytes_per_sec",
                "NaN, not a finite",
                |r| r.devices[1].figures.bytes_per_sec = f64::NAN,
            ),
            ("devices[/dev/loop0].write.iops", "-1, not a finite", |r| {
                r.devices[0].figures.ops[OpKind::Write].iops = -1.0
            }),
            ("measured_secs", "NaN", |r| r.measured_secs = f64::NAN),
            ("time_series[second 1].iops", "1e308, more than", |r| {
                r.time_series[1].iops = 1e308
            }),
            (
                "time_series[second 0].devices[/dev/loop0].iops",
                "inf",
                |r| r.time_series[0].devices[0].iops = f64::INFINITY,
            ),
            ("devices[/dev/loop1].stopped_at_secs", "NaN", |r| {
                r.devices[1].stopped_at_secs = Some(f64::NAN)
            }),
            ("host.read.latency_ns.mean", "NaN", |r| {
                r.host.ops[OpKind::Read].latency_ns.mean = f64::NAN
            }),
        ] {
            let mut b = host_report("beta", 2, 3, 1000, &w);
            edit(&mut b);
            let err =
                merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b)]).unwrap_err();
            let MergeError::BadFigure {
                label,
                field: f,
                why: w,
            } = &err
            else {
                panic!("{field}: {err}");
            };
            assert_eq!((label.as_str(), f.as_str()), ("b.json", field), "{err}");
            assert!(w.starts_with(why), "{field}: {err}");
            assert!(
                err.to_string().starts_with(&format!("b.json: {field} is ")),
                "{err}"
            );
        }
        // A merged report's rates are its hosts' over their own windows: it merges again.
        let short = host_report("beta", 2, 3, 500, &w);
        let ab = merge_reports(&[("a".into(), a), ("b".into(), short)]).unwrap();
        assert!(merge_reports(&[
            ("ab".into(), ab),
            ("c".into(), host_report("gamma", 3, 3, 1000, &w))
        ])
        .is_ok());
    }

    #[test]
    fn a_report_made_by_the_library_carries_its_run_id_and_is_refused_twice() {
        let w = randrw();
        let mut result = RunResult::default();
        result.run_id = 0x00c0_ffee_1234_5678;
        result.measured = Duration::from_millis(1500);
        result.measured_from = Some(std::time::UNIX_EPOCH + Duration::from_secs(1_764_064_800));
        result.workload = w.clone();
        let report = summarize(&result, Vec::new());
        assert_eq!(
            report.provenance.run_id.as_deref(),
            Some("00c0ffee12345678")
        );
        assert_eq!(
            report.provenance.hostmax_version.as_deref(),
            Some(env!("CARGO_PKG_VERSION"))
        );
        // The library does not know the commit of the program using it.
        assert_eq!(report.provenance.hostmax_commit, None);
        assert_eq!(
            report.provenance.started_at.as_deref(),
            Some("2025-11-25T10:00:00.000Z")
        );
        assert_eq!(
            report.provenance.ended_at.as_deref(),
            Some("2025-11-25T10:00:01.500Z")
        );
        let err =
            merge_reports(&[("one".into(), report.clone()), ("two".into(), report)]).unwrap_err();
        assert!(
            matches!(&err, MergeError::SameRun { run_id, .. } if run_id == "00c0ffee12345678"),
            "{err}"
        );
    }

    #[test]
    fn the_same_run_without_its_run_id_is_refused_by_what_it_measured() {
        let w = randrw();
        let stamped = |name: &str, seed: u64| HostReport {
            provenance: crate::report::Provenance {
                started_at: Some("2026-11-25T10:00:00Z".into()),
                ended_at: Some("2026-11-25T10:00:02Z".into()),
                ..Default::default()
            },
            ..host_report(name, seed, 1, 2000, &w)
        };
        let (a, b) = (stamped("alpha", 3), stamped("beta", 5));
        let err = merge_reports(&[
            ("a.json".into(), a.clone()),
            ("copy.json".into(), a.clone()),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "copy.json holds the same run as a.json (host alpha: the same window and the same counts on every device): each host's report counts once; give every report once"
        );
        // Renamed, it is still the same run.
        let renamed = HostReport {
            hostname: Some("other".into()),
            ..a.clone()
        };
        assert!(matches!(
            merge_reports(&[("a.json".into(), a.clone()), ("r.json".into(), renamed)]),
            Err(MergeError::SameContent { .. })
        ));
        // Inside a merged report too.
        let ab =
            merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())]).unwrap();
        let err =
            merge_reports(&[("ab.json".into(), ab), ("b.json".into(), b.clone())]).unwrap_err();
        assert!(
            matches!(&err, MergeError::SameContent { label, host, .. } if label == "b.json" && host == "beta"),
            "{err}"
        );
        // Two hosts that did no I/O in the same window are two runs.
        let idle = |name: &str| {
            let mut r = stamped(name, 3);
            for d in &mut r.devices {
                d.figures = Figures {
                    histograms: d.figures.histograms.clone(),
                    ..Figures::default()
                };
            }
            r
        };
        if let Err(e) = merge_reports(&[("x".into(), idle("x")), ("y".into(), idle("y"))]) {
            panic!("{e}");
        }
        assert!(matches!(
            merge_reports(&[("x".into(), idle("x")), ("x2".into(), idle("x"))]),
            Err(MergeError::SameContent { .. })
        ));
    }

    #[test]
    fn two_runs_of_one_host_one_after_the_other_are_refused() {
        let w = randrw();
        let at = |seed: u64, start: &str, end: &str| {
            let mut r = host_report("alpha", seed, 1, 2000, &w);
            r.provenance.started_at = Some(start.into());
            r.provenance.ended_at = Some(end.into());
            r
        };
        let first = at(3, "2026-11-25T10:00:00Z", "2026-11-25T10:00:02Z");
        let second = at(5, "2026-11-25T10:05:00Z", "2026-11-25T10:05:02Z");
        let reports = [("1.json".into(), first), ("2.json".into(), second)];
        let err = merge_reports(&reports).unwrap_err();
        assert!(matches!(err, MergeError::NotMeasuredTogether(_)), "{err:?}");
        assert!(
            err.to_string().starts_with(
                "the runs were not measured together: 1.json ended at 2026-11-25T10:00:02.000Z"
            ),
            "{err}"
        );
        // A caller who means to add them says so.
        assert!(merge_reports_with(&reports, 0.0).is_ok());
        // And a report without its window cannot be checked.
        let mut unstamped = reports.clone();
        unstamped[1].1.provenance.started_at = None;
        assert!(matches!(
            merge_reports(&unstamped),
            Err(MergeError::NoWindow { .. })
        ));
    }

    #[test]
    fn the_same_run_is_refused_twice_also_inside_a_merged_report() {
        let w = randrw();
        let with_id = |name: &str, seed: u64, id: &str| {
            let report = host_report(name, seed, 1, 2000, &w);
            HostReport {
                provenance: crate::report::Provenance {
                    run_id: Some(id.to_string()),
                    ..report.provenance.clone()
                },
                ..report
            }
        };
        let a = with_id("a", 3, "aaaa");
        let b = with_id("b", 5, "bbbb");
        let err = merge_reports(&[
            ("a.json".into(), a.clone()),
            ("copy.json".into(), a.clone()),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "copy.json is the same run as a.json (run_id aaaa): each host's report counts once; give every report once"
        );
        let ab =
            merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())]).unwrap();
        let hosts = &ab.fleet.as_ref().unwrap().hosts;
        assert_eq!(hosts[0].provenance.run_id.as_deref(), Some("aaaa"));
        assert_eq!((hosts[0].seed, hosts[1].seed), (Some(w.seed), Some(w.seed)));
        let err = merge_reports(&[("ab.json".into(), ab), ("b.json".into(), b)]).unwrap_err();
        assert!(
            matches!(err, MergeError::SameRun { ref run_id, .. } if run_id == "bbbb"),
            "{err}"
        );
    }
}
