//! Same media by any name: what storage a block device or a regular file reaches in the end
//! ([`Extent`]s of a [`Medium`]), followed through the kernel's own links rather than names.
//!
//! A loop device reaches its backing file (by device and inode, as the loop driver itself says:
//! [`loop_backing`]; a name is only the fallback where the driver cannot be asked) from
//! `loop/offset` for `loop/sizelimit` bytes; a partition reaches its disk from its `start`;
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

pub use crate::loop_status::{loop_backing, LoopBacking};
use crate::sysfs::{sorted_names, Sysfs};
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
pub struct MediaSources<'a> {
    /// Sysfs.
    pub sysfs: &'a Sysfs,
    /// The table of a dm device by number ([`read_dm_table`] on a real host).
    pub dm_table: &'a dyn Fn((u32, u32)) -> Option<Vec<DmSegment>>,
    /// A loop device's backing by kernel name and number ([`loop_backing`] on a real host;
    /// `None` falls back to stat'ing the name in `loop/backing_file`).
    pub loop_backing: &'a LoopBackingReader,
}

impl<'a> MediaSources<'a> {
    /// Stacked devices read from `sysfs`, dm tables from `dm_table` and loop backings from
    /// `loop_backing` ([`read_dm_table`] and [`loop_backing`] on a real host).
    pub fn new(
        sysfs: &'a Sysfs,
        dm_table: &'a dyn Fn((u32, u32)) -> Option<Vec<DmSegment>>,
        loop_backing: &'a LoopBackingReader,
    ) -> MediaSources<'a> {
        MediaSources {
            sysfs,
            dm_table,
            loop_backing,
        }
    }
}

/// How [`MediaSources`] asks a loop device's backing: by kernel name and device number.
pub type LoopBackingReader = dyn Fn(&str, (u32, u32)) -> Option<LoopBacking>;

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
        sorted_names(&self.sysfs.class_block(name).join("slaves"))
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
            // The driver's own identity of the backing first; the name the kernel shows (its
            // current path, trimmed, "(deleted)" marked) only where the driver cannot be asked.
            let driver = self.dev_of(name).and_then(|d| (self.loop_backing)(name, d));
            let meta = match driver {
                Some(_) => None,
                None => std::fs::metadata(&backing).ok(),
            };
            let below_dev = match driver {
                Some(LoopBacking::Block(dev)) => Some(dev),
                _ => meta
                    .as_ref()
                    .filter(|m| m.file_type().is_block_device())
                    .map(|m| (libc::major(m.rdev()), libc::minor(m.rdev()))),
            };
            if let Some(below) = below_dev.and_then(|dev| self.sysfs.kernel_name(dev)) {
                self.walk(&below, (s, e), stack, out, depth + 1);
                return;
            }
            let medium = match driver {
                Some(LoopBacking::File { dev, ino }) => Medium::File { dev, ino },
                _ => meta
                    .filter(|m| m.is_file())
                    .map(|m| Medium::File {
                        dev: m.dev(),
                        ino: m.ino(),
                    })
                    .unwrap_or_else(|| Medium::FileNamed(backing.clone())),
            };
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

/// Something on this host that uses media: a mount, a swap area, a device built on others.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MediaUser {
    /// What it is, for a message (`/dev/loop0, mounted at /mnt`).
    pub what: String,
    /// The block device at its top, if it is one (its kernel name).
    pub device: Option<String>,
    /// What it reaches.
    pub extents: Vec<Extent>,
}

impl MediaUser {
    /// A user named `what` in a message, the block device `device` at its top if it is one,
    /// reaching `extents`.
    pub fn new(what: impl Into<String>, device: Option<String>, extents: Vec<Extent>) -> MediaUser {
        MediaUser {
            what: what.into(),
            device,
            extents,
        }
    }
}

/// A mount as [`media_users`] needs it: the device number (anonymous `0:N` for btrfs and
/// the like), the source (`/dev/sdb1`), the mount point.
pub type MountedAt<'a> = ((u32, u32), &'a str, &'a Path);

/// An active swap area as [`media_users`] needs it: its path, its device number if it is a
/// block device, its `(st_dev, st_ino)` if it is a file.
pub type SwapArea<'a> = (&'a Path, Option<(u32, u32)>, Option<(u64, u64)>);

/// Everything on this host that uses media: each mounted block device (anonymous numbers are
/// looked up by a `/dev/` source), each active swap device or file, and each device built on
/// others (a `slaves/` entry: dm, md).
pub fn media_users(
    src: &MediaSources<'_>,
    mounts: &[MountedAt<'_>],
    swaps: &[SwapArea<'_>],
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
    for &(dev, source, mount_point) in mounts {
        let name = if dev.0 != 0 {
            src.sysfs.kernel_name(dev)
        } else if source.starts_with("/dev/") {
            std::fs::canonicalize(source)
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .filter(|n| src.sysfs.class_block(n).exists())
        } else {
            None
        };
        if let Some(name) = name {
            let what = format!("/dev/{name}, mounted at {}", mount_point.display());
            device_user(&mut users, name, what);
        }
    }
    for &(path, rdev, inode) in swaps {
        if let Some(name) = rdev.and_then(|d| src.sysfs.kernel_name(d)) {
            let what = format!("/dev/{name}, active swap");
            device_user(&mut users, name, what);
        } else if let Some((dev, ino)) = inode {
            users.push(MediaUser {
                what: format!("{}, an active swap file", path.display()),
                device: None,
                extents: vec![Extent {
                    medium: Medium::File { dev, ino },
                    start: 0,
                    end: u64::MAX,
                    label: path.display().to_string(),
                }],
            });
        }
    }
    for name in sorted_names(&src.sysfs.path("class/block")) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    const MIB: u64 = 1 << 20;

    /// A stand-in sysfs: each node `(name, dev, parent disk, attributes)` laid out as the
    /// kernel does (a partition inside its disk's directory, `class/block` and `dev/block`
    /// links to each).
    struct FakeSysfs(PathBuf);

    impl FakeSysfs {
        fn new(tag: &str) -> FakeSysfs {
            let root =
                std::env::temp_dir().join(format!("hostmax-media-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(root.join("class/block")).unwrap();
            fs::create_dir_all(root.join("dev/block")).unwrap();
            FakeSysfs(root)
        }

        fn node(&self, name: &str, dev: &str, parent: Option<&str>, attrs: &[(&str, &str)]) {
            let dir = match parent {
                Some(p) => self.0.join("devices").join(p).join(name),
                None => self.0.join("devices").join(name),
            };
            fs::create_dir_all(dir.join("slaves")).unwrap();
            fs::write(dir.join("dev"), format!("{dev}\n")).unwrap();
            if parent.is_some() {
                fs::write(dir.join("partition"), "1\n").unwrap();
            }
            for (rel, value) in attrs {
                let path = dir.join(rel);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                if rel.starts_with("slaves/") {
                    fs::create_dir_all(&path).unwrap();
                } else {
                    fs::write(&path, format!("{value}\n")).unwrap();
                }
            }
            std::os::unix::fs::symlink(&dir, self.0.join("class/block").join(name)).unwrap();
            std::os::unix::fs::symlink(&dir, self.0.join("dev/block").join(dev)).unwrap();
        }
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn mounted(dev: (u32, u32), at: &'static str) -> MountedAt<'static> {
        (dev, "", Path::new(at))
    }

    fn device(name: &str, dev: (u32, u32), size: u64) -> TargetInfo {
        TargetInfo {
            path: PathBuf::from(format!("/dev/{name}")),
            kind: TargetKind::BlockDevice,
            size,
            logical_block_size: 512,
            rdev: Some(dev),
            kernel_name: Some(name.to_string()),
            inode: None,
            media: None,
        }
    }

    /// The users a target shares media with, by what they are.
    fn shared_with(
        src: &MediaSources<'_>,
        target: &TargetInfo,
        users: &[MediaUser],
    ) -> Vec<String> {
        let (extents, stack) = src.target_extents(target);
        shared_media(&extents, &stack, &[], users)
            .into_iter()
            .map(|(u, _)| u.what.clone())
            .collect()
    }

    #[test]
    fn loop_devices_over_one_file_share_media_where_their_ranges_overlap() {
        let sys = FakeSysfs::new("loop");
        let image = sys.0.join("fs.img");
        fs::File::create(&image)
            .unwrap()
            .set_len(128 * MIB)
            .unwrap();
        let backing = image.display().to_string();
        let limit = (64 * MIB).to_string();
        let at = |mib: u64| (mib * MIB).to_string();
        sys.node(
            "loop0",
            "7:0",
            None,
            &[
                ("loop/backing_file", &backing),
                ("loop/offset", "0"),
                ("loop/sizelimit", &limit),
            ],
        );
        sys.node(
            "loop1",
            "7:1",
            None,
            &[
                ("loop/backing_file", &backing),
                ("loop/offset", &at(32)),
                ("loop/sizelimit", "0"),
            ],
        );
        sys.node(
            "loop2",
            "7:2",
            None,
            &[
                ("loop/backing_file", &backing),
                ("loop/offset", &at(64)),
                ("loop/sizelimit", "0"),
            ],
        );
        let sysfs = Sysfs::at(&sys.0);
        let no_tables = |_| None;
        let no_driver = |_: &str, _| None;
        let src = MediaSources {
            sysfs: &sysfs,
            dm_table: &no_tables,
            loop_backing: &no_driver,
        };
        let users = media_users(&src, &[mounted((7, 0), "/mnt")], &[]);
        assert_eq!(users.len(), 1, "{users:?}");
        assert_eq!(users[0].what, "/dev/loop0, mounted at /mnt");
        // From 32 MiB: overlaps the mounted first 64 MiB. From 64 MiB: apart.
        assert_eq!(
            shared_with(&src, &device("loop1", (7, 1), 96 * MIB), &users),
            vec!["/dev/loop0, mounted at /mnt"]
        );
        assert!(shared_with(&src, &device("loop2", (7, 2), 64 * MIB), &users).is_empty());
        // The file itself, by inode.
        let file = crate::target::probe(&image).unwrap();
        assert_eq!(shared_with(&src, &file, &users).len(), 1);
        // The mounted device itself is the caller's own reason, not shared media.
        assert!(shared_with(&src, &device("loop0", (7, 0), 64 * MIB), &users).is_empty());
        // A swap file is a user of its own inode.
        let swaps = [(image.as_path(), None, file.inode)];
        let users = media_users(&src, &[], &swaps);
        assert_eq!(
            shared_with(&src, &device("loop2", (7, 2), 64 * MIB), &users).len(),
            1
        );
    }

    #[test]
    fn partitions_dm_tables_and_luns_reach_their_disks() {
        let sys = FakeSysfs::new("stack");
        sys.node("vdb", "254:16", None, &[("serial", "lun-1")]);
        sys.node(
            "vdb1",
            "254:17",
            Some("vdb"),
            &[("start", "2048"), ("size", "204800")],
        );
        sys.node("vdc", "254:32", None, &[("serial", "lun-1")]);
        sys.node("vdd", "254:48", None, &[("serial", "lun-2")]);
        sys.node("loop3", "7:3", None, &[]);
        sys.node("dm-0", "253:0", None, &[("slaves/loop3", "")]);
        sys.node("dm-1", "253:1", None, &[("slaves/loop3", "")]);
        sys.node("dm-2", "253:2", None, &[("slaves/loop3", "")]);
        let sysfs = Sysfs::at(&sys.0);
        // dm-0: loop3's first 32 MiB; dm-1 from 16 MiB; dm-2 from 48 MiB (beside both).
        let tables = |dev: (u32, u32)| {
            let start = match dev.1 {
                0 => 0,
                1 => 32768,
                _ => 98304,
            };
            Some(parse_dm_table(&format!("0 65536 linear 7:3 {start}\n")))
        };
        let no_driver = |_: &str, _| None;
        let src = MediaSources {
            sysfs: &sysfs,
            dm_table: &tables,
            loop_backing: &no_driver,
        };
        let mounts = [mounted((254, 17), "/data"), mounted((253, 0), "/srv")];
        let users = media_users(&src, &mounts, &[]);
        // vdc is another path to vdb's LUN (same serial), whose partition is mounted.
        let on_vdc = shared_with(&src, &device("vdc", (254, 32), 1 << 30), &users);
        assert_eq!(on_vdc, vec!["/dev/vdb1, mounted at /data"]);
        assert!(shared_with(&src, &device("vdd", (254, 48), 1 << 30), &users).is_empty());
        // dm-1 overlaps the mounted dm-0 on loop3 (a device built on others is a user too:
        // dm-2 would be one, were it in dm-1's range); dm-2 sits beside both.
        let on_dm1 = shared_with(&src, &device("dm-1", (253, 1), 32 * MIB), &users);
        assert_eq!(on_dm1, vec!["/dev/dm-0, mounted at /srv"]);
        let on_dm2 = shared_with(&src, &device("dm-2", (253, 2), 32 * MIB), &users);
        assert_eq!(on_dm2, Vec::<String>::new());
        // Without a table every byte may land anywhere below: dm-2 then shares loop3.
        let no_tables = |_| None;
        let blind = MediaSources {
            sysfs: &sysfs,
            dm_table: &no_tables,
            loop_backing: &no_driver,
        };
        let users = media_users(&blind, &mounts, &[]);
        assert!(!shared_with(&blind, &device("dm-2", (253, 2), 32 * MIB), &users).is_empty());
        assert_eq!(
            parse_dm_table("0 2048 linear 7:3 4096\n2048 10 striped 2 8 7:4 0 7:5 0\n"),
            vec![
                DmSegment {
                    start: 0,
                    len: 2048 * 512,
                    linear: Some(((7, 3), 4096 * 512))
                },
                DmSegment {
                    start: 2048 * 512,
                    len: 10 * 512,
                    linear: None
                },
            ]
        );
    }
}
