//! SIGINT, SIGTERM, SIGHUP and SIGQUIT for the whole process: one [`SignalWatch`].
//!
//! [`watch`] installs the handlers when first called; `main` calls it first thing, for every
//! command, so a signal during the checks or while the output is written is not lost either
//! (a command that registers no run finishes its output, then `main` exits with 128 + the
//! signal).
//! The first signal is remembered, ends every bounded wait at once (a read of sysfs or of a
//! device: `hostmax_device::call_off_waits_by`) and stops the engine run in progress (its
//! in-flight I/O drains, and the report is still written, marked interrupted by that
//! signal); a second one exits at once with 128 + the signal. SIGHUP (the terminal hung up: an ssh session that
//! dropped) and SIGQUIT (Ctrl-\\) are handled as SIGTERM is, so a dropped session still leaves
//! its report; a SIGHUP after the first signal is not a second signal (a hangup reaches a
//! process twice, from the kernel and from its shell). The watch runs on a small
//! current-thread tokio runtime of its own, never on the I/O path. Every command that runs
//! the engine (a plain run, verify's phases, sweep's steps, the suite's cells) registers its
//! run with [`SignalWatch::running`], so a signal between runs also stops the next one
//! instead of being lost.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use hostmax_engine::StopHandle;

/// The signals the watch takes (see the module overview).
pub const WATCHED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// A signal's name (`SIGHUP`), as reports and messages say it.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string())
}

/// What the process does on the [`WATCHED`] signals (see the module overview).
pub struct SignalWatch {
    seen: AtomicI32,
    /// Notified on the first signal, for [`SignalWatch::wait_for_signal`].
    seen_changed: Condvar,
    current: Mutex<Option<StopHandle>>,
    message: Mutex<&'static str>,
}

static WATCH: OnceLock<SignalWatch> = OnceLock::new();

/// The process's watch, started on first use. The handlers are installed before this returns,
/// so call it before anything a signal should not cut short: `main` does, before the first
/// device check.
pub fn watch() -> &'static SignalWatch {
    #[cfg(test)]
    if let Some(heard) = HEARD_HERE.with(std::cell::Cell::get) {
        return heard;
    }
    WATCH.get_or_init(|| {
        if let Err(e) = start_listening() {
            crate::errln!("hostmax: cannot watch signals ({e}); Ctrl-C will end the run at once");
        }
        // The first signal also ends every bounded wait (a sysfs read, a device read of the
        // checks) at once, wherever it was made.
        hostmax_device::call_off_waits_by(|| watch().signal() != 0);
        SignalWatch {
            seen: AtomicI32::new(0),
            seen_changed: Condvar::new(),
            current: Mutex::new(None),
            message: Mutex::new("stopping (draining in-flight I/O); signal again to abort"),
        }
    })
}

#[cfg(test)]
thread_local! {
    /// The watch [`watch`] gives on this thread instead of the process's
    /// ([`hear_on_this_thread`]).
    static HEARD_HERE: std::cell::Cell<Option<&'static SignalWatch>> =
        const { std::cell::Cell::new(None) };
}

/// Makes [`watch`] give `heard` on this thread: a unit test (each runs on a thread of its
/// own) delivers signals to it ([`SignalWatch::deliver`]) and no process signal reaches it.
#[cfg(test)]
pub(crate) fn hear_on_this_thread(heard: &'static SignalWatch) {
    HEARD_HERE.with(|here| here.set(Some(heard)));
}

/// Installs the [`WATCHED`] signals' handlers here (tokio installs them as each `Signal` is
/// made), then serves them on a thread of their own.
///
/// The signals are held back (blocked on this thread, the only one when `main` starts the
/// watch) while the handlers go in: one that came after a handler was installed but before
/// the registry behind it listed the listener would be dropped. Held back, it waits, and is
/// delivered the moment they are let through again, to a complete handler.
fn start_listening() -> std::io::Result<()> {
    use nix::sys::signal::{SigSet, Signal};
    let mut held = SigSet::empty();
    for sig in WATCHED {
        held.add(Signal::try_from(sig).map_err(std::io::Error::from)?);
    }
    held.thread_block().map_err(std::io::Error::from)?;
    let installed = install_handlers();
    held.thread_unblock().map_err(std::io::Error::from)?;
    let (rt, mut streams) = installed?;
    std::thread::Builder::new()
        .name("hostmax-signals".into())
        .spawn(move || {
            rt.block_on(async {
                let [int, term, hup, quit] = &mut streams;
                loop {
                    let sig = tokio::select! {
                        _ = int.recv() => libc::SIGINT,
                        _ = term.recv() => libc::SIGTERM,
                        _ = hup.recv() => libc::SIGHUP,
                        _ = quit.recv() => libc::SIGQUIT,
                    };
                    watch().received(sig);
                }
            })
        })?;
    Ok(())
}

/// The runtime that serves the signals and one signal stream per [`WATCHED`] signal, in its
/// order, handlers installed.
fn install_handlers() -> std::io::Result<(tokio::runtime::Runtime, [tokio::signal::unix::Signal; 4])>
{
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let streams = {
        let _in_runtime = rt.enter();
        [
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
            signal(SignalKind::quit())?,
        ]
    };
    Ok((rt, streams))
}

impl SignalWatch {
    fn received(&self, sig: i32) {
        // The first signal stays the one that ended the run.
        if let Err(first) = self
            .seen
            .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        {
            // A hangup comes twice (the kernel's, then the shell's): not a second signal.
            if sig == libc::SIGHUP {
                return;
            }
            crate::errln!(
                "hostmax: second signal ({} after {}), aborting",
                signal_name(sig),
                signal_name(first)
            );
            std::process::exit(128 + sig);
        }
        // Above the live view's bar: a plain write would be erased by its next redraw.
        crate::output::progress::print_line(&format!(
            "hostmax: {}: {}",
            signal_name(sig),
            *lock(&self.message)
        ));
        if let Some(stopper) = lock(&self.current).as_ref() {
            stopper.stop();
        }
        // Taking the lock orders this after a waiter's check of `seen`.
        let _current = lock(&self.current);
        self.seen_changed.notify_all();
    }

    /// A watch of its own that no process signal reaches, for a unit test to deliver signals
    /// to ([`SignalWatch::deliver`]) without touching the process's.
    #[cfg(test)]
    pub(crate) fn detached() -> &'static SignalWatch {
        Box::leak(Box::new(SignalWatch {
            seen: AtomicI32::new(0),
            seen_changed: Condvar::new(),
            current: Mutex::new(None),
            message: Mutex::new("stopping"),
        }))
    }

    /// Takes `sig` as if it came from the process (a second one exits).
    #[cfg(test)]
    pub(crate) fn deliver(&self, sig: i32) {
        self.received(sig);
    }

    /// Waits up to `limit` for a signal; returns its number, or `None` if none came.
    pub fn wait_for_signal(&self, limit: Duration) -> Option<i32> {
        let current = lock(&self.current);
        let (_current, _) = self
            .seen_changed
            .wait_timeout_while(current, limit, |_| self.signal() == 0)
            .unwrap_or_else(|e| e.into_inner());
        Some(self.signal()).filter(|&sig| sig != 0)
    }

    /// The first signal seen, 0 if none.
    pub fn signal(&self) -> i32 {
        self.seen.load(Ordering::SeqCst)
    }

    /// What to say on the first signal (the suite says its finished cells are saved).
    pub fn set_message(&self, message: &'static str) {
        *lock(&self.message) = message;
    }

    /// Registers the run in progress: a signal stops it (at once, if one came already). The
    /// registration ends when the returned guard drops.
    ///
    /// The run is registered before the check for an earlier signal: a signal that comes in
    /// between then finds it registered, so none is lost (a run stopped twice is stopped).
    pub fn running(&self, stopper: StopHandle) -> RunningGuard<'_> {
        *lock(&self.current) = Some(stopper.clone());
        if self.signal() != 0 {
            stopper.stop();
        }
        RunningGuard { watch: self }
    }
}

/// Keeps a run registered with the [`SignalWatch`] while it lives.
pub struct RunningGuard<'a> {
    watch: &'a SignalWatch,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.watch.current) = None;
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_as_reports_say_them() {
        assert_eq!(signal_name(libc::SIGHUP), "SIGHUP");
        assert_eq!(signal_name(libc::SIGQUIT), "SIGQUIT");
        assert_eq!(signal_name(libc::SIGINT), "SIGINT");
        assert_eq!(signal_name(999), "signal 999");
    }

    #[test]
    fn a_second_hangup_is_not_a_second_signal() {
        // The kernel's hangup and the shell's both reach a process whose session dropped: the
        // second must not abort the drain (a second signal of any other kind exits the
        // process, which would end this test).
        let watch = SignalWatch::detached();
        watch.deliver(libc::SIGHUP);
        watch.deliver(libc::SIGHUP);
        assert_eq!(watch.signal(), libc::SIGHUP);
        let watch = SignalWatch::detached();
        watch.deliver(libc::SIGQUIT);
        watch.deliver(libc::SIGHUP);
        assert_eq!(
            watch.signal(),
            libc::SIGQUIT,
            "the first signal is the one kept"
        );
    }
}
