//! Targets: block devices and regular files, probed ([`probe`]) for size and the alignment
//! `O_DIRECT` needs into a [`TargetInfo`], without opening them for writing.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::links::{follow_trusted_links, untrusted, UntrustedLink};
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
#[non_exhaustive]
pub struct TargetInfo {
    /// Canonical path (symlinks such as `/dev/disk/by-id/...` resolved; never through a link
    /// another user controls: [`probe`]).
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
    /// A regular file's `(st_dev, st_ino)` as probed: the file every check judged, which the
    /// descriptor a run writes through must still be ([`verify_opened`]).
    #[serde(default)]
    pub inode: Option<(u64, u64)>,
    /// What stands behind a block device's number (a loop
    /// device's backing file, a WWID or serial), so a number reused for another device is
    /// told apart by [`verify_opened`].
    #[serde(default)]
    pub media: Option<String>,
}

impl TargetInfo {
    /// A target at `path` of `kind`, `size` bytes, taking `O_DIRECT` I/O in multiples of
    /// `logical_block_size`, with no device number, kernel name, inode or media (set them
    /// with [`TargetInfo::with_device`] or on the value). [`probe`] fills in everything; this
    /// is for a target described before it exists, and for tests.
    pub fn new(
        path: impl Into<PathBuf>,
        kind: TargetKind,
        size: u64,
        logical_block_size: u32,
    ) -> TargetInfo {
        TargetInfo {
            path: path.into(),
            kind,
            size,
            logical_block_size,
            rdev: None,
            kernel_name: None,
            inode: None,
            media: None,
        }
    }

    /// The same target, as the block device numbered `rdev` that the kernel calls
    /// `kernel_name` (`loop3`, `sdb1`).
    #[must_use]
    pub fn with_device(mut self, rdev: (u32, u32), kernel_name: impl Into<String>) -> TargetInfo {
        self.rdev = Some(rdev);
        self.kernel_name = Some(kernel_name.into());
        self
    }

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
    /// The path goes through a symbolic link another user controls ([`follow_trusted_links`]):
    /// it is not followed, so nothing it leads to is probed, checked or written.
    #[error("{}: {link}", path.display())]
    UntrustedLink {
        /// The target as given.
        path: PathBuf,
        /// The link, its owner and its directory.
        link: UntrustedLink,
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
///
/// The path is resolved first, every symbolic link followed except one another user controls
/// (a link in a sticky, world-writable directory such as `/tmp` that belongs to neither this
/// user nor the directory's owner: [`ProbeError::UntrustedLink`], [`follow_trusted_links`]),
/// and what it resolved to is opened with no link followed at all, so one planted meanwhile is
/// not either. [`TargetInfo::path`] is that resolved path.
pub fn probe(path: &Path) -> Result<TargetInfo, ProbeError> {
    let open_error = |source: std::io::Error| ProbeError::Open {
        path: path.to_path_buf(),
        source,
    };
    let canonical = follow_trusted_links(path).map_err(|e| match untrusted(&e) {
        Some(link) => ProbeError::UntrustedLink {
            path: path.to_path_buf(),
            link,
        },
        None => open_error(e),
    })?;
    let meta = std::fs::metadata(&canonical).map_err(open_error)?;
    let ft = meta.file_type();
    if !ft.is_block_device() && !ft.is_file() {
        return Err(not_a_target(path, ft));
    }
    // Everything recorded comes from one descriptor: a path renamed onto meanwhile cannot
    // lend its size to another file's identity.
    let file = open_resolved(&canonical).map_err(open_error)?;
    let meta = file.metadata().map_err(open_error)?;
    let ft = meta.file_type();
    if ft.is_block_device() {
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
        let sysfs = Sysfs::default();
        let kernel_name = sysfs.kernel_name((major, minor));
        Ok(TargetInfo {
            path: canonical,
            kind: TargetKind::BlockDevice,
            size,
            logical_block_size: lbs.max(512) as u32,
            rdev: Some((major, minor)),
            media: kernel_name
                .as_deref()
                .and_then(|n| media_identity(&sysfs, n)),
            kernel_name,
            inode: None,
        })
    } else if ft.is_file() {
        Ok(TargetInfo {
            logical_block_size: dio_alignment(&canonical).unwrap_or(512),
            path: canonical,
            kind: TargetKind::RegularFile,
            size: meta.len(),
            rdev: None,
            kernel_name: None,
            inode: Some((meta.dev(), meta.ino())),
            media: None,
        })
    } else {
        Err(not_a_target(path, ft))
    }
}

/// Opens `resolved` (a path with no link in it) read-only, following no link on the way
/// (`openat2` with `RESOLVE_NO_SYMLINKS`): a link put in its place after it was resolved fails
/// the open (`ELOOP`) instead of leading elsewhere. Where the kernel has no `openat2` (before
/// 5.6, or a seccomp filter that does not know it), a plain open: the resolution already
/// refused links another user controls.
fn open_resolved(resolved: &Path) -> std::io::Result<File> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let how = OpenHow::new()
        .flags(flags)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    match nix::fcntl::openat2(nix::fcntl::AT_FDCWD, resolved, how) {
        Ok(fd) => Ok(File::from(fd)),
        Err(nix::errno::Errno::ENOSYS | nix::errno::Errno::EPERM) => std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(resolved),
        Err(e) => Err(e.into()),
    }
}

fn not_a_target(path: &Path, ft: std::fs::FileType) -> ProbeError {
    ProbeError::NotATarget {
        path: path.to_path_buf(),
        what: if ft.is_dir() {
            "a directory"
        } else if ft.is_char_device() {
            "a character device"
        } else {
            "neither a block device nor a regular file"
        },
    }
}

/// A descriptor opened on a target's path is not what was probed and checked: the path was
/// renamed onto, or the device behind a number replaced, in between.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}: opened {opened}, not the {checked} that was checked (renamed or replaced meanwhile); nothing was written to it: check what is there and run again",
    path.display()
)]
#[non_exhaustive]
pub struct TargetChanged {
    /// The target's path.
    pub path: PathBuf,
    /// What the checks judged.
    pub checked: String,
    /// What the descriptor leads to.
    pub opened: String,
}

impl TargetChanged {
    /// Whether `now` (a later probe of the same path) is another target than `checked`: kind,
    /// device number, what stands behind it, or a file's inode differ. `None` when they are
    /// the same target (sizes may differ: a file can grow).
    pub fn between(checked: &TargetInfo, now: &TargetInfo) -> Option<TargetChanged> {
        let same = checked.kind == now.kind
            && checked.rdev == now.rdev
            && (checked.inode.is_none() || checked.inode == now.inode)
            && (checked.media.is_none() || checked.media == now.media);
        (!same).then(|| TargetChanged {
            path: checked.path.clone(),
            checked: describe_target(checked),
            opened: describe_target(now),
        })
    }
}

/// What a descriptor (or a probed target) is, in words: `file DEV:INO`, `block device
/// MAJ:MIN` with what stands behind it.
fn describe_node(kind: &str, id: &str, media: Option<&str>) -> String {
    match media {
        Some(m) => format!("{kind} {id} ({m})"),
        None => format!("{kind} {id}"),
    }
}

fn describe_target(t: &TargetInfo) -> String {
    match (t.kind, t.rdev, t.inode) {
        (TargetKind::BlockDevice, Some((ma, mi)), _) => {
            describe_node("block device", &format!("{ma}:{mi}"), t.media.as_deref())
        }
        (TargetKind::RegularFile, _, Some((dev, ino))) => {
            describe_node("file", &format!("{dev}:{ino} (device:inode)"), None)
        }
        _ => "target".to_string(),
    }
}

/// Checks that `file`, opened on `target`'s path, is the target that was probed and checked:
/// a regular file with the same `(st_dev, st_ino)`, or the block device with the same number
/// and the same thing behind it ([`TargetInfo::media`], read from `sysfs` while `file` holds
/// the device, so it cannot be torn down and set up again meanwhile). A target probed with no
/// identity (built by hand) only has to be of the same kind.
pub fn verify_opened(target: &TargetInfo, file: &File, sysfs: &Sysfs) -> Result<(), TargetChanged> {
    let changed = |opened: String| TargetChanged {
        path: target.path.clone(),
        checked: describe_target(target),
        opened,
    };
    let meta = file
        .metadata()
        .map_err(|e| changed(format!("a descriptor that cannot be looked at ({e})")))?;
    let ft = meta.file_type();
    match target.kind {
        TargetKind::RegularFile if ft.is_file() => {
            let now = (meta.dev(), meta.ino());
            match target.inode {
                Some(then) if then != now => Err(changed(describe_node(
                    "file",
                    &format!("{}:{} (device:inode)", now.0, now.1),
                    None,
                ))),
                _ => Ok(()),
            }
        }
        TargetKind::BlockDevice if ft.is_block_device() => {
            let now = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
            let media = sysfs
                .kernel_name(now)
                .and_then(|n| media_identity(sysfs, &n));
            let same_number = target.rdev.is_none_or(|then| then == now);
            let same_media = target.media.is_none() || target.media == media;
            if same_number && same_media {
                Ok(())
            } else {
                Err(changed(describe_node(
                    "block device",
                    &format!("{}:{}", now.0, now.1),
                    media.as_deref(),
                )))
            }
        }
        _ => Err(changed(if ft.is_file() {
            format!("file {}:{} (device:inode)", meta.dev(), meta.ino())
        } else if ft.is_block_device() {
            format!(
                "block device {}:{}",
                libc::major(meta.rdev()),
                libc::minor(meta.rdev())
            )
        } else {
            "neither a block device nor a regular file".to_string()
        })),
    }
}

/// What stands behind block device `name`'s number, so that a number reused for another
/// device (a loop device detached and set up again over another file) is told apart: the
/// loop device's backing file (`dev:inode` and offset), else its WWID or serial.
pub(crate) fn media_identity(sysfs: &Sysfs, name: &str) -> Option<String> {
    let attr = |rel: &str| {
        sysfs
            .value(Path::new("class/block").join(name).join(rel))
            .filter(|v| !v.is_empty())
    };
    if let Some(backing) = attr("loop/backing_file") {
        // The driver's own identity of the file; its trimmed name only where it cannot say.
        let file = crate::loop_status::loop_backing_of(sysfs, name)
            .map(|b| b.describe())
            .or_else(|| {
                std::fs::metadata(&backing)
                    .map(|m| format!("{}:{}", m.dev(), m.ino()))
                    .ok()
            })
            .unwrap_or(backing);
        let offset = attr("loop/offset").unwrap_or_else(|| "0".into());
        return Some(format!("loop over file {file} at offset {offset}"));
    }
    ["wwid", "device/wwid"]
        .iter()
        .find_map(|a| attr(a).map(|w| format!("wwid {w}")))
        .or_else(|| {
            ["serial", "device/serial"]
                .iter()
                .find_map(|a| attr(a).map(|s| format!("serial {s}")))
        })
}

/// The `O_DIRECT` offset alignment of a regular file (`statx` `STATX_DIOALIGN`, Linux 6.1+).
fn dio_alignment(path: &Path) -> Option<u32> {
    let stx = statx(path, 0, libc::STATX_DIOALIGN)?;
    if stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    Some(stx.stx_dio_offset_align.max(512))
}

/// `statx(2)` of `path` (links followed) with `flags` (`AT_STATX_DONT_SYNC`, ...) asking for
/// `mask`; `None` when it fails.
pub(crate) fn statx(path: &Path, flags: libc::c_int, mask: libc::c_uint) -> Option<libc::statx> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero `statx` is a valid value of the plain C struct.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `stx` a writable statx for the call's duration.
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), flags, mask, &mut stx) };
    (rc == 0).then_some(stx)
}
