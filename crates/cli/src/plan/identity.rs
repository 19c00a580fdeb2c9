//! Target identity, within a command and across its resumes.
//!
//! Within one command: what each target's path led to when it was planned
//! ([`PlannedIdentity`]: a block device's number, a regular file's device and inode), and the
//! check every run of a command makes just before it opens the targets ([`check_unchanged`]).
//! A multi-run command (suite cells, verify phases, sweep steps, curve depths) reopens each
//! path for every run: without this check, a file renamed onto a target's path (or a device
//! renamed) between two runs is written by the next one.
//!
//! Across resumes: what a resumable command (the suite's checkpoint, `prepare --state`) keeps
//! of each device ([`DeviceRecord`]), and the one check that the device planned on resume is
//! still that one ([`changed_devices`]): the same path, size, block size and kind, and what
//! the kernel says it is ([`hostmax_device::identity::DeviceIdentity`]: WWID, serial, a loop
//! device's backing file and inode, a file's inode), so a loop device re-pointed at another
//! file, or two volumes that swapped names, are not taken for the one recorded.

use std::fmt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use hostmax_device::identity::{identify, DeviceIdentity};
use hostmax_device::{TargetInfo, TargetKind};
use serde::{Deserialize, Serialize};

use crate::error::BadInput;
use crate::units::human_size;

/// What a path leads to, as far as telling one target from another needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeIdentity {
    /// A block device, by its device number.
    BlockDevice {
        /// Major number.
        major: u32,
        /// Minor number.
        minor: u32,
    },
    /// A regular file, by the device holding it and its inode.
    File {
        /// `st_dev` of the file.
        dev: u64,
        /// `st_ino` of the file.
        inode: u64,
    },
    /// Anything else (a directory, a character device...), or nothing: why, in words.
    Other(String),
}

impl NodeIdentity {
    /// What `path` leads to now (links followed, as the engine's open follows them).
    pub fn of(path: &Path) -> NodeIdentity {
        match std::fs::metadata(path) {
            Ok(meta) if meta.file_type().is_block_device() => NodeIdentity::BlockDevice {
                major: libc::major(meta.rdev()),
                minor: libc::minor(meta.rdev()),
            },
            Ok(meta) if meta.file_type().is_file() => NodeIdentity::File {
                dev: meta.dev(),
                inode: meta.ino(),
            },
            Ok(_) => NodeIdentity::Other("neither a block device nor a regular file".into()),
            Err(e) => NodeIdentity::Other(e.to_string()),
        }
    }
}

impl fmt::Display for NodeIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeIdentity::BlockDevice { major, minor } => write!(f, "block device {major}:{minor}"),
            NodeIdentity::File { dev, inode } => write!(f, "file {dev}:{inode} (device:inode)"),
            NodeIdentity::Other(what) => write!(f, "{what}"),
        }
    }
}

/// A target's path and what it led to when the command planned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedIdentity {
    /// The target's canonical path, the one every run opens.
    pub path: PathBuf,
    /// What it led to then.
    pub node: NodeIdentity,
}

impl PlannedIdentity {
    /// Records the probed targets: a block device by the number its probe read, a regular
    /// file by the inode its probe read (what the safety checks judged).
    pub fn record(targets: &[TargetInfo]) -> Vec<PlannedIdentity> {
        targets
            .iter()
            .map(|t| PlannedIdentity {
                path: t.path.clone(),
                node: match (t.kind, t.rdev, t.inode) {
                    (TargetKind::BlockDevice, Some((major, minor)), _) => {
                        NodeIdentity::BlockDevice { major, minor }
                    }
                    (TargetKind::RegularFile, _, Some((dev, inode))) => {
                        NodeIdentity::File { dev, inode }
                    }
                    _ => NodeIdentity::of(&t.path),
                },
            })
            .collect()
    }
}

/// Refuses (exit 2, nothing written) when a path of `targets` leads elsewhere than it did when
/// `planned` was recorded, naming the path, both identities and where the command stopped
/// (`before`: `step2`, `round 1 cell 4k_0_100`). Targets with no recorded identity pass.
pub fn check_unchanged(
    planned: &[PlannedIdentity],
    targets: &[TargetInfo],
    before: &str,
) -> Result<(), BadInput> {
    for target in targets {
        let Some(then) = planned.iter().find(|p| p.path == target.path) else {
            continue;
        };
        let now = NodeIdentity::of(&target.path);
        if now != then.node {
            return Err(BadInput(format!(
                "{}: now {now}, not the {} planned on (renamed or replaced while the command ran); stopped before {before}, nothing written to it: check what is there and run again",
                target.path.display(),
                then.node
            )));
        }
    }
    Ok(())
}

/// A device as a resumable command first saw it (the suite's checkpoint, `prepare --state`);
/// on resume it must still be that device ([`changed_devices`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// Canonical path.
    pub path: PathBuf,
    /// The path the user gave when it is another name for it (a `/dev/disk/by-id/...` link):
    /// `--resume` follows this name, which stays with the device when kernel names change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<PathBuf>,
    /// Size in bytes.
    pub size: u64,
    /// Logical block size.
    pub logical_block_size: u32,
    /// Whether it is a block device (else a regular file).
    pub block_device: bool,
    /// What it is (WWID, serial, by-id names, backing file or inode, size), so that a resume
    /// can tell when its path now leads to another device (absent in older checkpoints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<DeviceIdentity>,
}

impl DeviceRecord {
    /// The record of `target` as probed, known by `given` (the name the user gave, when it is
    /// another name for it) and what it is (`identity`: [`identify`], or with its signatures
    /// where the record is taken before writing).
    pub fn of(
        target: &TargetInfo,
        given: Option<PathBuf>,
        identity: DeviceIdentity,
    ) -> DeviceRecord {
        DeviceRecord {
            path: target.path.clone(),
            given,
            size: target.size,
            logical_block_size: target.logical_block_size,
            block_device: target.kind == TargetKind::BlockDevice,
            identity: Some(identity),
        }
    }

    /// The name a resume finds it by: the one the user gave, else its canonical path.
    pub fn name(&self) -> PathBuf {
        self.given.clone().unwrap_or_else(|| self.path.clone())
    }

    /// Why `now` (the device a resume planned by this record's name) is not the device
    /// recorded: another path (unless followed through the given name), size, block size or
    /// kind, or what the kernel says it is ([`DeviceIdentity::differs`]); `None` when it is.
    pub fn differs(&self, now: &TargetInfo) -> Option<String> {
        if self.given.is_none() && now.path != self.path {
            return Some(format!(
                "{}, now {}",
                self.path.display(),
                now.path.display()
            ));
        }
        let kind = |block: bool| if block { "block device" } else { "file" };
        let block_device = now.kind == TargetKind::BlockDevice;
        if now.size != self.size
            || now.logical_block_size != self.logical_block_size
            || block_device != self.block_device
        {
            return Some(format!(
                "{} {} with {}-byte blocks, now {} {} with {}-byte blocks",
                human_size(self.size),
                kind(self.block_device),
                self.logical_block_size,
                human_size(now.size),
                kind(block_device),
                now.logical_block_size
            ));
        }
        self.identity.as_ref()?.differs(&identify(now))
    }
}

/// The one check of every resumable command: each `(record, planned)` pair's device is the one
/// recorded ([`DeviceRecord::differs`]). `None` when all are; else every one that is not, as
/// "`/dev/loop3` was backing file /srv/a.img (0:44:7), now backing file /srv/b.img (0:44:9)",
/// joined by "; ", for the command to frame with its own fix.
pub fn changed_devices<'a>(
    pairs: impl IntoIterator<Item = (&'a DeviceRecord, &'a TargetInfo)>,
) -> Option<String> {
    let changed: Vec<String> = pairs
        .into_iter()
        .filter_map(|(then, now)| {
            let why = then.differs(now)?;
            Some(format!("{} was {why}", then.name().display()))
        })
        .collect();
    (!changed.is_empty()).then(|| changed.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_renamed_onto_a_target_path_is_refused_naming_both() {
        let dir = std::env::temp_dir().join(format!("hostmax-planned-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("t.img");
        let other = dir.join("other.img");
        std::fs::write(&target, vec![0u8; 4096]).unwrap();
        std::fs::write(&other, vec![1u8; 4096]).unwrap();
        let info = hostmax_device::probe(&target).unwrap();
        let planned = PlannedIdentity::record(std::slice::from_ref(&info));
        check_unchanged(&planned, std::slice::from_ref(&info), "step1").unwrap();
        std::fs::rename(&other, &target).unwrap();
        let refused = check_unchanged(&planned, std::slice::from_ref(&info), "step2")
            .unwrap_err()
            .0;
        assert!(refused.contains("t.img"), "{refused}");
        assert!(refused.contains("before step2"), "{refused}");
        assert_eq!(refused.matches("(device:inode)").count(), 2, "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_recorded_device_is_known_again_and_another_is_named_with_both() {
        let dir = std::env::temp_dir().join(format!("hostmax-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.img"), dir.join("b.img"));
        std::fs::write(&a, vec![0u8; 8192]).unwrap();
        std::fs::write(&b, vec![0u8; 8192]).unwrap();
        let probe = |p: &Path| hostmax_device::probe(p).unwrap();
        let record = DeviceRecord::of(&probe(&a), None, identify(&probe(&a)));
        assert_eq!(changed_devices([(&record, &probe(&a))]), None);
        // Another file of the same size under the same name: told apart by its inode.
        std::fs::rename(&b, &a).unwrap();
        let why = changed_devices([(&record, &probe(&a))]).expect("another file");
        assert!(
            why.starts_with(&format!("{} was file ", a.display())) && why.contains(", now file "),
            "{why}"
        );
        // Another size: said in sizes and block sizes.
        std::fs::write(&a, vec![0u8; 4096]).unwrap();
        let why = changed_devices([(&record, &probe(&a))]).unwrap();
        assert!(
            why.contains("was 8 KiB file with ") && why.contains(", now 4 KiB file with "),
            "{why}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
