//! How the safety checks wait on a device: every read of a device they make, and every helper
//! program that reads one (`wipefs`), ends within a bound ([`Patience`]) or when the caller
//! calls it off (a signal), so a device that stopped answering cannot hold a check forever.
//! Every read of a sysfs attribute waits the same way (`Patience::within`, through
//! [`crate::Sysfs`]): a hung driver's attribute holds its reader in the kernel too.
//!
//! [`DeviceReads`] is the seam: the checks read through it. [`BlockingReads`] (this crate's
//! default) reads in the calling thread with `pread`, which a stalled device holds in the
//! kernel, uninterruptibly, for as long as it stalls: no bound can be kept that way.
//! hostmax-engine's `UringReads` reads through io_uring and abandons a read that outlives the
//! bound, the thread free again at once; the tool uses that one.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::process::{Child, Output};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a check waits for one read of a device before it takes the device as stopped:
/// the engine's drain limit, the same patience as a run's end has.
pub const READ_PATIENCE: Duration = Duration::from_secs(10);

/// How long a helper program that makes many reads of a device (`wipefs`) may take in all.
pub const PROGRAM_PATIENCE: Duration = Duration::from_secs(30);

/// How often a wait looks whether it was called off.
const POLL: Duration = Duration::from_millis(20);

/// What calls a wait off early.
type CallOff = Arc<dyn Fn() -> bool + Send + Sync>;

/// What calls off every wait of a [`Patience::default`] ([`call_off_waits_by`]).
static DEFAULT_CALL_OFF: OnceLock<CallOff> = OnceLock::new();

/// Sets, once for the process, what calls off every wait made with a [`Patience::default`]
/// from now on (a front end's signal watch: its first signal ends them at once), including
/// the waits of every [`crate::Sysfs`] read. Later calls change nothing; returns whether this
/// one set it.
pub fn call_off_waits_by(called_off: impl Fn() -> bool + Send + Sync + 'static) -> bool {
    DEFAULT_CALL_OFF.set(Arc::new(called_off)).is_ok()
}

/// How long the checks wait, and what calls a wait off early.
#[derive(Clone)]
pub struct Patience {
    read: Duration,
    program: Duration,
    called_off: Option<CallOff>,
}

impl fmt::Debug for Patience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Patience")
            .field("read", &self.read)
            .field("program", &self.program)
            .field("called_off", &self.called_off.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl Default for Patience {
    /// [`READ_PATIENCE`] and [`PROGRAM_PATIENCE`], called off by what the process set with
    /// [`call_off_waits_by`], if anything.
    fn default() -> Self {
        Patience {
            called_off: DEFAULT_CALL_OFF.get().cloned(),
            ..Patience::new(READ_PATIENCE, PROGRAM_PATIENCE)
        }
    }
}

impl Patience {
    /// Waits of at most `read` for one read and `program` for a helper program, called off by
    /// nothing.
    pub fn new(read: Duration, program: Duration) -> Patience {
        Patience {
            read,
            program,
            called_off: None,
        }
    }

    /// Also ends a wait as soon as `called_off` returns true (a signal arrived).
    pub fn called_off_by(mut self, called_off: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.called_off = Some(Arc::new(called_off));
        self
    }

    /// The longest wait for one read.
    pub fn read(&self) -> Duration {
        self.read
    }

    /// The longest wait for a helper program.
    pub fn program(&self) -> Duration {
        self.program
    }

    /// Whether the caller has called the waits off.
    pub fn is_called_off(&self) -> bool {
        self.called_off.as_ref().is_some_and(|f| f())
    }

    /// The error of a wait that ran out: [`io::ErrorKind::TimedOut`], naming the wait.
    pub fn ran_out(waited: Duration, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{what} got no answer within {}", seconds(waited)),
        )
    }

    /// The error of a wait that was called off: [`io::ErrorKind::Interrupted`].
    pub fn called_off_error(what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::Interrupted,
            format!("{what} was called off by a signal"),
        )
    }

    /// Waits for `child` to finish, collecting its output, at most [`Patience::program`]. A
    /// child that outlives the wait (or the caller's calling off) is killed and left behind:
    /// one stuck in a device read cannot die until the read returns, so nothing waits for it
    /// here (a thread of its own reaps it whenever it goes).
    pub fn wait_for(&self, mut child: Child, what: &str) -> io::Result<Output> {
        // Read the pipes while the child runs, so a full pipe cannot hold it.
        let stdout = child.stdout.take().map(drain_in_background);
        let stderr = child.stderr.take().map(drain_in_background);
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                let collect = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
                    h.and_then(|h| h.join().ok()).unwrap_or_default()
                };
                return Ok(Output {
                    status,
                    stdout: collect(stdout),
                    stderr: collect(stderr),
                });
            }
            let called_off = self.is_called_off();
            if called_off || started.elapsed() >= self.program {
                let _ = child.kill();
                std::thread::spawn(move || child.wait());
                return Err(if called_off {
                    Patience::called_off_error(what)
                } else {
                    Patience::ran_out(self.program, what)
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Patience {
    /// Runs `work` on a thread of its own and waits for its answer at most [`Patience::read`]
    /// (or until the caller calls the wait off): for a look at the system that a stuck
    /// process or filesystem could hold in the kernel (reading `/proc/PID/maps` waits for a
    /// process's memory lock). One that outlives the wait is left to finish on its own.
    pub(crate) fn within<T: Send + 'static>(
        &self,
        what: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        use std::sync::mpsc::{channel, RecvTimeoutError};
        let (answer, answered) = channel();
        std::thread::spawn(move || {
            let _ = answer.send(work());
        });
        let started = Instant::now();
        loop {
            match answered.recv_timeout(POLL) {
                Ok(found) => return Ok(found),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other(format!("{what} failed")))
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.is_called_off() {
                return Err(Patience::called_off_error(what));
            }
            if started.elapsed() >= self.read {
                return Err(Patience::ran_out(self.read, what));
            }
        }
    }
}

fn drain_in_background(
    mut pipe: impl io::Read + Send + 'static,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        out
    })
}

/// `10 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// How the checks read a device.
pub trait DeviceReads: Send + Sync + fmt::Debug {
    /// Reads exactly `len` bytes at `offset` of `file` (opened by the caller, `O_DIRECT` or
    /// not; the buffer the read lands in is page-aligned), waiting at most
    /// [`Patience::read`].
    ///
    /// # Errors
    ///
    /// The read's own error; [`io::ErrorKind::TimedOut`] when the device did not answer in
    /// time ([`Patience::ran_out`]), [`io::ErrorKind::Interrupted`] when the wait was called
    /// off; [`io::ErrorKind::UnexpectedEof`] for a short read.
    fn read_exact_at(
        &self,
        file: &File,
        offset: u64,
        len: usize,
        patience: &Patience,
    ) -> io::Result<Vec<u8>>;
}

/// Reads in the calling thread (`pread`): no bound is kept, since a stalled device holds the
/// thread in the kernel until it answers. For library users without an engine; the tool reads
/// through hostmax-engine's `UringReads`.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct BlockingReads;

impl DeviceReads for BlockingReads {
    fn read_exact_at(
        &self,
        file: &File,
        offset: u64,
        len: usize,
        _patience: &Patience,
    ) -> io::Result<Vec<u8>> {
        let align = 4096;
        let mut raw = vec![0u8; len + align];
        let start = raw.as_ptr().align_offset(align);
        let window = &mut raw[start..start + len];
        file.read_exact_at(window, offset)?;
        Ok(window.to_vec())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A FIFO nobody writes: opening it to read waits for a writer, as a hung driver's
    /// attribute holds its reader; `release` lets the left-behind reader go.
    pub(crate) struct Fifo(pub std::path::PathBuf);

    impl Fifo {
        pub(crate) fn make(path: std::path::PathBuf) -> Fifo {
            let _ = std::fs::remove_file(&path);
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
            Fifo(path)
        }
    }

    impl Drop for Fifo {
        fn drop(&mut self) {
            // A writer opening (without waiting) lets each reader still waiting in open go.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.0);
            let _ = std::fs::remove_file(&self.0);
        }
    }

    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn a_program_that_outlives_its_patience_is_killed_and_named() {
        let patience = Patience::new(READ_PATIENCE, Duration::from_millis(200));
        let child = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let err = patience.wait_for(child, "wipefs of /dev/x").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            err.to_string(),
            "wipefs of /dev/x got no answer within 0.2 s"
        );
    }

    #[test]
    fn a_wait_called_off_ends_at_once() {
        let patience = Patience::default().called_off_by(|| true);
        let child = Command::new("sleep").arg("30").spawn().unwrap();
        let started = Instant::now();
        let err = patience.wait_for(child, "wipefs").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
    }

    #[test]
    fn work_that_outlives_its_patience_is_left_and_named() {
        let patience = Patience::new(Duration::from_millis(200), PROGRAM_PATIENCE);
        assert_eq!(patience.within("adding", || 1 + 1).unwrap(), 2);
        let started = Instant::now();
        let err = patience
            .within("listing /proc", || {
                std::thread::sleep(Duration::from_secs(30))
            })
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(err.to_string(), "listing /proc got no answer within 0.2 s");
        let called_off = Patience::default().called_off_by(|| true);
        let err = called_off
            .within("listing /proc", || {
                std::thread::sleep(Duration::from_secs(30))
            })
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
    }

    #[test]
    fn a_program_that_finishes_gives_its_output() {
        let child = Command::new("sh")
            .args(["-c", "echo out; echo err >&2; exit 3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = Patience::default().wait_for(child, "sh").unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn blocking_reads_read_what_is_there() {
        let path = std::env::temp_dir().join(format!("hostmax-reads-{}", std::process::id()));
        std::fs::write(&path, (0..=255u8).cycle().take(8192).collect::<Vec<_>>()).unwrap();
        let file = File::open(&path).unwrap();
        let got = BlockingReads
            .read_exact_at(&file, 4096, 16, &Patience::default())
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got, (0..16u8).collect::<Vec<_>>());
    }
}
