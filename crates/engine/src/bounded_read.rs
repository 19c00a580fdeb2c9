//! Reads of a device that end within a bound, whatever the device does: [`UringReads`], the
//! [`DeviceReads`] the write-safety checks read signatures through. A `pread` of a device that
//! stopped answering sleeps in the kernel, unkillable, for as long as the device stalls; a read
//! through io_uring leaves the thread free, so a read that outlives its [`Patience`] is
//! abandoned (its ring and buffer left to the kernel) and the check names the device.

use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

use hostmax_device::{DeviceReads, Patience};

use crate::op::OpKind;
use crate::ring::{Polling, UringIo};

/// How often a wait looks whether it was called off.
const POLL: Duration = Duration::from_millis(20);

/// Reads through a ring of its own per read, waiting at most [`Patience::read`] and giving up
/// at once when the patience is called off. A read given up on stays in flight in the kernel;
/// its buffer and its duplicate of the file are the kernel's until it completes (or until
/// the process exits).
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct UringReads;

impl DeviceReads for UringReads {
    fn read_exact_at(
        &self,
        file: &File,
        offset: u64,
        len: usize,
        patience: &Patience,
    ) -> io::Result<Vec<u8>> {
        let mut reader = BoundedReader::new(file, len)?;
        reader
            .read_exact_at(offset, len, patience)
            .map(<[u8]>::to_vec)
    }
}

/// One file's reads, one at a time, through a ring of its own with a buffer of a fixed size:
/// what [`UringReads`] does per read, kept for many (a read pass). After a read was given up
/// on, the reader is spent: every later read fails at once.
pub(crate) struct BoundedReader {
    io: UringIo,
    capacity: usize,
    spent: bool,
}

impl BoundedReader {
    /// A reader of `file` (duplicated: the caller keeps its own) for reads of up to
    /// `capacity` bytes.
    pub(crate) fn new(file: &File, capacity: usize) -> io::Result<BoundedReader> {
        let io = UringIo::new(vec![file.try_clone()?], &[capacity], 1, Polling::default())?;
        Ok(BoundedReader {
            io,
            capacity,
            spent: false,
        })
    }

    /// Reads exactly `len` bytes at `offset`, waiting as `patience` says (see
    /// [`DeviceReads::read_exact_at`] for the errors).
    pub(crate) fn read_exact_at(
        &mut self,
        offset: u64,
        len: usize,
        patience: &Patience,
    ) -> io::Result<&[u8]> {
        if self.spent {
            return Err(io::Error::other(
                "an earlier read of this file was given up",
            ));
        }
        let len32 = u32::try_from(len)
            .ok()
            .filter(|_| len <= self.capacity)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        if !self.io.push(0, OpKind::Read, 0, 0, len32, offset) {
            return Err(io::Error::other("an empty ring refused a read"));
        }
        let started = Instant::now();
        loop {
            self.io.submit_and_wait(1, Some(POLL))?;
            self.io.reap();
            if let Some(done) = self.io.reaped().first() {
                let result = done.result;
                if result < 0 {
                    return Err(io::Error::from_raw_os_error(-result));
                }
                if result as usize != len {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("read {result} of {len} bytes at {offset}"),
                    ));
                }
                // SAFETY: the one read in flight was just reaped; nothing else names it.
                return Ok(unsafe { self.io.buffer(0, 0, len) });
            }
            let called_off = patience.is_called_off();
            if called_off || started.elapsed() >= patience.read() {
                // Dropping an abandoned ring waits for nothing and leaks its buffer.
                self.io.abandon(0);
                self.spent = true;
                let what = format!("a read of {len} bytes at byte {offset}");
                return Err(if called_off {
                    Patience::called_off_error(&what)
                } else {
                    Patience::ran_out(patience.read(), &what)
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_is_there_and_refuses_a_short_read() {
        let path = std::env::temp_dir().join(format!("hostmax-uring-reads-{}", std::process::id()));
        let bytes: Vec<u8> = (0..=255u8).cycle().take(3 * 4096).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let patience = Patience::default();
        let got = UringReads.read_exact_at(&file, 4096, 4096, &patience);
        let short = UringReads.read_exact_at(&file, 8192, 8192, &patience);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got.unwrap(), bytes[4096..8192]);
        assert_eq!(short.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_read_that_never_completes_is_abandoned_within_its_patience() {
        // A pipe with no writer yet: a read of it waits until data comes, as a stalled device
        // does (the write end is kept open so it never sees end of file).
        let (read_end, write_end) = nix::unistd::pipe().unwrap();
        let file = File::from(read_end);
        let patience = Patience::new(Duration::from_millis(300), Duration::from_secs(1));
        let started = Instant::now();
        let err = UringReads
            .read_exact_at(&file, 0, 4096, &patience)
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{err}");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        let called_off = Patience::default().called_off_by(|| true);
        let err = UringReads
            .read_exact_at(&file, 0, 4096, &called_off)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted, "{err}");
        drop(write_end);
    }
}
