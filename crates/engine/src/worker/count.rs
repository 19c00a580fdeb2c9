//! Each completion reaped, counted: its slot freed, its data checked, a success into its
//! window (ramp, measured, drained) with its latency, or a failure into its device's errors.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::device::{DeviceState, Slot, NO_POOL_BLOCK};
use super::run_loop::WorkerLoop;
use crate::op::{OpKind, PerOp};
use crate::ring::{Buffers, Reaped};
use crate::submit_times::SubmitTimes;
use crate::workload::ErrorPolicy;
use crate::IoErrorSample;

/// What a batch of completions reaped at one instant shares: when, and which window that
/// instant falls in ([`WorkerLoop::count_completions`]).
struct ReapWindow {
    now: Instant,
    /// `now` in nanoseconds after the run's start.
    reap_ns: u64,
    /// Before the end: a completion is counted in the measured window (in its second).
    in_window: bool,
    in_ramp: bool,
    /// Within the measured window: a failure counts in the current second.
    errors_counted: bool,
    ramp_ns: u64,
    end_ns: u64,
}

impl WorkerLoop {
    /// Reaps every completion and counts each one ([`count_completion`]) in the window `now`
    /// decides once for the whole batch. Returns whether a failure asks the whole run to stop
    /// ([`ErrorPolicy::StopAll`]).
    #[inline]
    pub(super) fn count_completions<const PLAIN: bool>(&mut self, now: Instant) -> bool {
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
    // A completion counts in the second it was reaped in. With a rate, one due in the ramp
    // counts there however late it completed.
    if !PLAIN && rules.paced && slot.intended_ns < window.ramp_ns && !window.in_ramp {
        dev.ramp[slot.op] += 1;
        return;
    }
    if !window.in_window {
        // Drained after the window: done, counted apart from it (no measured second and no
        // rate holds it). With a rate, an I/O due within the window (a backlog worked off
        // after the end, or one in flight at it) still has its times in the window's
        // histograms, so a stall at the end shows in full.
        dev.drained[slot.op] += 1;
        if !PLAIN && rules.paced && rules.record_latency && slot.intended_ns < window.end_ns {
            record_backlog_times(dev, rules, slot, done.took_ns, window.reap_ns);
        }
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

/// Records the service and response times of an I/O due within the window that completed
/// after its end (counted as drained) into the window's histograms, not into a second's.
#[cold]
fn record_backlog_times(
    dev: &mut DeviceState,
    rules: &CountRules<'_>,
    slot: &Slot,
    took_ns: Option<u64>,
    reap_ns: u64,
) {
    let latency = took_ns.unwrap_or_else(|| rules.submit_times.latency_ns(slot.submitted, reap_ns));
    let response = reap_ns.saturating_sub(slot.intended_ns).max(latency);
    let window = &mut dev.ops[slot.op];
    crate::result::record_latency(&mut window.latency, latency);
    crate::result::record_latency(&mut window.response, response);
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
