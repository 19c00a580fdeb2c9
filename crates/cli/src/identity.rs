//! What a target is, whatever it is called today ([`identify`]): the kernel's stable traits of
//! a block device (WWID, serial, the `/dev/disk/by-id` names that lead to it, a loop device's
//! backing file), a regular file's inode, and the size, plus (for the suite's checkpoint) the
//! signatures found on it. The suite's checkpoint records it and `--resume` refuses a path
//! that now leads elsewhere; reports carry it per device.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use hostmax_aggregate::DeviceIdentity;
use hostmax_engine::{TargetInfo, TargetKind};

/// The first non-empty line of a sysfs attribute.
fn sysfs_text(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
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

/// Reads `target`'s identity from sysfs and `/dev/disk/by-id` alone: no I/O on the device, so
/// a run's report costs the device nothing beyond the safety checks (its I/O counts stay
/// comparable with the kernel's).
pub fn identify(target: &TargetInfo) -> DeviceIdentity {
    let mut id = DeviceIdentity {
        size: target.size,
        ..DeviceIdentity::default()
    };
    match target.kind {
        TargetKind::RegularFile => {
            id.inode = std::fs::metadata(&target.path)
                .ok()
                .map(|m| format!("{}:{}", m.dev(), m.ino()));
        }
        TargetKind::BlockDevice => {
            if let Some(name) = &target.kernel_name {
                let sys = Path::new("/sys/class/block").join(name);
                let first = |names: &[&str]| names.iter().find_map(|n| sysfs_text(&sys.join(n)));
                id.wwid = first(&["wwid", "device/wwid"]);
                id.serial = first(&["serial", "device/serial"]);
                id.backing_file = sysfs_text(&sys.join("loop/backing_file"));
            }
            id.by_id = by_id_names(&target.path);
        }
    }
    id
}

/// [`identify`] plus the signatures on the device (read-only reads of its signature areas):
/// what the suite's checkpoint records when it starts, before anything is written.
pub fn identify_with_signatures(target: &TargetInfo) -> DeviceIdentity {
    DeviceIdentity {
        signatures: crate::signature::probe_device(&target.path)
            .map(|found| found.iter().map(ToString::to_string).collect())
            .unwrap_or_default(),
        ..identify(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{file_target, ScratchDir};

    #[test]
    fn a_file_swapped_for_another_of_the_same_size_is_told_apart() {
        let dir = ScratchDir::new("identity");
        let a = dir.file("a", 1 << 20);
        let b = dir.file("b", 1 << 20);
        let then = identify(&file_target(&a, 1 << 20));
        assert!(then.differs(&identify(&file_target(&a, 1 << 20))).is_none());
        let other = identify(&file_target(&b, 1 << 20));
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
    }
}
