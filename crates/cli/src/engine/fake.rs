//! A fake [`Engine`] for the commands' unit tests: no device is opened, nothing is read or
//! written, and each run's result is made up from its request (every target gives the IOPS
//! the script says, for the workload's runtime, capped by its I/O limit), so the logic above
//! the seam can be tested without root or devices. Its purge, its doctor's probes (a
//! scripted ceiling, a kernel with every ring feature, or none with
//! [`FakeEngine::without_io_uring`]) and the system state the write-safety checks read
//! ([`FakeEngine::with_safety_sources`]) are its own too.

use std::cell::RefCell;
use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hostmax_device::SystemSources;
use hostmax_engine::{
    new_latency_histogram, CeilingConfig, CpuCeiling, CpuUse, DeviceInterval, DeviceResult,
    EngineError, IoUringUnavailable, IssueCeiling, KernelRingSupport, MeasureRequest, OpKind,
    OpResult, PassProgress, PerOp, ReadPass, RunResult, TargetInfo, Workload,
};

use super::{Engine, RunObserver, StartedRun};
use crate::signals::SignalWatch;

/// What a fake run is asked: its targets and workload.
#[derive(Debug, Clone)]
pub(crate) struct FakeRun {
    pub targets: Vec<PathBuf>,
    pub workload: Workload,
    /// Whether the request's write-safety checks read through this engine's sources
    /// ([`Engine::safety_sources`]).
    pub engine_sources: bool,
}

/// What the fake engine was asked, in order.
#[derive(Debug, Clone)]
pub(crate) enum FakeCall {
    Measure(FakeRun),
    SecureErase(PathBuf),
    Discard(PathBuf),
    ZeroOut(PathBuf),
    /// A read pass, from where it was asked to start.
    ReadPass {
        targets: Vec<PathBuf>,
        from: Vec<u64>,
    },
    IssueCeiling(CeilingConfig),
}

/// The IOPS each target gives in a run: the run's index among this engine's measurements
/// (from 0), its targets' count and its workload.
type Iops = Box<dyn Fn(usize, usize, &Workload) -> f64>;

/// A scripted engine: by default each target gives 1000 IOPS (at most its offered rate) at a
/// latency of depth / IOPS (Little's law), every run whole.
pub(crate) struct FakeEngine {
    iops: Iops,
    /// The run (by index) during which a signal comes, the watch it comes to, and the signal.
    signal_at: Option<(usize, &'static SignalWatch, i32)>,
    /// The run (by index) before whose start a signal comes (while its targets are checked).
    signal_before: Option<(usize, &'static SignalWatch, i32)>,
    /// The host has no io_uring: its check, the ring probe and the ceiling fail.
    no_io_uring: bool,
    /// What the write-safety checks read.
    sources: SystemSources,
    /// Secure erase fails (as on a disk that is not ATA).
    no_secure_erase: bool,
    /// Discard fails (as on a device without discard support).
    no_discard: bool,
    /// Zero fill fails too.
    no_zero_out: bool,
    /// Every target's I/Os fail in the runs (by index) listed.
    errors_in: Vec<usize>,
    /// A read pass reads this many bytes of each target at most, then stops (as a signal
    /// would stop it).
    pass_reads: Option<u64>,
    calls: RefCell<Vec<FakeCall>>,
}

impl FakeEngine {
    /// Every target gives 1000 IOPS.
    pub fn new() -> FakeEngine {
        FakeEngine {
            iops: Box::new(|_, _, _| 1000.0),
            signal_at: None,
            signal_before: None,
            no_io_uring: false,
            sources: SystemSources::default(),
            no_secure_erase: false,
            no_discard: false,
            no_zero_out: false,
            errors_in: Vec::new(),
            pass_reads: None,
            calls: RefCell::new(Vec::new()),
        }
    }

    /// Each target gives `iops(run, targets, workload)`.
    pub fn with_iops(mut self, iops: impl Fn(usize, usize, &Workload) -> f64 + 'static) -> Self {
        self.iops = Box::new(iops);
        self
    }

    /// `signal` comes to `watch` while run `run` goes on (which then ends early).
    pub fn with_signal_during(
        mut self,
        run: usize,
        watch: &'static SignalWatch,
        signal: i32,
    ) -> Self {
        self.signal_at = Some((run, watch, signal));
        self
    }

    /// `signal` comes to `watch` while run `run` is readied, before its start.
    pub fn with_signal_before(
        mut self,
        run: usize,
        watch: &'static SignalWatch,
        signal: i32,
    ) -> Self {
        self.signal_before = Some((run, watch, signal));
        self
    }

    /// No io_uring on this host: [`Engine::check_io_uring`] says the kernel has none, and
    /// the ring probe and the ceiling fail.
    pub fn without_io_uring(mut self) -> Self {
        self.no_io_uring = true;
        self
    }

    /// The write-safety checks read the system's state from `sources` (the real one's, read
    /// without bounds, by default).
    pub fn with_safety_sources(mut self, sources: SystemSources) -> Self {
        self.sources = sources;
        self
    }

    /// Secure erase fails, as on a disk that is not ATA.
    pub fn without_secure_erase(mut self) -> Self {
        self.no_secure_erase = true;
        self
    }

    /// Discard fails, as on a device that does not support it.
    pub fn without_discard(mut self) -> Self {
        self.no_discard = true;
        self
    }

    /// Zero fill fails (as on a device that refuses writes).
    pub fn without_zero_fill(mut self) -> Self {
        self.no_zero_out = true;
        self
    }

    /// Run `run`'s I/Os fail (one error per target).
    pub fn with_errors_in(mut self, run: usize) -> Self {
        self.errors_in.push(run);
        self
    }

    /// A read pass reads at most `bytes` of each target, then stops.
    pub fn with_pass_stopping_after(mut self, bytes: u64) -> Self {
        self.pass_reads = Some(bytes);
        self
    }

    /// What it was asked, in order.
    pub fn calls(&self) -> Vec<FakeCall> {
        self.calls.borrow().clone()
    }

    /// The measurements it was asked for, in order.
    pub fn runs(&self) -> Vec<FakeRun> {
        self.calls
            .borrow()
            .iter()
            .filter_map(|c| match c {
                FakeCall::Measure(run) => Some(run.clone()),
                _ => None,
            })
            .collect()
    }
}

/// One device's figures over `secs` seconds at `iops`: the workload's kinds in its shares,
/// each I/O of its block size, timed at depth / IOPS; at most the I/O limit's bytes.
fn device_ops(workload: &Workload, iops: f64, secs: f64) -> PerOp<OpResult> {
    let block = u64::from(workload.block_size);
    let mut total = (iops * secs).round() as u64;
    if let Some(limit) = workload.io_limit {
        total = total.min(limit / block.max(1));
    }
    let latency_ns = (1e9 * workload.in_flight_per_target() as f64 / iops.max(1.0)) as u64;
    let share = workload.pattern.op_share(workload.rwmixread);
    PerOp::from_fn(|op| {
        let ios = total * u64::from(share[op]) / 100;
        let mut histogram = new_latency_histogram();
        if ios > 0 {
            histogram
                .record_n(latency_ns.max(1), ios)
                .expect("the layout grows to any latency");
        }
        OpResult::new(ios, ios * block, histogram)
    })
}

/// What a fake host's kernel is: no ring at all.
fn no_ring() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOSYS)
}

impl Engine for FakeEngine {
    fn check_io_uring(&self) -> Result<(), IoUringUnavailable> {
        if self.no_io_uring {
            return Err(IoUringUnavailable::NotInKernel);
        }
        Ok(())
    }

    fn safety_sources(&self) -> SystemSources {
        self.sources.clone()
    }

    fn measure(
        &self,
        request: MeasureRequest,
        observer: &mut dyn RunObserver,
    ) -> Result<RunResult, EngineError> {
        let index = self.runs().len();
        let targets = request.run.targets.clone();
        let workload = request.run.workload.clone();
        let engine_sources = request.sources.swaps == self.sources.swaps
            && Arc::ptr_eq(&request.sources.reads, &self.sources.reads);
        self.calls.borrow_mut().push(FakeCall::Measure(FakeRun {
            targets: targets.clone(),
            workload: workload.clone(),
            engine_sources,
        }));
        if let Some((_, watch, sig)) = self.signal_before.filter(|(run, _, _)| *run == index) {
            watch.deliver(sig);
        }
        if observer.before_start(&targets).is_break() {
            return Err(EngineError::CalledOff);
        }
        observer.started(StartedRun {
            at: Instant::now(),
            stopper: None,
        });
        let scripted = (self.iops)(index, targets.len(), &workload);
        // An offered rate is what a target gives at most.
        let iops = workload
            .rate_iops
            .map_or(scripted, |rate| scripted.min(rate as f64));
        let signal = self.signal_at.filter(|(run, _, _)| *run == index);
        // A signal ends the run halfway (at least one second in).
        let secs = workload.runtime.as_secs().max(1);
        let secs = if signal.is_some() {
            secs.div_ceil(2)
        } else {
            secs
        };
        if request.run.live {
            for second in 0..secs {
                for device in 0..targets.len() {
                    let ops = device_ops(&workload, iops, 1.0);
                    observer.interval(DeviceInterval::new(device, second as i64, ops, 0));
                }
            }
        }
        if let Some((_, watch, sig)) = signal {
            watch.deliver(sig);
        }
        observer.tick(Duration::from_secs(secs));
        let failing = self.errors_in.contains(&index);
        let mut result = RunResult::default();
        result.devices = targets
            .iter()
            .map(|path| {
                let mut device =
                    DeviceResult::new(path.clone(), 0, device_ops(&workload, iops, secs as f64));
                if failing {
                    device.errors.record(hostmax_engine::IoErrorSample::new(
                        OpKind::Read,
                        0,
                        workload.block_size,
                        libc::EIO,
                        0,
                    ));
                }
                device
            })
            .collect();
        result.measured = Duration::from_secs(secs);
        result.stopped_early = signal.is_some();
        result.run_id = index as u64 + 1;
        result.measured_from = Some(SystemTime::now() - Duration::from_secs(secs));
        result.numa_nodes = vec![None; targets.len()];
        result.workload = workload;
        Ok(result)
    }

    fn secure_erase(&self, target: &TargetInfo, _password: &str) -> anyhow::Result<()> {
        self.calls
            .borrow_mut()
            .push(FakeCall::SecureErase(target.path.clone()));
        if self.no_secure_erase {
            anyhow::bail!("not an ATA disk");
        }
        Ok(())
    }

    fn discard(&self, target: &TargetInfo, _range: Range<u64>) -> Result<(), EngineError> {
        self.calls
            .borrow_mut()
            .push(FakeCall::Discard(target.path.clone()));
        if self.no_discard {
            return Err(EngineError::Clear {
                path: target.path.clone(),
                what: "discard",
                source: std::io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            });
        }
        Ok(())
    }

    fn zero_out(&self, target: &TargetInfo, _range: Range<u64>) -> Result<(), EngineError> {
        self.calls
            .borrow_mut()
            .push(FakeCall::ZeroOut(target.path.clone()));
        if self.no_zero_out {
            return Err(EngineError::Clear {
                path: target.path.clone(),
                what: "zero out",
                source: std::io::Error::from_raw_os_error(libc::EROFS),
            });
        }
        Ok(())
    }

    fn read_pass(
        &self,
        pass: &ReadPass,
        progress: &mut dyn FnMut(&PassProgress) -> bool,
    ) -> Result<PassProgress, EngineError> {
        self.calls.borrow_mut().push(FakeCall::ReadPass {
            targets: pass.targets.clone(),
            from: pass.from.clone(),
        });
        let sizes = pass
            .targets
            .iter()
            .map(|p| Ok(hostmax_device::probe(p)?.size))
            .collect::<Result<Vec<u64>, EngineError>>()?;
        let done = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                let from = pass.from.get(i).copied().unwrap_or(0);
                self.pass_reads.map_or(size, |n| (from + n).min(size))
            })
            .collect();
        let reached = PassProgress::new(sizes, done);
        progress(&reached);
        Ok(reached)
    }

    /// 1M NOPs a second on each CPU asked for (CPU 0 when none is), over the runtime.
    fn issue_ceiling(&self, config: &CeilingConfig) -> Result<IssueCeiling, EngineError> {
        self.calls
            .borrow_mut()
            .push(FakeCall::IssueCeiling(config.clone()));
        if self.no_io_uring {
            return Err(EngineError::Ring(no_ring()));
        }
        let secs = config.runtime.as_secs_f64();
        let cpus = config.cpus.clone().unwrap_or_else(|| vec![0]);
        let per_cpu = (1e6 * secs) as u64;
        Ok(IssueCeiling::new(
            config.iodepth,
            secs,
            cpus.into_iter()
                .map(|cpu| CpuCeiling::new(cpu, per_cpu, secs, CpuUse::default()))
                .collect(),
        ))
    }

    /// Every ring feature hostmax uses.
    fn kernel_ring(&self) -> io::Result<KernelRingSupport> {
        if self.no_io_uring {
            return Err(no_ring());
        }
        let mut all = KernelRingSupport::default();
        all.defer_taskrun = true;
        all.coop_taskrun = true;
        all.registered_ring = true;
        all.fixed_buffers = true;
        all.nodrop = true;
        all.ext_arg = true;
        all.no_sqarray = true;
        Ok(all)
    }

    /// The real check: it reads this machine's memory and memory cgroup, and touches no
    /// device.
    fn check_memory(&self, workload: &Workload, targets: &[TargetInfo]) -> Result<(), EngineError> {
        hostmax_engine::check_memory(workload, targets)
    }
}
