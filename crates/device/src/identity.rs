//! What a target is, whatever it is called today ([`identify`]): the kernel's stable traits of
//! a block device (WWID, serial, the `/dev/disk/by-id` names that lead to it, a loop device's
//! backing file), a regular file's inode, and the size, plus (for a checkpoint taken before
//! writing) the signatures found on it ([`identify_with_signatures`]). A tool that comes back
//! to a device later compares identities: a checkpoint refuses a path that now leads
//! elsewhere; reports carry it per device.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::signature::probe_device;
use crate::sysfs::Sysfs;
use crate::target::{TargetInfo, TargetKind};

/// What a device is, whatever its name today: the stable identity the kernel gives it where
/// it has one, else its size ([`identify`] reads it). Two identities are compared by
/// [`DeviceIdentity::differs`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeviceIdentity {
    /// The World Wide (Unique) Identifier (`/sys/class/block/DEV/wwid` or `device/wwid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwid: Option<String>,
    /// The serial number (`serial` or `device/serial`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The names under `/dev/disk/by-id` that lead to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_id: Vec<String>,
    /// A loop device's backing file (`loop/backing_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    /// A loop device's backing as the loop driver reports it: the file's `device:inode` (or
    /// `block MAJ:MIN`), so a file re-made under the same name and size is another file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_inode: Option<String>,
    /// A regular file's `device:inode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inode: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// The on-disk signatures found when it was first seen (shown, not compared: a write test
    /// changes them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
}

impl DeviceIdentity {
    /// Why `now` is not the device `self` recorded, naming the first stable trait both have
    /// that differs (WWID, serial, backing file, inode, size); `None` when nothing tells them
    /// apart.
    pub fn differs(&self, now: &DeviceIdentity) -> Option<String> {
        // A backing file by the driver's inode, named by its path where the name is known.
        let named = |id: &DeviceIdentity| {
            id.backing_inode.as_ref().map(|ino| match &id.backing_file {
                Some(name) => format!("{name} ({ino})"),
                None => ino.clone(),
            })
        };
        // The same inode is the same file, whatever it is called now.
        let (then_backing, now_backing) = if self.backing_inode == now.backing_inode {
            (self.backing_inode.clone(), now.backing_inode.clone())
        } else {
            (named(self), named(now))
        };
        let pairs = [
            ("WWID", &self.wwid, &now.wwid),
            ("serial", &self.serial, &now.serial),
            ("backing file", &then_backing, &now_backing),
            ("backing file", &self.backing_file, &now.backing_file),
            ("file", &self.inode, &now.inode),
        ];
        for (what, then, today) in pairs {
            if let (Some(a), Some(b)) = (then, today) {
                if a != b {
                    return Some(format!("{what} {a}, now {what} {b}"));
                }
                // A stable trait that matches settles it.
                return (self.size != now.size)
                    .then(|| format!("{} bytes, now {} bytes", self.size, now.size));
            }
        }
        (self.size != now.size).then(|| format!("{} bytes, now {} bytes", self.size, now.size))
    }
}

/// The first non-empty line of a sysfs attribute (`rel` to the sysfs root).
fn sysfs_text(sysfs: &Sysfs, rel: &Path) -> Option<String> {
    let text = sysfs.read(rel).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

/// The `/dev/disk/by-id` names (file names only) that resolve to `device`.
fn by_id_names(device: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/dev/disk/by-id") else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| std::fs::canonicalize(e.path()).ok().as_deref() == Some(device))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Reads `target`'s identity from sysfs ([`Sysfs::default`]) and `/dev/disk/by-id` alone: no
/// I/O on the device, so a run's report costs the device nothing beyond the safety checks
/// (its I/O counts stay comparable with the kernel's).
pub fn identify(target: &TargetInfo) -> DeviceIdentity {
    let mut id = DeviceIdentity {
        size: target.size,
        ..DeviceIdentity::default()
    };
    match target.kind {
        TargetKind::RegularFile => {
            // The inode the probe read (what the checks judged and the run writes through),
            // not whatever the path leads to by now.
            id.inode = target
                .inode
                .or_else(|| {
                    std::fs::metadata(&target.path)
                        .ok()
                        .map(|m| (m.dev(), m.ino()))
                })
                .map(|(dev, ino)| format!("{dev}:{ino}"));
        }
        TargetKind::BlockDevice => {
            if let Some(name) = &target.kernel_name {
                let sysfs = Sysfs::default();
                let node = Path::new("class/block").join(name);
                let attribute = |n: &str| sysfs_text(&sysfs, &node.join(n));
                let first = |names: &[&str]| names.iter().find_map(|n| attribute(n));
                id.wwid = first(&["wwid", "device/wwid"]);
                id.serial = first(&["serial", "device/serial"]);
                id.backing_file = attribute("loop/backing_file");
                id.backing_inode =
                    crate::loop_status::loop_backing_of(&sysfs, name).map(|b| b.describe());
            }
            id.by_id = by_id_names(&target.path);
        }
    }
    id
}

/// [`identify`] plus the signatures on the device (read-only reads of its signature areas):
/// what a checkpoint records when a long run starts, before anything is written.
pub fn identify_with_signatures(target: &TargetInfo) -> DeviceIdentity {
    DeviceIdentity {
        signatures: probe_device(&target.path)
            .map(|found| found.iter().map(ToString::to_string).collect())
            .unwrap_or_default(),
        ..identify(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_swapped_for_another_of_the_same_size_is_told_apart() {
        let dir = std::env::temp_dir().join(format!("hostmax-identity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str| {
            let path = dir.join(name);
            std::fs::File::create(&path)
                .and_then(|f| f.set_len(1 << 20))
                .unwrap();
            crate::target::probe(&path).unwrap()
        };
        let (a, b) = (file("a"), file("b"));
        let then = identify(&a);
        assert!(then.differs(&identify(&a)).is_none());
        let other = identify(&b);
        std::fs::remove_dir_all(&dir).unwrap();
        let why = then.differs(&other).expect("another file");
        assert!(
            why.starts_with("file ") && why.contains(", now file "),
            "{why}"
        );
        // Size alone decides where nothing stable is known.
        let bare = |size| DeviceIdentity {
            size,
            ..DeviceIdentity::default()
        };
        assert!(bare(10).differs(&bare(10)).is_none());
        assert_eq!(
            bare(10).differs(&bare(20)).unwrap(),
            "10 bytes, now 20 bytes"
        );
        // A stable trait known on one side only does not decide.
        let serial = DeviceIdentity {
            serial: Some("S1".into()),
            ..bare(10)
        };
        assert!(serial.differs(&bare(10)).is_none());
        let serial2 = DeviceIdentity {
            serial: Some("S2".into()),
            ..bare(10)
        };
        assert_eq!(
            serial.differs(&serial2).unwrap(),
            "serial S1, now serial S2"
        );
        // A loop device over a new file of the same name: the driver's inode tells them apart.
        let over = |ino: &str| DeviceIdentity {
            backing_file: Some("/srv/vol.img".into()),
            backing_inode: Some(ino.into()),
            ..bare(10)
        };
        assert_eq!(
            over("44:7").differs(&over("44:9")).unwrap(),
            "backing file /srv/vol.img (44:7), now backing file /srv/vol.img (44:9)"
        );
        assert!(over("44:7").differs(&over("44:7")).is_none());
        // Renamed since: the same inode, the same file.
        let renamed = DeviceIdentity {
            backing_file: Some("/srv/renamed.img".into()),
            ..over("44:7")
        };
        assert!(over("44:7").differs(&renamed).is_none());
    }
}
