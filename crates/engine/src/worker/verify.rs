//! A verifying run's checks: each write's block marked as it goes out, each completion
//! checked as it is reaped, and every written block read back once after the loop.

use std::time::{Duration, Instant};

use super::device::{DeviceState, Slot, NO_POOL_BLOCK};
use super::run_loop::WorkerLoop;
use crate::data::{self, BlockIdentity, STATE_UNKNOWN, STATE_WRITING};
use crate::op::OpKind;
use crate::ring::Buffers;
#[cfg(doc)]
use crate::VerifyLog;
use crate::{IoErrorSample, DRAIN_LIMIT, READ_BACK_STOP_GRACE};

impl DeviceState {
    /// A verifying run's mark of a write going out: its block is being written, or unknown
    /// when another write to it is in flight too (the two may land in either order, so it
    /// stays unknown until a later write has the block to itself).
    pub(super) fn mark_write_in_flight(&mut self, offset: u64) {
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
    pub(super) fn check_during_run(
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

impl WorkerLoop {
    /// Verifying runs: reads back every block this run wrote, once, and checks it. Each
    /// device is read at its queue depth through its own slots and read buffers, all devices
    /// of the worker at once; these reads count in no figure (a failed one is an error of the
    /// device). Every wait is bounded and every block left unread is counted
    /// ([`VerifyLog::not_read_back`]): a device that stalled during the run is not read (its
    /// buffers are the kernel's), one that completes none of its reads for [`DRAIN_LIMIT`] is
    /// given up on as the run's drain gives up, and a stop from outside ends the read-back,
    /// waiting at most [`READ_BACK_STOP_GRACE`] for the reads in flight.
    pub(super) fn read_back(&mut self) -> std::io::Result<()> {
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
}
