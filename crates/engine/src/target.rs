//! Opening probed targets for I/O (`O_DIRECT`, read-only unless the workload writes, `O_EXCL`
//! for block devices being written) and clearing ranges of them ([`discard`], [`zero_out`]).
//! What a target is ([`TargetInfo`]) is the device crate's.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;

use hostmax_device::{open_exclusive, verify_opened, Sysfs, TargetInfo, TargetKind};

use crate::EngineError;

/// Block-device ioctls (linux/fs.h).
mod ioctl {
    // _IO(0x12, 119) and _IO(0x12, 127), each taking a pointer to `u64 range[2]`
    // (start, length) that the kernel only reads.
    nix::ioctl_write_ptr_bad!(blk_discard, nix::request_code_none!(0x12, 119), [u64; 2]);
    nix::ioctl_write_ptr_bad!(blk_zeroout, nix::request_code_none!(0x12, 127), [u64; 2]);
}
use ioctl::{blk_discard, blk_zeroout};

/// Opens a probed target for the run: always `O_DIRECT`, and `O_NOATIME` where the kernel lets
/// this process ([`with_noatime`]); read-write and, for a block device,
/// `O_EXCL` (so no one else can mount or claim it meanwhile) when `write` is set. The
/// descriptor must be what `info` describes ([`verify_opened`]: the file's inode, the device's
/// number and what stands behind it), else [`EngineError::TargetChanged`].
///
/// An exclusive open that finds the device busy is retried for up to
/// [`hostmax_device::EXCLUSIVE_OPEN_PATIENCE`] (see [`open_exclusive`]); only a claim that
/// outlasts it is an error.
pub(crate) fn open(info: &TargetInfo, write: bool) -> Result<File, EngineError> {
    let exclusive = write && info.kind == TargetKind::BlockDevice;
    let opened = with_noatime(|noatime| {
        let mut opts = OpenOptions::new();
        opts.read(true).write(write).custom_flags(
            libc::O_DIRECT | libc::O_CLOEXEC | noatime | if exclusive { libc::O_EXCL } else { 0 },
        );
        if exclusive {
            open_exclusive(&opts, &info.path)
        } else {
            opts.open(&info.path)
        }
    });
    let file = opened.map_err(|source| EngineError::Open {
        path: info.path.clone(),
        source,
    })?;
    // What the run writes through must be what was probed (and checked): a path renamed onto
    // since is refused before any I/O.
    verify_opened(info, &file, &Sysfs::default())?;
    Ok(file)
}

/// Opens with `O_NOATIME` (passed to `open` as its flag), and without it where the kernel
/// refuses it (`EPERM`: only the file's owner or a process with `CAP_FOWNER` may ask).
///
/// Without it every direct read of a block device goes through the access-time check of the
/// device node (`touch_atime`, in the io-wq worker's path for a device that cannot read
/// without blocking): 70 ns of CPU per read on one zram device here, measured with
/// `perf record -a` against fio's `t/io_uring`, which opens its files with `O_NOATIME` too.
pub(crate) fn with_noatime(
    mut open: impl FnMut(libc::c_int) -> std::io::Result<File>,
) -> std::io::Result<File> {
    match open(libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(0),
        opened => opened,
    }
}

/// Waits (up to [`hostmax_device::EXCLUSIVE_OPEN_PATIENCE`]) until a block device this process wrote with
/// `O_EXCL` can be claimed again, then lets it go.
///
/// Closing a file that an io_uring ring had registered does not always release it at once: a
/// request the kernel finished on its io-wq threads may hold the ring's reference until the
/// ring's exit work runs on a kernel work queue, and the exclusive claim lasts until then.
pub(crate) fn await_release(info: &TargetInfo) {
    if info.kind != TargetKind::BlockDevice {
        return;
    }
    let mut probe = OpenOptions::new();
    probe
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_CLOEXEC);
    // An error here belongs to whoever opens the device next; this only waits.
    let _ = open_exclusive(&probe, &info.path);
}

/// How [`discard`] and [`zero_out`] clear a range.
#[derive(Clone, Copy)]
enum Clear {
    Discard,
    Zero,
}

/// Discards (TRIMs) `range` of a target, the purge before a benchmark: `BLKDISCARD` on a block
/// device, a punched hole (`fallocate(PUNCH_HOLE)`) in a regular file. Opens the target for
/// writing itself, with `O_EXCL` for a block device, so nobody can mount it meanwhile; the
/// caller must have checked that writing to it is allowed. `range` must be aligned to the
/// logical block size and lie within the target. A device that cannot discard fails with
/// `EOPNOTSUPP` in [`EngineError::Clear`]'s source: then use [`zero_out`].
pub fn discard(info: &TargetInfo, range: std::ops::Range<u64>) -> Result<(), EngineError> {
    clear(info, range, Clear::Discard)
}

/// Writes zeroes over `range` of a target (`BLKZEROOUT`, which the kernel turns into a
/// write-zeroes command or zero-page writes); in a regular file, punches a hole (reads then
/// return zeroes). Same rules as [`discard`].
pub fn zero_out(info: &TargetInfo, range: std::ops::Range<u64>) -> Result<(), EngineError> {
    clear(info, range, Clear::Zero)
}

/// Discards `len` bytes at `offset` of an open block device (`BLKDISCARD`), waiting for it:
/// the suite's purge, and the worker's trims on kernels without io_uring discard.
pub(crate) fn discard_now(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    let arg = [offset, len];
    // SAFETY: `file` is an open block device for the call; the ioctl reads the two u64s of
    // `arg`, a local that outlives the call, and writes nothing back.
    unsafe { blk_discard(file.as_raw_fd(), &arg) }
        .map(drop)
        .map_err(Into::into)
}

fn clear(info: &TargetInfo, range: std::ops::Range<u64>, how: Clear) -> Result<(), EngineError> {
    let what = match how {
        Clear::Discard => "discard",
        Clear::Zero => "zero out",
    };
    let err = |source: std::io::Error| EngineError::Clear {
        path: info.path.clone(),
        what,
        source,
    };
    let lbs = u64::from(info.logical_block_size.max(512));
    if range.start > range.end
        || range.end > info.size
        || !range.start.is_multiple_of(lbs)
        || !range.end.is_multiple_of(lbs)
    {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "range {}..{} is not within the target ({} bytes) or not aligned to its logical block size {lbs}",
                range.start, range.end, info.size
            ),
        )));
    }
    if range.is_empty() {
        return Ok(());
    }
    let file = open(info, true)?;
    let fd = file.as_raw_fd();
    match info.kind {
        TargetKind::BlockDevice => match how {
            Clear::Discard => discard_now(&file, range.start, range.end - range.start).map_err(err),
            Clear::Zero => {
                let arg = [range.start, range.end - range.start];
                // SAFETY: `fd` is an open block device for the life of `file`; the ioctl reads
                // the two u64s of `arg`, a local that outlives the call, and writes nothing back.
                unsafe { blk_zeroout(fd, &arg) }
                    .map(drop)
                    .map_err(|e| err(e.into()))
            }
        },
        TargetKind::RegularFile => nix::fcntl::fallocate(
            &file,
            nix::fcntl::FallocateFlags::FALLOC_FL_PUNCH_HOLE
                | nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE,
            range.start as libc::off_t,
            (range.end - range.start) as libc::off_t,
        )
        .map_err(|e| err(e.into())),
        // A kind of target the device crate learns later: nothing here knows how to clear it.
        _ => Err(err(std::io::ErrorKind::Unsupported.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_flags(file: &File) -> libc::c_int {
        // SAFETY: F_GETFL on a descriptor open for the call reads no memory of ours.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) }
    }

    #[test]
    fn targets_are_opened_without_access_time_updates_where_the_kernel_allows() {
        let path = std::env::temp_dir().join(format!("hostmax-noatime-{}", std::process::id()));
        std::fs::write(&path, [0u8; 4096]).unwrap();
        // This process owns the file: the kernel takes O_NOATIME.
        let file = with_noatime(|noatime| {
            OpenOptions::new()
                .read(true)
                .custom_flags(noatime)
                .open(&path)
        })
        .unwrap();
        assert_ne!(status_flags(&file) & libc::O_NOATIME, 0);
        // Where the kernel refuses it (EPERM: neither owner nor CAP_FOWNER), the same open
        // without it.
        let mut asked = Vec::new();
        let file = with_noatime(|noatime| {
            asked.push(noatime);
            match noatime {
                0 => File::open(&path),
                _ => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            }
        })
        .unwrap();
        assert_eq!(asked, [libc::O_NOATIME, 0]);
        assert_eq!(status_flags(&file) & libc::O_NOATIME, 0);
        // Any other failure is the open's own, not retried.
        let mut tries = 0;
        let missing = with_noatime(|_| {
            tries += 1;
            File::open(path.with_extension("missing"))
        });
        assert_eq!(missing.unwrap_err().kind(), std::io::ErrorKind::NotFound);
        assert_eq!(tries, 1);
        std::fs::remove_file(&path).unwrap();
    }
}
