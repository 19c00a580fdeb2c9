//! The loop: fill, stamp, submit and wait, count, until the end (and a rate's backlog),
//! then the drain.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::device::{DeviceState, PlannedIo, Slot};
use crate::op::OpKind;
use crate::ring::UringIo;
use crate::shared::Shared;
use crate::submit_times::SubmitTimes;
use crate::workload::ErrorPolicy;
use crate::{DeviceInterval, Workload, BACKLOG_LIMIT, DRAIN_LIMIT};

pub(super) struct WorkerLoop {
    pub(super) io: UringIo,
    pub(super) devices: Vec<DeviceState>,
    pub(super) slots: Vec<Slot>,
    /// A device's next batch, kept to reuse the allocation.
    pub(super) planned: Vec<PlannedIo>,
    pub(super) workload: Workload,
    pub(super) on_error: ErrorPolicy,
    pub(super) shared: Arc<Shared>,
    pub(super) taken_out: Arc<[std::sync::atomic::AtomicBool]>,
    pub(super) intervals: Option<Sender<DeviceInterval>>,
    pub(super) run_id: u64,
    pub(super) start: Instant,
    pub(super) ramp_end: Instant,
    pub(super) end: Instant,
    /// The one-second interval the counters are filling (relative to `ramp_end`).
    pub(super) current_second: i64,
    /// Once the loop stops submitting: when it stops waiting for the I/O in flight.
    pub(super) drain_deadline: Option<Instant>,
    /// The ring issues NOPs ([`WorkerTask::nops`](super::task::WorkerTask::nops)): a NOP
    /// succeeds with 0.
    pub(super) nops: bool,
    /// The workload offers a rate: I/Os follow a schedule and have response times.
    pub(super) paced: bool,
    /// When each recent batch was submitted: the times its I/Os' latencies start from.
    pub(super) submit_times: SubmitTimes,
}

impl WorkerLoop {
    /// Keeps every device's queue full until the run's end (or a stop), then drains: each
    /// turn fills, stamps, submits and waits, then counts what completed.
    pub(super) fn run_loop(&mut self) -> std::io::Result<()> {
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
    pub(super) fn end_ns(&self) -> u64 {
        self.end.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// Nanoseconds from the run's start to the end of its ramp.
    pub(super) fn ramp_ns(&self) -> u64 {
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
}
