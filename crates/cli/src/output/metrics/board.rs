//! [`Board`]: the live figures of one measuring command, fed by its runs from the same
//! one-second intervals the live view gets (`crate::measure`, the suite's runner), read by
//! the metrics server at each scrape.
//!
//! Counters hold the whole command (every run, step or cell of it), so they only grow, as
//! Prometheus expects; what they count is what the reports count: successful I/Os of measured
//! windows, their bytes and latencies, and errors. When a run ends its result settles them
//! (errors of the ramp and drain come in only then), so at the end they equal the reports.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hostmax_engine::{DeviceInterval, OpKind, OpResult, PerOp, RunResult, Workload};

use super::worker_cpu::{self, CpuTimes, WorkerTimes};

/// Upper bounds of the latency histogram's buckets, in nanoseconds (5 µs to 10 s, 1-2.5-5
/// steps; fixed, so scrapes and hosts add up). A last bucket, `+Inf`, takes the rest.
pub const LATENCY_BUCKETS_NS: [u64; 22] = [
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    25_000_000_000,
    60_000_000_000,
];

/// One kind's totals on one device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindTotals {
    /// Successful I/Os.
    pub ios: u64,
    /// Bytes they moved.
    pub bytes: u64,
    /// I/Os per latency bucket (not cumulative): `LATENCY_BUCKETS_NS`, then one for the rest.
    /// They add up to `ios` unless the run timed nothing (the suite's preconditioning).
    pub buckets: [u64; LATENCY_BUCKETS_NS.len() + 1],
    /// Sum of their latencies, nanoseconds (each to the histogram's resolution).
    pub latency_sum_ns: u128,
    /// With an offered rate: I/Os per response-time bucket (intended start to completion),
    /// as `buckets`.
    pub response_buckets: [u64; LATENCY_BUCKETS_NS.len() + 1],
    /// Sum of their response times, nanoseconds.
    pub response_sum_ns: u128,
}

impl KindTotals {
    /// Adds one second's (or a run's) I/Os of this kind.
    fn add(&mut self, ops: &OpResult) {
        self.ios += ops.ios;
        self.bytes += ops.bytes;
        add_to_buckets(&mut self.buckets, &mut self.latency_sum_ns, &ops.latency);
        add_to_buckets(
            &mut self.response_buckets,
            &mut self.response_sum_ns,
            &ops.response,
        );
    }

    /// Whether response times were counted (a run at an offered rate).
    pub fn has_response(&self) -> bool {
        self.response_buckets.iter().any(|&n| n > 0)
    }
}

/// Adds a histogram's I/Os to fixed `buckets` and their values to `sum_ns`.
fn add_to_buckets(
    buckets: &mut [u64; LATENCY_BUCKETS_NS.len() + 1],
    sum_ns: &mut u128,
    histogram: &hdrhistogram::Histogram<u64>,
) {
    for bin in histogram.iter_recorded() {
        // The bin's highest value: an I/O never lands in a bucket below its latency.
        let highest = bin.value_iterated_to();
        let count = bin.count_at_value();
        let at = LATENCY_BUCKETS_NS.partition_point(|&bound| bound < highest);
        buckets[at] += count;
        *sum_ns += u128::from(histogram.median_equivalent(highest)) * u128::from(count);
    }
}

/// One device's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceTotals {
    /// Per kind.
    pub ops: PerOp<KindTotals>,
    /// Failed I/Os.
    pub errors: u64,
    /// With an offered rate: I/Os due and not yet issued at the end of its latest measured
    /// second (a stall's backlog).
    pub backlog: u64,
}

/// Where the command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No run goes on: checks, a wait for `--start-at`, between runs, preconditioning.
    Waiting,
    /// Warm-up I/O, not counted.
    Ramp,
    /// The measured window.
    Measured,
    /// The window ended; I/O in flight drains.
    Drain,
    /// The command ended: the figures are final.
    Done,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 5] = [
        Phase::Waiting,
        Phase::Ramp,
        Phase::Measured,
        Phase::Drain,
        Phase::Done,
    ];

    /// Its name in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Waiting => "waiting",
            Phase::Ramp => "ramp",
            Phase::Measured => "measured",
            Phase::Drain => "drain",
            Phase::Done => "done",
        }
    }
}

/// What a scrape shows: the board at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The command (`run`, `verify`, `sweep`, `curve`, `suite`, `demo`).
    pub command: &'static str,
    /// The current (or last) run's name among the command's runs (`step2`); empty for a
    /// command's only run.
    pub step: String,
    /// Where the command is.
    pub phase: Phase,
    /// The current (or last) run's planned measured seconds.
    pub planned_secs: u64,
    /// Its measured seconds done.
    pub measured_secs: u64,
    /// Runs finished.
    pub runs_completed: u64,
    /// Totals by device name, sorted.
    pub devices: Vec<(String, DeviceTotals)>,
    /// Worker CPU time by the CPU the workers were pinned to, sorted.
    pub workers: Vec<(usize, CpuTimes)>,
}

/// The run going on.
#[derive(Debug)]
struct CurrentRun {
    /// Device names by the engine's index.
    devices: Vec<String>,
    /// What its intervals brought, by index (I/Os and bytes per kind, errors), to settle
    /// against its result.
    counted: Vec<(PerOp<(u64, u64)>, u64)>,
    ramp: Duration,
    runtime: Duration,
    started: Option<Instant>,
    measured_secs: u64,
    /// The latest reading of its workers' threads.
    workers: WorkerTimes,
}

#[derive(Debug)]
struct BoardState {
    step: String,
    planned_secs: u64,
    last_measured_secs: u64,
    devices: BTreeMap<String, DeviceTotals>,
    /// Worker CPU of finished runs.
    workers: BTreeMap<usize, CpuTimes>,
    run: Option<CurrentRun>,
    runs_completed: u64,
    ended: bool,
    /// Scrapes served: the last one, the longest gap between two, whether one saw the end.
    last_scrape: Option<Instant>,
    longest_gap: Duration,
    final_scraped: bool,
}

/// The live figures of one command (see the module overview). Shared by the command's runs
/// and the metrics server.
#[derive(Debug)]
pub struct Board {
    command: &'static str,
    state: Mutex<BoardState>,
}

impl Board {
    /// A board for `command`, before its first run.
    pub fn new(command: &'static str) -> Board {
        Board {
            command,
            state: Mutex::new(BoardState {
                step: String::new(),
                planned_secs: 0,
                last_measured_secs: 0,
                devices: BTreeMap::new(),
                workers: BTreeMap::new(),
                run: None,
                runs_completed: 0,
                ended: false,
                last_scrape: None,
                longest_gap: Duration::ZERO,
                final_scraped: false,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, BoardState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run over `targets` (in the engine's order) named `step` (`None`: the command's only
    /// run) is about to start `workload`.
    pub fn run_begins(&self, step: Option<&str>, targets: &[PathBuf], workload: &Workload) {
        let mut s = self.state();
        s.step = step.unwrap_or_default().to_string();
        s.planned_secs = workload.runtime.as_secs();
        s.last_measured_secs = 0;
        let devices: Vec<String> = targets
            .iter()
            .map(|t| t.to_string_lossy().into_owned())
            .collect();
        for name in &devices {
            s.devices.entry(name.clone()).or_default();
        }
        s.run = Some(CurrentRun {
            counted: vec![Default::default(); devices.len()],
            devices,
            ramp: workload.ramp,
            runtime: workload.runtime,
            started: None,
            measured_secs: 0,
            workers: WorkerTimes::default(),
        });
    }

    /// The run's clock started at `at` (its ramp, if any, first).
    pub fn run_started(&self, at: Instant) {
        if let Some(run) = &mut self.state().run {
            run.started = Some(at);
        }
    }

    /// One device's second: measured seconds count; the ramp's do not.
    pub fn interval(&self, interval: &DeviceInterval) {
        let mut s = self.state();
        let BoardState { run, devices, .. } = &mut *s;
        let Some(run) = run else { return };
        if interval.second < 0 {
            return;
        }
        let Some(name) = run.devices.get(interval.device) else {
            return;
        };
        let totals = devices.entry(name.clone()).or_default();
        let counted = &mut run.counted[interval.device];
        for (op, ops) in interval.ops.iter() {
            totals.ops[op].add(ops);
            counted.0[op].0 += ops.ios;
            counted.0[op].1 += ops.bytes;
        }
        totals.errors += interval.errors;
        totals.backlog = interval.backlog;
        counted.1 += interval.errors;
        run.measured_secs = run
            .measured_secs
            .max(u64::try_from(interval.second).unwrap_or(0) + 1);
    }

    /// The run ended with `result` (`None`: it failed or was called off). Its result settles
    /// the counters: errors of the ramp and the drain, and anything no interval carried.
    pub fn run_ended(&self, result: Option<&RunResult>) {
        let mut s = self.state();
        let Some(mut run) = s.run.take() else { return };
        if let Some(result) = result {
            for (index, device) in result.devices.iter().enumerate() {
                let (Some(name), Some(counted)) = (run.devices.get(index), run.counted.get(index))
                else {
                    continue;
                };
                let totals = s.devices.entry(name.clone()).or_default();
                for op in OpKind::ALL {
                    let ops = &device.ops[op];
                    let (ios, bytes) = counted.0[op];
                    if ops.ios > ios {
                        // No interval carried them (a run without live seconds): whole.
                        let mut missing = ops.clone();
                        missing.ios -= ios;
                        missing.bytes = ops.bytes.saturating_sub(bytes);
                        if ios > 0 {
                            missing.latency.reset();
                            missing.response.reset();
                        }
                        totals.ops[op].add(&missing);
                    }
                }
                totals.errors += device.errors.count.saturating_sub(counted.1);
            }
            run.measured_secs = run.measured_secs.max(result.measured.as_secs());
            // The threads are gone: their own account of their time, or the last reading
            // when that was more (it began before the start signal), so the counter grows.
            let mut summed = BTreeMap::<usize, CpuTimes>::new();
            for worker in &result.workers {
                let t = summed.entry(worker.cpu).or_default();
                t.user_ns += worker.cpu_use.user_ns;
                t.system_ns += worker.cpu_use.system_ns;
            }
            for (cpu, seen) in &run.workers.0 {
                let t = summed.entry(*cpu).or_default();
                t.user_ns = t.user_ns.max(seen.user_ns);
                t.system_ns = t.system_ns.max(seen.system_ns);
            }
            for (cpu, t) in summed {
                let base = s.workers.entry(cpu).or_default();
                base.user_ns += t.user_ns;
                base.system_ns += t.system_ns;
            }
            s.runs_completed += 1;
        }
        s.last_measured_secs = run.measured_secs;
    }

    /// The command ended: the figures are final.
    pub fn command_ended(&self) {
        let mut s = self.state();
        s.run = None;
        s.ended = true;
    }

    /// The board now, for a scrape (which this counts); reads the running workers' CPU time.
    pub fn scrape(&self, now: Instant) -> Snapshot {
        let threads = worker_cpu::read_worker_threads();
        let mut s = self.state();
        if let Some(last) = s.last_scrape {
            s.longest_gap = s.longest_gap.max(now.saturating_duration_since(last));
        }
        s.last_scrape = Some(now);
        let ended = s.ended;
        s.final_scraped |= ended;
        let mut workers = s.workers.clone();
        if let Some(run) = &mut s.run {
            if run.started.is_some() {
                run.workers.keep_most(&threads);
            }
            for (cpu, t) in &run.workers.0 {
                let w = workers.entry(*cpu).or_default();
                w.user_ns += t.user_ns;
                w.system_ns += t.system_ns;
            }
        }
        let (phase, measured_secs) = match (&s.run, s.ended) {
            (_, true) => (Phase::Done, s.last_measured_secs),
            (None, false) => (Phase::Waiting, s.last_measured_secs),
            (Some(run), false) => (run.phase(now), run.measured_secs),
        };
        Snapshot {
            command: self.command,
            step: s.step.clone(),
            phase,
            planned_secs: s.planned_secs,
            measured_secs,
            runs_completed: s.runs_completed,
            devices: s
                .devices
                .iter()
                .map(|(n, t)| (n.clone(), t.clone()))
                .collect(),
            workers: workers.into_iter().collect(),
        }
    }

    /// How long to keep serving after the command ended so that a scraper sees the final
    /// figures (see [`super::FINAL_SCRAPE_WAIT_MAX`]): `None` when that scrape came, or
    /// nobody scraped at all.
    pub fn final_scrape_wait(&self) -> Option<Duration> {
        let s = self.state();
        if s.final_scraped || s.last_scrape.is_none() {
            return None;
        }
        // Two gaps, so a scrape that was due right at the end is not missed; a single scrape
        // so far (no gap seen): a short while for the scraper's next.
        let gap = if s.longest_gap.is_zero() {
            super::FINAL_SCRAPE_WAIT_MIN
        } else {
            s.longest_gap * 2
        };
        Some(gap.clamp(super::FINAL_SCRAPE_WAIT_MIN, super::FINAL_SCRAPE_WAIT_MAX))
    }

    /// Whether a scrape has read the final figures.
    pub fn final_scraped(&self) -> bool {
        self.state().final_scraped
    }
}

impl CurrentRun {
    fn phase(&self, now: Instant) -> Phase {
        let Some(started) = self.started else {
            return Phase::Waiting;
        };
        let elapsed = now.saturating_duration_since(started);
        if elapsed < self.ramp {
            Phase::Ramp
        } else if elapsed < self.ramp + self.runtime {
            Phase::Measured
        } else {
            Phase::Drain
        }
    }
}

/// The board of the command running now, if it serves metrics.
static LIVE: Mutex<Option<Arc<Board>>> = Mutex::new(None);

/// The board the running command's runs feed, when `--metrics-listen` was given.
pub fn live() -> Option<Arc<Board>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Makes `board` the one runs feed (`None`: none).
pub(super) fn set_live(board: Option<Arc<Board>>) {
    *LIVE.lock().unwrap_or_else(|e| e.into_inner()) = board;
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_engine::{new_latency_histogram, DeviceResult};

    fn ops(ios: u64, latency_ns: u64) -> OpResult {
        let mut latency = new_latency_histogram();
        latency.record_n(latency_ns, ios).unwrap();
        OpResult::new(ios, ios * 4096, latency)
    }

    fn workload() -> Workload {
        Workload::default()
            .with_ramp(Duration::from_secs(1))
            .with_runtime(Duration::from_secs(2))
    }

    #[test]
    fn measured_seconds_count_and_the_result_settles_errors() {
        let board = Board::new("run");
        let targets = [PathBuf::from("/dev/loop7")];
        board.run_begins(None, &targets, &workload());
        let start = Instant::now();
        board.run_started(start);
        let read = |n, ns| PerOp::default().with(OpKind::Read, ops(n, ns));
        board.interval(&DeviceInterval::new(0, -1, read(50, 1_000), 0));
        board.interval(&DeviceInterval::new(0, 0, read(100, 30_000), 1));
        board.interval(&DeviceInterval::new(0, 1, read(10, 2_000_000), 0));
        let snap = board.scrape(start + Duration::from_millis(1500));
        assert_eq!(snap.phase, Phase::Measured);
        assert_eq!((snap.planned_secs, snap.measured_secs), (2, 2));
        let totals = &snap.devices[0].1;
        let read_totals = &totals.ops[OpKind::Read];
        assert_eq!((read_totals.ios, read_totals.bytes), (110, 110 * 4096));
        assert_eq!(totals.errors, 1);
        // 30 µs in the 50 µs bucket, 2 ms in the 2.5 ms one.
        let at = |ns| LATENCY_BUCKETS_NS.iter().position(|&b| b == ns).unwrap();
        assert_eq!(read_totals.buckets[at(50_000)], 100);
        assert_eq!(read_totals.buckets[at(2_500_000)], 10);
        assert_eq!(read_totals.buckets.iter().sum::<u64>(), 110);
        let mean_ns = read_totals.latency_sum_ns / 110;
        // (100 x 30 µs + 10 x 2 ms) / 110 = 209.09 µs, to the histogram's 0.1%.
        assert!((208_880..=209_300).contains(&mean_ns), "{mean_ns}");
        assert_eq!(
            board.scrape(start + Duration::from_secs(4)).phase,
            Phase::Drain
        );

        let mut result = RunResult::default();
        let mut device = DeviceResult::new(
            targets[0].clone(),
            0,
            PerOp::default().with(OpKind::Read, ops(110, 30_000)),
        );
        device.errors.count = 3;
        result.devices = vec![device];
        board.run_ended(Some(&result));
        let snap = board.scrape(start + Duration::from_secs(5));
        assert_eq!(snap.phase, Phase::Waiting);
        assert_eq!(
            snap.devices[0].1.ops[OpKind::Read].ios,
            110,
            "not counted twice"
        );
        assert_eq!(snap.devices[0].1.errors, 3);
        assert_eq!(snap.runs_completed, 1);
        board.command_ended();
        assert_eq!(
            board.scrape(start + Duration::from_secs(6)).phase,
            Phase::Done
        );
        assert!(board.final_scraped());
    }

    #[test]
    fn a_run_without_live_seconds_is_counted_whole_at_its_end() {
        let board = Board::new("suite");
        let targets = [PathBuf::from("/dev/loop1"), PathBuf::from("/dev/loop2")];
        board.run_begins(Some("round1/4k-randread"), &targets, &workload());
        let mut result = RunResult::default();
        result.devices = targets
            .iter()
            .map(|t| {
                DeviceResult::new(
                    t.clone(),
                    0,
                    PerOp::default().with(OpKind::Write, ops(7, 80_000)),
                )
            })
            .collect();
        board.run_ended(Some(&result));
        let snap = board.scrape(Instant::now());
        assert_eq!(snap.step, "round1/4k-randread");
        for (_, totals) in &snap.devices {
            assert_eq!(totals.ops[OpKind::Write].ios, 7);
            assert_eq!(totals.ops[OpKind::Write].buckets.iter().sum::<u64>(), 7);
        }
    }

    #[test]
    fn the_final_scrape_is_awaited_only_when_someone_scrapes() {
        let board = Board::new("run");
        board.command_ended();
        assert_eq!(board.final_scrape_wait(), None, "nobody scraped");
        let board = Board::new("run");
        let t = Instant::now();
        board.scrape(t);
        board.scrape(t + Duration::from_secs(15));
        board.command_ended();
        assert_eq!(board.final_scrape_wait(), Some(Duration::from_secs(30)));
        board.scrape(t + Duration::from_secs(20));
        assert_eq!(
            board.final_scrape_wait(),
            None,
            "the final figures were read"
        );
    }
}
