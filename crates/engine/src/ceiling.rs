//! The load generator's own ceiling: how many I/Os per second hostmax's worker loop can issue
//! on each CPU with no device behind it ([`measure_issue_ceiling`], [`IssueCeiling`]).
//!
//! Each allowed CPU gets one pinned worker running the very loop a run uses (offsets, slots,
//! batch timing, latency histograms, one-second counters), but its ring issues
//! `IORING_OP_NOP`s: requests that name no file and no memory and complete at once. What it
//! reaches is an upper bound on what hostmax can drive from that CPU; a host whose volumes
//! promise more than the CPUs' sum would measure hostmax, not its storage. fio's
//! `ioengine=null` is the peer figure for fio.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::placement::{plan_shares, ShareCount, TargetCpus};
use crate::{CpuUse, EngineError, IoPattern, OpKind, RunConfig, Workload};
use hostmax_device::{TargetInfo, TargetKind};

/// What [`measure_issue_ceiling`] measures with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CeilingConfig {
    /// CPUs to measure, each with its own worker, all at once; `None` is every CPU this
    /// process may run on.
    pub cpus: Option<Vec<usize>>,
    /// NOPs kept in flight per worker (as a run's [`crate::Workload::iodepth`]).
    pub iodepth: u32,
    /// Measured time, after a short ramp.
    pub runtime: Duration,
}

impl Default for CeilingConfig {
    /// Every allowed CPU, depth 32, one second.
    fn default() -> Self {
        CeilingConfig {
            cpus: None,
            iodepth: 32,
            runtime: Duration::from_secs(1),
        }
    }
}

with_setters!(CeilingConfig {
    with_cpus => cpus: Option<Vec<usize>>,
    with_iodepth => iodepth: u32,
    with_runtime => runtime: Duration,
});

/// What one CPU's worker issued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CpuCeiling {
    /// The CPU the worker was pinned to.
    pub cpu: usize,
    /// NOPs completed in the measured window.
    pub ios: u64,
    /// `ios` per second of the window.
    pub ios_per_sec: f64,
    /// The worker thread's CPU time and its CPU's busy time over the whole run (ramp and
    /// window): a ceiling reached with the CPU not busy was held back by something else.
    #[serde(default)]
    pub cpu_use: CpuUse,
}

/// The load generator's ceiling on this host: every measured CPU's NOP rate, all running at
/// once as in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IssueCeiling {
    /// NOPs in flight per worker.
    pub iodepth: u32,
    /// The measured window, in seconds.
    pub measured_secs: f64,
    /// One entry per CPU, in CPU order.
    pub cpus: Vec<CpuCeiling>,
    /// The ceiling as CPU time per I/O: a CPU's second over the lowest CPU's rate
    /// (`1e9 / ios_per_sec`), in nanoseconds; what one I/O costs hostmax's loop at the least.
    /// A run's `load_generator.cpu_ns_per_io` compares with it directly. `None` when no CPU
    /// issued any.
    #[serde(default)]
    pub cpu_ns_per_io: Option<f64>,
}

impl CpuCeiling {
    /// `ios` NOPs completed on `cpu` in a window of `measured_secs` (the rate is worked out
    /// from them), the worker having used `cpu_use`.
    pub fn new(cpu: usize, ios: u64, measured_secs: f64, cpu_use: CpuUse) -> CpuCeiling {
        CpuCeiling {
            cpu,
            ios,
            ios_per_sec: if measured_secs > 0.0 {
                ios as f64 / measured_secs
            } else {
                0.0
            },
            cpu_use,
        }
    }
}

impl IssueCeiling {
    /// The ceiling of `cpus` (put in CPU order) with `iodepth` NOPs in flight each, over a
    /// window of `measured_secs`; [`IssueCeiling::cpu_ns_per_io`] from the lowest rate.
    pub fn new(iodepth: u32, measured_secs: f64, mut cpus: Vec<CpuCeiling>) -> IssueCeiling {
        cpus.sort_by_key(|c| c.cpu);
        let mut ceiling = IssueCeiling {
            iodepth,
            measured_secs,
            cpus,
            cpu_ns_per_io: None,
        };
        ceiling.cpu_ns_per_io = ns_per_io(ceiling.lowest_per_cpu());
        ceiling
    }

    /// All CPUs' rates added: the most this host's CPUs can issue through hostmax at once.
    pub fn total_per_sec(&self) -> f64 {
        self.cpus.iter().map(|c| c.ios_per_sec).sum()
    }

    /// The lowest CPU's rate: what one worker can be counted on for.
    pub fn lowest_per_cpu(&self) -> f64 {
        self.cpus
            .iter()
            .map(|c| c.ios_per_sec)
            .reduce(f64::min)
            .unwrap_or(0.0)
    }
}

/// A CPU's second over `ios_per_sec`: the CPU time per I/O of a worker that had its CPU to
/// itself, in nanoseconds; `None` for no rate.
fn ns_per_io(ios_per_sec: f64) -> Option<f64> {
    (ios_per_sec > 0.0).then(|| 1e9 / ios_per_sec)
}

/// Runs the worker loop on every CPU of `config` with NOPs instead of I/O and reports what
/// each issued (see the module overview). Touches no device: each worker's ring registers
/// `/dev/null`, which a NOP never uses.
///
/// # Errors
///
/// [`EngineError::InvalidCpus`] for a CPU this process may not run on, and whatever keeps a
/// worker from starting (no io_uring: [`EngineError::Ring`]).
///
/// # Example
///
/// ```
/// use std::time::Duration;
///
/// use hostmax_engine::{measure_issue_ceiling, CeilingConfig};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # if hostmax_engine::check_io_uring().is_err() { return Ok(()); }
/// let config = CeilingConfig::default().with_runtime(Duration::from_millis(200));
/// let ceiling = measure_issue_ceiling(&config)?;
/// for cpu in &ceiling.cpus {
///     let cpu_secs = (cpu.cpu_use.user_ns + cpu.cpu_use.system_ns) as f64 / 1e9;
///     println!("CPU {}: {:.0} I/Os per second, {cpu_secs:.2} s of CPU", cpu.cpu, cpu.ios_per_sec);
/// }
/// assert!(ceiling.total_per_sec() > 0.0);
/// # Ok(())
/// # }
/// ```
pub fn measure_issue_ceiling(config: &CeilingConfig) -> Result<IssueCeiling, EngineError> {
    let allowed = crate::run::usable_cpus(config.cpus.as_deref())?;
    let null = PathBuf::from("/dev/null");
    // Offsets are drawn over 1 GiB as over a device: the loop's work is the same.
    let stand_in = TargetInfo::new(null.clone(), TargetKind::RegularFile, 1 << 30, 512);
    let targets = vec![stand_in; allowed.len()];
    let files = targets
        .iter()
        .map(|_| {
            std::fs::File::open(&null).map_err(|source| EngineError::Open {
                path: null.clone(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // One stand-in per CPU, one share each: every worker on a CPU of its own.
    let placement = plan_shares(
        &vec![TargetCpus::default(); allowed.len()],
        &vec![ShareCount::Exactly(1); allowed.len()],
        &allowed,
    )?;
    let workload = Workload {
        pattern: IoPattern::RandRead,
        iodepth: config.iodepth.clamp(1, crate::MAX_IODEPTH),
        runtime: config.runtime,
        ramp: Duration::from_millis(100),
        ..Workload::default()
    };
    let run = RunConfig::new(vec![null; allowed.len()], workload);
    let result = crate::run::launch(run, targets, files, placement, true)?
        .start()
        .wait()?;
    let secs = result.measured.as_secs_f64();
    let cpus = result
        .devices
        .iter()
        .map(|d| {
            let cpu_use = result
                .workers
                .iter()
                .find(|w| w.cpu == d.cpu)
                .map(|w| w.cpu_use)
                .unwrap_or_default();
            CpuCeiling::new(d.cpu, d.ops[OpKind::Read].ios, secs, cpu_use)
        })
        .collect();
    Ok(IssueCeiling::new(result.workload.iodepth, secs, cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allowed_cpu_issues_nops_through_the_worker_loop() {
        if let Err(e) = crate::check_io_uring() {
            eprintln!("skipped: io_uring is not available here ({e})");
            return;
        }
        let allowed = crate::placement::allowed_cpus().unwrap();
        let ceiling = measure_issue_ceiling(&CeilingConfig {
            runtime: Duration::from_millis(300),
            iodepth: 8,
            ..CeilingConfig::default()
        })
        .unwrap();
        assert_eq!(
            ceiling.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
            allowed
        );
        assert_eq!(ceiling.iodepth, 8);
        assert!(ceiling.measured_secs > 0.25 && ceiling.measured_secs < 0.35);
        for c in &ceiling.cpus {
            // A NOP costs well under a microsecond; even a loaded CPU issues thousands.
            assert!(c.ios > 1000, "CPU {} issued only {} NOPs", c.cpu, c.ios);
            assert!((c.ios_per_sec - c.ios as f64 / ceiling.measured_secs).abs() < 1.0);
        }
        assert!(ceiling.lowest_per_cpu() <= ceiling.total_per_sec());
        // The same ceiling as CPU time per I/O, to set beside a run's.
        let ns = ceiling.cpu_ns_per_io.unwrap();
        assert!((ns * ceiling.lowest_per_cpu() - 1e9).abs() < 1.0, "{ns}");
        assert_eq!(ns_per_io(0.0), None);
        assert_eq!(ns_per_io(4e6), Some(250.0));
    }

    #[test]
    fn a_cpu_this_process_may_not_use_is_refused() {
        let err = measure_issue_ceiling(&CeilingConfig {
            cpus: Some(vec![100_000]),
            ..CeilingConfig::default()
        })
        .unwrap_err();
        assert!(matches!(err, EngineError::InvalidCpus(_)), "{err}");
    }

    #[test]
    fn one_cpu_asked_is_the_only_one_measured() {
        if let Err(e) = crate::check_io_uring() {
            eprintln!("skipped: io_uring is not available here ({e})");
            return;
        }
        let first = crate::placement::allowed_cpus().unwrap()[0];
        let ceiling = measure_issue_ceiling(&CeilingConfig {
            cpus: Some(vec![first]),
            runtime: Duration::from_millis(200),
            ..CeilingConfig::default()
        })
        .unwrap();
        assert_eq!(ceiling.cpus.len(), 1);
        assert_eq!(ceiling.cpus[0].cpu, first);
        assert!(ceiling.cpus[0].ios > 0);
    }
}
