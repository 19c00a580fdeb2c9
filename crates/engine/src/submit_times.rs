//! When each batch of I/O was submitted ([`SubmitTimes`]), so that an I/O's slot carries its
//! batch's number, written with the rest of the slot as it is queued, instead of a time
//! stamped into every slot of the batch once the batch is submitted.

/// How many batches' times are kept (a power of two).
const KEPT: usize = 4096;

/// Marks a value as a batch number ([`SubmitTimes::mark`]) rather than a time in nanoseconds.
const BATCH_NUMBER: u64 = 1 << 63;

/// The submit times of the last [`KEPT`] batches, each in nanoseconds after the run's
/// start. An I/O queued in a batch carries [`SubmitTimes::mark`] (its batch's number);
/// [`SubmitTimes::submitted_ns`] turns that into the batch's time when it completes. An I/O
/// in flight so long that its batch's time is about to be overwritten has the time written
/// into its mark instead ([`SubmitTimes::submit`]), so a late I/O keeps its exact latency.
pub(crate) struct SubmitTimes {
    times: Box<[u64; KEPT]>,
    /// The number of the batch being filled.
    filling: u64,
}

impl SubmitTimes {
    pub fn new() -> SubmitTimes {
        SubmitTimes {
            times: Box::new([0; KEPT]),
            filling: 0,
        }
    }

    /// What an I/O queued in the batch being filled carries until it completes.
    #[inline]
    pub fn mark(&self) -> u64 {
        BATCH_NUMBER | self.filling
    }

    /// Records the batch being filled as submitted at `ns` and starts the next. Every
    /// `KEPT / 2` batches, the marks (every slot's, in flight or not) of batches at least
    /// `KEPT / 2` old become their times first: a batch's time is overwritten `KEPT` batches
    /// later, and the next such pass comes `KEPT / 2` batches after this one.
    pub fn submit<'a>(&mut self, ns: u64, marks: impl Iterator<Item = &'a mut u64>) {
        let half = KEPT as u64 / 2;
        if self.filling.is_multiple_of(half) && self.filling >= half {
            for mark in marks {
                if *mark & BATCH_NUMBER != 0 && (*mark & !BATCH_NUMBER) + half <= self.filling {
                    *mark = self.submitted_ns(*mark);
                }
            }
        }
        self.times[self.filling as usize % KEPT] = ns;
        self.filling += 1;
    }

    /// When the I/O that carries `mark` was submitted, in nanoseconds after the run's start.
    #[inline]
    pub fn submitted_ns(&self, mark: u64) -> u64 {
        match mark & BATCH_NUMBER {
            0 => mark,
            _ => self.times[mark as usize % KEPT],
        }
    }

    /// The latency of an I/O that carries `mark` and was reaped at `reap_ns`: from its
    /// batch's submit to the reap.
    #[inline]
    pub fn latency_ns(&self, mark: u64, reap_ns: u64) -> u64 {
        reap_ns.saturating_sub(self.submitted_ns(mark))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_io_gets_its_batch_time_however_long_it_stays_in_flight() {
        let mut times = SubmitTimes::new();
        // Slot 0 is queued once, in batch 3, and stays in flight for 10 * KEPT batches; slot 1
        // is queued again in every batch.
        let mut marks = [0u64; 2];
        let batch_ns = |b: u64| 1_000 + b * 7;
        for batch in 0..10 * KEPT as u64 {
            if batch == 3 {
                marks[0] = times.mark();
            }
            marks[1] = times.mark();
            times.submit(batch_ns(batch), marks.iter_mut());
            assert_eq!(times.submitted_ns(marks[1]), batch_ns(batch));
            if batch >= 3 {
                assert_eq!(
                    times.submitted_ns(marks[0]),
                    batch_ns(3),
                    "after batch {batch}"
                );
            }
        }
        // It became a time, not a batch number, before batch 3's time was overwritten.
        assert_eq!(marks[0], batch_ns(3));
    }
}
