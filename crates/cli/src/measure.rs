//! Running I/O, the one way every command does: one engine run through the seam
//! ([`crate::engine::Engine`]) watched by the one observer ([`run_watched`]: identity
//! re-check, `--start-at`, the outputs that record the runs (`--hdr-log`), signals, the live
//! view or a command's own progress, the live metrics); a plan measured into a stamped report
//! ([`measure`]); printing a report and writing its outputs ([`emit`]); and the engine's
//! errors as refusals ([`refusal_or_error`]).
//!
//! The I/O path is the engine's pinned threads; this side only reads their one-second
//! intervals, feeds the live view and the live metrics (`--metrics-listen`: one source, two
//! views), and turns the result into a report. Signals: see
//! [`crate::signals`] (the first stops the run and the report is still written, marked
//! interrupted; a second exits at once).

use std::ops::ControlFlow;
use std::path::PathBuf;

use hostmax_aggregate::{summarize, HostReport, SecondPoint, TimeSeries};
use hostmax_device::identity::identify;
use hostmax_device::WriteSafety;
use hostmax_engine::{
    DeviceInterval, EngineError, MeasureRequest, RunConfig, RunResult, TargetInfo, Workload,
};

use crate::engine::{Engine, RunObserver, StartedRun};
use crate::error::BadInput;
use crate::exit_code;
use crate::output::export::{Outputs, RecordRuns, Recorders, RunStart};
use crate::output::metrics::board::{self as metrics_board, Board};
use crate::output::{self, progress::LiveView};
use crate::plan::identity::PlannedIdentity;
use crate::plan::RunPlan;
use crate::signals::{RunningGuard, SignalWatch};

/// Measures the plan (a command's only run), lets `complete` add to the report (a verdict),
/// prints the table and writes the outputs: the JSON first, then the `--hdr-log`, so a failure
/// writing the interval log cannot lose the report. Returns the report and the interrupting
/// signal (0 if none).
pub fn run_and_emit(
    engine: &dyn Engine,
    plan: &RunPlan,
    mut outputs: Outputs<HostReport>,
    complete: impl FnOnce(&mut HostReport),
) -> anyhow::Result<(HostReport, i32)> {
    let (mut report, interrupted) = measure(engine, plan, None, &mut outputs.recorders())?;
    complete(&mut report);
    emit(&report, outputs)?;
    Ok((report, interrupted))
}

/// The exit code a finished run earns.
pub fn exit_code(report: &HostReport, interrupted_by: i32) -> i32 {
    exit_code::Outcome {
        signal: interrupted_by,
        bad_data: report.verify_failed(),
        io_errors: report.host.errors > 0,
        stalled: report.stalled(),
        verdict_failed: false,
        not_concluded: false,
    }
    .code()
}

/// How one engine run is watched, besides its request: what [`run_watched`] tells
/// [`LiveRun`].
pub struct Watch<'a> {
    /// The run's name among the command's runs (`step2`, `round 3 cell 4k_0_100`), for the
    /// recorders, the live metrics and a refusal; `None` for a command's only run.
    pub label: Option<&'a str>,
    /// `--start-at`: waited for once the targets are ready.
    pub start_at: Option<std::time::SystemTime>,
    /// Show the live view (a command with a progress display of its own shows that instead).
    pub live_view: bool,
    /// Keep each second's merged histograms in the series (`--no-series-histograms`).
    pub series_histograms: bool,
    /// Told the time since the start about every [`hostmax_engine::TICK`] (the suite's bar).
    pub progress: Option<&'a dyn Fn(std::time::Duration)>,
    /// The signal watch the run registers with (the process's, but for unit tests).
    pub signals: &'static SignalWatch,
}

/// The one observer of every command's runs: waits for `--start-at`, calls a write run off
/// when a signal came before it started, tells the recorders (the `--hdr-log`) and the live
/// metrics the run begins, registers the run with the signal watch, and feeds the live view,
/// the live metrics, the recorders and the run's series.
struct LiveRun<'a, 'r> {
    watch: Watch<'a>,
    workload: &'a Workload,
    series: TimeSeries,
    /// Made when the run starts: it speaks at once (the ramp notice), and nothing may come
    /// before `--start-at`'s "starting at" line.
    view: Option<LiveView>,
    recorders: &'a mut Recorders<'r>,
    /// Why the run was called off before it started (the `--hdr-log` could not be made).
    failed: Option<anyhow::Error>,
    /// The signal that called the run off before it started.
    interrupted: Option<i32>,
    running: Option<RunningGuard<'static>>,
    /// The live metrics' board, when the command serves them.
    metrics: Option<std::sync::Arc<Board>>,
}

impl RunObserver for LiveRun<'_, '_> {
    fn before_start(&mut self, targets: &[PathBuf]) -> ControlFlow<()> {
        let workload = self.workload;
        let signals = self.watch.signals;
        let ready = crate::plan::start_at::wait_for_start(self.watch.start_at).and_then(|sig| {
            // A signal during the checks (a slow wipefs) calls a write run off before its
            // first write; a read run starts and stops at once, and still reports.
            let sig = sig.or_else(|| {
                let caught = signals.signal();
                (caught != 0 && workload.pattern.writes()).then(|| {
                    crate::errln!("{}", crate::error::CALLED_OFF_BEFORE_WRITING);
                    caught
                })
            });
            self.interrupted = sig;
            if sig.is_some() {
                return Ok(());
            }
            if let Some(board) = &self.metrics {
                board.run_begins(self.watch.label, targets, workload);
            }
            self.recorders.begin(&RunStart {
                label: self.watch.label,
                targets,
                workload,
                measured_start: std::time::SystemTime::now() + workload.ramp,
            })
        });
        match ready {
            Ok(()) if self.interrupted.is_none() => ControlFlow::Continue(()),
            Ok(()) => ControlFlow::Break(()),
            Err(e) => {
                self.failed = Some(e);
                ControlFlow::Break(())
            }
        }
    }

    fn started(&mut self, run: StartedRun) {
        crate::devices::note_run_started();
        self.running = run
            .stopper
            .map(|stopper| self.watch.signals.running(stopper));
        if let Some(board) = &self.metrics {
            board.run_started(run.at);
        }
        if self.watch.live_view {
            self.view = Some(LiveView::new(
                self.workload.runtime.as_secs(),
                self.workload.ramp.as_secs(),
            ));
        }
    }

    fn interval(&mut self, interval: DeviceInterval) {
        if let Some(board) = &self.metrics {
            board.interval(&interval);
        }
        self.recorders.interval(&interval);
        if let Some(point) = self.series.push(interval) {
            if let Some(view) = &mut self.view {
                view.update(&point);
            }
        }
        if !self.recorders.is_empty() {
            for host in self.series.take_histograms() {
                self.recorders.host_second(&host);
            }
        }
    }

    fn tick(&mut self, since_start: std::time::Duration) {
        if let Some(progress) = self.watch.progress {
            progress(since_start);
        }
    }
}

/// One engine run through `engine`, every command's: each target's path first checked to
/// lead where it did when planned (`identities`; `before` names the step for the refusal),
/// then the request measured with the one observer ([`LiveRun`]), the live metrics settled,
/// the recorders told the end. Returns the result and its seconds (each device's intervals
/// added into host seconds). A signal that called the run off before its first I/O is
/// [`crate::error::CalledOff`]; the engine's other errors are refusals or errors saying what
/// failed, `what_failed` ([`refusal_or_error`]).
pub fn run_watched(
    engine: &dyn Engine,
    request: MeasureRequest,
    checked: (&[PlannedIdentity], &[TargetInfo], &str),
    watch: Watch<'_>,
    recorders: &mut Recorders<'_>,
    what_failed: &'static str,
) -> anyhow::Result<(RunResult, Vec<SecondPoint>)> {
    let (identities, targets, before) = checked;
    // A path renamed onto since the plan probed it is not the target that was checked.
    crate::plan::identity::check_unchanged(identities, targets, before)?;
    // Its write-safety checks read the system (and devices) as the plan's did: through the
    // engine's sources.
    let request = request.with_sources(engine.safety_sources());
    let workload = request.run.workload.clone();
    let mut live = LiveRun {
        // A recorder takes each second's host histograms from the series: merged once.
        series: TimeSeries::new(request.run.targets.len())
            .keep_histograms(watch.series_histograms)
            .hand_over_histograms(!recorders.is_empty()),
        watch,
        workload: &workload,
        view: None,
        recorders,
        failed: None,
        interrupted: None,
        running: None,
        metrics: metrics_board::live(),
    };
    let measured = engine.measure(request, &mut live);
    let LiveRun {
        series,
        view,
        recorders,
        failed,
        interrupted,
        running,
        metrics,
        ..
    } = live;
    if let Some(board) = metrics {
        board.run_ended(measured.as_ref().ok());
    }
    drop(running);
    let result = match measured {
        Ok(result) => result,
        // The prepared run was released without any I/O.
        Err(EngineError::CalledOff) => match (interrupted, failed) {
            (Some(sig), _) => {
                crate::devices::remove_unused_files();
                return Err(crate::error::CalledOff(sig).into());
            }
            (None, failed) => {
                return Err(failed.unwrap_or_else(|| anyhow::anyhow!("the run was called off")))
            }
        },
        Err(e) => return Err(refusal_or_error(e, what_failed)),
    };
    let (points, partial_seconds) = series.finish_with_histograms();
    recorders.ended_after(result.measured);
    for host in &partial_seconds {
        recorders.host_second(host);
    }
    if let Some(view) = view {
        view.finish();
    }
    Ok((result, points))
}

/// The engine's measurement of a plan. Its targets passed every write-safety check when it
/// was planned, before anything touched them, so each run (of a command's several) only
/// re-checks while it holds them.
fn measure_request(plan: &RunPlan) -> MeasureRequest {
    let run = RunConfig::new(
        plan.targets.iter().map(|t| t.path.clone()).collect(),
        plan.workload.clone(),
    )
    .with_cpus(plan.cpus.clone())
    .with_live(true)
    .with_layout(plan.layout)
    .with_on_error(plan.on_error)
    .with_polling(plan.polling);
    MeasureRequest::for_run(run)
        // Each descriptor the run writes through must be what the plan probed and checked.
        .with_checked_before(
            WriteSafety::NONE.with_allow_write(plan.allow_write),
            plan.targets.clone(),
        )
}

/// One run of a command of several (verify's phases, sweep's and curve's steps): the report
/// and the interrupting signal as [`measure`] gives them, or, when a signal called this run
/// off before its first I/O and `earlier` runs measured something, `None` and that signal: the
/// command then ends there and reports what the earlier runs measured.
pub fn measure_step(
    engine: &dyn Engine,
    plan: &RunPlan,
    label: &str,
    recorders: &mut Recorders<'_>,
    earlier: bool,
) -> anyhow::Result<(Option<HostReport>, i32)> {
    match measure(engine, plan, Some(label), recorders) {
        Ok((report, sig)) => Ok((Some(report), sig)),
        Err(e) => match e.downcast_ref::<crate::error::CalledOff>() {
            Some(called_off) if earlier => Ok((None, called_off.0)),
            _ => Err(e),
        },
    }
}

/// Runs the plan through `engine` ([`run_watched`]: a live view and signal handling),
/// `recorders` (the outputs that record runs, such as the `--hdr-log`) seeing its seconds
/// under `label` (its name among the command's runs, `None` for its only run); returns the
/// report, with the kernel's counts, the devices' identities and the run's provenance, and
/// the signal number that interrupted it (0 if none). The outputs are written by the command,
/// once all its runs are done.
pub fn measure(
    engine: &dyn Engine,
    plan: &RunPlan,
    label: Option<&str>,
    recorders: &mut Recorders<'_>,
) -> anyhow::Result<(HostReport, i32)> {
    // Before any I/O, so the signatures shown are those the devices carried.
    let identities: Vec<_> = plan.targets.iter().map(identify).collect();
    let sysfs = hostmax_device::Sysfs::default();
    let kernel_start =
        crate::kernel_count::RunStart::of(&plan.kernel_window, &plan.targets, &sysfs);
    let signals = crate::signals::watch();
    let (result, points) = run_watched(
        engine,
        measure_request(plan),
        (&plan.identities, &plan.targets, label.unwrap_or("the run")),
        Watch {
            label,
            start_at: plan.fleet.start_at,
            live_view: true,
            series_histograms: plan.fleet.series_histograms,
            progress: None,
            signals,
        },
        recorders,
        "the run failed",
    )?;
    let mut report = summarize(&result, points);
    // After the drain: every I/O of the run that completed is in the kernel's count.
    crate::kernel_count::attach(&mut report, &plan.targets, &kernel_start, &sysfs);
    report.hostname = crate::provenance::hostname();
    crate::provenance::stamp_run(&mut report, result.measured);
    for (device, identity) in report.devices.iter_mut().zip(identities) {
        device.identity = Some(identity);
    }
    for (device, given) in report.devices.iter_mut().zip(&plan.given_names) {
        device.given = given.as_ref().map(|p| p.to_string_lossy().into_owned());
    }
    let sig = signals.signal();
    // Interrupted means a signal; a stop-all after an I/O error is reported by its errors.
    report.interrupted = sig != 0;
    report.interrupted_by = (sig != 0).then(|| crate::signals::signal_name(sig));
    Ok((report, sig))
}

/// Prints the table (stdout, or stderr when the JSON goes to stdout) and writes the outputs.
pub fn emit(report: &HostReport, outputs: Outputs<HostReport>) -> anyhow::Result<()> {
    let json = outputs.json();
    let width = match json {
        Some(output::destination::Destination::Stdout) => output::table::stderr_width(),
        _ => output::table::terminal_width(),
    };
    let table = output::table::render_table_fitting(report, width);
    output::destination::print_beside_json(&table, json);
    outputs.write(report)
}

/// Turns an engine error into a refusal (exit 2) where the user can fix it, else into an
/// error saying what `failed`.
pub fn refusal_or_error(e: EngineError, failed: &'static str) -> anyhow::Error {
    if let EngineError::WriteRefused(refused) = e {
        return crate::error::refused_write(refused);
    }
    match &e {
        EngineError::Open { path, source } if source.raw_os_error() == Some(libc::EBUSY) => {
            BadInput(format!(
                "{}: device is in use (held open exclusively by another program or mounted): pick an unused device",
                path.display()
            ))
            .into()
        }
        EngineError::InvalidWorkload(refusal) | EngineError::InvalidCpus(refusal) => {
            BadInput::from(refusal).into()
        }
        EngineError::NoTargets => crate::error::no_devices().into(),
        EngineError::Open { .. }
        | EngineError::TargetChanged(_)
        | EngineError::Probe(_)
        | EngineError::DuplicateTarget { .. } => BadInput(e.to_string()).into(),
        _ => anyhow::Error::from(e).context(failed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_targets_is_bad_input_naming_the_devices_option() {
        let err = refusal_or_error(EngineError::NoTargets, "the run failed");
        assert_eq!(
            err.downcast_ref::<BadInput>(),
            Some(&crate::error::no_devices())
        );
        assert!(err.to_string().contains("add --devices"), "{err}");
        assert_eq!(exit_code::for_error(&err), 2);
    }
}
