//! `hostmax demo`: the host-max test on a simulated host ([`hostmax_simhost`]) whose caps are
//! known, so the report can be held against them.

use std::time::Duration;

use anyhow::Context;
use hostmax_aggregate::HostReport;

use crate::args::demo::DemoArgs;
use crate::engine::Engine;
use crate::error::BadInput;
use crate::measure::{exit_code, measure};
use crate::output::export::Recorders;
use crate::output::stdio::print_stdout;
use crate::output::table::{
    join_names, render_table_noting, terminal_width, wrap_lines, UnwrittenReads,
};
use crate::plan::RunPlan;
use hostmax_simhost::{SimHostMode, SimHostSpec, SimulatedHost};

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
pub fn demo(engine: &dyn Engine, args: &DemoArgs) -> anyhow::Result<i32> {
    let count = args.volumes.map_or(DEMO_VOLUME_IOPS.len(), |n| n as usize);
    if args.runtime.is_some_and(|t| t.is_zero()) {
        return Err(BadInput(
            "demo --runtime 0: the measured time must be positive; give e.g. --runtime 5s".into(),
        )
        .into());
    }
    let (volume_caps, host_cap) = demo_caps(count);
    let spec = SimHostSpec::new(count, DEMO_VOLUME_SIZE)
        .with_volume_iops_caps(volume_caps.into_iter().map(Some).collect())
        .with_host_iops(host_cap);
    let host = SimulatedHost::build(&spec).context("building the simulated host")?;
    crate::errln!("hostmax demo: {}", host.describe());
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
        identities: crate::plan::identity::PlannedIdentity::record(&targets),
        targets,
        workload: hostmax_engine::Workload::default()
            .with_runtime(runtime)
            .with_ramp(runtime.min(Duration::from_secs(2))),
        cpus: None,
        allow_write: false,
        layout: Default::default(),
        on_error: Default::default(),
        fleet: Default::default(),
        polling: Default::default(),
        kernel_window: Default::default(),
    };
    // The demo writes no file: its table is its only output.
    let (report, signal) = measure(engine, &plan, None, &mut Recorders::none())?;
    let width = terminal_width();
    let names: Vec<String> = report.devices.iter().map(|d| d.path.clone()).collect();
    let mut text = render_table_noting(&report, width, UnwrittenReads::Expected);
    text += &fresh_volumes_line(&names);
    text.push('\n');
    if capped {
        text += THROTTLE_LATENCY_LINE;
        text.push('\n');
    }
    if let Some(w) = width {
        text = wrap_lines(&text, w);
    }
    if capped {
        text += &format!("\n{}\n", demo_caps_summary(&report, &host));
    } else if let SimHostMode::UncappedLoopDevices { reason } = host.mode() {
        text += &format!("\n(no caps to compare against: {reason})\n");
    } else {
        text += "\n(plain files: no caps to compare against; run as root for the capped host)\n";
    }
    print_stdout(&text);
    Ok(exit_code(&report, signal))
}

/// Why the capped demo's tails sit near 100 ms: blk-throttle (cgroup v1 blkio and v2 io.max
/// alike) hands out each group's budget per slice of 100 ms (`throtl_slice`), so an I/O over
/// the slice's budget waits for the next slice.
const THROTTLE_LATENCY_LINE: &str = "latency: the caps are the kernel's blk-throttle, which lets each volume's I/Os through in 100 ms slices; an I/O over its slice's budget waits for the next one, so tails near 100 ms are the throttle's slice, not the volumes' media";

/// The one line saying the demo read blocks nobody wrote (its volumes are new sparse files,
/// which read as zeros): said once, naming every volume, instead of the table's advice to
/// write them first, which is for real volumes.
fn fresh_volumes_line(names: &[String]) -> String {
    format!(
        "reads: {} are the demo's new volumes, never written, so every read is of a never-written block (zeros); on a real volume write the range first, as hostmax advises when it sees this",
        join_names(names)
    )
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
