//! `--hdr-log`: per-second latency histograms in HdrHistogram's interval-log format, readable
//! by its own tools (Java `HistogramLogProcessor`, HdrHistogram's log analyzers, the Rust
//! crate's `IntervalLogIterator`): the [`HdrLog`] output, written by [`HdrLogRecorder`].
//!
//! One tag per device and op (`loop3-read`, `loop3-write`, `loop3-trim`) and per host op
//! (`host-read`, `host-write`, `host-trim`); only the ops the workload does are logged. These
//! are service times (submission to completion); a run at an offered rate (`--rate-iops`)
//! also logs its response times (intended start to completion) under tags of their own
//! (`loop3-read-response`, `host-read-response`).
//! Timestamps are seconds since the measured window's start, which the log's `StartTime` and `BaseTime` give; values are
//! nanoseconds. Device intervals are written as the engine hands them over (each tag's lines
//! are in time order); a host interval as the run's time series completes each second. The file is
//! written beside its path and renamed into place when the command ends, like the JSON.
//!
//! A command of several runs (verify's phases, sweep's steps, curve's depths) writes them all
//! to one log: each run's tags start with its name (`step2-loop3-read`, `step2-host-read`), a
//! comment line names the run, its workload and devices, and its timestamps are seconds since
//! the first run's measured window started (the log's `StartTime`), so every run keeps its
//! place in time.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use hostmax_aggregate::SecondHistograms;
use hostmax_engine::{DeviceInterval, OpKind, Workload};

use super::atomic::AtomicFile;
use super::destination::{Destination, OutputError, OutputFile, OutputPath, HDR_LOG};
use super::export::{Export, RecordRuns, RunStart};
use super::kept::{name_of, SpillingFile};
use crate::error::BadInput;

/// `--hdr-log`: the interval log of every run of the command, made while they go and renamed
/// into place when the command writes its outputs.
#[derive(Default)]
pub struct HdrLog {
    /// The checked destination.
    path: Option<OutputPath>,
    /// Made when the first run starts.
    recorder: Option<HdrLogRecorder>,
}

impl RecordRuns for HdrLog {
    fn begin(&mut self, run: &RunStart<'_>) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => recorder.begin_run(run),
            None => {
                let path = self.path.as_ref().expect("prepared when declared");
                let file = path
                    .create()
                    .with_context(|| format!("--hdr-log {}", path.path().display()))?;
                self.recorder = Some(HdrLogRecorder::create_for(path.path(), file, run)?);
                Ok(())
            }
        }
    }

    fn interval(&mut self, interval: &DeviceInterval) {
        if let Some(recorder) = &mut self.recorder {
            recorder.push(interval);
        }
    }

    fn host_second(&mut self, host: &SecondHistograms) {
        if let Some(recorder) = &mut self.recorder {
            recorder.push_host(host);
        }
    }

    fn ended_after(&mut self, measured: Duration) {
        if let Some(recorder) = &mut self.recorder {
            recorder.run_ended_after(measured);
        }
    }
}

impl<R: ?Sized> Export<R> for HdrLog {
    fn file(&self) -> &'static OutputFile {
        &HDR_LOG
    }

    fn prepare(&mut self, dest: &Destination) -> Result<(), BadInput> {
        // `-` was refused when declared: HDR_LOG is a file only.
        if let Destination::File(out) = dest {
            self.path = Some(out.clone());
        }
        Ok(())
    }

    fn recorder(&mut self) -> Option<&mut dyn RecordRuns> {
        Some(self)
    }

    /// Renames the log into place; a command that ran nothing has no log to write.
    fn write(self: Box<Self>, _dest: &Destination, _result: &R) -> anyhow::Result<()> {
        match self.recorder {
            Some(recorder) => Ok(recorder.finish()?),
            None => Ok(()),
        }
    }
}

/// The interval-log tags of a run's devices: the file name of each path (`/dev/loop3` ->
/// `loop3`), with characters tags may not hold (`,` and whitespace) replaced by `_`, and
/// `_2`, `_3`... added where two names would be the same. `host` is kept for the host.
pub fn device_tags(paths: &[PathBuf]) -> Vec<String> {
    let mut taken = vec!["host".to_string()];
    paths
        .iter()
        .map(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            let base: String = name
                .chars()
                .map(|c| {
                    if c == ',' || c.is_whitespace() {
                        '_'
                    } else {
                        c
                    }
                })
                .collect();
            let base = if base.is_empty() {
                "device".into()
            } else {
                base
            };
            let mut tag = base.clone();
            let mut n = 2;
            while taken.contains(&tag) {
                tag = format!("{base}_{n}");
                n += 1;
            }
            taken.push(tag.clone());
            tag
        })
        .collect()
}

/// The kinds of I/O `workload` issues: only those are logged.
fn logged_ops(workload: &Workload) -> Vec<OpKind> {
    OpKind::ALL
        .into_iter()
        .filter(|&op| workload.pattern.issues(op))
        .collect()
}

/// Writes the `--hdr-log` file while a run goes on: feed it every [`DeviceInterval`]
/// ([`HdrLogRecorder::push`]) and the host's merged histograms of every second from the run's
/// [`hostmax_aggregate::TimeSeries`] ([`HdrLogRecorder::push_host`]: the series merges each
/// second once, for the report and the log), then [`HdrLogRecorder::finish`].
pub struct HdrLogRecorder {
    /// The destination, for messages.
    path: PathBuf,
    /// The log's temporary file, moved to a kept file if its destination fails.
    file: BufWriter<SpillingFile>,
    serializer: V2DeflateSerializer,
    /// The current run's device tags (its name first, for a run of several).
    tags: Vec<String>,
    /// The current run's host tag: `host`, or `step2-host`.
    host_tag: String,
    /// When the log's time starts: the first run's measured window.
    base: SystemTime,
    /// Where the current run's measured window starts in the log's time.
    offset: Duration,
    /// The kinds of I/O the workload issues: only those are logged.
    logged: Vec<OpKind>,
    /// The workload offers a rate: response times are logged too (`...-response` tags).
    paced: bool,
    /// Where the measured window ends: the planned runtime until [`HdrLogRecorder::run_ended_after`]
    /// says the run ended sooner.
    window_end: Duration,
    /// The lines of the latest second seen, held back until a later second arrives or the run
    /// ends: only then is it known whether that second was cut short.
    held: Vec<(i64, String, Histogram<u64>)>,
    /// The first write error; later writes are skipped and `finish` reports it.
    failed: Option<anyhow::Error>,
}

impl HdrLogRecorder {
    /// Creates the log for the first run of a command (see [`RunStart`]) in `file`, the
    /// temporary file of `path`: a command's only run gets the one-run header; a named run
    /// starts a log of several.
    pub fn create_for(
        path: &Path,
        file: AtomicFile,
        run: &RunStart<'_>,
    ) -> anyhow::Result<HdrLogRecorder> {
        let mut recorder = HdrLogRecorder::open(path, file, run.targets, run.workload);
        let Some(label) = run.label else {
            recorder.base = run.measured_start;
            recorder.write_header(run.targets, run.workload, run.measured_start)?;
            return Ok(recorder);
        };
        recorder.base = run.measured_start;
        let mut builder = header_builder(&format!(
            "several runs, each tagged by its name ({label}-host-read); latencies in nanoseconds; timestamps are seconds since the first run's measured window's start"
        ));
        builder
            .with_start_time(run.measured_start)
            .with_base_time(run.measured_start);
        recorder.begin_header(builder)?;
        recorder.begin_run(run)?;
        Ok(recorder)
    }

    /// Starts logging the next run of a command of several: the previous run's last lines
    /// are written, then a comment naming this run, and its lines are tagged by its name.
    pub fn begin_run(&mut self, run: &RunStart<'_>) -> anyhow::Result<()> {
        self.release_held();
        let label = run.label.unwrap_or("run");
        let workload = run.workload;
        self.tags = device_tags(run.targets)
            .into_iter()
            .map(|tag| format!("{label}-{tag}"))
            .collect();
        self.host_tag = format!("{label}-host");
        self.logged = logged_ops(workload);
        self.paced = workload.rate_iops.is_some();
        self.window_end = workload.runtime;
        self.offset = run
            .measured_start
            .duration_since(self.base)
            .unwrap_or_default();
        let mut comments = vec![format!(
            "{label}: {} bs={} iodepth={} on {} device{}; its measured window starts at {:.3} s",
            workload.pattern,
            workload.block_size,
            workload.iodepth,
            run.targets.len(),
            if run.targets.len() == 1 { "" } else { "s" },
            self.offset.as_secs_f64()
        )];
        for (tag, path) in self.tags.iter().zip(run.targets) {
            comments.push(format!("tag {tag}: {}", path.display()));
        }
        let written = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.file, &mut self.serializer)
            .and_then(|mut log| comments.iter().try_for_each(|c| log.write_comment(c)));
        written.with_context(|| format!("--hdr-log: writing {label}'s header"))
    }

    /// Creates the log's temporary file beside `path` and writes its header, for a run of
    /// `paths` whose measured window starts at `measured_start`.
    #[cfg(test)]
    pub fn create(
        path: &Path,
        paths: &[PathBuf],
        workload: &Workload,
        measured_start: SystemTime,
    ) -> anyhow::Result<HdrLogRecorder> {
        let file =
            AtomicFile::create(path).with_context(|| format!("--hdr-log {}", path.display()))?;
        let mut recorder = HdrLogRecorder::open(path, file, paths, workload);
        recorder.base = measured_start;
        // On an error the recorder drops and its temporary file goes with it.
        recorder.write_header(paths, workload, measured_start)?;
        Ok(recorder)
    }

    /// The log in `file`, the temporary file of `path`, no header written yet.
    fn open(path: &Path, file: AtomicFile, paths: &[PathBuf], workload: &Workload) -> Self {
        HdrLogRecorder {
            path: path.to_path_buf(),
            file: BufWriter::new(SpillingFile::new(file, name_of(path))),
            serializer: V2DeflateSerializer::new(),
            tags: device_tags(paths),
            host_tag: "host".into(),
            base: SystemTime::UNIX_EPOCH,
            offset: Duration::ZERO,
            logged: logged_ops(workload),
            paced: workload.rate_iops.is_some(),
            window_end: workload.runtime,
            held: Vec::new(),
            failed: None,
        }
    }

    fn write_header(
        &mut self,
        paths: &[PathBuf],
        workload: &Workload,
        measured_start: SystemTime,
    ) -> anyhow::Result<()> {
        let mut builder = header_builder(&format!(
            "{} bs={} iodepth={}; latencies in nanoseconds; timestamps are seconds since the measured window's start",
            workload.pattern, workload.block_size, workload.iodepth
        ));
        for (tag, path) in self.tags.iter().zip(paths) {
            builder.add_comment(&format!("tag {tag}: {}", path.display()));
        }
        builder
            .with_start_time(measured_start)
            .with_base_time(measured_start);
        self.begin_header(builder)
    }

    /// Writes the header `builder` holds, then the column legend.
    fn begin_header(&mut self, builder: IntervalLogWriterBuilder) -> anyhow::Result<()> {
        builder
            .begin_log_with(&mut self.file, &mut self.serializer)
            .context("--hdr-log: writing the header")?;
        // The column legend the Java writer puts after the header; readers skip it.
        self.file
            .write_all(
                b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            )
            .context("--hdr-log: writing the header")?;
        Ok(())
    }

    /// Logs one device's second; ramp seconds are skipped.
    pub fn push(&mut self, interval: &DeviceInterval) {
        if interval.second < 0 || interval.device >= self.tags.len() {
            return;
        }
        let tag = self.tags[interval.device].clone();
        for op in self.logged.clone() {
            let histogram = &interval.ops[op].latency;
            self.write(histogram, interval.second, &format!("{tag}-{op}"));
            if self.paced {
                let response = &interval.ops[op].response;
                self.write(response, interval.second, &format!("{tag}-{op}-response"));
            }
        }
    }

    /// Logs the host's second: every device's histograms of it added bin by bin (by the run's
    /// time series, once every device reported it, or at the end for a second some device
    /// never reported).
    pub fn push_host(&mut self, host: &SecondHistograms) {
        if host.second < 0 {
            return;
        }
        let host_tag = self.host_tag.clone();
        for op in self.logged.clone() {
            self.write(&host.ops[op], host.second, &format!("{host_tag}-{op}"));
            if self.paced {
                let tag = format!("{host_tag}-{op}-response");
                self.write(&host.response[op], host.second, &tag);
            }
        }
    }

    /// Logs a line, holding back those of the latest second (see `held`).
    fn write(&mut self, histogram: &Histogram<u64>, second: i64, tag: &str) {
        let latest = self.held.first().map_or(i64::MIN, |(s, _, _)| *s);
        if second < latest {
            self.write_now(histogram, second, tag);
            return;
        }
        if second > latest {
            self.release_held();
        }
        self.held.push((second, tag.to_string(), histogram.clone()));
    }

    fn release_held(&mut self) {
        for (second, tag, histogram) in std::mem::take(&mut self.held) {
            self.write_now(&histogram, second, &tag);
        }
    }

    /// Tells the recorder how long the run measured (a signal or an I/O limit may end it
    /// before its runtime), so the last second's interval has its true length.
    pub fn run_ended_after(&mut self, measured: Duration) {
        self.window_end = self.window_end.min(measured);
    }

    fn write_now(&mut self, histogram: &Histogram<u64>, second: i64, tag: &str) {
        if self.failed.is_some() {
            return;
        }
        let start = Duration::from_secs(second as u64);
        // The last second of a run whose runtime is not whole seconds, or that was cut short,
        // is shorter.
        let length = self
            .window_end
            .saturating_sub(start)
            .clamp(Duration::from_millis(1), Duration::from_secs(1));
        let at = self.offset + start;
        // An empty builder writes no header: each call only appends this interval.
        let written = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.file, &mut self.serializer)
            .map_err(anyhow::Error::from)
            .and_then(|mut log| {
                log.write_histogram(histogram, at, length, Tag::new(tag))
                    .map_err(|e| anyhow::anyhow!("{e}"))
            });
        if let Err(e) = written {
            self.failed = Some(e.context(format!("--hdr-log {}", self.path.display())));
        }
    }

    /// Writes the lines held back, puts the file on disk and renames it over the destination;
    /// when that fails, the log is kept elsewhere and the error says where.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.release_held();
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let file = self
            .file
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("--hdr-log {}", self.path.display()))?;
        match file.finish() {
            None => Ok(()),
            Some((source, kept)) => Err(OutputError::File {
                option: HDR_LOG.option,
                what: HDR_LOG.what,
                path: self.path,
                source,
                kept,
            }
            .into()),
        }
    }
}

/// A log header's builder with hostmax's version, the format's version and `about` (what the
/// log holds) as its opening comments.
fn header_builder(about: &str) -> IntervalLogWriterBuilder {
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "[Logged with hostmax {}]",
            env!("CARGO_PKG_VERSION")
        ))
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(about);
    builder
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hostmax_aggregate::TimeSeries;
    use hostmax_engine::IoPattern;
    use std::collections::BTreeMap;
    use std::fs;

    /// What a run does with each interval: the device's lines, then the host's seconds the
    /// series completed with it.
    fn feed(log: &mut HdrLogRecorder, series: &mut TimeSeries, interval: DeviceInterval) {
        log.push(&interval);
        series.push(interval);
        for host in series.take_histograms() {
            log.push_host(&host);
        }
    }

    /// The end of a run: the seconds some device never reported, then the file.
    fn finish(mut log: HdrLogRecorder, series: TimeSeries) -> anyhow::Result<()> {
        for host in series.finish_with_histograms().1 {
            log.push_host(&host);
        }
        log.finish()
    }

    fn interval(device: usize, second: i64, reads: &[u64], writes: &[u64]) -> DeviceInterval {
        let mut ops = hostmax_engine::PerOp::<hostmax_engine::OpResult>::default();
        for (op, latencies) in [(OpKind::Read, reads), (OpKind::Write, writes)] {
            latencies
                .iter()
                .for_each(|&v| ops[op].latency.record(v).unwrap());
            ops[op].ios = latencies.len() as u64;
        }
        DeviceInterval::new(device, second, ops, 0)
    }

    /// At an offered rate, response times get tags of their own beside the service times.
    #[test]
    fn a_run_at_an_offered_rate_logs_response_times_under_their_own_tags() {
        let scratch = ScratchDir::new("response");
        let path = scratch.0.join("run.hlog");
        let workload = Workload::default()
            .with_runtime(Duration::from_secs(2))
            .with_rate_iops(Some(1000));
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let paths: Vec<PathBuf> = vec!["/dev/loop3".into()];
        let mut log = HdrLogRecorder::create(&path, &paths, &workload, start).unwrap();
        let mut series = TimeSeries::new(1).hand_over_histograms(true);
        for second in 0..2 {
            let mut i = interval(0, second, &[1000, 2000], &[]);
            for v in [400_000_000, 900_000_000, 2000] {
                i.ops[OpKind::Read].response.record(v).unwrap();
            }
            feed(&mut log, &mut series, i);
        }
        finish(log, series).unwrap();
        let bytes = fs::read(&path).unwrap();
        let mut max: BTreeMap<(String, u64), (u64, u64)> = BTreeMap::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let h = hostmax_aggregate::decode_histogram(i.encoded_histogram()).unwrap();
                let key = (i.tag().unwrap().to_string(), i.start_timestamp().as_secs());
                max.insert(key, (h.len(), h.max()));
            }
        }
        let get = |tag: &str, s: u64| max.get(&(tag.to_string(), s)).copied();
        assert_eq!(get("loop3-read", 1).map(|(n, _)| n), Some(2));
        for tag in ["loop3-read-response", "host-read-response"] {
            let (n, top) = get(tag, 1).unwrap_or_else(|| panic!("{tag} missing: {max:?}"));
            assert_eq!(n, 3);
            assert!(top >= 899_000_000, "{tag}: {top}");
        }
    }

    #[test]
    fn tags_are_unique_and_valid() {
        let tags = device_tags(&[
            "/dev/loop3".into(),
            "/a/disk".into(),
            "/b/disk".into(),
            "/c/my disk,1".into(),
            "/dev/host".into(),
        ]);
        assert_eq!(tags, ["loop3", "disk", "disk_2", "my_disk_1", "host_2"]);
        for t in &tags {
            assert!(Tag::new(t).is_some(), "{t}");
        }
    }

    #[test]
    fn log_parses_back_with_every_interval_and_count() {
        let scratch = ScratchDir::new("parse");
        let path = scratch.0.join("run.hlog");
        let workload = Workload::default()
            .with_pattern(IoPattern::RandRw)
            .with_runtime(Duration::from_millis(3500));
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let paths: Vec<PathBuf> = vec!["/dev/loop3".into(), "/dev/loop4".into()];
        let mut log = HdrLogRecorder::create(&path, &paths, &workload, start).unwrap();
        let mut series = TimeSeries::new(2).hand_over_histograms(true);
        feed(&mut log, &mut series, interval(0, -1, &[5; 9], &[])); // ramp: not logged
        for second in 0..3 {
            feed(
                &mut log,
                &mut series,
                interval(0, second, &[1000, 2000], &[3000]),
            );
            feed(&mut log, &mut series, interval(1, second, &[4000; 5], &[]));
        }
        feed(&mut log, &mut series, interval(0, 3, &[7000], &[])); // device 1 never reports second 3
        finish(log, series).unwrap();
        let names: Vec<String> = fs::read_dir(&scratch.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["run.hlog"]);

        let bytes = fs::read(&path).unwrap();
        let mut counts: BTreeMap<(String, u64), u64> = BTreeMap::new();
        let mut start_time = None;
        for entry in IntervalLogIterator::new(&bytes) {
            match entry.unwrap() {
                LogEntry::StartTime(t) => start_time = Some(t),
                LogEntry::BaseTime(_) => {}
                LogEntry::Interval(i) => {
                    let h = hostmax_aggregate::decode_histogram(i.encoded_histogram()).unwrap();
                    let second = i.start_timestamp().as_secs();
                    // The runtime's last half second is logged as such.
                    let want_millis = if second == 3 { 500 } else { 1000 };
                    assert_eq!(i.duration().as_millis(), want_millis);
                    let key = (i.tag().unwrap().to_string(), second);
                    assert!(counts.insert(key, h.len()).is_none());
                }
            }
        }
        assert_eq!(start_time, Some(Duration::from_secs(1_800_000_000)));
        let get = |tag: &str, s: u64| counts.get(&(tag.to_string(), s)).copied();
        assert_eq!(get("loop3-read", 0), Some(2));
        assert_eq!(get("loop3-write", 1), Some(1));
        assert_eq!(get("loop4-read", 2), Some(5));
        assert_eq!(get("loop4-write", 2), Some(0));
        assert_eq!(get("host-read", 2), Some(7));
        assert_eq!(get("host-write", 0), Some(1));
        assert_eq!(get("host-read", 3), Some(1)); // partial second, written at finish
                                                  // 2 devices x 2 ops x 3 s + loop3's second 3 (2 ops) + host 2 ops x 4 s.
        assert_eq!(counts.len(), 12 + 2 + 8);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("#tag loop3: /dev/loop3\n"));
        assert_eq!(text.matches("#[StartTime:").count(), 1);
    }

    #[test]
    fn a_run_cut_short_logs_its_last_second_with_its_true_length() {
        let scratch = ScratchDir::new("cut");
        let path = scratch.0.join("cut.hlog");
        let workload = Workload::default().with_runtime(Duration::from_secs(30));
        let paths: Vec<PathBuf> = vec!["/dev/loop3".into(), "/dev/loop4".into()];
        let mut log = HdrLogRecorder::create(&path, &paths, &workload, SystemTime::now()).unwrap();
        let mut series = TimeSeries::new(2).hand_over_histograms(true);
        feed(&mut log, &mut series, interval(0, 0, &[1000], &[]));
        feed(&mut log, &mut series, interval(1, 0, &[2000], &[]));
        feed(&mut log, &mut series, interval(0, 1, &[1000], &[]));
        feed(&mut log, &mut series, interval(0, 2, &[1000], &[]));
        // Device 1's second 1 arrives late, after second 2 began: still a whole second.
        feed(&mut log, &mut series, interval(1, 1, &[2000], &[]));
        feed(&mut log, &mut series, interval(1, 2, &[2000], &[]));
        // The run is stopped a quarter into second 3; device 1 never reports it.
        feed(&mut log, &mut series, interval(0, 3, &[1000], &[]));
        log.run_ended_after(Duration::from_millis(3250));
        finish(log, series).unwrap();
        let bytes = fs::read(&path).unwrap();
        let mut lengths: BTreeMap<(String, u64), u128> = BTreeMap::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let key = (i.tag().unwrap().to_string(), i.start_timestamp().as_secs());
                lengths.insert(key, i.duration().as_millis());
            }
        }
        for tag in ["loop3-read", "loop4-read", "host-read"] {
            for second in 0..3 {
                assert_eq!(lengths[&(tag.to_string(), second)], 1000, "{tag} {second}");
            }
        }
        assert_eq!(lengths[&("loop3-read".to_string(), 3)], 250);
        assert_eq!(lengths[&("host-read".to_string(), 3)], 250);
        assert_eq!(lengths.len(), 3 * 3 + 2);
    }

    #[test]
    fn runs_of_one_command_share_a_log_each_tagged_and_placed_in_time() {
        let scratch = ScratchDir::new("steps");
        let path = scratch.0.join("s.hlog");
        let workload = Workload::default().with_runtime(Duration::from_millis(1500));
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let one: Vec<PathBuf> = vec!["/dev/loop3".into()];
        let two: Vec<PathBuf> = vec!["/dev/loop3".into(), "/dev/loop4".into()];
        let run = |label, targets, measured_start| RunStart {
            label: Some(label),
            targets,
            workload: &workload,
            measured_start,
        };
        let mut log = HdrLogRecorder::create_for(
            &path,
            AtomicFile::create(&path).unwrap(),
            &run("step1", &one, start),
        )
        .unwrap();
        let mut series = TimeSeries::new(1).hand_over_histograms(true);
        for second in 0..2 {
            feed(&mut log, &mut series, interval(0, second, &[1000; 3], &[]));
        }
        for host in series.finish_with_histograms().1 {
            log.push_host(&host);
        }
        // The second run starts 4.25 s after the first's measured window.
        let later = start + Duration::from_millis(4250);
        log.begin_run(&run("step2", &two, later)).unwrap();
        let mut series = TimeSeries::new(2).hand_over_histograms(true);
        for second in 0..2 {
            feed(&mut log, &mut series, interval(0, second, &[1000], &[]));
            feed(&mut log, &mut series, interval(1, second, &[2000; 2], &[]));
        }
        finish(log, series).unwrap();

        let bytes = fs::read(&path).unwrap();
        let mut lines: BTreeMap<(String, u128), (u64, u128)> = BTreeMap::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let LogEntry::Interval(i) = entry.unwrap() {
                let h = hostmax_aggregate::decode_histogram(i.encoded_histogram()).unwrap();
                let key = (
                    i.tag().unwrap().to_string(),
                    i.start_timestamp().as_millis(),
                );
                assert!(lines
                    .insert(key, (h.len(), i.duration().as_millis()))
                    .is_none());
            }
        }
        let get = |tag: &str, ms: u128| lines.get(&(tag.to_string(), ms)).copied();
        assert_eq!(get("step1-loop3-read", 0), Some((3, 1000)));
        assert_eq!(get("step1-host-read", 1000), Some((3, 500)));
        assert_eq!(get("step2-loop3-read", 4250), Some((1, 1000)));
        assert_eq!(get("step2-loop4-read", 5250), Some((2, 500)));
        assert_eq!(get("step2-host-read", 5250), Some((3, 500)));
        // Step 1: 1 device + host, 2 s; step 2: 2 devices + host, 2 s.
        assert_eq!(lines.len(), 2 * 2 + 3 * 2, "{lines:?}");
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.matches("#[StartTime:").count(), 1);
        assert!(text.contains("\n#step2: randread bs=4096 iodepth=32 on 2 devices; its measured window starts at 4.250 s\n"), "{text}");
        assert!(text.contains("\n#tag step2-loop4: /dev/loop4\n"), "{text}");
    }

    #[test]
    fn read_only_runs_log_only_reads_and_unfinished_logs_leave_nothing() {
        let scratch = ScratchDir::new("reads");
        let path = scratch.0.join("r.hlog");
        let workload = Workload::default();
        let mut log =
            HdrLogRecorder::create(&path, &["/dev/x".into()], &workload, SystemTime::now())
                .unwrap();
        let mut series = TimeSeries::new(1).hand_over_histograms(true);
        feed(&mut log, &mut series, interval(0, 0, &[100], &[]));
        drop(log);
        assert_eq!(fs::read_dir(&scratch.0).unwrap().count(), 0);

        let mut log =
            HdrLogRecorder::create(&path, &["/dev/x".into()], &workload, SystemTime::now())
                .unwrap();
        let mut series = TimeSeries::new(1).hand_over_histograms(true);
        feed(&mut log, &mut series, interval(0, 0, &[100], &[]));
        finish(log, series).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("Tag=x-read,0.000,1.000,"));
        assert!(text.contains("Tag=host-read,"));
        assert!(!text.contains("-write,"));
    }
}
