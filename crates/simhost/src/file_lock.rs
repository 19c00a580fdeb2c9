//! [`FileLock`]: an exclusive `flock` on a file, held until dropped; it serialises work across
//! processes (the cgroup controller's delegation here, the tests' rate measurements and apt-get).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// An exclusive `flock` on a file, released when this is dropped (or the process dies: flock
/// locks belong to the open file).
#[derive(Debug)]
pub struct FileLock {
    _held: Flock<File>,
}

impl FileLock {
    /// Waits for an exclusive lock on `path` (made if missing) and holds it.
    pub fn acquire(path: &Path) -> io::Result<FileLock> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        loop {
            match Flock::lock(file, FlockArg::LockExclusive) {
                Ok(held) => return Ok(FileLock { _held: held }),
                // A signal interrupted the wait: wait again.
                Err((unlocked, Errno::EINTR)) => file = unlocked,
                Err((_, errno)) => return Err(errno.into()),
            }
        }
    }
}
