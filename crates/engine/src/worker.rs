//! Pinned worker threads: each drives its targets through one ring until the run ends.
//!
//! The hot loop per iteration: fill every target's queue up to its depth (respecting its
//! rate), take one clock reading, submit and wait for at least one completion in one
//! `io_uring_enter`, take one clock reading, and account every completion reaped. Two clock
//! readings per batch, not per I/O, keep the clock off the profile; every I/O of a batch is
//! stamped with the batch's submit time and reap time, which is also when user space could
//! first have seen it complete.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cpu_use::CpuClock;
use crate::data::{self, splitmix64, BlockIdentity, BlockMaker, STATE_UNKNOWN, STATE_WRITING};
use crate::op::{BufferUse, OpKind, PerOp};
use crate::result::READ_SAMPLE_EVERY;
use crate::ring::{Buffers, Polling, Pusher, Reaped, RingFeatures, TrimMethod, UringIo};
use crate::schedule::Schedule;
use crate::shared::Shared;
use crate::submit_times::SubmitTimes;
use crate::workload::ErrorPolicy;
use crate::{
    CpuUse, DeviceInterval, DeviceResult, EngineError, ErrorLog, IoCounts, IoErrorSample, OpResult,
    ReadSamples, VerifyLog, Workload, BACKLOG_LIMIT, DRAIN_LIMIT, READ_BACK_STOP_GRACE,
};
use hostmax_device::{TargetInfo, TargetKind};

/// The offsets and op kinds of one target's I/O: uniform random block-aligned
/// offsets over the working set (or sequential, wrapping), reproducible from the seed.
#[derive(Debug, Clone)]
pub struct OffsetStream {
    /// The first block of the stream's part of the working set ([`crate::DeviceShare::blocks`]).
    first_block: u64,
    offset_state: u64,
    mix_state: u64,
    blocks: u64,
    block_size: u64,
    next_sequential: u64,
    random: bool,
    /// Each kind's share in percent ([`crate::IoPattern::op_share`]).
    share: PerOp<u8>,
    /// The one kind a pattern of a single kind issues: no draw per I/O.
    single: Option<OpKind>,
}

impl OffsetStream {
    /// The stream of target number `target` (its position in the run) under `seed`: the same
    /// seed and position give the same offsets.
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    pub fn new(workload: &Workload, working_set: u64, seed: u64, target: usize) -> OffsetStream {
        OffsetStream::for_share(
            workload,
            working_set,
            seed,
            crate::DeviceShare::new(target, 0, 1),
        )
    }

    /// The stream of one share of a target: offsets within the share's part of the working
    /// set, from a seed that mixes in the part (part 0 of 1 is [`OffsetStream::new`]'s
    /// stream), so the same seed and placement give the same offsets.
    pub fn for_share(
        workload: &Workload,
        working_set: u64,
        seed: u64,
        share: crate::DeviceShare,
    ) -> OffsetStream {
        let target = share.device;
        let part_mix = u64::from(share.part).wrapping_mul(0xe703_7ed1_a0b4_28db);
        let mut base = (seed ^ part_mix) ^ (target as u64).wrapping_mul(0xa076_1d64_78bd_642f);
        let all_blocks = (working_set / workload.block_size as u64).max(1);
        let range = share.blocks(all_blocks);
        let offset_state = splitmix64(&mut base);
        let mix_state = splitmix64(&mut base);
        let share = workload.pattern.op_share(workload.rwmixread);
        let single = share
            .iter()
            .find(|(_, &percent)| percent == 100)
            .map(|(op, _)| op);
        OffsetStream {
            first_block: range.start,
            offset_state,
            mix_state,
            blocks: (range.end - range.start).max(1),
            block_size: workload.block_size as u64,
            next_sequential: 0,
            random: workload.pattern.is_random(),
            share,
            single,
        }
    }

    /// The next byte offset.
    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        let block = if self.random {
            let r = data::wyrand(&mut self.offset_state);
            // Lemire's multiply-shift: uniform over 0..blocks without a division.
            ((r as u128 * self.blocks as u128) >> 64) as u64
        } else {
            let b = self.next_sequential;
            self.next_sequential = if b + 1 >= self.blocks { 0 } else { b + 1 };
            b
        };
        (self.first_block + block) * self.block_size
    }

    /// The kind of the next I/O (from its own stream, so offsets do not depend on the mix).
    #[inline]
    pub fn next_op(&mut self) -> OpKind {
        if let Some(op) = self.single {
            return op;
        }
        let mut draw = (splitmix64(&mut self.mix_state) % 100) as u8;
        for (op, &share) in self.share.iter() {
            if draw < share {
                return op;
            }
            draw -= share;
        }
        OpKind::Read
    }
}

/// Everything a worker keeps about one of its targets.
struct DeviceState {
    index: usize,
    /// Which part of the device this is.
    share: crate::DeviceShare,
    /// The first block of its part of the working set: its verify state starts there.
    first_block: u64,
    /// The intended starts of its part of the device's [`Workload::rate_iops`]; `None`
    /// without a rate.
    schedule: Option<Schedule>,
    block_size: u32,
    iodepth: u32,
    /// Its slots are `first_slot..first_slot + iodepth`: each is free or in flight (or, within
    /// `WorkerLoop::fill`, planned), so the I/O in flight is what is not free
    /// ([`DeviceState::in_flight`]).
    first_slot: u32,
    free_slots: Vec<u32>,
    /// Completions of one kind and one submit batch reaped in a row, not yet in the
    /// interval's histogram: they share one latency, worked out and recorded with one call
    /// ([`DeviceState::flush_latencies`]).
    latency_run: LatencyRun,
    offsets: OffsetStream,
    submitted: u64,
    /// I/Os this device may be given in all ([`Workload::io_limit`] in blocks).
    limit_ios: Option<u64>,
    /// Each kind's I/Os in the current one-second interval, and the interval's failures.
    interval: PerOp<OpResult>,
    interval_errors: u64,
    /// Each kind's I/Os in the measured window.
    ops: PerOp<OpResult>,
    errors: ErrorLog,
    /// Taken out of the run after a failure: no more submissions.
    failed: bool,
    /// When it was taken out (the reap that brought the failure).
    failed_at: Option<Instant>,
    /// Where the read and the write buffers start in the device's region: separate, so
    /// that no write ever carries back what a read brought.
    read_base: usize,
    write_base: usize,
    /// Makes what each write carries: writes take blocks of the device's write pool
    /// (`pool_blocks` random blocks at `write_base`, then the duplicate block), chosen by
    /// offset and held while in flight (`pool_busy`), made unique by
    /// [`BlockMaker::stamp_unique`].
    maker: BlockMaker,
    pool_blocks: usize,
    pool_busy: Vec<bool>,
    ramp: IoCounts,
    drained: IoCounts,
    /// Successful reads so far, to sample one in [`READ_SAMPLE_EVERY`].
    reads_done: u64,
    read_samples: ReadSamples,
    /// Verifying runs: one byte per block of the working set (0 not written in this run, a
    /// generation tag, `STATE_UNKNOWN` or `STATE_WRITING`), and what the checks found.
    verify_state: Vec<u8>,
    verify: Option<VerifyLog>,
    writes_submitted: u64,
    /// Verifying runs: the blocks of the writes in flight (at most `iodepth`), to tell a write
    /// that overlaps another from one that has its block to itself.
    verify_writes_in_flight: Vec<u64>,
    /// How its trims are issued, when the workload trims.
    trim_method: Option<TrimMethod>,
    /// The I/Os still in flight when the worker gave up on them ([`DRAIN_LIMIT`]).
    stalled_in_flight: Option<u64>,
    /// With a rate: I/Os due within the runtime never issued ([`DeviceResult::unissued`]).
    unissued: u64,
    /// With a rate: the backlog at the nominal end, taken when the loop passed it, for the
    /// last second (which is closed only after the backlog was worked off).
    backlog_at_end: Option<u64>,
}

impl DeviceState {
    /// Index in `verify_state` of the block at byte offset `offset` (within its part).
    #[inline]
    fn state_index(&self, offset: u64) -> usize {
        (offset / u64::from(self.block_size) - self.first_block) as usize
    }
    /// Its I/O in flight: its slots that are not free (outside `WorkerLoop::fill`, no slot is
    /// only planned). One count fewer to keep per I/O.
    #[inline]
    fn in_flight(&self) -> u32 {
        self.iodepth - self.free_slots.len() as u32
    }

    /// Byte offset in the device's region of the read buffer of `slot`.
    #[inline]
    fn read_buffer_offset(&self, slot: u32) -> usize {
        self.read_base + (slot - self.first_slot) as usize * self.block_size as usize
    }

    /// Plans up to `budget` I/Os of this device (`file` on the ring) into `planned`: what
    /// each does and where, and for a unique write its pool block, asked into the cache for
    /// writing so that its stamps do not each wait for a line the device's copy last read
    /// (benches/README.md's measurements: less CPU per I/O). With a rate, only I/Os whose
    /// intended start has come (`now_ns`, before `end_ns`); the next one's start goes into
    /// `next_allowed`.
    #[inline]
    fn plan_batch(
        &mut self,
        file: usize,
        budget: u32,
        (start, now_ns, end_ns): (Instant, u64, u64),
        io: &UringIo,
        planned: &mut Vec<PlannedIo>,
        next_allowed: &mut Option<Instant>,
    ) {
        planned.clear();
        for _ in 0..budget {
            // With a rate, only an I/O whose intended start has come goes out, and
            // nothing due at or after the end: the window's I/Os are those due in it.
            let intended_ns = match self.schedule.as_mut() {
                Some(schedule) => {
                    let due = schedule.next_due_ns();
                    if due >= end_ns {
                        break;
                    }
                    if due > now_ns {
                        let at = start + Duration::from_nanos(due);
                        *next_allowed = Some(next_allowed.map_or(at, |t: Instant| t.min(at)));
                        break;
                    }
                    due
                }
                None => 0,
            };
            let Some(slot_id) = self.free_slots.pop() else {
                break;
            };
            if let Some(schedule) = self.schedule.as_mut() {
                schedule.advance();
            }
            let op = self.offsets.next_op();
            let offset = self.offsets.next_offset();
            // A duplicate carries the duplicate block as it is, shared by every duplicate
            // in flight (only read); `prepare` refuses --verify with duplicates, which
            // would have to stamp it.
            let unique = match op.buffer_use() {
                BufferUse::Source => self.maker.next_key().map(|key| {
                    let block = self.take_pool_block(offset);
                    io.prefetch_for_write(
                        file,
                        self.pool_block_offset(block),
                        self.block_size as usize,
                        data::STAMP_SPACING,
                    );
                    (block, key)
                }),
                BufferUse::Fill | BufferUse::None => None,
            };
            planned.push(PlannedIo {
                slot_id,
                op,
                offset,
                intended_ns,
                unique,
            });
        }
    }

    /// Pushes the planned I/Os onto the ring, stamping what writes carry and marking what a
    /// verifying run tracks; their slots carry `submitted` ([`SubmitTimes::mark`]). If the
    /// ring takes fewer, the rest give back their slots and pool blocks, and the schedule
    /// steps back to where it stood (`schedule_before`) plus what went out: no intended
    /// start is skipped.
    #[inline]
    fn push_batch(
        &mut self,
        file: usize,
        planned: &[PlannedIo],
        schedule_before: Option<Schedule>,
        (io, slots): (&mut UringIo, &mut [Slot]),
        run_id: u64,
        submitted: u64,
    ) {
        let mut io = io.pusher(file);
        for (i, planned_io) in planned.iter().enumerate() {
            let &PlannedIo {
                slot_id,
                op,
                offset,
                intended_ns,
                ..
            } = planned_io;
            let (buf_offset, tag, pool_block) = self.prepare_buffer(&mut io, planned_io, run_id);
            if !io.push(slot_id as u64, op, buf_offset, self.block_size, offset) {
                // The queue is full: this and the rest of the plan go back.
                self.give_back(&planned[i..], schedule_before, i);
                break;
            }
            if op == OpKind::Write && self.verify.is_some() {
                self.mark_write_in_flight(offset);
            }
            slots[slot_id as usize] = Slot {
                device: file as u32,
                op,
                offset,
                submitted,
                intended_ns,
                tag,
                pool_block,
            };
            self.submitted += 1;
        }
    }

    /// A plain workload's ([`WorkerLoop::plain`]) batch: up to `budget` I/Os drawn and
    /// pushed in one pass, their slots carrying `submitted` ([`SubmitTimes::mark`]). Nothing
    /// is written or verified and no rate holds an I/O back, so no plan is kept
    /// ([`DeviceState::plan_batch`]'s is for the write pool and the schedule); if the ring
    /// takes fewer, the slot stays free and its offset is skipped, as a plan's would be.
    #[inline]
    fn push_plain(
        &mut self,
        file: usize,
        budget: u32,
        (io, slots): (&mut UringIo, &mut [Slot]),
        submitted: u64,
    ) {
        let mut io = io.pusher(file);
        // The batch's slots are the last `take` free ones, taken from the end as pops would;
        // the draws and the count stay in locals that the ring's stores cannot alias.
        let free = self.free_slots.len();
        let take = (budget as usize).min(free);
        let mut offsets = self.offsets.clone();
        let mut queued = 0;
        for &slot_id in self.free_slots[free - take..].iter().rev() {
            let op = offsets.next_op();
            let offset = offsets.next_offset();
            let buf_offset = match op.buffer_use() {
                BufferUse::Fill => self.read_buffer_offset(slot_id),
                BufferUse::Source | BufferUse::None => 0,
            };
            if !io.push(u64::from(slot_id), op, buf_offset, self.block_size, offset) {
                break;
            }
            // Its device, and its intended start, tag and pool block (none), stay as the
            // slots were made.
            let slot = &mut slots[slot_id as usize];
            slot.op = op;
            slot.offset = offset;
            slot.submitted = submitted;
            queued += 1;
        }
        self.free_slots.truncate(free - queued);
        self.submitted += queued as u64;
        self.offsets = offsets;
    }

    /// Where a planned I/O's buffer is, and what a write carries put into it: a unique
    /// write's pool block stamped unique (and, verifying, with the block's identity); a
    /// duplicate the duplicate block; a read its slot's buffer, with the tag a verifying run
    /// expects back. Returns the buffer's offset, the tag and the pool block it holds.
    #[inline]
    fn prepare_buffer(
        &mut self,
        io: &mut Pusher<'_>,
        planned: &PlannedIo,
        run_id: u64,
    ) -> (usize, u8, u32) {
        let bs = self.block_size as usize;
        match planned.op.buffer_use() {
            BufferUse::Source => {
                let (buf_offset, pool_block) = match planned.unique {
                    Some((block, key)) => {
                        let buf_offset = self.pool_block_offset(block);
                        // SAFETY: a unique block is a pool block no write in flight names
                        // (`pool_busy`), marked busy until this write is reaped.
                        let buf = unsafe { io.buffer_mut(buf_offset, bs) };
                        self.maker.stamp_unique(buf, key);
                        (buf_offset, block as u32)
                    }
                    None => (self.pool_block_offset(self.pool_blocks), NO_POOL_BLOCK),
                };
                let mut tag = 0;
                if self.verify.is_some() {
                    // SAFETY: a verifying run writes unique blocks only (it refuses repeats),
                    // so this is the pool block just taken above.
                    let buf = unsafe { io.buffer_mut(buf_offset, bs) };
                    self.writes_submitted += 1;
                    tag = data::generation_tag(self.writes_submitted);
                    data::stamp(
                        buf,
                        BlockIdentity {
                            offset: planned.offset,
                            run_id,
                            generation: self.writes_submitted,
                            device: self.index as u32,
                        },
                    );
                }
                (buf_offset, tag, pool_block)
            }
            BufferUse::Fill => {
                let mut tag = 0;
                // Read at submit time, after the writes queued before it in this batch
                // marked their blocks.
                if self.verify.is_some() {
                    let state = self.verify_state[self.state_index(planned.offset)];
                    if (1..STATE_UNKNOWN).contains(&state) {
                        tag = state;
                    }
                }
                (self.read_buffer_offset(planned.slot_id), tag, NO_POOL_BLOCK)
            }
            BufferUse::None => (0, 0, NO_POOL_BLOCK),
        }
    }

    /// Gives back the slots and pool blocks of planned I/Os the ring did not take (their
    /// offsets are skipped, as they were before); their intended starts stay due, since the
    /// schedule never skips an I/O: it goes back to `schedule_before` plus the `went_out`.
    fn give_back(
        &mut self,
        rest: &[PlannedIo],
        schedule_before: Option<Schedule>,
        went_out: usize,
    ) {
        for planned in rest {
            self.free_slots.push(planned.slot_id);
            if let Some((block, _)) = planned.unique {
                self.pool_busy[block] = false;
            }
        }
        if let Some(mut schedule) = schedule_before {
            for _ in 0..went_out {
                schedule.advance();
            }
            self.schedule = Some(schedule);
        }
    }

    /// A verifying run's mark of a write going out: its block is being written, or unknown
    /// when another write to it is in flight too (the two may land in either order, so it
    /// stays unknown until a later write has the block to itself).
    fn mark_write_in_flight(&mut self, offset: u64) {
        let block = offset / u64::from(self.block_size);
        let overlapped = self.verify_writes_in_flight.contains(&block);
        self.verify_writes_in_flight.push(block);
        let index = self.state_index(offset);
        self.verify_state[index] = if overlapped {
            STATE_UNKNOWN
        } else {
            STATE_WRITING
        };
    }

    /// A verifying run's check of one completion: a write that had its block to itself
    /// leaves its tag as the block's state (or "unknown" if it did not finish whole); a read
    /// whose block no write changed meanwhile is checked against what was written.
    fn check_during_run(
        &mut self,
        io: &Buffers<'_>,
        slot_id: u32,
        slot: &Slot,
        result: i32,
        run_id: u64,
    ) {
        let len = self.block_size;
        let read_offset = self.read_buffer_offset(slot_id);
        let state_index = self.state_index(slot.offset);
        let device = self.index as u32;
        let Some(log) = self.verify.as_mut() else {
            return;
        };
        let block = slot.offset / u64::from(len);
        if slot.op == OpKind::Write {
            let writes = &mut self.verify_writes_in_flight;
            if let Some(i) = writes.iter().position(|&b| b == block) {
                writes.swap_remove(i);
            }
        }
        let state = &mut self.verify_state[state_index];
        let whole = result == len as i32;
        match slot.op {
            OpKind::Write if *state == STATE_WRITING => {
                *state = if whole { slot.tag } else { STATE_UNKNOWN };
            }
            // Checked only if no write to the block came and went meanwhile.
            OpKind::Read if whole && slot.tag != 0 && *state == slot.tag => {
                // SAFETY: this read's completion was just reaped, and its slot's buffer is
                // used by no other I/O until the slot is pushed again.
                let buf = unsafe { io.buffer(slot.device as usize, read_offset, len as usize) };
                log.checked_during_run += 1;
                let expected = BlockIdentity {
                    offset: slot.offset,
                    run_id,
                    generation: 0,
                    device,
                };
                if let Some(mut m) = data::check(buf, expected, slot.tag) {
                    m.during_run = true;
                    log.record(m);
                }
            }
            _ => {}
        }
    }

    /// Counts a successful read and looks at one in [`READ_SAMPLE_EVERY`]: a block of zeros
    /// at both ends was probably never written.
    #[inline]
    fn sample_read(&mut self, io: &Buffers<'_>, slot_id: u32, file: usize) {
        self.reads_done += 1;
        if self.reads_done % READ_SAMPLE_EVERY == 1 {
            let read_offset = self.read_buffer_offset(slot_id);
            // SAFETY: a reaped read's slot buffer, not yet reused (its slot was just freed
            // and is pushed again only by the next fill).
            let buf = unsafe { io.buffer(file, read_offset, self.block_size as usize) };
            self.read_samples.sampled += 1;
            if is_zero_at_both_ends(buf) {
                self.read_samples.zero += 1;
            }
        }
    }

    /// Counts one more completion of `op` submitted in the batch `submitted` marks
    /// ([`Slot::submitted`]): kept while the kind and batch are those of the completions
    /// before it, recorded when the run ends. No latency is worked out per completion.
    #[inline]
    fn record_latency(
        &mut self,
        op: OpKind,
        submitted: u64,
        submit_times: &SubmitTimes,
        reap_ns: u64,
    ) {
        let run = &mut self.latency_run;
        // An empty run's `submitted` is no I/O's ([`LatencyRun::default`]).
        if run.op == op && run.submitted == submitted {
            run.count += 1;
            return;
        }
        self.flush_latencies(submit_times, reap_ns);
        self.latency_run = LatencyRun {
            op,
            submitted,
            count: 1,
        };
    }

    /// Records the completions kept by [`DeviceState::record_latency`], all with the latency
    /// from their batch's submit to `reap_ns`: after every reap, so an interval's histograms
    /// are whole when it closes.
    #[inline]
    fn flush_latencies(&mut self, submit_times: &SubmitTimes, reap_ns: u64) {
        let run = std::mem::take(&mut self.latency_run);
        if run.count > 0 {
            let nanos = submit_times.latency_ns(run.submitted, reap_ns);
            crate::result::record_latencies(&mut self.interval[run.op].latency, nanos, run.count);
        }
    }

    /// Byte offset in the device's region of write pool block `block` (`pool_blocks` is the
    /// duplicate block).
    #[inline]
    fn pool_block_offset(&self, block: usize) -> usize {
        self.write_base + block * self.block_size as usize
    }

    /// Takes the pool block for a write at device offset `offset`: the device block number
    /// modulo the pool, so blocks side by side on the device (what a compressor's window or
    /// a storage chunk holds together) never share a pool block. If a write in flight holds
    /// it, the first free one from half a pool away (the neighbours' blocks are the next
    /// ones). There are more pool blocks than I/Os in flight, so one is always free.
    #[inline]
    fn take_pool_block(&mut self, offset: u64) -> usize {
        let mut block = ((offset / u64::from(self.block_size)) % self.pool_blocks as u64) as usize;
        if self.pool_busy[block] {
            block = (block + self.pool_blocks / 2) % self.pool_blocks;
        }
        while self.pool_busy[block] {
            block = if block + 1 == self.pool_blocks {
                0
            } else {
                block + 1
            };
        }
        self.pool_busy[block] = true;
        block
    }
}

/// Completions of one kind from one submit batch, reaped in a row
/// ([`DeviceState::record_latency`]).
#[derive(Clone, Copy)]
struct LatencyRun {
    op: OpKind,
    /// Their [`Slot::submitted`].
    submitted: u64,
    count: u64,
}

impl Default for LatencyRun {
    /// No completions, and a `submitted` no I/O carries (a batch number has only its high bit
    /// and a count of batches; a time is below 2^63), so the first completion starts a run.
    fn default() -> Self {
        LatencyRun {
            op: OpKind::Read,
            submitted: u64::MAX,
            count: 0,
        }
    }
}

/// What a batch of completions reaped at one instant shares: when, and which window that
/// instant falls in ([`WorkerLoop::count_completions`]).
struct ReapWindow {
    now: Instant,
    /// `now` in nanoseconds after the run's start.
    reap_ns: u64,
    /// Before the end: a completion is counted in the measured window (without a rate).
    in_window: bool,
    in_ramp: bool,
    /// Within the measured window: a failure counts in the current second.
    errors_counted: bool,
    ramp_ns: u64,
    end_ns: u64,
}

/// One I/O in flight.
#[derive(Clone, Copy)]
struct Slot {
    device: u32,
    op: OpKind,
    offset: u64,
    /// When it was submitted: its batch's [`SubmitTimes::mark`], which
    /// [`SubmitTimes::submitted_ns`] turns into nanoseconds after the run's start.
    submitted: u64,
    /// With an offered rate: its intended start on the schedule, in nanoseconds after the
    /// run's start (0 without a rate).
    intended_ns: u64,
    /// Verifying runs: a write's generation tag, or the tag a read's block had when the read was
    /// submitted (0: the read is not checked).
    tag: u8,
    /// A write's pool block while it is in flight ([`NO_POOL_BLOCK`] for reads and
    /// duplicates, which hold none).
    pool_block: u32,
}

/// [`Slot::pool_block`] of an I/O that holds no pool block.
const NO_POOL_BLOCK: u32 = u32::MAX;

/// One I/O of a device's next batch, drawn before any is queued (see `WorkerLoop::fill`).
#[derive(Clone, Copy)]
struct PlannedIo {
    slot_id: u32,
    op: OpKind,
    offset: u64,
    /// Its intended start ([`Slot::intended_ns`]).
    intended_ns: u64,
    /// A unique write's pool block and the key that stamps it; `None` for a duplicate write
    /// and for I/O that writes nothing.
    unique: Option<(usize, u64)>,
}

/// Marks the `user_data` of a read-back's read (with its slot in the low bits): a completion
/// without it is a late one of the run's I/O on a device given up on, and is ignored.
const READ_BACK: u64 = 1 << 63;

/// The longest wait for a read-back completion before the loop looks again at the stop
/// request and the stall limits.
const READ_BACK_WAIT: Duration = Duration::from_millis(100);

/// One device's read-back ([`WorkerLoop::read_back`]).
struct ReadBack {
    /// Where in the device's verify state the next block to read is looked for: the state
    /// itself lists the blocks (a generation tag marks one to check), so no list of them is
    /// made.
    cursor: usize,
    /// Checkable blocks not queued yet.
    unqueued: u64,
    in_flight: u32,
    /// The last completion of one of its reads, or when a read went out with none in flight:
    /// no completion for [`DRAIN_LIMIT`] while reads are in flight means the device stopped
    /// answering.
    last_heard: Instant,
    /// It stopped answering: its reads in flight were abandoned with its ring region.
    given_up: bool,
}

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

struct WorkerLoop {
    io: UringIo,
    devices: Vec<DeviceState>,
    slots: Vec<Slot>,
    /// A device's next batch, kept to reuse the allocation.
    planned: Vec<PlannedIo>,
    workload: Workload,
    on_error: ErrorPolicy,
    shared: Arc<Shared>,
    taken_out: Arc<[std::sync::atomic::AtomicBool]>,
    intervals: Option<Sender<DeviceInterval>>,
    run_id: u64,
    start: Instant,
    ramp_end: Instant,
    end: Instant,
    /// The one-second interval the counters are filling (relative to `ramp_end`).
    current_second: i64,
    /// Once the loop stops submitting: when it stops waiting for the I/O in flight.
    drain_deadline: Option<Instant>,
    /// The ring issues NOPs ([`WorkerTask::nops`]): a NOP succeeds with 0.
    nops: bool,
    /// The workload offers a rate: I/Os follow a schedule and have response times.
    paced: bool,
    /// When each recent batch was submitted: the times its I/Os' latencies start from.
    submit_times: SubmitTimes,
}

impl WorkerLoop {
    fn second_of(&self, t: Instant) -> i64 {
        if t >= self.ramp_end {
            (t - self.ramp_end).as_secs() as i64
        } else {
            -((self.ramp_end - t).as_nanos().div_ceil(1_000_000_000) as i64)
        }
    }

    /// Keeps every device's queue full until the run's end (or a stop), then drains: each
    /// turn fills, stamps, submits and waits, then counts what completed.
    fn run_loop(&mut self) -> std::io::Result<()> {
        match self.plain() {
            true => self.run_loop_as::<true>(),
            false => self.run_loop_as::<false>(),
        }
    }

    /// Whether the workload is plain: no rate (so no schedule) and nothing written (so no
    /// write pool and nothing verified: `WorkerTask::setup` verifies only writing runs). The
    /// loop is then compiled without them ([`WorkerLoop::run_loop_as`]'s `PLAIN`): the peak
    /// cases (reads, NOPs) run fewer instructions an I/O and a smaller loop.
    fn plain(&self) -> bool {
        !self.paced && !self.workload.pattern.issues(OpKind::Write)
    }

    /// [`WorkerLoop::run_loop`] compiled for one kind of workload: with `PLAIN`
    /// ([`WorkerLoop::plain`]) the parts a plain workload never uses are left out.
    fn run_loop_as<const PLAIN: bool>(&mut self) -> std::io::Result<()> {
        let mut now = Instant::now();
        self.current_second = self.second_of(now);
        loop {
            self.follow_stop();
            let stopping = self.stops_issuing(now);
            let mut next_allowed: Option<Instant> = None;
            if !stopping {
                self.fill::<PLAIN>(now, &mut next_allowed);
            }
            if stopping && self.io.in_flight() == 0 {
                break;
            }
            if stopping {
                let deadline = *self.drain_deadline.get_or_insert(now + DRAIN_LIMIT);
                if now >= deadline {
                    self.give_up_on_stalled();
                    break;
                }
            }
            let submit_time = Instant::now();
            self.stamp_submitted(submit_time);
            self.submit_and_wait(submit_time, next_allowed)?;
            now = Instant::now();
            self.roll_seconds(now);
            if self.count_completions::<PLAIN>(now) {
                self.shared.stop_submitting();
            }
        }
        self.finish();
        Ok(())
    }

    /// Brings the end forward to a stop another thread asked for.
    #[inline]
    fn follow_stop(&mut self) {
        if let Some(stop_at) = self.shared.stop_instant() {
            if stop_at < self.end {
                self.end = stop_at.max(self.start + Duration::from_nanos(1));
            }
        }
    }

    /// Whether the loop stops issuing I/O at `now`: past the end, or every device stopped.
    /// With a rate, the I/Os due within the runtime still waiting at its end (a stall's
    /// backlog) go out first ([`BACKLOG_LIMIT`]).
    #[inline]
    fn stops_issuing(&mut self, now: Instant) -> bool {
        let past_end = now >= self.end;
        if past_end && self.paced {
            let last_due_ns = self.end_ns().saturating_sub(1);
            for dev in &mut self.devices {
                if dev.backlog_at_end.is_none() {
                    dev.backlog_at_end = dev.schedule.map(|s| s.due_by(last_due_ns));
                }
            }
        }
        let working_off_backlog = past_end
            && self.paced
            && self.shared.stop_instant().is_none()
            && now < self.end + BACKLOG_LIMIT
            && self.backlog_waiting();
        (past_end && !working_off_backlog) || self.all_exhausted()
    }

    /// Records the batch just filled as submitted at `submit_time` ([`SubmitTimes`]): its
    /// I/Os carry the batch's mark, so none of their slots is written again.
    #[inline]
    fn stamp_submitted(&mut self, submit_time: Instant) {
        let submit_ns = submit_time.saturating_duration_since(self.start).as_nanos() as u64;
        (self.submit_times).submit(submit_ns, self.slots.iter_mut().map(|s| &mut s.submitted));
    }

    /// Submits what is queued and waits for a batch of completions ([`Workload::complete_batch`],
    /// or all in flight when fewer), at most until the next second's boundary, the end, the
    /// next rate-limited I/O or (draining) the drain's deadline.
    #[inline]
    fn submit_and_wait(
        &mut self,
        submit_time: Instant,
        next_allowed: Option<Instant>,
    ) -> std::io::Result<()> {
        let mut wake = self.next_boundary(submit_time);
        if let Some(t) = next_allowed {
            wake = wake.min(t);
        }
        // Draining: nothing to submit and no second to close; any completion wakes it.
        if let Some(deadline) = self.drain_deadline {
            wake = deadline;
        }
        let timeout = wake.saturating_duration_since(submit_time);
        let in_flight = self.io.in_flight();
        if in_flight > 0 {
            let want = (self.workload.complete_batch.max(1) as usize).min(in_flight);
            self.io
                .submit_and_wait(want, Some(timeout.max(Duration::from_micros(50))))?;
        } else if !timeout.is_zero() {
            std::thread::sleep(timeout);
        }
        Ok(())
    }

    /// Reaps every completion and counts each one ([`count_completion`]) in the window `now`
    /// decides once for the whole batch. Returns whether a failure asks the whole run to stop
    /// ([`ErrorPolicy::StopAll`]).
    #[inline]
    fn count_completions<const PLAIN: bool>(&mut self, now: Instant) -> bool {
        let window = ReapWindow {
            now,
            reap_ns: now.saturating_duration_since(self.start).as_nanos() as u64,
            in_window: now < self.end,
            in_ramp: now < self.ramp_end,
            errors_counted: now >= self.ramp_end && now < self.end,
            ramp_ns: self.ramp_ns(),
            end_ns: self.end_ns(),
        };
        let rules = CountRules {
            sampled: PerOp::from_fn(|op| op == OpKind::Read && !self.nops),
            success: PerOp::from_fn(|op| match self.nops {
                true => 0,
                false => op.success_result(self.workload.block_size),
            }),
            paced: self.paced,
            record_latency: self.workload.record_latency,
            submit_times: &self.submit_times,
            run_id: self.run_id,
            on_error: self.on_error,
            taken_out: &self.taken_out,
            stop_all: std::cell::Cell::new(false),
        };
        let (devices, slots) = (&mut self.devices, &self.slots);
        let mut completions = self.io.completions();
        // The ring's apart from the synchronous trims': a ring I/O's latency is always the
        // batch's (no time of its own to choose), one branch fewer a completion.
        while let Some(done) = completions.next_from_ring() {
            let buffers = completions.buffers();
            count_completion::<PLAIN>(devices, slots, buffers, &rules, done, &window);
        }
        while let Some(done) = completions.next_synchronous() {
            let buffers = completions.buffers();
            count_completion::<PLAIN>(devices, slots, buffers, &rules, done, &window);
        }
        drop(completions);
        for dev in &mut self.devices {
            dev.flush_latencies(&self.submit_times, window.reap_ns);
        }
        rules.stop_all.get()
    }

    /// After the loop: what was due within the runtime and never went out (a stop, or
    /// [`BACKLOG_LIMIT`]), the last (possibly partial) second, and when this worker finished.
    fn finish(&mut self) {
        let last_due_ns = self.end_ns().saturating_sub(1);
        for dev in &mut self.devices {
            dev.unissued = dev.schedule.map_or(0, |s| s.due_by(last_due_ns));
        }
        self.flush_second(self.current_second);
        let finished = Instant::now().saturating_duration_since(self.start);
        self.shared
            .finished_after_ns
            .fetch_max(finished.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Ends the wait for a device that stopped answering: each device's I/O still in flight
    /// is recorded as stalled and abandoned (its buffers stay the kernel's); the devices
    /// that drained keep the ring.
    fn give_up_on_stalled(&mut self) {
        for (file, dev) in self.devices.iter_mut().enumerate() {
            if dev.in_flight() > 0 {
                dev.stalled_in_flight = Some(u64::from(dev.in_flight()));
                self.io.abandon(file);
            }
        }
    }

    /// Verifying runs: reads back every block this run wrote, once, and checks it. Each
    /// device is read at its queue depth through its own slots and read buffers, all devices
    /// of the worker at once; these reads count in no figure (a failed one is an error of the
    /// device). Every wait is bounded and every block left unread is counted
    /// ([`VerifyLog::not_read_back`]): a device that stalled during the run is not read (its
    /// buffers are the kernel's), one that completes none of its reads for [`DRAIN_LIMIT`] is
    /// given up on as the run's drain gives up, and a stop from outside ends the read-back,
    /// waiting at most [`READ_BACK_STOP_GRACE`] for the reads in flight.
    fn read_back(&mut self) -> std::io::Result<()> {
        let started = Instant::now();
        let mut reading: Vec<Option<ReadBack>> = Vec::with_capacity(self.devices.len());
        for dev in &mut self.devices {
            let Some(log) = dev.verify.as_mut() else {
                reading.push(None);
                continue;
            };
            let mut checkable = 0;
            for &state in &dev.verify_state {
                match state {
                    0 => {}
                    STATE_UNKNOWN | STATE_WRITING => log.unknown += 1,
                    _ => checkable += 1,
                }
            }
            if dev.stalled_in_flight.is_some() {
                log.not_read_back.stalled += checkable;
                reading.push(None);
                continue;
            }
            reading.push(Some(ReadBack {
                cursor: 0,
                unqueued: checkable,
                in_flight: 0,
                last_heard: started,
                given_up: false,
            }));
        }
        let mut stop_deadline: Option<Instant> = None;
        loop {
            let now = Instant::now();
            if stop_deadline.is_none() && self.shared.interrupted() {
                stop_deadline = Some(now + READ_BACK_STOP_GRACE);
            }
            if stop_deadline.is_none() {
                self.queue_read_back(&mut reading);
            }
            let in_flight = reading.iter().flatten().any(|r| r.in_flight > 0);
            let unqueued = reading
                .iter()
                .flatten()
                .any(|r| !r.given_up && r.unqueued > 0);
            if !in_flight && (stop_deadline.is_some() || !unqueued) {
                break;
            }
            if stop_deadline.is_some_and(|d| now >= d) {
                // The reads still in flight are left to the kernel, as a stalled device's.
                for (file, r) in reading.iter_mut().enumerate() {
                    let Some(r) = r.as_mut().filter(|r| r.in_flight > 0) else {
                        continue;
                    };
                    if let Some(log) = self.devices[file].verify.as_mut() {
                        log.reads_left_in_flight += u64::from(r.in_flight);
                        log.not_read_back.interrupted += u64::from(r.in_flight);
                    }
                    r.in_flight = 0;
                    self.io.abandon(file);
                }
                break;
            }
            let wait = stop_deadline.map_or(READ_BACK_WAIT, |d| {
                d.saturating_duration_since(now)
                    .clamp(Duration::from_micros(50), READ_BACK_WAIT)
            });
            self.io.submit_and_wait(1, Some(wait))?;
            self.io.reap();
            let reaped_at = Instant::now();
            for &crate::ring::Reaped {
                user_data, result, ..
            } in self.io.reaped()
            {
                // A late completion of the run's I/O on a device given up on: ignored, as
                // its slot and buffer are never used again.
                if user_data & READ_BACK == 0 {
                    continue;
                }
                let slot_id = (user_data & !READ_BACK) as u32;
                let slot = self.slots[slot_id as usize];
                let file = slot.device as usize;
                let Some(r) = reading[file].as_mut().filter(|r| !r.given_up) else {
                    continue;
                };
                r.in_flight -= 1;
                r.last_heard = reaped_at;
                let dev = &mut self.devices[file];
                dev.free_slots.push(slot_id);
                let bs = dev.block_size;
                if result != bs as i32 {
                    dev.errors.record(IoErrorSample {
                        op: OpKind::Read,
                        offset: slot.offset,
                        len: bs,
                        errno: (-result).max(0),
                        transferred: result.max(0) as u32,
                    });
                    continue;
                }
                // SAFETY: this read-back read was just reaped; its slot is pushed again only
                // after this check.
                let buf = unsafe {
                    self.io
                        .buffer(file, dev.read_buffer_offset(slot_id), bs as usize)
                };
                let expected = BlockIdentity {
                    offset: slot.offset,
                    run_id: self.run_id,
                    generation: 0,
                    device: dev.index as u32,
                };
                let Some(log) = dev.verify.as_mut() else {
                    continue;
                };
                log.checked_after_run += 1;
                if let Some(m) = data::check(buf, expected, slot.tag) {
                    log.record(m);
                }
            }
            // A device that completed none of its reads for DRAIN_LIMIT stopped answering.
            for (file, r) in reading.iter_mut().enumerate() {
                let Some(r) = r.as_mut().filter(|r| !r.given_up && r.in_flight > 0) else {
                    continue;
                };
                if reaped_at.saturating_duration_since(r.last_heard) < DRAIN_LIMIT {
                    continue;
                }
                let dev = &mut self.devices[file];
                dev.stalled_in_flight = Some(u64::from(r.in_flight));
                if let Some(log) = dev.verify.as_mut() {
                    log.reads_left_in_flight += u64::from(r.in_flight);
                    log.not_read_back.stalled += u64::from(r.in_flight) + r.unqueued;
                }
                r.in_flight = 0;
                r.given_up = true;
                self.io.abandon(file);
            }
        }
        // A stop left the blocks never queued unread.
        if stop_deadline.is_some() {
            for (file, r) in reading.iter().enumerate() {
                let Some(r) = r.as_ref().filter(|r| !r.given_up) else {
                    continue;
                };
                if let Some(log) = self.devices[file].verify.as_mut() {
                    log.not_read_back.interrupted += r.unqueued;
                }
            }
        }
        Ok(())
    }

    /// Queues the next reads of every device being read back, while it has free slots (its
    /// depth) and the submission queue has room.
    fn queue_read_back(&mut self, reading: &mut [Option<ReadBack>]) {
        for (file, r) in reading.iter_mut().enumerate() {
            let Some(r) = r.as_mut().filter(|r| !r.given_up) else {
                continue;
            };
            let dev = &mut self.devices[file];
            let bs = dev.block_size;
            while r.unqueued > 0 {
                let Some(&slot_id) = dev.free_slots.last() else {
                    break;
                };
                // The next written block with a generation tag (unknown ones are not read).
                let (index, tag) = dev.verify_state[r.cursor..]
                    .iter()
                    .position(|&s| (1..STATE_UNKNOWN).contains(&s))
                    .map(|i| (r.cursor + i, dev.verify_state[r.cursor + i]))
                    .expect("as many tagged blocks as counted");
                let offset = (dev.first_block + index as u64) * u64::from(bs);
                let buf = dev.read_buffer_offset(slot_id);
                if !self.io.push(
                    READ_BACK | u64::from(slot_id),
                    OpKind::Read,
                    file,
                    buf,
                    bs,
                    offset,
                ) {
                    return;
                }
                dev.free_slots.pop();
                r.cursor = index + 1;
                self.slots[slot_id as usize] = Slot {
                    device: file as u32,
                    op: OpKind::Read,
                    offset,
                    submitted: 0,
                    intended_ns: 0,
                    tag,
                    pool_block: NO_POOL_BLOCK,
                };
                r.unqueued -= 1;
                // Its wait for an answer starts with its first read in flight.
                if r.in_flight == 0 {
                    r.last_heard = Instant::now();
                }
                r.in_flight += 1;
            }
        }
    }

    /// Whether every device has used up its I/O limit (or was taken out after a failure), so
    /// nothing more will be submitted. Always false without a limit.
    fn all_exhausted(&self) -> bool {
        self.workload.io_limit.is_some()
            && self
                .devices
                .iter()
                .all(|d| d.failed || d.limit_ios.is_some_and(|max| d.submitted >= max))
    }

    /// Nanoseconds from the run's start to its end (moved earlier by a stop).
    fn end_ns(&self) -> u64 {
        self.end.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// Nanoseconds from the run's start to the end of its ramp.
    fn ramp_ns(&self) -> u64 {
        self.ramp_end
            .saturating_duration_since(self.start)
            .as_nanos() as u64
    }

    /// Whether some device still has I/Os due within the runtime that it has not issued.
    fn backlog_waiting(&self) -> bool {
        let end_ns = self.end_ns();
        self.devices.iter().any(|d| {
            !d.failed
                && d.limit_ios.is_none_or(|max| d.submitted < max)
                && d.schedule.is_some_and(|s| s.next_due_ns() < end_ns)
        })
    }

    /// The next instant the loop must wake for: the next second boundary or the end.
    fn next_boundary(&self, now: Instant) -> Instant {
        let next_second = if now >= self.ramp_end {
            self.ramp_end + Duration::from_secs((self.current_second + 1) as u64)
        } else {
            self.ramp_end
                .checked_sub(Duration::from_secs((-self.current_second - 1) as u64))
                .unwrap_or(self.ramp_end)
        };
        next_second.min(self.end)
    }

    /// Queues I/O for every target with free slots, as its rate allows.
    fn fill<const PLAIN: bool>(&mut self, now: Instant, next_allowed: &mut Option<Instant>) {
        let submitted = self.submit_times.mark();
        let now_ns = now.saturating_duration_since(self.start).as_nanos() as u64;
        let end_ns = self.end_ns();
        let planned = &mut self.planned;
        for (file, dev) in self.devices.iter_mut().enumerate() {
            if dev.failed {
                continue;
            }
            // Another worker of this device took it out: this share stops as well.
            if dev.share.parts > 1 && self.taken_out[dev.index].load(Ordering::Relaxed) {
                dev.failed = true;
                dev.failed_at = Some(now);
                continue;
            }
            let mut budget = dev.iodepth - dev.in_flight();
            if let Some(max) = dev.limit_ios {
                budget = budget
                    .min(u32::try_from(max.saturating_sub(dev.submitted)).unwrap_or(u32::MAX));
            }
            if PLAIN {
                dev.push_plain(file, budget, (&mut self.io, &mut self.slots), submitted);
                continue;
            }
            // Where the schedule stood, to step back to if the ring takes less than planned.
            let schedule_before = dev.schedule;
            dev.plan_batch(
                file,
                budget,
                (self.start, now_ns, end_ns),
                &self.io,
                planned,
                next_allowed,
            );
            dev.push_batch(
                file,
                planned,
                schedule_before,
                (&mut self.io, &mut self.slots),
                self.run_id,
                submitted,
            );
        }
    }

    /// Closes every second that ended before `now`.
    fn roll_seconds(&mut self, now: Instant) {
        // Never open a second that starts at or after the end: the last one closes at exit.
        let second = self.second_of(now.min(self.end - Duration::from_nanos(1)));
        while self.current_second < second {
            self.flush_second(self.current_second);
            self.current_second += 1;
        }
    }

    /// Folds one second's counts and histograms into the totals (measured seconds only) and
    /// sends them to the control side when it asked for a live view.
    fn flush_second(&mut self, second: i64) {
        // The backlog is counted at the second's end (or the run's, for the last one).
        let second_end = if second >= 0 {
            self.ramp_end + Duration::from_secs(second as u64 + 1)
        } else {
            self.ramp_end
                .checked_sub(Duration::from_secs((-second - 1) as u64))
                .unwrap_or(self.start)
        };
        let backlog_at_ns = (second_end.min(self.end))
            .saturating_duration_since(self.start)
            .as_nanos() as u64;
        // Due strictly before the second's end: one due at the very instant is not late yet.
        let backlog_at_ns = backlog_at_ns.min(self.end_ns()).saturating_sub(1);
        for dev in &mut self.devices {
            let errors = std::mem::take(&mut dev.interval_errors);
            let backlog = match (second_end >= self.end, dev.backlog_at_end) {
                (true, Some(at_end)) => at_end,
                _ => dev.schedule.map_or(0, |s| s.due_by(backlog_at_ns)),
            };
            for (op, counts) in dev.interval.iter_mut() {
                // Every success moved one block ([`count_completion`] counts only the I/Os),
                // so the bytes are worked out once a second.
                counts.bytes = counts.ios * u64::from(dev.block_size);
                if second < 0 {
                    dev.ramp[op] += counts.ios;
                } else {
                    dev.ops[op].add(counts);
                }
            }
            match &self.intervals {
                Some(tx) => {
                    let _ = tx.send(DeviceInterval {
                        device: dev.index,
                        second,
                        ops: std::mem::take(&mut dev.interval),
                        errors,
                        backlog,
                    });
                }
                None => {
                    for (_, counts) in dev.interval.iter_mut() {
                        counts.ios = 0;
                        counts.bytes = 0;
                        counts.latency.reset();
                        counts.response.reset();
                    }
                }
            }
        }
        let _ = self
            .shared
            .seconds_done
            .fetch_max(second, Ordering::Relaxed);
    }
}

/// What counting a completion needs of the loop besides its devices and slots
/// ([`count_completion`], called while the ring's completion queue is borrowed).
struct CountRules<'a> {
    /// The kinds whose data is sampled ([`DeviceState::sample_read`]): reads, unless the ring
    /// issues NOPs, which bring no data to look at.
    sampled: PerOp<bool>,
    /// Each kind's result when it succeeds: its block size, 0 for a trim, 0 for every NOP.
    success: PerOp<i32>,
    /// The workload offers a rate ([`WorkerLoop::paced`]).
    paced: bool,
    record_latency: bool,
    /// When each recent batch went out ([`Slot::submitted`]).
    submit_times: &'a SubmitTimes,
    run_id: u64,
    on_error: ErrorPolicy,
    taken_out: &'a [std::sync::atomic::AtomicBool],
    /// Set by a failure that asks the whole run to stop ([`ErrorPolicy::StopAll`]): the
    /// reap's answer, kept here so that a success returns nothing to add up.
    stop_all: std::cell::Cell<bool>,
}

/// Frees one completion's slot and counts it: a data check for a verifying run, then a
/// success into its window (ramp, measured, drained) with its latency, or a failure into the
/// device's errors (which may ask the whole run to stop: [`CountRules::stop_all`]).
// Always inlined: called from two reap loops, it would otherwise become a call per
// completion with the loop's state through memory.
#[inline(always)]
fn count_completion<const PLAIN: bool>(
    devices: &mut [DeviceState],
    slots: &[Slot],
    io: &Buffers<'_>,
    rules: &CountRules<'_>,
    done: Reaped,
    window: &ReapWindow,
) {
    // A reference: a field is loaded where it is used, and the rare paths' ones only there.
    let slot = &slots[done.user_data as usize];
    let slot_id = done.user_data as u32;
    let dev = &mut devices[slot.device as usize];
    dev.free_slots.push(slot_id);
    if !PLAIN && slot.pool_block != NO_POOL_BLOCK {
        dev.pool_busy[slot.pool_block as usize] = false;
    }
    if !PLAIN && dev.verify.is_some() {
        dev.check_during_run(io, slot_id, slot, done.result, rules.run_id);
    }
    if done.result != rules.success[slot.op] {
        count_failure(dev, rules, slot, done.result, window);
        return;
    }
    if rules.sampled[slot.op] {
        dev.sample_read(io, slot_id, slot.device as usize);
    }
    // With a rate, an I/O belongs to the window its intended start fell in, however late it
    // completed (otherwise, to the one it was reaped in).
    let (counted, ramp) = match !PLAIN && rules.paced {
        true => (
            slot.intended_ns < window.end_ns,
            slot.intended_ns < window.ramp_ns && !window.in_ramp,
        ),
        false => (window.in_window, false),
    };
    if ramp {
        dev.ramp[slot.op] += 1;
        return;
    }
    if !counted {
        // Drained after the window: done, counted apart from the window.
        dev.drained[slot.op] += 1;
        return;
    }
    let counts = &mut dev.interval[slot.op];
    counts.ios += 1;
    if rules.record_latency {
        let (submit_times, reap_ns) = (rules.submit_times, window.reap_ns);
        if !PLAIN && rules.paced {
            let lat =
                (done.took_ns).unwrap_or_else(|| submit_times.latency_ns(slot.submitted, reap_ns));
            let response = reap_ns.saturating_sub(slot.intended_ns).max(lat);
            crate::result::record_latency(&mut counts.response, response);
        }
        // A ring I/O's latency is its batch's, worked out once for the run of them
        // (`record_latency`); a synchronous trim's is its own.
        match done.took_ns {
            Some(lat) => crate::result::record_latency(&mut counts.latency, lat),
            None => dev.record_latency(slot.op, slot.submitted, submit_times, reap_ns),
        }
    }
}

/// Counts a failed I/O into its device's errors and takes the device out as
/// [`CountRules::on_error`] says, or asks the whole run to stop ([`CountRules::stop_all`]).
#[cold]
fn count_failure(
    dev: &mut DeviceState,
    rules: &CountRules<'_>,
    slot: &Slot,
    result: i32,
    window: &ReapWindow,
) {
    let (errno, transferred) = if result < 0 {
        (-result, 0)
    } else {
        (0, result as u32)
    };
    dev.errors.record(IoErrorSample {
        op: slot.op,
        offset: slot.offset,
        len: dev.block_size,
        errno,
        transferred,
    });
    if window.errors_counted {
        dev.interval_errors += 1;
    }
    if rules.on_error != ErrorPolicy::Continue && !dev.failed {
        dev.failed = true;
        dev.failed_at = Some(window.now);
        rules.taken_out[dev.index].store(true, Ordering::Relaxed);
    }
    if rules.on_error == ErrorPolicy::StopAll {
        rules.stop_all.set(true);
    }
}

/// Whether a buffer's first and last 8 bytes are zeros: a cheap sign of a block never
/// written (a written one carries data at both ends with overwhelming probability).
#[inline]
fn is_zero_at_both_ends(buf: &[u8]) -> bool {
    let n = buf.len();
    buf[..8.min(n)].iter().all(|&b| b == 0) && buf[n.saturating_sub(8)..].iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IoPattern;

    fn workload(pattern: IoPattern) -> Workload {
        Workload {
            pattern,
            block_size: 4096,
            ..Workload::default()
        }
    }

    #[test]
    fn same_seed_same_offsets_and_other_seed_other_offsets() {
        let w = workload(IoPattern::RandRead);
        let a: Vec<u64> = {
            let mut s = OffsetStream::new(&w, 1 << 30, 7, 0);
            (0..1000).map(|_| s.next_offset()).collect()
        };
        let b: Vec<u64> = {
            let mut s = OffsetStream::new(&w, 1 << 30, 7, 0);
            (0..1000).map(|_| s.next_offset()).collect()
        };
        let c: Vec<u64> = {
            let mut s = OffsetStream::new(&w, 1 << 30, 8, 0);
            (0..1000).map(|_| s.next_offset()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|o| o % 4096 == 0 && *o < (1 << 30)));
    }

    #[test]
    fn random_offsets_cover_the_working_set_uniformly() {
        let w = workload(IoPattern::RandRead);
        let blocks = 64u64;
        let mut s = OffsetStream::new(&w, blocks * 4096, 1, 3);
        let mut hits = vec![0u32; blocks as usize];
        for _ in 0..64_000 {
            hits[(s.next_offset() / 4096) as usize] += 1;
        }
        // 1000 expected per block; a fair generator stays well within +-20%.
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
    }

    #[test]
    fn shares_walk_their_own_part_and_reproduce() {
        let w = workload(IoPattern::Write);
        let share = |part| crate::DeviceShare::new(0, part, 2);
        let mut first = OffsetStream::for_share(&w, 5 * 4096, 1, share(0));
        let mut second = OffsetStream::for_share(&w, 5 * 4096, 1, share(1));
        let a: Vec<u64> = (0..3).map(|_| first.next_offset() / 4096).collect();
        let b: Vec<u64> = (0..4).map(|_| second.next_offset() / 4096).collect();
        assert_eq!((a, b), (vec![0, 1, 0], vec![2, 3, 4, 2]));
        let r = workload(IoPattern::RandWrite);
        let draw = |part| -> Vec<u64> {
            let mut s =
                OffsetStream::for_share(&r, 1 << 30, 7, crate::DeviceShare::new(3, part, 4));
            (0..1000).map(|_| s.next_offset()).collect()
        };
        let quarter = (1u64 << 30) / 4;
        assert!(draw(2)
            .iter()
            .all(|&o| (2 * quarter..3 * quarter).contains(&o)));
        assert_eq!(
            draw(2),
            draw(2),
            "the same seed and share give the same offsets"
        );
        // One share of one is the whole target's stream.
        let mut whole = OffsetStream::new(&r, 1 << 30, 7, 3);
        let mut one = OffsetStream::for_share(&r, 1 << 30, 7, crate::DeviceShare::new(3, 0, 1));
        assert!((0..100).all(|_| whole.next_offset() == one.next_offset()));
    }

    #[test]
    fn sequential_offsets_wrap_at_the_working_set() {
        let w = workload(IoPattern::Read);
        let mut s = OffsetStream::new(&w, 3 * 4096, 1, 0);
        let v: Vec<u64> = (0..5).map(|_| s.next_offset()).collect();
        assert_eq!(v, vec![0, 4096, 8192, 0, 4096]);
    }

    #[test]
    fn read_share_follows_rwmixread() {
        let w = Workload {
            rwmixread: 70,
            ..workload(IoPattern::RandRw)
        };
        let mut s = OffsetStream::new(&w, 1 << 20, 42, 0);
        let reads = (0..100_000).filter(|_| s.next_op() == OpKind::Read).count();
        assert!((69_000..71_000).contains(&reads), "{reads}");
        let mut r = OffsetStream::new(&workload(IoPattern::RandRead), 1 << 20, 42, 0);
        assert!((0..100).all(|_| r.next_op() == OpKind::Read));
        let mut t = OffsetStream::new(&workload(IoPattern::RandTrim), 1 << 20, 42, 0);
        assert!((0..100).all(|_| t.next_op() == OpKind::Trim));
    }
}
