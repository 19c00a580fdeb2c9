//! One worker thread's plan and its life: pinned, its ring and each share's state made, the
//! loop run, and the shares' results handed back.

use std::sync::mpsc::Sender;
use std::sync::Arc;

use super::device::{DeviceState, LatencyRun, Slot, NO_POOL_BLOCK};
use super::offsets::OffsetStream;
use super::run_loop::WorkerLoop;
use crate::cpu_use::CpuClock;
use crate::data::BlockMaker;
use crate::op::{OpKind, PerOp};
use crate::ring::{Polling, RingFeatures, UringIo};
use crate::schedule::Schedule;
use crate::shared::Shared;
use crate::submit_times::SubmitTimes;
use crate::workload::ErrorPolicy;
use crate::{
    CpuUse, DeviceInterval, DeviceResult, EngineError, ErrorLog, IoCounts, ReadSamples, VerifyLog,
    Workload,
};
use hostmax_device::{TargetInfo, TargetKind};

/// The plan one worker thread carries out.
pub(crate) struct WorkerTask {
    pub cpu: usize,
    /// Its shares of the run's targets, each with the target and an open file.
    pub devices: Vec<(crate::DeviceShare, TargetInfo, std::fs::File)>,
    /// Per target, set when a worker took it out of the run ([`ErrorPolicy::StopDevice`]):
    /// its other workers stop submitting to it too.
    pub taken_out: Arc<[std::sync::atomic::AtomicBool]>,
    pub workload: Workload,
    pub on_error: ErrorPolicy,
    pub polling: Polling,
    pub shared: Arc<Shared>,
    pub intervals: Option<Sender<DeviceInterval>>,
    /// The run's random id (see [`crate::RunResult::run_id`]).
    pub run_id: u64,
    /// Issue `IORING_OP_NOP`s instead of the shares' I/O ([`crate::measure_issue_ceiling`]):
    /// everything else (offsets, slots, timing, counting) is the same loop.
    pub nops: bool,
}

/// What a worker hands back: the ring features it got, its CPU use and the results of its
/// shares (each with its target's index).
pub(crate) type WorkerOutput = (RingFeatures, CpuUse, Vec<(usize, DeviceResult)>);

impl WorkerTask {
    /// Pins the thread, builds the ring, waits for the start signal and runs to the end.
    pub fn run(self) -> Result<WorkerOutput, EngineError> {
        let cpu = self.cpu;
        let paths: Vec<std::path::PathBuf> = self
            .devices
            .iter()
            .map(|(_, t, _)| t.path.clone())
            .collect();
        let setup = self.setup();
        let (io, devices) = match setup {
            Ok(v) => {
                self.shared.gate.ready(Ok(()));
                v
            }
            Err(e) => {
                let msg = e.to_string();
                self.shared.gate.ready(Err(msg));
                return Err(e);
            }
        };
        let Some(start) = self.shared.gate.wait_go() else {
            return Ok((RingFeatures::default(), CpuUse::default(), Vec::new()));
        };
        let clock = CpuClock::start(cpu);
        let mut run = WorkerLoop {
            io,
            devices,
            slots: Vec::new(),
            planned: Vec::new(),
            workload: self.workload.clone(),
            on_error: self.on_error,
            shared: self.shared.clone(),
            taken_out: self.taken_out.clone(),
            intervals: self.intervals,
            run_id: self.run_id,
            start,
            ramp_end: start + self.workload.ramp,
            end: start + self.workload.ramp + self.workload.runtime,
            current_second: i64::MIN,
            drain_deadline: None,
            nops: self.nops,
            paced: self.workload.rate_iops.is_some(),
            submit_times: SubmitTimes::new(),
        };
        // A slot serves one device for the whole run (its range of slots, `first_slot`
        // on), so its `device` is written here once.
        run.slots = (run.devices.iter().enumerate())
            .flat_map(|(device, d)| {
                let slot = Slot {
                    device: device as u32,
                    op: OpKind::Read,
                    offset: 0,
                    submitted: 0,
                    intended_ns: 0,
                    tag: 0,
                    pool_block: NO_POOL_BLOCK,
                };
                std::iter::repeat_n(slot, d.iodepth as usize)
            })
            .collect();
        run.run_loop()
            .and_then(|()| run.read_back())
            .map_err(|e| EngineError::Worker {
                cpu,
                message: format!("io_uring_enter failed: {e}"),
            })?;
        let features = run.io.features();
        let cpu_use = clock.stop();
        Ok((
            features,
            cpu_use,
            run.devices
                .into_iter()
                .zip(paths)
                .map(|(d, path)| {
                    let window: u64 = d.ops.iter().map(|(_, o)| o.ios).sum();
                    let read_back = d.verify.as_ref().map_or(0, |v| v.checked_after_run);
                    let driver = crate::DeviceDriver::new(cpu, d.share.part, d.iodepth, window)
                        .with_run_ios(
                            d.ramp.total()
                                + window
                                + d.drained.total()
                                + d.errors.count
                                + read_back,
                        );
                    (
                        d.index,
                        DeviceResult {
                            path,
                            cpu,
                            ops: d.ops,
                            errors: d.errors,
                            failed: d.failed,
                            stopped_after: d.failed_at.map(|t| t.saturating_duration_since(start)),
                            ramp: d.ramp,
                            drained: d.drained,
                            read_samples: d.read_samples,
                            verify: d.verify,
                            trim_method: d.trim_method,
                            stalled_in_flight: d.stalled_in_flight,
                            unissued: d.unissued,
                            drivers: vec![driver],
                        },
                    )
                })
                .collect(),
        ))
    }

    fn setup(&self) -> Result<(UringIo, Vec<DeviceState>), EngineError> {
        let mut set = nix::sched::CpuSet::new();
        set.set(self.cpu)
            .and_then(|_| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set))
            .map_err(|e| EngineError::Worker {
                cpu: self.cpu,
                message: format!("cannot pin to CPU {}: {e}", self.cpu),
            })?;
        let w = &self.workload;
        let files: Vec<std::fs::File> = self
            .devices
            .iter()
            .map(|(_, _, f)| f.try_clone())
            .collect::<Result<_, _>>()
            .map_err(|e| EngineError::Worker {
                cpu: self.cpu,
                message: format!("cannot duplicate a target's file descriptor: {e}"),
            })?;
        let (reads, writes) = (w.pattern.reads(), w.pattern.issues(OpKind::Write));
        let verify = w.write_data.verify && writes;
        // Each share keeps the whole depth with numjobs (fio's job), else its part of it.
        let depths: Vec<u32> = self
            .devices
            .iter()
            .map(|(share, _, _)| match w.numjobs {
                Some(_) => w.iodepth,
                None => share.split(u64::from(w.iodepth)).max(1) as u32,
            })
            .collect();
        let layout = |depth: u32| {
            let slots_len = w.block_size as usize * depth as usize;
            // --verify reads every written block back after the run: it needs read buffers.
            let pool_blocks = BlockMaker::pool_blocks(w.block_size as usize, depth as usize);
            let pool_len = (pool_blocks + 1) * w.block_size as usize;
            let region_len =
                slots_len * usize::from(reads || verify) + pool_len * usize::from(writes);
            (slots_len, pool_blocks, pool_len, region_len)
        };
        let regions: Vec<usize> = depths.iter().map(|&d| layout(d).3).collect();
        let slots = depths.iter().map(|&d| d as usize).sum();
        let mut io =
            UringIo::new(files, &regions, slots, self.polling).map_err(EngineError::Ring)?;
        if self.nops {
            io.issue_nops();
        }
        let mut states = Vec::new();
        let mut next_slot = 0u32;
        for (file, (share, info, _)) in self.devices.iter().enumerate() {
            let (index, depth) = (&share.device, depths[file]);
            let (slots_len, pool_blocks, pool_len, _) = layout(depth);
            let working_set = w.working_set.unwrap_or(info.size);
            let part = share.blocks((working_set / u64::from(w.block_size)).max(1));
            // Each share makes its own blocks: the same maker in two workers would stamp
            // the same keys, and two written blocks would be the same.
            let part_mix = u64::from(share.part).wrapping_mul(0x8ebc_6af0_9c88_c6e3);
            let maker = BlockMaker::new(w.write_data, self.run_id ^ part_mix, *index);
            let write_base = if reads || verify { slots_len } else { 0 };
            if writes {
                // SAFETY: the ring was just made: no I/O is in flight.
                maker.fill_pool(unsafe { io.buffer_mut(file, write_base, pool_len) });
            }
            states.push(DeviceState {
                index: *index,
                share: *share,
                first_block: part.start,
                schedule: w.rate_iops.map(|r| {
                    // Each share its own arrivals, reproducible from the seed.
                    let mix = (*index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                        ^ u64::from(share.part).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
                    Schedule::new(share.split(r).max(1), w.arrival, w.seed ^ mix)
                }),
                block_size: w.block_size,
                iodepth: depth,
                first_slot: next_slot,
                free_slots: (next_slot..next_slot + depth).rev().collect(),
                latency_run: LatencyRun::default(),
                offsets: OffsetStream::for_share(w, working_set, w.seed, *share),
                submitted: 0,
                limit_ios: w
                    .io_limit
                    .map(|bytes| share.split(bytes.div_ceil(u64::from(w.block_size))).max(1)),
                interval: PerOp::default(),
                interval_errors: 0,
                ops: PerOp::default(),
                errors: ErrorLog::default(),
                failed: false,
                failed_at: None,
                read_base: 0,
                write_base,
                maker,
                pool_blocks,
                pool_busy: vec![false; if writes { pool_blocks } else { 0 }],
                ramp: IoCounts::default(),
                drained: IoCounts::default(),
                reads_done: 0,
                read_samples: ReadSamples::default(),
                verify_state: if verify {
                    vec![0; (part.end - part.start) as usize]
                } else {
                    Vec::new()
                },
                verify: verify.then(VerifyLog::default),
                writes_submitted: 0,
                verify_writes_in_flight: Vec::new(),
                trim_method: match w.pattern.issues(OpKind::Trim) {
                    true => Some(
                        io.choose_trim_method(file, info.kind == TargetKind::RegularFile)
                            .map_err(|e| EngineError::Worker {
                                cpu: self.cpu,
                                message: format!(
                                    "cannot find how to trim {}: {e}",
                                    info.path.display()
                                ),
                            })?,
                    ),
                    false => None,
                },
                stalled_in_flight: None,
                unissued: 0,
                backlog_at_end: None,
            });
            next_slot += depth;
        }
        Ok((io, states))
    }
}
