//! Measuring a plan, the one way every command runs I/O: engine, live view, `--start-at`,
//! `--hdr-log`, signals, aggregation into a stamped report ([`measure`]); printing and writing
//! a report ([`emit`]); and the engine's errors as refusals ([`refusal_or_error`]).
//!
//! The I/O path is the engine's pinned threads; this side only reads their one-second
//! intervals, feeds the live view, and turns the result into a report. Signals: see
//! [`crate::signals`] (the first stops the run and the report is still written, marked
//! interrupted; a second exits at once).

use std::ops::ControlFlow;

use hostmax_aggregate::{summarize, HostReport, TimeSeries};
use hostmax_device::identity::identify;
use hostmax_device::{SystemSources, WriteSafety};
use hostmax_engine::{
    DeviceInterval, EngineError, MeasureRequest, Observer, PreparedRun, RunConfig, RunHandle,
    SafetyCheck,
};

use crate::error::BadInput;
use crate::exit_code;
use crate::output::destination::Destination;
use crate::output::hdr_log::HdrLogRecorder;
use crate::output::{self, progress::LiveView};
use crate::plan::RunPlan;
use crate::signals::RunningGuard;

/// Measures the plan, lets `complete` add to the report (a verdict), prints the table and
/// writes the JSON, then the `--hdr-log`: the report is out first, so a failure writing the
/// interval log cannot lose it. Returns the report and the interrupting signal (0 if none).
pub fn run_and_emit(
    plan: &RunPlan,
    complete: impl FnOnce(&mut HostReport),
) -> anyhow::Result<(HostReport, i32)> {
    let (mut report, interrupted, hdr_log) = measure_keeping_log(plan)?;
    complete(&mut report);
    emit(&report, plan.json.as_ref())?;
    if let Some(log) = hdr_log {
        log.finish()?;
    }
    Ok((report, interrupted))
}

/// The exit code a finished run earns.
pub fn exit_code(report: &HostReport, interrupted_by: i32) -> i32 {
    exit_code::Outcome {
        signal: interrupted_by,
        bad_data: report.verify_failed(),
        io_errors: report.host.errors > 0,
        verdict_failed: false,
    }
    .code()
}

/// Runs the plan with a live view and signal handling; returns the report and the signal
/// number that interrupted it (0 if none). A `--hdr-log` is written before it returns.
pub fn measure(plan: &RunPlan) -> anyhow::Result<(HostReport, i32)> {
    let (report, signal, hdr_log) = measure_keeping_log(plan)?;
    if let Some(log) = hdr_log {
        log.finish()?;
    }
    Ok((report, signal))
}

/// What the CLI does while the engine measures a plan: waits for `--start-at`, opens the
/// `--hdr-log`, registers the run with the signal watch, and feeds the live view and the log.
struct LiveRun<'a> {
    plan: &'a RunPlan,
    series: TimeSeries,
    /// Made when the run starts: it speaks at once (the ramp notice), and nothing may come
    /// before `--start-at`'s "starting at" line.
    view: Option<LiveView>,
    hdr_log: Option<HdrLogRecorder>,
    /// Why the run was called off before it started (the `--hdr-log` could not be made).
    failed: Option<anyhow::Error>,
    /// The signal that came while waiting for `--start-at`.
    interrupted: Option<i32>,
    running: Option<RunningGuard<'static>>,
}

impl Observer for LiveRun<'_> {
    fn before_start(&mut self, prepared: &PreparedRun) -> ControlFlow<()> {
        let plan = self.plan;
        let ready = crate::plan::start_at::wait_for_start(plan.fleet.start_at).and_then(|sig| {
            self.interrupted = sig;
            match sig {
                Some(_) => Ok(None),
                None => HdrLogRecorder::for_run(&plan.fleet, prepared.targets(), &plan.workload),
            }
        });
        match ready {
            Ok(log) if self.interrupted.is_none() => {
                self.hdr_log = log;
                ControlFlow::Continue(())
            }
            Ok(_) => ControlFlow::Break(()),
            Err(e) => {
                self.failed = Some(e);
                ControlFlow::Break(())
            }
        }
    }

    fn started(&mut self, run: &RunHandle) {
        self.running = Some(crate::signals::watch().running(run.stopper()));
        let workload = &self.plan.workload;
        self.view = Some(LiveView::new(
            workload.runtime.as_secs(),
            workload.ramp.as_secs(),
        ));
    }

    fn interval(&mut self, interval: DeviceInterval) {
        if let Some(log) = &mut self.hdr_log {
            log.push(&interval);
        }
        if let Some(point) = self.series.push(interval) {
            if let Some(view) = &mut self.view {
                view.update(&point);
            }
        }
        if let Some(log) = &mut self.hdr_log {
            for host in self.series.take_histograms() {
                log.push_host(&host);
            }
        }
    }
}

/// The engine's measurement of a plan. Its targets passed every write-safety check when it
/// was planned, before anything touched them, so each run (of a command's several) only
/// re-checks while it holds them.
fn measure_request(plan: &RunPlan) -> MeasureRequest {
    MeasureRequest {
        run: RunConfig {
            targets: plan.targets.iter().map(|t| t.path.clone()).collect(),
            workload: plan.workload.clone(),
            cpus: plan.cpus.clone(),
            live: true,
            layout: plan.layout,
            on_error: plan.on_error,
            polling: plan.polling,
        },
        safety: SafetyCheck::CheckedBefore(WriteSafety {
            allow_write: plan.allow_write,
            ..WriteSafety::default()
        }),
        sources: SystemSources::default(),
    }
}

/// [`measure`], leaving the `--hdr-log` recorder to the caller to finish (after the report is
/// safe).
fn measure_keeping_log(
    plan: &RunPlan,
) -> anyhow::Result<(HostReport, i32, Option<HdrLogRecorder>)> {
    // Before any I/O, so the signatures shown are those the devices carried.
    let identities: Vec<_> = plan.targets.iter().map(identify).collect();
    let mut live = LiveRun {
        plan,
        // A --hdr-log takes each second's host histograms from the series: merged once.
        series: TimeSeries::new(plan.targets.len())
            .keep_histograms(plan.fleet.series_histograms)
            .hand_over_histograms(plan.fleet.hdr_log.is_some()),
        view: None,
        hdr_log: None,
        failed: None,
        interrupted: None,
        running: None,
    };
    let measured = hostmax_engine::measure(measure_request(plan), &mut live);
    let LiveRun {
        series,
        view,
        mut hdr_log,
        failed,
        interrupted,
        running,
        ..
    } = live;
    let result = match measured {
        Ok(result) => result,
        // The prepared run was released without any I/O.
        Err(EngineError::CalledOff) => match (interrupted, failed) {
            (Some(sig), _) => std::process::exit(128 + sig),
            (None, failed) => {
                return Err(failed.unwrap_or_else(|| anyhow::anyhow!("the run was called off")))
            }
        },
        Err(e) => return Err(refusal_or_error(e, "the run failed")),
    };
    let (points, partial_seconds) = series.finish_with_histograms();
    if let Some(log) = &mut hdr_log {
        log.run_ended_after(result.measured);
        for host in &partial_seconds {
            log.push_host(host);
        }
    }
    if let Some(view) = view {
        view.finish();
    }
    let mut report = summarize(&result, points);
    report.hostname = crate::provenance::hostname();
    crate::provenance::stamp_run(&mut report, result.measured);
    for (device, identity) in report.devices.iter_mut().zip(identities) {
        device.identity = Some(identity);
    }
    for (device, given) in report.devices.iter_mut().zip(&plan.given_names) {
        device.given = given.as_ref().map(|p| p.to_string_lossy().into_owned());
    }
    drop(running);
    let sig = crate::signals::watch().signal();
    // Interrupted means a signal; a stop-all after an I/O error is reported by its errors.
    report.interrupted = sig != 0;
    Ok((report, sig, hdr_log))
}

/// Prints the table (stdout, or stderr when the JSON goes to stdout) and writes the JSON.
pub fn emit(report: &HostReport, json: Option<&Destination>) -> anyhow::Result<()> {
    let width = match json {
        Some(Destination::Stdout) => output::table::stderr_width(),
        _ => output::table::terminal_width(),
    };
    let table = output::table::render_table_fitting(report, width);
    output::destination::print_beside_json(&table, json);
    if let Some(dest) = json {
        output::json::write_json(report, dest)?;
    }
    Ok(())
}

/// Turns an engine error into a refusal (exit 2) where the user can fix it, else into an
/// error saying what `failed`.
pub fn refusal_or_error(e: EngineError, failed: &'static str) -> anyhow::Error {
    if let EngineError::WriteRefused(refused) = e {
        return BadInput::from(refused).into();
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
        EngineError::Open { .. } | EngineError::Probe(_) => BadInput(e.to_string()).into(),
        _ => anyhow::Error::from(e).context(failed),
    }
}
