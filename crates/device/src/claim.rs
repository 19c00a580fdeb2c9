//! Exclusive claims on block devices: [`open_exclusive`] opens with `O_EXCL` and waits out a
//! claim of a moment ([`EXCLUSIVE_OPEN_PATIENCE`]). The write-safety checks use it to see
//! whether anything else claims a device; the engine, to hold the devices it writes.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long an exclusive open of a block device keeps retrying while the device is busy.
///
/// A claim can outlive its opener for a moment: the last run's registered files are sometimes
/// released by the kernel's io_uring exit work after the run has returned, and other tools
/// that open a disk exclusively for an instant (partition tools, udev helpers) do the same.
/// Such claims last milliseconds; a mount, an md or dm member or a running program lasts far
/// longer, and is still refused.
pub const EXCLUSIVE_OPEN_PATIENCE: Duration = Duration::from_millis(500);

/// Opens `path` with `options` (which must include `O_EXCL`), retrying while the open fails with
/// `EBUSY` for up to [`EXCLUSIVE_OPEN_PATIENCE`]. Any other error, or `EBUSY` after that long,
/// is returned as it came.
pub fn open_exclusive(options: &OpenOptions, path: &Path) -> std::io::Result<File> {
    let deadline = Instant::now() + EXCLUSIVE_OPEN_PATIENCE;
    let mut pause = Duration::from_millis(1);
    loop {
        match options.open(path) {
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() + pause < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}
