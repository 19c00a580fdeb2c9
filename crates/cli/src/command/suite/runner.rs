//! Running a suite: purge, preconditioning, then rounds of cells until steady state, each
//! cell one engine run, checkpointed as soon as it finishes.
//!
//! Signals: one watcher for the whole suite. The first signal (SIGINT, SIGTERM, SIGHUP,
//! SIGQUIT) stops the engine run in progress (its in-flight I/O drains); that cell is not
//! recorded (it ran short), every finished cell already is, and the suite writes its partial
//! report and exits 128+signal.
//! A second signal exits at once. `--resume DIR` continues from the checkpoint.

use anyhow::Context;
use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hostmax_aggregate::{summarize, SecondPoint};
use hostmax_device::WriteSafety;
use hostmax_engine::{
    IoPattern, MeasureRequest, OpKind, RunConfig, RunResult, TargetInfo, Workload,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::matrix::{CellSpec, TrackedMetric};
use super::report::{self, metric_value, Records};
use super::state::{CellRound, PrepRecord, StateDir, SuiteConfig};
use crate::engine::Engine;
use crate::measure::Watch;
use crate::output::export::Recorders;
use crate::plan::identity::{check_unchanged, PlannedIdentity};
use crate::units::human_size;

/// Block size of the preconditioning writes (SNIA PTS, CloudHarmony).
pub const PRECONDITION_BLOCK: u32 = 128 << 10;
/// Passes of sequential writes over the tested range.
pub const PRECONDITION_PASSES: u64 = 2;

/// The suite's view of the process-wide [`crate::signals::SignalWatch`].
#[derive(Clone, Copy)]
pub struct SignalWatch {
    watch: &'static crate::signals::SignalWatch,
}

impl SignalWatch {
    /// Watches the signals (as `watch` hears them: the process's, but in unit tests)
    /// with the suite's message.
    pub fn start(watch: &'static crate::signals::SignalWatch) -> SignalWatch {
        watch.set_message("stopping the suite (finished cells are saved); signal again to abort");
        SignalWatch { watch }
    }

    /// The first signal seen, 0 if none.
    pub fn signal(&self) -> i32 {
        self.watch.signal()
    }
}

/// The suite's progress on stderr: a bar per round (cell, round, ETA) on a terminal, else one
/// line per cell.
pub struct SuiteProgress {
    bar: Option<ProgressBar>,
    /// Lets the signal watch's "stopping" line go above the bar.
    _shown: Option<crate::output::progress::ShownBar>,
}

impl SuiteProgress {
    fn new() -> SuiteProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(1);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{wide_bar}] {msg}  ETA {eta}")
                    .expect("constant template is valid")
                    .progress_chars("=> "),
            );
            bar
        });
        let _shown = bar.as_ref().map(crate::output::progress::show_bar);
        SuiteProgress { bar, _shown }
    }

    /// A step without a known length (purge, preconditioning): a spinner with the time.
    fn phase(&self, what: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                        .expect("constant template is valid"),
                );
                bar.set_message(what.to_string());
                bar.enable_steady_tick(Duration::from_millis(200));
            }
            None => crate::errln!("[suite] {what}"),
        }
    }

    /// A round starts: `total` ms planned, `done` of them already finished (resumed cells).
    fn round(&self, round: u32, max_rounds: u32, total: u64, done: u64) {
        if let Some(bar) = &self.bar {
            bar.disable_steady_tick();
            bar.set_style(
                // The bar takes what the text leaves, so 80 columns do not wrap.
                ProgressStyle::with_template("{prefix} [{wide_bar}] {msg}  round ETA {eta}")
                    .expect("constant template is valid")
                    .progress_chars("=> "),
            );
            bar.set_prefix(format!("round {round} (of at most {max_rounds})"));
            bar.set_length(total.max(1));
            bar.set_position(done);
            bar.reset_eta();
        }
    }

    fn cell(&self, index: usize, count: usize, key: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("cell {}/{count} {key}", index + 1));
        }
    }

    fn position(&self, ms: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(ms.min(bar.length().unwrap_or(ms)));
        }
    }

    /// A line of its own (a finished cell, a verdict) without breaking the bar.
    fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| crate::errln!("{line}")),
            None => crate::errln!("{line}"),
        }
    }

    fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A suite ready to run: its settings, checkpoint, probed targets and write permission, and
/// the engine its runs go through.
pub struct SuiteRunner<'e> {
    /// Every measurement and the purge go through it.
    engine: &'e dyn Engine,
    /// The settings.
    pub config: SuiteConfig,
    /// The checkpoint.
    pub state: StateDir,
    /// The targets, probed, in the settings' order.
    pub targets: Vec<TargetInfo>,
    /// `--allow-write` was given.
    pub allow_write: bool,
    /// What each target's path led to when the suite began: checked before every step.
    identities: Vec<PlannedIdentity>,
    signals: SignalWatch,
    progress: SuiteProgress,
}

/// How a suite run ended.
pub struct SuiteOutcome {
    /// Every cell record.
    pub records: Records,
    /// The purge record, if done.
    pub purge: Option<PrepRecord>,
    /// The preconditioning record, if done.
    pub precondition: Option<PrepRecord>,
    /// The signal that stopped it, 0 if none.
    pub signal: i32,
}

impl<'e> SuiteRunner<'e> {
    /// Starts watching signals (as `signals` hears them); nothing runs yet.
    pub fn new(
        engine: &'e dyn Engine,
        config: SuiteConfig,
        state: StateDir,
        targets: Vec<TargetInfo>,
        allow_write: bool,
        signals: &'static crate::signals::SignalWatch,
    ) -> SuiteRunner<'e> {
        SuiteRunner {
            engine,
            config,
            state,
            identities: PlannedIdentity::record(&targets),
            targets,
            allow_write,
            signals: SignalWatch::start(signals),
            progress: SuiteProgress::new(),
        }
    }

    /// Purges, preconditions and runs rounds until steady state, the last round or a signal.
    pub fn run(&self) -> anyhow::Result<SuiteOutcome> {
        let result = self.run_inner();
        self.progress.clear();
        result
    }

    fn run_inner(&self) -> anyhow::Result<SuiteOutcome> {
        let mut purge = self.state.prep("purge")?;
        if self.config.purge && purge.is_none() && self.signals.signal() == 0 {
            if let Some(record) = self.purge()? {
                self.state.save_prep("purge", &record)?;
                purge = Some(record);
            }
        }
        let mut precondition = self.state.prep("precondition")?;
        if self.config.precondition && precondition.is_none() && self.signals.signal() == 0 {
            if let Some(record) = self.precondition()? {
                self.state.save_prep("precondition", &record)?;
                precondition = Some(record);
            }
        }
        let mut records = self.state.rounds()?;
        if self.signals.signal() == 0 {
            self.rounds(&mut records)?;
        }
        Ok(SuiteOutcome {
            records,
            purge,
            precondition,
            signal: self.signals.signal(),
        })
    }

    /// Discards the tested range of every device; where discard is not supported, zeroes it.
    /// `None` when a signal came first (the purge is then redone on resume).
    fn purge(&self) -> anyhow::Result<Option<PrepRecord>> {
        let started = Instant::now();
        let mut method = Vec::new();
        for t in &self.targets {
            if self.signals.signal() != 0 {
                return Ok(None);
            }
            check_unchanged(&self.identities, std::slice::from_ref(t), "the purge")?;
            let range = 0..self.config.range;
            // Escalate: ATA secure erase (when asked), discard, zero fill; the first that works.
            let mut failed: Vec<String> = Vec::new();
            let mut done = None;
            if let Some(password) = &self.config.secure_erase_password {
                self.progress
                    .phase(&format!("purge: ATA secure erase of {}", t.path.display()));
                match self.engine.secure_erase(t, password) {
                    Ok(()) => done = Some("ATA secure erase"),
                    Err(why) => failed.push(format!("ATA secure erase: {why:#}")),
                }
            }
            if done.is_none() {
                self.progress.phase(&format!(
                    "purge: discarding {} of {}",
                    human_size(self.config.range),
                    t.path.display()
                ));
                match self.engine.discard(t, range.clone()) {
                    Ok(()) => done = Some("discard"),
                    Err(e) => failed.push(format!("discard: {e}")),
                }
            }
            if done.is_none() {
                self.progress.phase(&format!(
                    "purge: zero-filling {} of {}",
                    human_size(self.config.range),
                    t.path.display()
                ));
                match self.engine.zero_out(t, range) {
                    Ok(()) => done = Some("zero fill"),
                    Err(e) => failed.push(format!("zero fill: {e}")),
                }
            }
            let Some(done) = done else {
                anyhow::bail!(
                    "purge of {} failed every way ({}): the suite stops, since its figures would show what the device held before; fix the device or give --no-purge",
                    t.path.display(),
                    failed.join("; ")
                );
            };
            let done = if failed.is_empty() {
                done.to_string()
            } else {
                format!("{done} (after {})", failed.join("; "))
            };
            method.push(format!("{}: {done}", t.path.display()));
        }
        let record = PrepRecord {
            method,
            secs: started.elapsed().as_secs_f64(),
        };
        self.progress
            .note(&format!("[suite] purge done in {:.1} s", record.secs));
        Ok(Some(record))
    }

    /// Two passes of sequential 128k writes over the tested range of every device at once.
    /// `None` when a signal stopped it (it is then redone on resume).
    fn precondition(&self) -> anyhow::Result<Option<PrepRecord>> {
        let started = Instant::now();
        let workload = Workload::default()
            .with_pattern(IoPattern::Write)
            .with_rwmixread(0)
            .with_block_size(PRECONDITION_BLOCK)
            .with_iodepth(self.config.iodepth.clamp(16, 64))
            .with_numjobs(None)
            .with_working_set(Some(self.config.range))
            // The I/O limit ends it; the runtime is a backstop, or --precondition-time.
            .with_runtime(
                self.config
                    .precondition_time_ms
                    .map_or(Duration::from_secs(30 * 24 * 3600), Duration::from_millis),
            )
            .with_ramp(Duration::ZERO)
            .with_seed(self.config.seed)
            .with_rate_iops(None)
            .with_arrival(Default::default())
            .with_record_latency(false)
            .with_io_limit(Some(PRECONDITION_PASSES * self.config.range))
            .with_write_data(Default::default());
        self.progress.phase(&format!(
            "preconditioning: {PRECONDITION_PASSES} passes of sequential 128k writes over {} of {} device(s)",
            human_size(self.config.range),
            self.targets.len()
        ));
        let Some((result, _)) = self.engine_run(&self.targets, &workload, 0, "preconditioning")?
        else {
            return Ok(None);
        };
        let written: u64 = result
            .devices
            .iter()
            .map(|d| d.ops[OpKind::Write].bytes)
            .sum();
        let errors: u64 = result.devices.iter().map(|d| d.errors.count).sum();
        if errors > 0 {
            anyhow::bail!(
                "preconditioning failed: {errors} write(s) failed; check the devices' health (dmesg)"
            );
        }
        let record = PrepRecord {
            method: self
                .targets
                .iter()
                .zip(&result.devices)
                .map(|(t, d)| {
                    let planned = PRECONDITION_PASSES * self.config.range;
                    if d.ops[OpKind::Write].bytes < planned {
                        // --precondition-time ended it first.
                        format!(
                            "{}: sequential 128k writes over {}, {:.2} of {PRECONDITION_PASSES} passes (stopped by --precondition-time)",
                            t.path.display(),
                            human_size(self.config.range),
                            d.ops[OpKind::Write].bytes as f64 / self.config.range as f64
                        )
                    } else {
                        format!(
                            "{}: {PRECONDITION_PASSES} x sequential 128k writes over {}",
                            t.path.display(),
                            human_size(self.config.range)
                        )
                    }
                })
                .collect(),
            secs: started.elapsed().as_secs_f64(),
        };
        self.progress.note(&format!(
            "[suite] preconditioning done: {} written in {:.1} s",
            human_size(written),
            record.secs
        ));
        Ok(Some(record))
    }

    /// Idles `--sleep-between` after a cell; false when a signal came meanwhile.
    fn sleep_between(&self) -> bool {
        let until = Instant::now() + Duration::from_millis(self.config.sleep_between_ms);
        while Instant::now() < until {
            if self.signals.signal() != 0 {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
        }
        self.signals.signal() == 0
    }

    /// Planned milliseconds of one cell.
    fn cell_ms(&self) -> u64 {
        let runs = if self.config.test.one_device_at_a_time() {
            self.targets.len() as u64
        } else {
            1
        };
        (self.config.cell_time_ms + self.config.ramp_ms) * runs
    }

    /// Rounds until steady state, `max_rounds`, or a signal; records every finished cell.
    fn rounds(&self, records: &mut Records) -> anyhow::Result<()> {
        let cells = &self.config.cells;
        let cell_ms = self.cell_ms();
        for round in 1..=self.config.max_rounds {
            // Steady state is judged after each complete round from round 5 on.
            let before = report::steady_state(&self.config, records, round - 1);
            if before.reached {
                break;
            }
            let done_here = cells
                .iter()
                .filter(|c| records.contains_key(&(round, c.key())))
                .count() as u64;
            self.progress.round(
                round,
                self.config.max_rounds,
                cell_ms * cells.len() as u64,
                cell_ms * done_here,
            );
            let mut position = cell_ms * done_here;
            for (index, cell) in cells.iter().enumerate() {
                if records.contains_key(&(round, cell.key())) {
                    continue;
                }
                if self.signals.signal() != 0 {
                    return Ok(());
                }
                self.progress.cell(index, cells.len(), &cell.key());
                let Some(record) = self.run_cell(round, cell, position)? else {
                    return Ok(());
                };
                self.state.save_round(&record).with_context(|| {
                    format!(
                        "saving cell {} of round {round} to the checkpoint {} (every cell finished before it is kept there; make room, then hostmax suite --resume {})",
                        cell.key(),
                        self.state.path().display(),
                        self.state.path().display()
                    )
                })?;
                self.progress.note(&format!(
                    "[round {round}] cell {}/{} {}: {}",
                    index + 1,
                    cells.len(),
                    cell.key(),
                    describe(self.config.metric, &record)
                ));
                records.insert((round, cell.key()), record);
                position += cell_ms;
                if !self.sleep_between() {
                    return Ok(());
                }
            }
            let now = report::steady_state(&self.config, records, round);
            if let Some(w) = &now.window {
                self.progress.note(&format!(
                    "[round {round}] steady state on {}: window rounds {}-{}, mean {:.1}, range {}, slope {} -> {}",
                    self.config.tracked.key(),
                    w.first_round,
                    w.last_round,
                    self.config.metric.display_value(w.mean),
                    if w.range_ok { "ok" } else { "too wide" },
                    if w.slope_ok { "ok" } else { "too steep" },
                    if now.reached { "reached" } else { "not yet" }
                ));
            }
        }
        Ok(())
    }

    /// Runs one cell of one round; `None` when a signal cut it short (it is not recorded).
    fn run_cell(
        &self,
        round: u32,
        cell: &CellSpec,
        position: u64,
    ) -> anyhow::Result<Option<CellRound>> {
        let workload = self.config.cell_settings().workload(cell, round);
        let before = format!("round {round} cell {}", cell.key());
        // One device at a time has no common seconds: no series (the latency test judges
        // p95, not per-second consistency).
        let (result, series) = if self.config.test.one_device_at_a_time() {
            let mut parts = Vec::new();
            let per_run = self.config.cell_time_ms + self.config.ramp_ms;
            for (i, t) in self.targets.iter().enumerate() {
                let at = position + per_run * i as u64;
                match self.engine_run(std::slice::from_ref(t), &workload, at, &before)? {
                    Some((r, _)) => parts.push(r),
                    None => return Ok(None),
                }
            }
            (merge_results(parts), Vec::new())
        } else {
            match self.engine_run(&self.targets, &workload, position, &before)? {
                Some(r) => r,
                None => return Ok(None),
            }
        };
        let report = summarize(&result, series);
        Ok(Some(CellRound {
            round,
            cell: *cell,
            report,
            pid: std::process::id(),
            finished_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        }))
    }

    /// One engine measurement over `targets` through the one seam and observer
    /// ([`crate::measure::run_watched`]: each path first checked to lead where it did when
    /// the suite began, written ones re-checked while held: the suite checked them all before
    /// it began). `None` when a signal stopped it early. `position` is where the round's
    /// progress bar stood when it started; `before` names the step for a refusal.
    fn engine_run(
        &self,
        targets: &[TargetInfo],
        workload: &Workload,
        position: u64,
        before: &str,
    ) -> anyhow::Result<Option<(RunResult, Vec<SecondPoint>)>> {
        if self.signals.signal() != 0 {
            return Ok(None);
        }
        // Per-second figures only where --consistency judges them (they grow the checkpoint)
        // or the live metrics show them.
        let keep_series = self
            .config
            .promises
            .as_ref()
            .is_some_and(|p| p.consistency.is_some());
        let live = keep_series || crate::output::metrics::board::live().is_some();
        let run = RunConfig::new(
            targets.iter().map(|t| t.path.clone()).collect(),
            workload.clone(),
        )
        .with_cpus(self.config.cpus.clone())
        .with_live(live);
        let request = MeasureRequest::for_run(run)
            // Each descriptor the cell writes through must be what the suite checked.
            .with_checked_before(
                WriteSafety::NONE.with_allow_write(self.allow_write),
                targets.to_vec(),
            );
        let progress = |since_start: Duration| {
            self.progress
                .position(position + since_start.as_millis() as u64);
        };
        let watched = crate::measure::run_watched(
            self.engine,
            request,
            (&self.identities, targets, before),
            Watch {
                label: Some(before),
                start_at: None,
                // The suite's own bar shows its progress.
                live_view: false,
                series_histograms: false,
                progress: Some(&progress),
                signals: self.signals.watch,
            },
            &mut Recorders::none(),
            "an engine run of the suite failed",
        );
        let (result, series) = match watched {
            Ok(watched) => watched,
            // Called off before its first write by a signal that came while it was readied.
            Err(e) if e.downcast_ref::<crate::error::CalledOff>().is_some() => return Ok(None),
            Err(e) => return Err(e),
        };
        // A device that stopped answering still holds its I/O (and, written, its claim): no
        // later cell could measure it, so the suite stops here, resumable.
        if let Some(d) = result
            .devices
            .iter()
            .find(|d| d.stalled_in_flight.is_some())
        {
            return Err(crate::error::Stalled(format!(
                "{}: stopped answering ({} I/Os still in flight {} s after the end of {before}); the suite stops: check the device, then continue with hostmax suite --resume",
                d.path.display(),
                d.stalled_in_flight.unwrap_or_default(),
                hostmax_engine::DRAIN_LIMIT.as_secs()
            ))
            .into());
        }
        let series = if keep_series { series } else { Vec::new() };
        Ok((!result.stopped_early).then_some((result, series)))
    }
}

/// The results of runs of one device each, as one run.
/// The first run's id and workload (every part ran the same) stand for the whole.
fn merge_results(parts: Vec<RunResult>) -> RunResult {
    let mut parts = parts.into_iter();
    let Some(mut merged) = parts.next() else {
        return RunResult::default();
    };
    for p in parts {
        merged.measured = merged.measured.min(p.measured);
        merged.stopped_early |= p.stopped_early;
        merged.devices.extend(p.devices);
        merged.workers.extend(p.workers);
    }
    merged
}

/// A cell's figures in one line: `12345 IOPS  48.2 MiB/s  mean 410 µs  errors 0`.
fn describe(metric: TrackedMetric, record: &CellRound) -> String {
    let host = &record.report.host;
    format!(
        "{:.0} IOPS  {} MiB/s  mean {}  errors {}{}",
        host.iops,
        crate::units::format_mib_per_sec(host.bytes_per_sec),
        crate::units::format_latency_ns(
            metric_value(TrackedMetric::MeanLatencyNs, record).round() as u64
        ),
        host.errors,
        if metric == TrackedMetric::Iops {
            String::new()
        } else {
            format!(
                "  (tracked {}: {:.1})",
                metric.label(),
                metric.display_value(metric_value(metric, record))
            )
        }
    )
}
