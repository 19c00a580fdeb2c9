//! Targets: block devices and regular files, probed for size and logical block size, and
//! opened with `O_DIRECT` (read-only unless the workload writes).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::EngineError;

/// What kind of file a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A block device (`/dev/sdb`, `/dev/loop3`, `/dev/nvme0n1`).
    BlockDevice,
    /// A regular file, for unprivileged runs and the demo without root.
    RegularFile,
}

/// A target as probed before any I/O.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Canonical path (symlinks such as `/dev/disk/by-id/...` resolved).
    pub path: PathBuf,
    /// Block device or regular file.
    pub kind: TargetKind,
    /// Size in bytes (`BLKGETSIZE64` for a device).
    pub size: u64,
    /// Smallest I/O size and alignment `O_DIRECT` accepts (`BLKSSZGET` for a device).
    pub logical_block_size: u32,
    /// The device number (`major`, `minor`) of a block device.
    pub rdev: Option<(u32, u32)>,
    /// The kernel's name of a block device (`loop3`, `sdb`, `nvme0n1p1`), as in `/sys/class/block`.
    pub kernel_name: Option<String>,
}

impl TargetInfo {
    /// The whole-disk name in `/sys/block` whose `mq/*/cpu_list` applies (a partition's parent).
    pub fn sys_block_disk(&self) -> Option<String> {
        let name = self.kernel_name.as_ref()?;
        let class = Path::new("/sys/class/block").join(name);
        if class.join("partition").exists() {
            let resolved = std::fs::canonicalize(&class).ok()?;
            return resolved
                .parent()?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
        }
        Some(name.clone())
    }
}

/// Block-device ioctls (linux/fs.h).
mod ioctl {
    nix::ioctl_read!(blk_getsize64, 0x12, 114, u64);
    nix::ioctl_read_bad!(blk_sszget, 0x1268, libc::c_int);
    // _IO(0x12, 119) and _IO(0x12, 127), each taking a pointer to `u64 range[2]`
    // (start, length) that the kernel only reads.
    nix::ioctl_write_ptr_bad!(blk_discard, nix::request_code_none!(0x12, 119), [u64; 2]);
    nix::ioctl_write_ptr_bad!(blk_zeroout, nix::request_code_none!(0x12, 127), [u64; 2]);
}
use ioctl::{blk_discard, blk_getsize64, blk_sszget, blk_zeroout};

/// Probes a target without opening it for writing.
pub fn probe(path: &Path) -> Result<TargetInfo, EngineError> {
    let canonical = std::fs::canonicalize(path).map_err(|source| EngineError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let meta = std::fs::metadata(&canonical).map_err(|source| EngineError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let ft = meta.file_type();
    if ft.is_block_device() {
        let file = File::open(&canonical).map_err(|source| EngineError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let fd = file.as_raw_fd();
        let mut size: u64 = 0;
        let mut lbs: libc::c_int = 0;
        // SAFETY: `fd` is an open block device for the life of `file`; both ioctls write one
        // integer into the local they are given.
        unsafe {
            blk_getsize64(fd, &mut size).map_err(|e| EngineError::Open {
                path: path.to_path_buf(),
                source: e.into(),
            })?;
            blk_sszget(fd, &mut lbs).map_err(|e| EngineError::Open {
                path: path.to_path_buf(),
                source: e.into(),
            })?;
        }
        let rdev = meta.rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        let kernel_name = kernel_name_of(major, minor);
        Ok(TargetInfo {
            path: canonical,
            kind: TargetKind::BlockDevice,
            size,
            logical_block_size: lbs.max(512) as u32,
            rdev: Some((major, minor)),
            kernel_name,
        })
    } else if ft.is_file() {
        Ok(TargetInfo {
            logical_block_size: dio_alignment(&canonical).unwrap_or(512),
            path: canonical,
            kind: TargetKind::RegularFile,
            size: meta.len(),
            rdev: None,
            kernel_name: None,
        })
    } else {
        Err(EngineError::NotATarget {
            path: path.to_path_buf(),
            what: if ft.is_dir() {
                "a directory"
            } else if ft.is_char_device() {
                "a character device"
            } else {
                "neither a block device nor a regular file"
            },
        })
    }
}

/// The name under `/sys/dev/block/MAJ:MIN`, e.g. `loop3`.
fn kernel_name_of(major: u32, minor: u32) -> Option<String> {
    let link = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The `O_DIRECT` offset alignment of a regular file (`statx` `STATX_DIOALIGN`, Linux 6.1+).
fn dio_alignment(path: &Path) -> Option<u32> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero `statx` is a valid value of the plain C struct.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `stx` a writable statx for the call's duration.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    Some(stx.stx_dio_offset_align.max(512))
}

/// Opens a probed target for the run: always `O_DIRECT`; read-write and, for a block device,
/// `O_EXCL` (so no one else can mount or claim it meanwhile) when `write` is set.
///
/// An exclusive open that finds the device busy is retried for up to [`EXCLUSIVE_OPEN_PATIENCE`]
/// (see [`open_exclusive`]); only a claim that outlasts it is an error.
pub fn open(info: &TargetInfo, write: bool) -> Result<File, EngineError> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    let exclusive = write && info.kind == TargetKind::BlockDevice;
    opts.write(write)
        .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC | if exclusive { libc::O_EXCL } else { 0 });
    let opened = if exclusive {
        open_exclusive(&opts, &info.path)
    } else {
        opts.open(&info.path)
    };
    opened.map_err(|source| EngineError::Open {
        path: info.path.clone(),
        source,
    })
}

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

/// Waits (up to [`EXCLUSIVE_OPEN_PATIENCE`]) until a block device this process wrote with
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
    }
}
