//! Targets: block devices and regular files, probed ([`probe`]) for size and the alignment
//! `O_DIRECT` needs into a [`TargetInfo`], without opening them for writing.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sysfs::Sysfs;

/// What kind of file a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
    /// The whole disk in sysfs's `block/` whose queue map and settings apply to this block
    /// device (a partition's disk, else the device itself; [`Sysfs::whole_disk`]); `None` for
    /// a regular file.
    pub fn whole_disk(&self, sysfs: &Sysfs) -> Option<String> {
        self.kernel_name
            .as_deref()
            .map(|name| sysfs.whole_disk(name))
    }
}

/// Why a target could not be probed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The target could not be found, opened or asked its size.
    #[error("{}: {source}", path.display())]
    Open {
        /// The target as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The target is neither a block device nor a regular file.
    #[error("{}: is {what}; give a block device or a regular file", path.display())]
    NotATarget {
        /// The target as given.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
}

/// Block-device ioctls (linux/fs.h).
mod ioctl {
    nix::ioctl_read!(blk_getsize64, 0x12, 114, u64);
    nix::ioctl_read_bad!(blk_sszget, 0x1268, libc::c_int);
}
use ioctl::{blk_getsize64, blk_sszget};

/// Probes a target without opening it for writing (a block device is opened read-only for
/// its size and logical block size; its kernel name comes from [`Sysfs::default`]).
pub fn probe(path: &Path) -> Result<TargetInfo, ProbeError> {
    let open_error = |source: std::io::Error| ProbeError::Open {
        path: path.to_path_buf(),
        source,
    };
    let canonical = std::fs::canonicalize(path).map_err(open_error)?;
    let meta = std::fs::metadata(&canonical).map_err(open_error)?;
    let ft = meta.file_type();
    if ft.is_block_device() {
        let file = File::open(&canonical).map_err(open_error)?;
        let fd = file.as_raw_fd();
        let mut size: u64 = 0;
        let mut lbs: libc::c_int = 0;
        // SAFETY: `fd` is an open block device for the life of `file`; both ioctls write one
        // integer into the local they are given.
        unsafe {
            blk_getsize64(fd, &mut size).map_err(|e| open_error(e.into()))?;
            blk_sszget(fd, &mut lbs).map_err(|e| open_error(e.into()))?;
        }
        let rdev = meta.rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        Ok(TargetInfo {
            path: canonical,
            kind: TargetKind::BlockDevice,
            size,
            logical_block_size: lbs.max(512) as u32,
            rdev: Some((major, minor)),
            kernel_name: Sysfs::default().kernel_name((major, minor)),
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
        Err(ProbeError::NotATarget {
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
