//! What the control side of a run ([`crate::RunHandle`]) and its workers share: the start
//! gate every worker waits at, the common start instant, a stop request, and progress.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The start gate: workers report readiness, then wait for the common start instant (or an
/// abort when another worker failed to set up).
pub(crate) struct StartGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    ready: usize,
    failures: Vec<String>,
    go: Option<Option<Instant>>,
}

impl StartGate {
    pub(crate) fn new() -> StartGate {
        StartGate {
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
        }
    }

    /// A worker is set up (or failed to).
    pub(crate) fn ready(&self, outcome: Result<(), String>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.ready += 1;
        if let Err(e) = outcome {
            s.failures.push(e);
        }
        self.changed.notify_all();
    }

    /// Blocks until the control side says go (`Some(start)`) or abort (`None`).
    pub(crate) fn wait_go(&self) -> Option<Instant> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.go.is_none() {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.go.flatten()
    }

    pub(crate) fn wait_ready(&self, workers: usize) -> Vec<String> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.ready < workers {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.failures.clone()
    }

    pub(crate) fn open(&self, start: Option<Instant>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.go = Some(start);
        self.changed.notify_all();
    }
}

/// State the control side and the workers share.
pub(crate) struct Shared {
    pub(crate) gate: StartGate,
    /// Nanoseconds after `start` at which a stop was asked; `u64::MAX` while none was.
    stop_after_ns: AtomicU64,
    /// The stop came from outside ([`Shared::stop`]: a signal, the library's caller), not
    /// from a failed I/O: it also ends a `--verify` read-back, which a stop-all after an
    /// error leaves to check what was written.
    interrupted: AtomicBool,
    start: Mutex<Option<Instant>>,
    /// The highest second any worker has closed (for progress without a live channel).
    pub(crate) seconds_done: AtomicI64,
    /// Nanoseconds after `start` at which the last worker left its loop (for runs that end
    /// on their [`crate::Workload::io_limit`]).
    pub(crate) finished_after_ns: AtomicU64,
}

impl Shared {
    /// Before the start: no worker ready, no stop asked.
    pub(crate) fn new() -> Shared {
        Shared {
            gate: StartGate::new(),
            stop_after_ns: AtomicU64::new(u64::MAX),
            interrupted: AtomicBool::new(false),
            start: Mutex::new(None),
            seconds_done: AtomicI64::new(i64::MIN),
            finished_after_ns: AtomicU64::new(0),
        }
    }

    /// The instant a stop was asked for, if one was.
    #[inline]
    pub(crate) fn stop_instant(&self) -> Option<Instant> {
        let ns = self.stop_after_ns.load(Ordering::Relaxed);
        if ns == u64::MAX {
            return None;
        }
        let start = (*self.start.lock().unwrap_or_else(|e| e.into_inner()))?;
        Some(start + Duration::from_nanos(ns))
    }

    /// Sets the common start instant and lets every worker go.
    pub(crate) fn begin(&self, start: Instant) {
        *self.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(start);
        self.gate.open(Some(start));
    }

    /// A stop from outside the run (a signal, the library's caller): the run stops
    /// submitting, and a read-back in progress or still to come ends too.
    pub(crate) fn stop(&self) {
        self.interrupted.store(true, Ordering::Relaxed);
        self.stop_submitting();
    }

    /// Whether a stop came from outside ([`Shared::stop`]).
    #[inline]
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// A stop of the run's submissions only (`--on-error stop-all`): what was written is
    /// still read back.
    pub(crate) fn stop_submitting(&self) {
        let start = *self.start.lock().unwrap_or_else(|e| e.into_inner());
        let ns = start.map_or(0, |s| s.elapsed().as_nanos() as u64);
        let _ =
            self.stop_after_ns
                .compare_exchange(u64::MAX, ns, Ordering::Relaxed, Ordering::Relaxed);
    }
}
