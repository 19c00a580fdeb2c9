//! Same media by any name: what storage a block device or a regular file reaches in the end
//! ([`Extent`]s of a [`Medium`]), followed through the kernel's own links rather than names.
//!
//! A loop device reaches its backing file (by device and inode: `loop/backing_file`, stat'ed)
//! from `loop/offset` for `loop/sizelimit` bytes; a partition reaches its disk from its `start`;
//! a device-mapper device reaches its `slaves/` (the exact ranges of `linear` tables, as
//! `dmsetup table` gives them; the whole slave for any other table, or when the table cannot be
//! read); md and other stacked devices reach their whole `slaves/`; a whole disk is itself and,
//! where the kernel gives one, its LUN (`wwid`, else `serial`: two paths to one LUN are one
//! medium). A regular file is its inode.
//!
//! [`media_users`] lists what uses media on this host: every mounted block device (`/` among
//! them), every active swap device or file, and every device built on others (dm, md: its
//! `slaves/`). [`shared_media`] says which of them a target's writes would reach: two extents
//! of one medium whose byte ranges overlap. Ranges that do not overlap are apart (a second loop
//! device over an unused part of a mounted image file, a dm-linear device beside another on
//! one disk), so the rule refuses what would corrupt and nothing more.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::sysfs::Sysfs;
use crate::target::{TargetInfo, TargetKind};

/// How deep stacked devices are followed (loop over a file inside a mounted loop over dm ...).
const MAX_DEPTH: usize = 16;

/// The storage under everything: what two names must share to be the same media.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Medium {
    /// A regular file, by `st_dev` and inode.
    File {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
    /// A loop device's backing file that can no longer be looked up (deleted): by the name
    /// the kernel shows.
    FileNamed(String),
    /// A whole disk (no device below it), by device number.
    Disk((u32, u32)),
    /// A logical unit, by WWID (or serial where it has no WWID): every path to it.
    Lun(String),
}

/// A byte range of one [`Medium`], with the words that name it in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    /// What is reached.
    pub medium: Medium,
    /// First byte.
    pub start: u64,
    /// One past the last byte (`u64::MAX`: to the end, however long it grows).
    pub end: u64,
    /// How a message names the medium (`/dev/shm/fs.img`, `vdb (serial hostmax-lun)`).
    pub label: String,
}

impl Extent {
    fn overlaps(&self, other: &Extent) -> bool {
        self.medium == other.medium && self.start < other.end && other.start < self.end
    }
}

/// One segment of a device-mapper table: `len` bytes at `start` of the dm device map to the
/// device numbered `dev` at `offset` (a `linear` target); `None` for any other target type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmSegment {
    /// First byte in the dm device.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// For a `linear` target: the device below and the byte there.
    pub linear: Option<((u32, u32), u64)>,
}

/// Parses `dmsetup table` output (`START LEN linear MAJ:MIN OFFSET`, in 512-byte sectors).
pub fn parse_dm_table(text: &str) -> Vec<DmSegment> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let start = f.first()?.parse::<u64>().ok()?.checked_mul(512)?;
            let len = f.get(1)?.parse::<u64>().ok()?.checked_mul(512)?;
            let linear = (f.get(2) == Some(&"linear"))
                .then(|| {
                    let (maj, min) = f.get(3)?.split_once(':')?;
                    let offset = f.get(4)?.parse::<u64>().ok()?.checked_mul(512)?;
                    Some(((maj.parse().ok()?, min.parse().ok()?), offset))
                })
                .flatten();
            Some(DmSegment { start, len, linear })
        })
        .collect()
}

/// The table of dm device `dev` from `dmsetup table` (`None` where dmsetup is missing or says
/// nothing: then the whole of every slave counts).
pub fn read_dm_table(dev: (u32, u32)) -> Option<Vec<DmSegment>> {
    let out = std::process::Command::new("dmsetup")
        .args(["table", "-j", &dev.0.to_string(), "-m", &dev.1.to_string()])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let table = parse_dm_table(&String::from_utf8_lossy(&out.stdout));
    (out.status.success() && !table.is_empty()).then_some(table)
}

/// Where stacked devices are read from: sysfs, and the reader of dm tables.
pub struct MediaSources<'a> {
    /// Sysfs.
    pub sysfs: &'a Sysfs,
    /// The table of a dm device by number ([`read_dm_table`] on a real host).
    pub dm_table: &'a dyn Fn((u32, u32)) -> Option<Vec<DmSegment>>,
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl MediaSources<'_> {
    fn attr(&self, name: &str, rel: &str) -> Option<String> {
        self.sysfs
            .value(Path::new("class/block").join(name).join(rel))
            .filter(|v| !v.is_empty())
    }

    fn number(&self, name: &str, rel: &str) -> Option<u64> {
        self.attr(name, rel)?.parse().ok()
    }

    fn dev_of(&self, name: &str) -> Option<(u32, u32)> {
        parse_dev(&self.attr(name, "dev")?)
    }

    fn slaves(&self, name: &str) -> Vec<String> {
        list_names(&self.sysfs.class_block(name).join("slaves"))
    }

    /// The extents block device `name`'s bytes `range` reach, and every device passed on the
    /// way (`name` first) into `stack`.
    pub fn device_extents(
        &self,
        name: &str,
        range: (u64, u64),
        stack: &mut Vec<String>,
    ) -> Vec<Extent> {
        let mut out = Vec::new();
        self.walk(name, range, stack, &mut out, 0);
        out
    }

    fn walk(
        &self,
        name: &str,
        (start, end): (u64, u64),
        stack: &mut Vec<String>,
        out: &mut Vec<Extent>,
        depth: usize,
    ) {
        if start >= end {
            return;
        }
        if !stack.iter().any(|s| s == name) {
            stack.push(name.to_string());
        }
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(backing) = self.attr(name, "loop/backing_file") {
            let offset = self.number(name, "loop/offset").unwrap_or(0);
            let limit = self.number(name, "loop/sizelimit").unwrap_or(0);
            let end = if limit == 0 { end } else { end.min(limit) };
            if start >= end {
                return;
            }
            let (s, e) = (start.saturating_add(offset), end.saturating_add(offset));
            // The kernel shows a backing file's current path (renames follow it) and marks a
            // deleted one: stat the path for its inode where it is still there.
            let meta = std::fs::metadata(&backing).ok();
            if let Some(m) = meta.as_ref().filter(|m| m.file_type().is_block_device()) {
                let dev = (libc::major(m.rdev()), libc::minor(m.rdev()));
                if let Some(below) = self.sysfs.kernel_name(dev) {
                    self.walk(&below, (s, e), stack, out, depth + 1);
                    return;
                }
            }
            let medium = meta
                .filter(|m| m.is_file())
                .map(|m| Medium::File {
                    dev: m.dev(),
                    ino: m.ino(),
                })
                .unwrap_or_else(|| Medium::FileNamed(backing.clone()));
            out.push(Extent {
                medium,
                start: s,
                end: e,
                label: backing,
            });
            return;
        }
        if let Some(disk) = self.sysfs.partition_disk(name) {
            let first = self.number(name, "start").unwrap_or(0).saturating_mul(512);
            let size = self.number(name, "size").map(|s| s.saturating_mul(512));
            let end = size.map_or(end, |s| end.min(s));
            self.walk(
                &disk,
                (start.saturating_add(first), end.saturating_add(first)),
                stack,
                out,
                depth + 1,
            );
            return;
        }
        let slaves = self.slaves(name);
        if !slaves.is_empty() {
            let table = name
                .starts_with("dm-")
                .then(|| self.dev_of(name).and_then(|d| (self.dm_table)(d)))
                .flatten()
                .filter(|t| t.iter().all(|s| s.linear.is_some()));
            match table {
                Some(segments) => {
                    for seg in segments {
                        let Some((dev, offset)) = seg.linear else {
                            continue;
                        };
                        let (s, e) = (
                            start.max(seg.start),
                            end.min(seg.start.saturating_add(seg.len)),
                        );
                        if s >= e {
                            continue;
                        }
                        let Some(below) = self.sysfs.kernel_name(dev) else {
                            continue;
                        };
                        let shift = |x: u64| x - seg.start + offset;
                        self.walk(&below, (shift(s), shift(e)), stack, out, depth + 1);
                    }
                }
                // md, bcache, striped or encrypted dm: any byte may land anywhere below.
                None => {
                    for slave in slaves {
                        self.walk(&slave, (0, u64::MAX), stack, out, depth + 1);
                    }
                }
            }
            return;
        }
        // A whole disk: itself, and the LUN behind it where the kernel names one.
        let lun = ["wwid", "device/wwid"]
            .iter()
            .find_map(|a| self.attr(name, a).map(|w| format!("wwid {w}")))
            .or_else(|| {
                ["serial", "device/serial"]
                    .iter()
                    .find_map(|a| self.attr(name, a).map(|s| format!("serial {s}")))
            });
        if let Some(dev) = self.dev_of(name) {
            out.push(Extent {
                medium: Medium::Disk(dev),
                start,
                end,
                label: format!("/dev/{name}"),
            });
        }
        if let Some(lun) = lun {
            out.push(Extent {
                medium: Medium::Lun(lun.clone()),
                start,
                end,
                label: format!("the LUN of /dev/{name} ({lun})"),
            });
        }
    }

    /// The extents `target` reaches, and the block devices passed on the way (the target and
    /// everything below it).
    pub fn target_extents(&self, target: &TargetInfo) -> (Vec<Extent>, Vec<String>) {
        let mut stack = Vec::new();
        let extents = match (target.kind, &target.kernel_name, target.inode) {
            (TargetKind::BlockDevice, Some(name), _) => {
                self.device_extents(name, (0, target.size.max(1)), &mut stack)
            }
            (TargetKind::RegularFile, _, Some((dev, ino))) => vec![Extent {
                medium: Medium::File { dev, ino },
                start: 0,
                end: target.size.max(1),
                label: target.path.display().to_string(),
            }],
            (TargetKind::RegularFile, _, None) => match std::fs::metadata(&target.path) {
                Ok(m) => vec![Extent {
                    medium: Medium::File {
                        dev: m.dev(),
                        ino: m.ino(),
                    },
                    start: 0,
                    end: target.size.max(1),
                    label: target.path.display().to_string(),
                }],
                Err(_) => Vec::new(),
            },
            _ => Vec::new(),
        };
        (extents, stack)
    }
}

fn list_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Something on this host that uses media: a mount, a swap area, a device built on others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaUser {
    /// What it is, for a message (`/dev/loop0, mounted at /mnt`).
    pub what: String,
    /// The block device at its top, if it is one (its kernel name).
    pub device: Option<String>,
    /// What it reaches.
    pub extents: Vec<Extent>,
}

/// Everything on this host that uses media: each mounted block device (`mounts`: `(device
/// number, source, mount point)`; anonymous numbers are looked up by a `/dev/` source), each
/// active swap device or file (`swaps`: `(path, device number, (dev, inode))`), and each device
/// built on others (a `slaves/` entry: dm, md).
pub fn media_users(
    src: &MediaSources<'_>,
    mounts: &[crate::safety::MountEntry],
    swaps: &[crate::safety::SwapEntry],
) -> Vec<MediaUser> {
    let mut users: Vec<MediaUser> = Vec::new();
    let device_user = |users: &mut Vec<MediaUser>, name: String, what: String| {
        if users
            .iter()
            .any(|u| u.device.as_deref() == Some(name.as_str()))
        {
            return;
        }
        let mut stack = Vec::new();
        let extents = src.device_extents(&name, (0, u64::MAX), &mut stack);
        users.push(MediaUser {
            what,
            device: Some(name),
            extents,
        });
    };
    for m in mounts {
        let name = if m.dev.0 != 0 {
            src.sysfs.kernel_name(m.dev)
        } else if m.source.starts_with("/dev/") {
            std::fs::canonicalize(&m.source)
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .filter(|n| src.sysfs.class_block(n).exists())
        } else {
            None
        };
        if let Some(name) = name {
            let what = format!("/dev/{name}, mounted at {}", m.mount_point.display());
            device_user(&mut users, name, what);
        }
    }
    for s in swaps {
        if let Some(name) = s.rdev.and_then(|d| src.sysfs.kernel_name(d)) {
            let what = format!("/dev/{name}, active swap");
            device_user(&mut users, name, what);
        } else if let Some((dev, ino)) = s.inode {
            users.push(MediaUser {
                what: format!("{}, an active swap file", s.path.display()),
                device: None,
                extents: vec![Extent {
                    medium: Medium::File { dev, ino },
                    start: 0,
                    end: u64::MAX,
                    label: s.path.display().to_string(),
                }],
            });
        }
    }
    for name in list_names(&src.sysfs.path("class/block")) {
        let below = src.slaves(&name);
        if !below.is_empty() {
            let what = format!("/dev/{name}, built on {}", below.join(","));
            device_user(&mut users, name, what);
        }
    }
    users
}

/// Which `users` share media with a target that reaches `extents` through the devices
/// `stack` (itself and those below it): `(user, label of the shared medium)`, each user once.
/// A user whose top device is in `stack` (the target itself, or a device it is built on) or
/// in `own` (the target's partitions: named by the caller's own reasons) is not counted.
pub fn shared_media<'u>(
    extents: &[Extent],
    stack: &[String],
    own: &[String],
    users: &'u [MediaUser],
) -> Vec<(&'u MediaUser, String)> {
    let mut found = Vec::new();
    for user in users {
        if let Some(top) = &user.device {
            if stack.contains(top) || own.contains(top) {
                continue;
            }
        }
        let hit = extents.iter().find_map(|mine| {
            user.extents
                .iter()
                .find(|theirs| mine.overlaps(theirs))
                .map(|_| mine)
        });
        if let Some(mine) = hit {
            found.push((user, mine.label.clone()));
        }
    }
    found
}

/// What stands behind block device `name`'s number, so that a number reused for another
/// device (a loop device detached and set up again over another file) is told apart: the
/// loop device's backing file (`dev:inode` and offset), else its WWID or serial.
pub fn media_identity(sysfs: &Sysfs, name: &str) -> Option<String> {
    let attr = |rel: &str| {
        sysfs
            .value(Path::new("class/block").join(name).join(rel))
            .filter(|v| !v.is_empty())
    };
    if let Some(backing) = attr("loop/backing_file") {
        let file = std::fs::metadata(&backing)
            .map(|m| format!("{}:{}", m.dev(), m.ino()))
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
