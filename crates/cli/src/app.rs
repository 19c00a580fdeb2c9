//! Running a plan: engine, live view, signals, aggregation, output.
//!
//! The I/O path is the engine's pinned threads; this side only reads their one-second
//! intervals, feeds the live view, and turns the result into a report. Signals: see
//! [`crate::signals`] (the first stops the run and the report is still written, marked
//! interrupted; a second exits at once).

use std::ops::ControlFlow;
use std::time::Duration;

use anyhow::Context;
use hostmax_aggregate::{summarize, HostReport, TimeSeries};
use hostmax_device::identity::identify;
use hostmax_device::{SystemSources, WriteSafety};
use hostmax_engine::{
    DeviceInterval, EngineError, MeasureRequest, Observer, PreparedRun, RunConfig, RunHandle,
    SafetyCheck,
};

use crate::args::demo::DemoArgs;
use crate::exit_code;
use crate::fleet::hdr_log::HdrLogRecorder;
use crate::output::destination::Destination;
use crate::output::{self, progress::LiveView};
use crate::plan::{BadInput, RunPlan};
use crate::signals::RunningGuard;
use crate::simhost::{SimHostMode, SimHostSpec, SimulatedHost};

/// Runs the host-max test a plan describes and prints/writes its report. Returns the exit code.
pub fn run(plan: RunPlan) -> anyhow::Result<i32> {
    let (report, interrupted) = run_and_emit(&plan, |_| {})?;
    Ok(exit_code(&report, interrupted))
}

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
        let ready = crate::fleet::start_at::wait_for_start(plan.fleet.start_at).and_then(|sig| {
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
    let workload = &plan.workload;
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
    let mut report = summarize(&result, workload, points);
    report.hostname = crate::fleet::hostname();
    crate::fleet::provenance::stamp_run(&mut report, result.measured);
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

/// Per-volume IOPS caps of the demo host: eight volumes promising 22,000 IOPS together; a
/// demo of more volumes repeats them.
const DEMO_VOLUME_IOPS: [u64; 8] = [1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500];
/// The demo host's ceiling, below the sum of its volumes' caps, as on real hosts.
const DEMO_HOST_IOPS: u64 = 15_000;
/// Size of each demo volume (sparse on tmpfs: only what is written takes memory).
const DEMO_VOLUME_SIZE: u64 = 256 << 20;
/// The demo host's caps for `volumes` volumes: the volumes' caps cycle through
/// [`DEMO_VOLUME_IOPS`], and the host's is [`DEMO_HOST_IOPS`] scaled to the volumes' sum
/// (15/22 of it, whole hundreds), so the host stays the bottleneck at any count.
fn demo_caps(volumes: usize) -> (Vec<u64>, u64) {
    let caps: Vec<u64> = DEMO_VOLUME_IOPS
        .iter()
        .copied()
        .cycle()
        .take(volumes)
        .collect();
    let full: u64 = DEMO_VOLUME_IOPS.iter().sum();
    let host = (caps.iter().sum::<u64>() * DEMO_HOST_IOPS / full / 100 * 100).max(100);
    (caps, host)
}

/// `hostmax demo`: builds a simulated host (loop volumes on tmpfs, each capped at its own
/// IOPS, behind a host-wide cap), runs the host-max test on it, prints the report and what
/// each cap allowed, and removes everything it made, also on Ctrl-C or error. Without root it
/// runs on plain files in a temporary directory and says so.
pub fn demo(args: &DemoArgs) -> anyhow::Result<i32> {
    let count = args.volumes.map_or(DEMO_VOLUME_IOPS.len(), |n| n as usize);
    if args.runtime.is_some_and(|t| t.is_zero()) {
        return Err(BadInput(
            "demo --runtime 0: the measured time must be positive; give e.g. --runtime 5s".into(),
        )
        .into());
    }
    let (volume_caps, host_cap) = demo_caps(count);
    let spec = SimHostSpec {
        volume_iops: volume_caps.into_iter().map(Some).collect(),
        host_iops: Some(host_cap),
        ..SimHostSpec::new(count, DEMO_VOLUME_SIZE)
    };
    let host = SimulatedHost::build(&spec).context("building the simulated host")?;
    eprintln!("hostmax demo: {}", host.describe());
    let capped = *host.mode() == SimHostMode::LoopDevices;
    if let Some(throttle) = host.throttle() {
        // Our worker threads are made after this, inside the group, so the caps apply to them.
        throttle
            .join_self()
            .context("joining the simulated host's cgroup")?;
    }
    let targets = host
        .device_paths()
        .iter()
        .map(|p| hostmax_device::probe(p))
        .collect::<Result<Vec<_>, _>>()?;
    let runtime = args
        .runtime
        .unwrap_or(Duration::from_secs(if capped { 10 } else { 5 }));
    let plan = RunPlan {
        given_names: Vec::new(),
        targets,
        workload: hostmax_engine::Workload {
            runtime,
            ramp: runtime.min(Duration::from_secs(2)),
            ..hostmax_engine::Workload::default()
        },
        cpus: None,
        json: None,
        allow_write: false,
        layout: Default::default(),
        on_error: Default::default(),
        fleet: Default::default(),
        polling: Default::default(),
    };
    let (report, signal) = measure(&plan)?;
    emit(&report, None)?;
    if capped {
        println!();
        println!("{}", demo_caps_summary(&report, &host));
    } else if let SimHostMode::UncappedLoopDevices { reason } = host.mode() {
        println!("\n(no caps to compare against: {reason})");
    } else {
        println!("\n(plain files: no caps to compare against; run as root for the capped host)");
    }
    Ok(exit_code(&report, signal))
}

/// What each volume and the host were allowed against what was measured.
fn demo_caps_summary(report: &HostReport, host: &SimulatedHost) -> String {
    let mut out = String::from("what the simulated host allows vs what hostmax measured:\n");
    for (volume, device) in host.volumes().iter().zip(&report.devices) {
        if let Some(cap) = volume.iops_cap() {
            out += &format!(
                "  {:<14} cap {:>6} IOPS  measured {:>8.0}  ({:>5.1}%)\n",
                device.path,
                cap,
                device.figures.iops,
                100.0 * device.figures.iops / cap as f64
            );
        }
    }
    let promised: u64 = host.volumes().iter().filter_map(|v| v.iops_cap()).sum();
    if let Some(cap) = host.spec().host_iops {
        out += &format!(
            "  {:<14} cap {:>6} IOPS  measured {:>8.0}  ({:>5.1}%); the volumes promise {} together, so the host is the bottleneck",
            "host",
            cap,
            report.host.iops,
            100.0 * report.host.iops / cap as f64,
            promised
        );
    }
    out
}
