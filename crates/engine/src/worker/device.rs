//! What a worker keeps about one device share: its slots (one I/O in flight each), its
//! write pool and its latency runs, and how a batch of its I/O is planned and pushed.

use std::time::{Duration, Instant};

use super::offsets::OffsetStream;
use crate::data::{self, BlockIdentity, BlockMaker, STATE_UNKNOWN};
use crate::op::{BufferUse, OpKind, PerOp};
use crate::result::READ_SAMPLE_EVERY;
use crate::ring::{Buffers, Pusher, TrimMethod, UringIo};
use crate::schedule::Schedule;
use crate::submit_times::SubmitTimes;
use crate::{ErrorLog, IoCounts, OpResult, ReadSamples, VerifyLog};

#[cfg(doc)]
use crate::{DeviceResult, Workload, DRAIN_LIMIT};

/// Everything a worker keeps about one of its targets.
pub(super) struct DeviceState {
    pub(super) index: usize,
    /// Which part of the device this is.
    pub(super) share: crate::DeviceShare,
    /// The first block of its part of the working set: its verify state starts there.
    pub(super) first_block: u64,
    /// The intended starts of its part of the device's [`Workload::rate_iops`]; `None`
    /// without a rate.
    pub(super) schedule: Option<Schedule>,
    pub(super) block_size: u32,
    pub(super) iodepth: u32,
    /// Its slots are `first_slot..first_slot + iodepth`: each is free or in flight (or, within
    /// `WorkerLoop::fill`, planned), so the I/O in flight is what is not free
    /// ([`DeviceState::in_flight`]).
    pub(super) first_slot: u32,
    pub(super) free_slots: Vec<u32>,
    /// Completions of one kind and one submit batch reaped in a row, not yet in the
    /// interval's histogram: they share one latency, worked out and recorded with one call
    /// ([`DeviceState::flush_latencies`]).
    pub(super) latency_run: LatencyRun,
    pub(super) offsets: OffsetStream,
    pub(super) submitted: u64,
    /// I/Os this device may be given in all ([`Workload::io_limit`] in blocks).
    pub(super) limit_ios: Option<u64>,
    /// Each kind's I/Os in the current one-second interval, and the interval's failures.
    pub(super) interval: PerOp<OpResult>,
    pub(super) interval_errors: u64,
    /// Each kind's I/Os in the measured window.
    pub(super) ops: PerOp<OpResult>,
    pub(super) errors: ErrorLog,
    /// Taken out of the run after a failure: no more submissions.
    pub(super) failed: bool,
    /// When it was taken out (the reap that brought the failure).
    pub(super) failed_at: Option<Instant>,
    /// Where the read and the write buffers start in the device's region: separate, so
    /// that no write ever carries back what a read brought.
    pub(super) read_base: usize,
    pub(super) write_base: usize,
    /// Makes what each write carries: writes take blocks of the device's write pool
    /// (`pool_blocks` random blocks at `write_base`, then the duplicate block), chosen by
    /// offset and held while in flight (`pool_busy`), made unique by
    /// [`BlockMaker::stamp_unique`].
    pub(super) maker: BlockMaker,
    pub(super) pool_blocks: usize,
    pub(super) pool_busy: Vec<bool>,
    pub(super) ramp: IoCounts,
    pub(super) drained: IoCounts,
    /// Successful reads so far, to sample one in [`READ_SAMPLE_EVERY`].
    pub(super) reads_done: u64,
    pub(super) read_samples: ReadSamples,
    /// Verifying runs: one byte per block of the working set (0 not written in this run, a
    /// generation tag, `STATE_UNKNOWN` or `STATE_WRITING`), and what the checks found.
    pub(super) verify_state: Vec<u8>,
    pub(super) verify: Option<VerifyLog>,
    pub(super) writes_submitted: u64,
    /// Verifying runs: the blocks of the writes in flight (at most `iodepth`), to tell a write
    /// that overlaps another from one that has its block to itself.
    pub(super) verify_writes_in_flight: Vec<u64>,
    /// How its trims are issued, when the workload trims.
    pub(super) trim_method: Option<TrimMethod>,
    /// The I/Os still in flight when the worker gave up on them ([`DRAIN_LIMIT`]).
    pub(super) stalled_in_flight: Option<u64>,
    /// With a rate: I/Os due within the runtime never issued ([`DeviceResult::unissued`]).
    pub(super) unissued: u64,
    /// With a rate: the backlog at the nominal end, taken when the loop passed it, for the
    /// last second (which is closed only after the backlog was worked off).
    pub(super) backlog_at_end: Option<u64>,
}

impl DeviceState {
    /// Index in `verify_state` of the block at byte offset `offset` (within its part).
    #[inline]
    pub(super) fn state_index(&self, offset: u64) -> usize {
        (offset / u64::from(self.block_size) - self.first_block) as usize
    }
    /// Its I/O in flight: its slots that are not free (outside `WorkerLoop::fill`, no slot is
    /// only planned). One count fewer to keep per I/O.
    #[inline]
    pub(super) fn in_flight(&self) -> u32 {
        self.iodepth - self.free_slots.len() as u32
    }

    /// Byte offset in the device's region of the read buffer of `slot`.
    #[inline]
    pub(super) fn read_buffer_offset(&self, slot: u32) -> usize {
        self.read_base + (slot - self.first_slot) as usize * self.block_size as usize
    }

    /// Plans up to `budget` I/Os of this device (`file` on the ring) into `planned`: what
    /// each does and where, and for a unique write its pool block, asked into the cache for
    /// writing so that its stamps do not each wait for a line the device's copy last read
    /// (benches/README.md's measurements: less CPU per I/O). With a rate, only I/Os whose
    /// intended start has come (`now_ns`, before `end_ns`); the next one's start goes into
    /// `next_allowed`.
    #[inline]
    pub(super) fn plan_batch(
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
    pub(super) fn push_batch(
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

    /// A plain workload's ([`WorkerLoop::plain`](super::run_loop::WorkerLoop::plain)) batch:
    /// up to `budget` I/Os drawn and pushed in one pass, their slots carrying `submitted`
    /// ([`SubmitTimes::mark`]). Nothing is written or verified and no rate holds an I/O back,
    /// so no plan is kept ([`DeviceState::plan_batch`]'s is for the write pool and the
    /// schedule); if the ring takes fewer, the slot stays free and its offset is skipped, as a
    /// plan's would be.
    #[inline]
    pub(super) fn push_plain(
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

    /// Counts a successful read and looks at one in [`READ_SAMPLE_EVERY`]: a block of zeros
    /// at both ends was probably never written.
    #[inline]
    pub(super) fn sample_read(&mut self, io: &Buffers<'_>, slot_id: u32, file: usize) {
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
    pub(super) fn record_latency(
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
    pub(super) fn flush_latencies(&mut self, submit_times: &SubmitTimes, reap_ns: u64) {
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

/// Whether a buffer's first and last 8 bytes are zeros: a cheap sign of a block never
/// written (a written one carries data at both ends with overwhelming probability).
#[inline]
fn is_zero_at_both_ends(buf: &[u8]) -> bool {
    let n = buf.len();
    buf[..8.min(n)].iter().all(|&b| b == 0) && buf[n.saturating_sub(8)..].iter().all(|&b| b == 0)
}

/// Completions of one kind from one submit batch, reaped in a row
/// ([`DeviceState::record_latency`]).
#[derive(Clone, Copy)]
pub(super) struct LatencyRun {
    pub(super) op: OpKind,
    /// Their [`Slot::submitted`].
    pub(super) submitted: u64,
    pub(super) count: u64,
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

/// One I/O in flight.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) device: u32,
    pub(super) op: OpKind,
    pub(super) offset: u64,
    /// When it was submitted: its batch's [`SubmitTimes::mark`], which
    /// [`SubmitTimes::submitted_ns`] turns into nanoseconds after the run's start.
    pub(super) submitted: u64,
    /// With an offered rate: its intended start on the schedule, in nanoseconds after the
    /// run's start (0 without a rate).
    pub(super) intended_ns: u64,
    /// Verifying runs: a write's generation tag, or the tag a read's block had when the read was
    /// submitted (0: the read is not checked).
    pub(super) tag: u8,
    /// A write's pool block while it is in flight ([`NO_POOL_BLOCK`] for reads and
    /// duplicates, which hold none).
    pub(super) pool_block: u32,
}

/// [`Slot::pool_block`] of an I/O that holds no pool block.
pub(super) const NO_POOL_BLOCK: u32 = u32::MAX;

/// One I/O of a device's next batch, drawn before any is queued (see `WorkerLoop::fill`).
#[derive(Clone, Copy)]
pub(super) struct PlannedIo {
    pub(super) slot_id: u32,
    pub(super) op: OpKind,
    pub(super) offset: u64,
    /// Its intended start ([`Slot::intended_ns`]).
    pub(super) intended_ns: u64,
    /// A unique write's pool block and the key that stamps it; `None` for a duplicate write
    /// and for I/O that writes nothing.
    pub(super) unique: Option<(usize, u64)>,
}
