//! What each target's path led to when it was planned ([`PlannedIdentity`]: a block device's
//! number, a regular file's device and inode), and the check every run of a command makes just
//! before it opens the targets ([`check_unchanged`]). A multi-run command (suite cells, verify
//! phases, sweep steps, curve depths) reopens each path for every run: without this check, a
//! file renamed onto a target's path (or a device renamed) between two runs is written by the
//! next one.

use std::fmt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use hostmax_device::{TargetInfo, TargetKind};

use crate::error::BadInput;

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
}
