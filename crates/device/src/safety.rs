//! Write safety: which targets a write workload must not touch, decided before any I/O.
//!
//! A write to a block device, or to a regular file that holds data (any data extent: a file
//! hostmax makes, or a sparse one, holds none), needs [`WriteSafety::allow_write`]. A target
//! that carries data (an on-disk [`Signature`]: partition table, filesystem, RAID, LVM, LUKS,
//! ZFS, swap) or has partitions also needs [`WriteSafety::force`]. Whatever the consent, a
//! block device that is mounted (or has a mounted partition), has holders (device-mapper, md,
//! ...), is active swap (itself or a partition), holds the root filesystem (or is its parent
//! disk), or cannot be opened exclusively is refused, and so is a regular file that is an
//! active swap file; and so is any target that reaches (as itself, or as a loop device's
//! backing) a file another process has open for writing or maps shared and writable, found by
//! inode whatever name it uses (a VM's raw image, a database file), or a block device another
//! process has open for writing (a VM's raw disk). [`check_write_safety`] checks every target and returns ONE
//! [`WriteRefused`] listing each refused target with its [`RefusalReason`]s; its message names
//! the consents by [`ConsentWords`] (a tool passes the names its own users know them by).
//!
//! Both checks are for a workload that writes: a read-only one needs none. A tool that writes
//! the same devices several times (phases, steps of a sweep) checks once up
//! front and lets each run re-check while it holds the devices ([`recheck_while_held`]).
//!
//! The checks are split so tests can feed synthetic system state: [`parse_mountinfo`] and
//! [`parse_swaps`] read the text of `/proc/self/mountinfo` and `/proc/swaps`,
//! [`read_family`] reads a device and its partitions from a [`Sysfs`] (a stand-in tree in
//! tests), [`root_device_names`] finds the devices under `/`, and [`write_refusals`]
//! decides from those alone ([`WriteSafety`] is the user's consent). [`SystemSources`] names
//! where the real files are.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::io::AsRawFd;
use std::sync::Arc;

use crate::claim::open_exclusive;
use crate::device_reads::{BlockingReads, DeviceReads, Patience};
use crate::media::{
    loop_backing, media_users, read_dm_table, shared_media, Extent, MediaSources, MediaUser,
    Medium, MountedAt, SwapArea,
};
use crate::signature::{probe_with_blkid_within, Signature};
use crate::sysfs::{sorted_names, Sysfs};
use crate::target::{verify_opened, TargetInfo, TargetKind};
use crate::writers::Writers;

/// Where the system state the checks read comes from, and how they read devices.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SystemSources {
    /// `/proc/self/mountinfo`.
    pub mountinfo: PathBuf,
    /// `/proc/swaps`.
    pub swaps: PathBuf,
    /// Sysfs, for block devices, their partitions, holders and the devices below them.
    pub sysfs: Sysfs,
    /// Also read the mount table of every other mount namespace (`/proc/PID/mountinfo` of one
    /// process in each), ask every loop device over a target's media whether anything
    /// claims it, and list what other processes write (block devices and the files the targets
    /// reach: `/proc/PID/fd`, `fdinfo`, `maps`): what this process's own mount table
    /// cannot show (a mount in a container, a lazily unmounted filesystem still in use, a VM
    /// writing its image). On by default; off for checks fed synthetic state.
    pub whole_system: bool,
    /// How a device's signature areas are read ([`BlockingReads`] by default: unbounded;
    /// hostmax-engine's `UringReads` keeps [`SystemSources::patience`]).
    pub reads: Arc<dyn DeviceReads>,
    /// How long a read of a device, or `wipefs`, may take before the device is taken as
    /// stopped ([`RefusalReason::NotAnswering`]), and what calls the waits off.
    pub patience: Patience,
}

impl Default for SystemSources {
    fn default() -> Self {
        SystemSources {
            mountinfo: PathBuf::from("/proc/self/mountinfo"),
            swaps: PathBuf::from("/proc/swaps"),
            sysfs: Sysfs::default(),
            whole_system: true,
            reads: Arc::new(BlockingReads),
            patience: Patience::default(),
        }
    }
}

impl SystemSources {
    /// The same sources, reading devices through `reads`, waiting as `patience` says.
    pub fn reading_through(mut self, reads: Arc<dyn DeviceReads>, patience: Patience) -> Self {
        self.reads = reads;
        self.patience = patience;
        self
    }
}

/// One line of `/proc/self/mountinfo`, the parts the checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MountEntry {
    /// The `major:minor` of the mounted filesystem's device (anonymous `0:N` for tmpfs and
    /// for btrfs, whose real device is then only in [`MountEntry::source`]).
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The mount source (`/dev/sdb1`, `tmpfs`, ...).
    pub source: String,
}

/// Undoes the kernel's octal escapes (`\040` for a space) in mountinfo and swaps paths.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let v = (bytes[i + 1] - b'0') as u32 * 64
                + (bytes[i + 2] - b'0') as u32 * 8
                + (bytes[i + 3] - b'0') as u32;
            if let Ok(b) = u8::try_from(v) {
                out.push(b);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Parses `/proc/self/mountinfo` text; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let dev = parse_dev(fields.get(2)?)?;
            let mount_point = PathBuf::from(unescape_octal(fields.get(4)?));
            // Optional fields end at a lone "-"; then fstype, source, super options.
            let dash = fields.iter().skip(6).position(|f| *f == "-")? + 6;
            let source = unescape_octal(fields.get(dash + 2).copied().unwrap_or(""));
            Some(MountEntry {
                dev,
                mount_point,
                source,
            })
        })
        .collect()
}

/// An active swap area, as `/proc/swaps` lists it and `stat` identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SwapEntry {
    /// The swap device or file as listed.
    pub path: PathBuf,
    /// Its device number, if it is a block device.
    pub rdev: Option<(u32, u32)>,
    /// Its (filesystem, inode), if it is a regular file.
    pub inode: Option<(u64, u64)>,
}

/// Parses `/proc/swaps` text into the listed paths (the header line is skipped).
pub fn parse_swaps(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter(|line| !line.starts_with("Filename"))
        .filter_map(|line| line.split_whitespace().next())
        .map(|name| PathBuf::from(unescape_octal(name)))
        .collect()
}

/// Identifies each swap path by `stat` (a path that no longer exists keeps only its name).
pub fn identify_swaps(paths: &[PathBuf]) -> Vec<SwapEntry> {
    paths
        .iter()
        .map(|path| {
            let meta = std::fs::metadata(path).ok();
            let rdev = meta
                .as_ref()
                .filter(|m| m.file_type().is_block_device())
                .map(|m| (libc::major(m.rdev()), libc::minor(m.rdev())));
            let inode = meta
                .as_ref()
                .filter(|m| m.file_type().is_file())
                .map(|m| (m.dev(), m.ino()));
            SwapEntry {
                path: path.clone(),
                rdev,
                inode,
            }
        })
        .collect()
}

/// A block device node: a whole device or one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockNode {
    /// Kernel name (`loop3`, `loop3p1`).
    pub name: String,
    /// Device number.
    pub dev: (u32, u32),
    /// Names in its `holders` directory (`dm-0`, `md127`).
    pub holders: Vec<String>,
}

/// A block device and its partitions, the device first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceFamily {
    /// The device itself, then each partition in name order.
    pub nodes: Vec<BlockNode>,
}

/// Reads a block device named `name` with device number `dev` and its partitions from
/// sysfs's `class/block`: a partition is a subdirectory whose name starts with the device's
/// and that has a `dev` file; holders are the entries of each `holders` dir.
pub fn read_family(sysfs: &Sysfs, name: &str, dev: (u32, u32)) -> DeviceFamily {
    let dir = sysfs.class_block(name);
    let mut nodes = vec![BlockNode {
        name: name.to_string(),
        dev,
        holders: sorted_names(&dir.join("holders")),
    }];
    for entry in sorted_names(&dir) {
        if !entry.starts_with(name) || entry == name {
            continue;
        }
        let part = dir.join(&entry);
        let Some(part_dev) = sysfs
            .read(part.join("dev"))
            .ok()
            .and_then(|s| parse_dev(&s))
        else {
            continue;
        };
        nodes.push(BlockNode {
            name: entry,
            dev: part_dev,
            holders: sorted_names(&part.join("holders")),
        });
    }
    DeviceFamily { nodes }
}

/// Why a target is refused for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalReason {
    /// A block device, or a regular file that holds data, to be written without
    /// [`WriteSafety::allow_write`].
    NeedsAllowWrite,
    /// The device (`partition: None`) or one of its partitions is mounted.
    Mounted {
        /// The partition's kernel name, if it is a partition that is mounted.
        partition: Option<String>,
        /// Its mount points (bind mounts give several).
        mount_points: Vec<PathBuf>,
    },
    /// The device or a partition has holders (device-mapper, md, bcache...).
    Holders {
        /// The partition's kernel name, if the holders are a partition's.
        partition: Option<String>,
        /// The holders' kernel names.
        holders: Vec<String>,
    },
    /// The device or a partition, or the file, is active swap.
    Swap {
        /// The partition's kernel name, if a partition is the swap area.
        partition: Option<String>,
    },
    /// The kernel refused an exclusive open: something else claims the device.
    Busy,
    /// The device (or one of its partitions, or a device below it) holds the root filesystem.
    HoldsRoot {
        /// The node under `/` when it is not the target itself (`vda1` for target `vda`).
        via: Option<String>,
    },
    /// The state could not be read, so safety cannot be shown.
    Unknown(String),
    /// An on-disk signature: the device carries data ([`WriteSafety::force`] overrides).
    Signature(Signature),
    /// The kernel lists partitions of the device ([`WriteSafety::force`] overrides).
    Partitions(Vec<String>),
    /// The signature areas could not be read ([`WriteSafety::force`] overrides).
    Unprobed(String),
    /// The target shares media with something in use under another name: a loop device over
    /// the same file, the file behind a mounted loop device, a device built on the same
    /// disk range, another path to the same LUN. No consent overrides it.
    SharesMedia {
        /// The medium both reach (`/dev/shm/fs.img`, the LUN of `/dev/vdb`).
        medium: String,
        /// What uses it (`/dev/loop0, mounted at /mnt`).
        user: String,
    },
    /// The path led to something else when it was opened to be checked than when it was
    /// probed (renamed onto, replaced): what was probed is not what would be written.
    Changed(crate::target::TargetChanged),
    /// A read of the device (or `wipefs` reading it) got no answer within the checks'
    /// [`Patience`], or the wait was called off: the device was not checked. The read is
    /// abandoned where the reader can ([`DeviceReads`]). No consent overrides it.
    NotAnswering(String),
}

impl RefusalReason {
    /// Whether [`WriteSafety::force`] (with `allow_write`) overrides this reason: the device only
    /// carries data, nothing on this host is using it.
    pub fn is_forceable(&self) -> bool {
        matches!(
            self,
            RefusalReason::Signature(_) | RefusalReason::Partitions(_) | RefusalReason::Unprobed(_)
        )
    }

    /// Whether nothing but consent stands in the way (`allow_write`, `force`).
    fn needs_only_flags(&self) -> bool {
        self.is_forceable() || *self == RefusalReason::NeedsAllowWrite
    }

    /// The reason in words, naming the consent it needs by `words`.
    pub fn describe(&self, words: &ConsentWords) -> String {
        match self {
            RefusalReason::NeedsAllowWrite => {
                format!("needs {} (writing destroys its data)", words.allow_write)
            }
            other => other.to_string(),
        }
    }
}

fn on_partition(partition: &Option<String>) -> String {
    partition
        .as_ref()
        .map(|p| format!(" (partition {p})"))
        .unwrap_or_default()
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefusalReason::NeedsAllowWrite => f.write_str(&self.describe(&ConsentWords::LIBRARY)),
            RefusalReason::Mounted {
                partition,
                mount_points,
            } => {
                let first = mount_points
                    .first()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                match partition {
                    Some(p) => write!(f, "has partition {p} mounted at {first}")?,
                    None => write!(f, "is mounted at {first}")?,
                }
                if mount_points.len() > 1 {
                    write!(f, " (and {} more)", mount_points.len() - 1)?;
                }
                Ok(())
            }
            RefusalReason::Holders { partition, holders } => write!(
                f,
                "has holders {}{}",
                holders.join(","),
                on_partition(partition)
            ),
            RefusalReason::Swap { partition: None } => f.write_str("is active swap"),
            RefusalReason::Swap { partition: Some(p) } => {
                write!(f, "has partition {p} as active swap")
            }
            RefusalReason::Busy => f.write_str("is in use (the kernel refused an exclusive open)"),
            RefusalReason::HoldsRoot { via: None } => f.write_str("holds the root filesystem /"),
            RefusalReason::HoldsRoot { via: Some(node) } => {
                write!(f, "holds the root filesystem / (through {node})")
            }
            RefusalReason::Unknown(why) => write!(f, "cannot be checked ({why})"),
            RefusalReason::Signature(sig) => write!(f, "carries {sig}"),
            RefusalReason::Partitions(names) => write!(f, "has partitions {}", names.join(",")),
            RefusalReason::Unprobed(why) => {
                write!(f, "cannot be read to look for signatures ({why})")
            }
            RefusalReason::SharesMedia { medium, user } => write!(
                f,
                "shares its media ({medium}) with {user}, and no flag overrides that"
            ),
            RefusalReason::Changed(c) => write!(
                f,
                "was replaced while being checked (now {}, probed as {})",
                c.opened, c.checked
            ),
            RefusalReason::NotAnswering(why) => {
                write!(f, "was not checked: {why}; it may have stopped answering")
            }
        }
    }
}

/// Whether a mount's source names `node` (`/dev/<name>`, symlinks resolved where they exist).
fn source_names(source: &str, node: &str) -> bool {
    if !source.starts_with("/dev/") {
        return false;
    }
    let resolved = std::fs::canonicalize(source).unwrap_or_else(|_| PathBuf::from(source));
    resolved.parent() == Some(Path::new("/dev")) && resolved.file_name().is_some_and(|n| n == node)
}

/// Why a block device family is in use, from mount and swap state alone (no I/O).
pub fn in_use_reasons(
    family: &DeviceFamily,
    mounts: &[MountEntry],
    swaps: &[SwapEntry],
) -> Vec<RefusalReason> {
    let mut reasons = Vec::new();
    for (i, node) in family.nodes.iter().enumerate() {
        let partition = (i > 0).then(|| node.name.clone());
        let mut mount_points: Vec<PathBuf> = Vec::new();
        for m in mounts {
            if (m.dev == node.dev || source_names(&m.source, &node.name))
                && !mount_points.contains(&m.mount_point)
            {
                mount_points.push(m.mount_point.clone());
            }
        }
        if !mount_points.is_empty() {
            reasons.push(RefusalReason::Mounted {
                partition: partition.clone(),
                mount_points,
            });
        }
        if !node.holders.is_empty() {
            reasons.push(RefusalReason::Holders {
                partition: partition.clone(),
                holders: node.holders.clone(),
            });
        }
        let swapped = swaps.iter().any(|s| {
            s.rdev == Some(node.dev) || source_names(&s.path.to_string_lossy(), &node.name)
        });
        if swapped {
            reasons.push(RefusalReason::Swap { partition });
        }
    }
    reasons
}

/// A refused target and every reason.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// The target's canonical path.
    pub path: PathBuf,
    /// Why, in the order found.
    pub reasons: Vec<RefusalReason>,
}

/// One refused target's part of the message: its reasons (signatures merged into one "carries
/// A, B and C"), then the consents that would let it be written when only consent stands in the way.
fn describe_refusal(r: &Refusal, words: &ConsentWords) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut carried: Vec<String> = Vec::new();
    let mut carried_at = None;
    for reason in &r.reasons {
        match reason {
            RefusalReason::Signature(sig) => {
                carried_at.get_or_insert(parts.len());
                carried.push(sig.to_string());
            }
            other => parts.push(other.describe(words)),
        }
    }
    if let Some(at) = carried_at {
        let list = match carried.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => carried.join(""),
        };
        parts.insert(at, format!("carries {list}"));
    }
    let mut text = format!("{} {}", r.path.display(), parts.join(" and "));
    if r.reasons.iter().all(RefusalReason::needs_only_flags)
        && r.reasons.iter().any(RefusalReason::is_forceable)
    {
        if r.reasons.contains(&RefusalReason::NeedsAllowWrite) {
            text.push_str(&format!(" (use {} to overwrite it)", words.both));
        } else {
            text.push_str(&format!(" (use {} to overwrite it)", words.force));
        }
    }
    text
}

/// The one-line message for a list of refusals, naming each target, its reasons, and the fix
/// (the consents by `words`).
pub fn refusal_message(refusals: &[Refusal], words: &ConsentWords) -> String {
    let listed: Vec<String> = refusals
        .iter()
        .map(|r| describe_refusal(r, words))
        .collect();
    let add_allow_write = format!(
        "add {} only if their data may be destroyed",
        words.allow_write
    );
    let mut fixes: Vec<&str> = Vec::new();
    let all = || refusals.iter().flat_map(|r| r.reasons.iter());
    let stopped = |x: &RefusalReason| matches!(x, RefusalReason::NotAnswering(_));
    if all().any(|x| !x.needs_only_flags() && !stopped(x)) {
        fixes.push("unmount them, swapoff them, release their holders or stop what writes them, or pick other devices");
    }
    if all().any(stopped) {
        fixes.push("nothing was written; see why the device does not answer (dmesg, its path or array) or leave it out");
    }
    if all().any(|x| *x == RefusalReason::NeedsAllowWrite) {
        fixes.push(&add_allow_write);
    }
    let mut fix = fixes.join("; ");
    if let Some(first) = fix.get(..1) {
        fix = first.to_uppercase() + &fix[1..];
    }
    if fix.is_empty() {
        format!("refusing to write: {}", listed.join("; "))
    } else {
        format!("refusing to write: {}. {fix}", listed.join("; "))
    }
}

/// The user's consent to writing. The default
/// consents to nothing: a write workload may then only touch regular files that hold no data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct WriteSafety {
    /// Block devices (and regular files that hold data) may be written.
    pub allow_write: bool,
    /// Targets that only carry data (signatures, partitions) may be written too; nothing
    /// overrides a mount, holders, swap, the root filesystem or another exclusive claim.
    pub force: bool,
}

impl WriteSafety {
    /// No consent: the default, as a constant.
    pub const NONE: WriteSafety = WriteSafety::new(false, false);

    /// Consent as given: `allow_write` for [`WriteSafety::allow_write`], `force` for
    /// [`WriteSafety::force`].
    pub const fn new(allow_write: bool, force: bool) -> WriteSafety {
        WriteSafety { allow_write, force }
    }

    /// The same consent, with [`WriteSafety::allow_write`] set to `allow_write`.
    #[must_use]
    pub const fn with_allow_write(mut self, allow_write: bool) -> WriteSafety {
        self.allow_write = allow_write;
        self
    }

    /// The same consent, with [`WriteSafety::force`] set to `force`.
    #[must_use]
    pub const fn with_force(mut self, force: bool) -> WriteSafety {
        self.force = force;
        self
    }
}

/// How a refusal's message names the consents of [`WriteSafety`]: a tool says its own
/// option names (a command line might pass `--allow-write` and `--force`), a library user gets
/// [`ConsentWords::LIBRARY`] (the field names), which [`WriteRefused`]'s `Display` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsentWords {
    /// What grants [`WriteSafety::allow_write`].
    pub allow_write: &'static str,
    /// What grants [`WriteSafety::force`].
    pub force: &'static str,
    /// What grants both at once.
    pub both: &'static str,
}

impl ConsentWords {
    /// The field names of [`WriteSafety`].
    pub const LIBRARY: ConsentWords = ConsentWords::new(
        "WriteSafety::allow_write",
        "WriteSafety::force",
        "WriteSafety::new(true, true)",
    );

    /// The words for each consent: what grants [`WriteSafety::allow_write`], what grants
    /// [`WriteSafety::force`], and what grants both at once.
    pub const fn new(
        allow_write: &'static str,
        force: &'static str,
        both: &'static str,
    ) -> ConsentWords {
        ConsentWords {
            allow_write,
            force,
            both,
        }
    }
}

/// A write workload was refused: every refused target with every reason, in the order the
/// targets were given. `Display` is one line naming the consents by [`ConsentWords::LIBRARY`];
/// [`WriteRefused::message`] names them as a tool's options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", refusal_message(&self.refusals, &ConsentWords::LIBRARY))]
#[non_exhaustive]
pub struct WriteRefused {
    /// The refused targets.
    pub refusals: Vec<Refusal>,
}

impl WriteRefused {
    /// The one-line message, naming the consents by `words`.
    pub fn message(&self, words: &ConsentWords) -> String {
        refusal_message(&self.refusals, words)
    }

    /// The targets that could not be checked because a read of them got no answer in time
    /// ([`RefusalReason::NotAnswering`]): a device fault more than a refusal.
    pub fn not_answering(&self) -> Vec<&Path> {
        self.refusals
            .iter()
            .filter(|r| {
                r.reasons
                    .iter()
                    .any(|x| matches!(x, RefusalReason::NotAnswering(_)))
            })
            .map(|r| r.path.as_path())
            .collect()
    }
}

/// The kernel names of the block devices under `/`: the device mounted there (the last
/// mount of `/` in `mounts`, the one visible), every device below it (`slaves`, for dm and md)
/// and the whole disk of each partition among them. Reads only sysfs's `class/block`.
pub fn root_device_names(mounts: &[MountEntry], sysfs: &Sysfs) -> Vec<String> {
    let sys_class_block = sysfs.path("class/block");
    let Some(root) = mounts
        .iter()
        .rev()
        .find(|m| m.mount_point == Path::new("/"))
    else {
        return Vec::new();
    };
    let all = sorted_names(&sys_class_block);
    let by_dev = |dev: (u32, u32)| {
        all.iter()
            .find(|name| {
                sysfs
                    .read(sys_class_block.join(name).join("dev"))
                    .ok()
                    .and_then(|s| parse_dev(&s))
                    == Some(dev)
            })
            .cloned()
    };
    let by_source = || {
        if !root.source.starts_with("/dev/") {
            return None;
        }
        let resolved = std::fs::canonicalize(&root.source).ok()?;
        let name = resolved.file_name()?.to_string_lossy().into_owned();
        all.contains(&name).then_some(name)
    };
    // Anonymous device numbers (major 0: btrfs, overlay) name no block device.
    let first = if root.dev.0 != 0 {
        by_dev(root.dev)
    } else {
        None
    }
    .or_else(by_source);
    let mut names: Vec<String> = first.into_iter().collect();
    let mut i = 0;
    while i < names.len() {
        let name = names[i].clone();
        let below = sorted_names(&sys_class_block.join(&name).join("slaves"));
        let disk = sysfs.partition_disk(&name);
        for n in below.iter().chain(&disk) {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        i += 1;
    }
    names
}

/// Decides refusals from already-read state (no I/O): `families[i]` belongs to `targets[i]`
/// (`None` for a regular file); `root` is [`root_device_names`]. On-disk signatures are not
/// read here (see [`signature_reasons`]). Pure, so unit tests can feed synthetic state.
pub fn write_refusals(
    targets: &[TargetInfo],
    families: &[Option<DeviceFamily>],
    flags: WriteSafety,
    mounts: &[MountEntry],
    swaps: &[SwapEntry],
    root: &[String],
) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    for (target, family) in targets.iter().zip(families) {
        let mut reasons = Vec::new();
        match target.kind {
            TargetKind::BlockDevice => {
                if !flags.allow_write {
                    reasons.push(RefusalReason::NeedsAllowWrite);
                }
                if let Some(family) = family {
                    reasons.extend(in_use_reasons(family, mounts, swaps));
                    // `root` starts with the mounted node: name the closest one to `/`.
                    let me = &family.nodes[0].name;
                    if let Some(hit) = root
                        .iter()
                        .find(|r| family.nodes.iter().any(|n| n.name == **r))
                    {
                        let via = (hit != me).then(|| hit.clone());
                        reasons.push(RefusalReason::HoldsRoot { via });
                    }
                    if !flags.force && family.nodes.len() > 1 {
                        let parts = family.nodes[1..].iter().map(|n| n.name.clone()).collect();
                        reasons.push(RefusalReason::Partitions(parts));
                    }
                }
            }
            TargetKind::RegularFile => {
                let id = target.inode.or_else(|| {
                    std::fs::metadata(&target.path)
                        .ok()
                        .map(|m| (m.dev(), m.ino()))
                });
                let swapped = swaps.iter().any(|s| {
                    (id.is_some() && s.inode == id)
                        || std::fs::canonicalize(&s.path).ok().as_deref()
                            == Some(target.path.as_path())
                });
                if swapped {
                    reasons.push(RefusalReason::Swap { partition: None });
                }
            }
        }
        if !reasons.is_empty() {
            refusals.push(Refusal {
                path: target.path.clone(),
                reasons,
            });
        }
    }
    refusals
}

/// Whether an exclusive open of a block device fails with `EBUSY` (mounted, claimed by md,
/// dm, or another exclusive opener) for longer than a partition rescan's moment. Opens
/// read-only: nothing is written.
fn exclusive_open_busy(path: &Path) -> bool {
    let mut options = std::fs::OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_CLOEXEC);
    let opened = open_exclusive(&options, path);
    matches!(opened, Err(e) if e.raw_os_error() == Some(libc::EBUSY))
}

/// The signature reasons of one block device, read from it (read-only) through
/// `sources.reads` with `sources.patience`: one per signature, [`RefusalReason::Unprobed`]
/// when its first or last sectors cannot be read, [`RefusalReason::NotAnswering`] when a
/// read (or `wipefs`) got no answer in time or the wait was called off.
pub fn signature_reasons(path: &Path, sources: &SystemSources) -> Vec<RefusalReason> {
    match probe_with_blkid_within(path, sources.reads.as_ref(), &sources.patience) {
        Ok(found) => found.into_iter().map(RefusalReason::Signature).collect(),
        Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::Interrupted) => {
            vec![RefusalReason::NotAnswering(e.to_string())]
        }
        Err(e) => vec![RefusalReason::Unprobed(e.to_string())],
    }
}

/// Whether a regular file holds any data: a data extent anywhere (`SEEK_DATA`). A file that
/// does not exist holds none; a file that cannot be looked at is taken to hold data.
pub fn file_holds_data(path: &Path) -> bool {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return e.kind() != std::io::ErrorKind::NotFound,
    };
    match nix::unistd::lseek(&file, 0, nix::unistd::Whence::SeekData) {
        Ok(_) => true,
        // ENXIO: no data at or after offset 0, the file is all holes (or empty).
        Err(nix::errno::Errno::ENXIO) => false,
        Err(_) => true,
    }
}

/// Checks every target of a workload that writes, before any I/O: it must not touch a
/// refused target. Reads the real system state from `sources`, and (without `force`) the
/// signature areas of every block device. A read-only workload needs no check.
pub fn check_write_safety(
    targets: &[TargetInfo],
    flags: WriteSafety,
    sources: &SystemSources,
) -> Result<(), WriteRefused> {
    write_safety(targets, flags, sources, true)
}

/// The same checks again right before the first write, while this process already holds every
/// written device open with `O_EXCL` (so the exclusive-open probe is skipped: it would find our
/// own claim). Catches a mount or swapon that slipped in between planning and opening; the
/// reasons `force` overrides (signatures, partitions) were settled by [`check_write_safety`]
/// and are not looked at again.
pub fn recheck_while_held(
    targets: &[TargetInfo],
    allow_write: bool,
    sources: &SystemSources,
) -> Result<(), WriteRefused> {
    let flags = WriteSafety {
        allow_write,
        force: true,
    };
    write_safety(targets, flags, sources, false)
}

/// Opens a target read-only (nothing is written; no exclusive claim) and checks the descriptor
/// is what was probed ([`verify_opened`]). `None` for a file not made yet (probed with no
/// inode, nothing at its path): there is nothing to read, and whoever makes it makes it new.
fn open_as_probed(target: &TargetInfo, sysfs: &Sysfs) -> Result<Option<File>, RefusalReason> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&target.path);
    let file = match opened {
        Ok(file) => file,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && target.kind == TargetKind::RegularFile
                && target.inode.is_none() =>
        {
            return Ok(None)
        }
        Err(e) => {
            return Err(RefusalReason::Unknown(format!(
                "cannot be opened to be checked: {e}"
            )))
        }
    };
    verify_opened(target, &file, sysfs).map_err(RefusalReason::Changed)?;
    Ok(Some(file))
}

/// A path that opens what `file` is open on, whatever its name now (`/proc/PID/fd/N`: also
/// for helper programs such as `wipefs`, which inherit nothing).
fn descriptor_path(file: &File) -> PathBuf {
    PathBuf::from(format!(
        "/proc/{}/fd/{}",
        std::process::id(),
        file.as_raw_fd()
    ))
}

fn write_safety(
    targets: &[TargetInfo],
    flags: WriteSafety,
    sources: &SystemSources,
    first_check: bool,
) -> Result<(), WriteRefused> {
    let any_device = targets.iter().any(|t| t.kind == TargetKind::BlockDevice);
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let own_mounts = match read(&sources.mountinfo) {
        Ok(text) => Ok(parse_mountinfo(&text)),
        Err(e) if any_device => Err(e),
        Err(_) => Ok(Vec::new()),
    };
    // The root filesystem is this process's; a mount anywhere else refuses just the same.
    let root = own_mounts
        .as_ref()
        .map(|m| root_device_names(m, &sources.sysfs))
        .unwrap_or_default();
    let mounts = own_mounts.map(|mut mounts| {
        if sources.whole_system {
            mounts.extend(other_namespace_mounts(Path::new("/proc")));
        }
        mounts
    });
    // No swap support compiled in means no /proc/swaps and no swap.
    let swaps = read(&sources.swaps)
        .map(|t| identify_swaps(&parse_swaps(&t)))
        .unwrap_or_default();
    let families: Vec<Option<DeviceFamily>> = targets
        .iter()
        .map(|t| match (t.kind, t.rdev) {
            (TargetKind::BlockDevice, Some(dev)) => {
                let name = t.kernel_name.clone().unwrap_or_else(|| {
                    t.path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                });
                Some(read_family(&sources.sysfs, &name, dev))
            }
            _ => None,
        })
        .collect();
    let mut refusals = match &mounts {
        Ok(mounts) => write_refusals(targets, &families, flags, mounts, &swaps, &root),
        Err(why) => targets
            .iter()
            .filter(|t| t.kind == TargetKind::BlockDevice)
            .map(|t| Refusal {
                path: t.path.clone(),
                reasons: vec![RefusalReason::Unknown(why.clone())],
            })
            .collect(),
    };
    let mut add = |path: &Path, reasons: Vec<RefusalReason>| {
        if reasons.is_empty() {
            return;
        }
        match refusals.iter_mut().find(|r| r.path == path) {
            Some(r) => r.reasons.extend(reasons),
            None => refusals.push(Refusal {
                path: path.to_path_buf(),
                reasons,
            }),
        }
    };
    // Every check that reads a target reads it through one descriptor, opened here and
    // checked to be what was probed: a path renamed onto meanwhile is refused, not judged.
    let opened: Vec<Option<File>> = targets
        .iter()
        .map(|t| match open_as_probed(t, &sources.sysfs) {
            Ok(file) => file,
            Err(reason) => {
                add(&t.path, vec![reason]);
                None
            }
        })
        .collect();
    // Other names for the same media: loop devices over the same file, the file itself,
    // devices built on the same disk range, other paths to the same LUN.
    if let Ok(mounts) = &mounts {
        let dm_table = read_dm_table;
        let driver = |name: &str, dev| loop_backing(name, dev);
        let no_driver = |_: &str, _| None;
        let media = MediaSources {
            sysfs: &sources.sysfs,
            dm_table: &dm_table,
            loop_backing: if sources.whole_system {
                &driver
            } else {
                &no_driver
            },
        };
        let mounted: Vec<MountedAt<'_>> = mounts
            .iter()
            .map(|m| (m.dev, m.source.as_str(), m.mount_point.as_path()))
            .collect();
        let swapped: Vec<SwapArea<'_>> = swaps
            .iter()
            .map(|s| (s.path.as_path(), s.rdev, s.inode))
            .collect();
        let users = media_users(&media, &mounted, &swapped);
        // Every loop device not among the users above, and not ours: a user only if something
        // claims it, which is asked only of those over a target's media (one another process
        // writes through is a writer, below).
        let ours: Vec<&str> = targets
            .iter()
            .filter_map(|t| t.kernel_name.as_deref())
            .collect();
        let loops: Vec<MediaUser> = if sources.whole_system {
            other_loop_devices(&media, &users, &ours)
        } else {
            Vec::new()
        };
        // Who else writes the files the targets reach (a VM's image, a database file, the
        // file behind a loop device): by inode, whatever name or link they use.
        let reach: Vec<(Vec<Extent>, Vec<String>)> =
            targets.iter().map(|t| media.target_extents(t)).collect();
        let files: BTreeSet<(u64, u64)> = reach
            .iter()
            .flat_map(|(extents, _)| extents)
            .filter_map(|e| match e.medium {
                Medium::File { dev, ino } => Some((dev, ino)),
                _ => None,
            })
            .collect();
        let mut others = OtherUse::new(files, &sources.patience);
        for ((t, family), (extents, stack)) in targets.iter().zip(&families).zip(&reach) {
            let own: Vec<String> = family
                .iter()
                .flat_map(|f| f.nodes.iter().map(|n| n.name.clone()))
                .collect();
            let mut reasons: Vec<RefusalReason> = shared_media(extents, stack, &own, &users)
                .into_iter()
                .map(|(user, medium)| RefusalReason::SharesMedia {
                    medium,
                    user: user.what.clone(),
                })
                .collect();
            // Whatever another process writes, the target itself included (a VM's disk).
            if sources.whole_system {
                match others.writers(&media) {
                    Ok(writers) => {
                        reasons.extend(shared_media(extents, &[], &[], writers).into_iter().map(
                            |(writer, medium)| RefusalReason::SharesMedia {
                                medium,
                                user: writer.what.clone(),
                            },
                        ))
                    }
                    Err(why) => reasons.push(why),
                }
            }
            for (sibling, medium) in shared_media(extents, stack, &own, &loops) {
                let name = sibling.device.as_deref().unwrap_or_default();
                if others.loop_claimed(&sources.sysfs, name) {
                    reasons.push(RefusalReason::SharesMedia {
                        medium,
                        user: format!(
                            "/dev/{name}, claimed by another opener (a mount, in any mount \
                             namespace or lazily unmounted, swap, or a device built on it)"
                        ),
                    });
                }
            }
            add(&t.path, reasons);
        }
    }
    // Every target's signatures at once, each on a thread of its own: a device that stopped
    // answering costs the checks one patience, not one per device, and every such device
    // is named.
    let content: Vec<Vec<RefusalReason>> = std::thread::scope(|scope| {
        let probes: Vec<_> = targets
            .iter()
            .zip(&opened)
            .map(|(t, file)| {
                // The re-checks while held read no content (settled by the first check).
                let file = file.as_ref().filter(|_| first_check)?;
                let via = descriptor_path(file);
                Some(scope.spawn(move || match t.kind {
                    TargetKind::BlockDevice if !flags.force => signature_reasons(&via, sources),
                    // A file that holds data is someone's data, like a device: the same
                    // consent and the same signature rules. A file with no data (sparse, or
                    // one hostmax is about to make) needs none.
                    TargetKind::RegularFile if file_holds_data(&via) => {
                        let mut reasons = Vec::new();
                        if !flags.allow_write {
                            reasons.push(RefusalReason::NeedsAllowWrite);
                        }
                        if !flags.force {
                            reasons.extend(signature_reasons(&via, sources));
                        }
                        reasons
                    }
                    _ => Vec::new(),
                }))
            })
            .collect();
        probes
            .into_iter()
            .map(|probe| {
                probe
                    .map(|h| h.join().unwrap_or_default())
                    .unwrap_or_default()
            })
            .collect()
    });
    for (t, reasons) in targets.iter().zip(content) {
        add(&t.path, reasons);
    }
    // Catch what the files do not show (btrfs multi-device members, claims by other tools).
    for (t, file) in targets.iter().zip(&opened) {
        let Some(file) = file else { continue };
        if !first_check || t.kind != TargetKind::BlockDevice {
            continue;
        }
        let already_in_use = refusals
            .iter()
            .any(|r| r.path == t.path && r.reasons.iter().any(|x| !x.needs_only_flags()));
        if !already_in_use && exclusive_open_busy(&descriptor_path(file)) {
            match refusals.iter_mut().find(|r| r.path == t.path) {
                Some(r) => r.reasons.push(RefusalReason::Busy),
                None => refusals.push(Refusal {
                    path: t.path.clone(),
                    reasons: vec![RefusalReason::Busy],
                }),
            }
        }
    }
    if refusals.is_empty() {
        return Ok(());
    }
    // Keep the user's order of targets in the message.
    refusals.sort_by_key(|r| targets.iter().position(|t| t.path == r.path));
    Err(WriteRefused { refusals })
}

/// The mounts of every mount namespace but this process's: one process's `mountinfo` per
/// namespace (`/proc/PID/ns/mnt`), each mount point named with that process, since its path
/// means something only there. Processes that vanish or cannot be read are passed over.
fn other_namespace_mounts(proc_root: &Path) -> Vec<MountEntry> {
    let own = std::fs::read_link(proc_root.join("self/ns/mnt")).ok();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for pid in sorted_names(proc_root)
        .into_iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
    {
        let Ok(ns) = std::fs::read_link(proc_root.join(&pid).join("ns/mnt")) else {
            continue;
        };
        if Some(&ns) == own.as_ref() || !seen.insert(ns) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(proc_root.join(&pid).join("mountinfo")) else {
            continue;
        };
        out.extend(parse_mountinfo(&text).into_iter().map(|mut m| {
            m.mount_point = PathBuf::from(format!(
                "{} (in the mount namespace of pid {pid})",
                m.mount_point.display()
            ));
            m
        }));
    }
    out
}

/// Every bound loop device that is not already a user and not one of `ours` (the targets,
/// which this process may hold), with the extents it reaches: candidates, not yet users.
fn other_loop_devices(
    media: &MediaSources<'_>,
    users: &[MediaUser],
    ours: &[&str],
) -> Vec<MediaUser> {
    sorted_names(&media.sysfs.path("class/block"))
        .into_iter()
        .filter(|name| name.starts_with("loop") && !ours.contains(&name.as_str()))
        .filter(|name| !users.iter().any(|u| u.device.as_deref() == Some(name)))
        .filter(|name| {
            media
                .sysfs
                .path("class/block")
                .join(name)
                .join("loop/backing_file")
                .exists()
        })
        .map(|name| {
            let extents = media.device_extents(&name, (0, u64::MAX), &mut Vec::new());
            MediaUser {
                what: format!("/dev/{name}"),
                device: Some(name),
                extents,
            }
        })
        .collect()
}

/// What others do with the targets' media: whether a loop device over them is claimed (an
/// exclusive open fails: a mount in any mount namespace, a lazily unmounted filesystem still
/// open, swap, a dm or md member), asked once each; and what other processes write, as users
/// of media: every block device open for writing (reaching what the device reaches) and every
/// writer of a file the targets reach, from one scan of `/proc` made when first needed
/// ([`Writers::scan`]).
struct OtherUse {
    claims: BTreeMap<String, bool>,
    /// The files (`(st_dev, st_ino)`) the targets reach, whose writers the scan looks for.
    files: BTreeSet<(u64, u64)>,
    /// The writers, once scanned: or why they could not be ([`RefusalReason::NotAnswering`]:
    /// the scan got no answer within the checks' patience, or a signal called it off).
    writers: Option<Result<Vec<MediaUser>, RefusalReason>>,
    patience: Patience,
}

impl OtherUse {
    fn new(files: BTreeSet<(u64, u64)>, patience: &Patience) -> OtherUse {
        OtherUse {
            claims: BTreeMap::new(),
            files,
            writers: None,
            patience: patience.clone(),
        }
    }

    /// What other processes write, each a [`MediaUser`], from a scan of `/proc` bounded by the
    /// checks' patience (a process stuck on a filesystem that does not answer cannot hold the
    /// checks); a device open for writing reaches what `media` says it reaches.
    fn writers(&mut self, media: &MediaSources<'_>) -> Result<&[MediaUser], RefusalReason> {
        let (files, patience) = (self.files.clone(), &self.patience);
        self.writers
            .get_or_insert_with(|| {
                let scanned = patience
                    .within(
                        "listing the processes that write to it (/proc)",
                        move || Writers::scan(Path::new("/proc"), &files),
                    )
                    .map_err(|e| RefusalReason::NotAnswering(e.to_string()))?;
                let mut users = Vec::new();
                for (rdev, whats) in scanned.devices() {
                    let Some(name) = media
                        .sysfs
                        .kernel_name((libc::major(rdev), libc::minor(rdev)))
                    else {
                        continue;
                    };
                    let extents = media.device_extents(&name, (0, u64::MAX), &mut Vec::new());
                    users.extend(whats.iter().map(|what| {
                        MediaUser::new(what.clone(), Some(name.clone()), extents.clone())
                    }));
                }
                users.extend_from_slice(scanned.files());
                Ok(users)
            })
            .as_deref()
            .map_err(Clone::clone)
    }

    /// Whether loop device `name` is claimed by another opener.
    fn loop_claimed(&mut self, sysfs: &Sysfs, name: &str) -> bool {
        *self.claims.entry(name.to_string()).or_insert_with(|| {
            let Some(dev) = sysfs
                .value(format!("class/block/{name}/dev"))
                .and_then(|d| parse_dev(&d))
            else {
                return false;
            };
            let node = PathBuf::from(format!("/dev/{name}"));
            let is_it = std::fs::metadata(&node).is_ok_and(|m| {
                m.file_type().is_block_device()
                    && (libc::major(m.rdev()), libc::minor(m.rdev())) == dev
            });
            is_it && exclusive_open_busy(&node)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const MOUNTINFO: &str = "\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
36 22 0:32 / /dev/shm rw,nosuid,nodev shared:5 - tmpfs tmpfs rw
40 22 7:3 / /mnt/x rw,relatime shared:20 - ext4 /dev/loop3 rw
41 22 7:3 / /srv/bind rw,relatime shared:20 - ext4 /dev/loop3 rw
42 22 259:9 / /mnt/with\\040space rw - xfs /dev/loop5p1 rw
43 22 0:77 / /mnt/btrfs rw - btrfs /dev/loop6 rw
44 22 0:78 / /odd rw master:3 propagate_from:2 unbindable - ext4 /dev/loop7 rw
garbage line
";

    /// The CLI's words, as its messages say them.
    const FLAGS: ConsentWords = ConsentWords {
        allow_write: "--allow-write",
        force: "--force",
        both: "--allow-write --force",
    };

    const ALLOW: WriteSafety = WriteSafety {
        allow_write: true,
        force: false,
    };
    const NO_FLAGS: WriteSafety = WriteSafety {
        allow_write: false,
        force: false,
    };

    const SWAPS: &str = "\
Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
/dev/loop8p2                            partition\t1048572\t\t0\t\t-2
/swap\\040file                           file\t\t1048572\t\t0\t\t-3
";

    fn device(name: &str, dev: (u32, u32)) -> TargetInfo {
        TargetInfo {
            path: PathBuf::from(format!("/dev/{name}")),
            kind: TargetKind::BlockDevice,
            size: 1 << 30,
            logical_block_size: 512,
            rdev: Some(dev),
            kernel_name: Some(name.to_string()),
            inode: None,
            media: None,
        }
    }

    fn node(name: &str, dev: (u32, u32), holders: &[&str]) -> BlockNode {
        BlockNode {
            name: name.to_string(),
            dev,
            holders: holders.iter().map(|h| h.to_string()).collect(),
        }
    }

    fn swaps() -> Vec<SwapEntry> {
        parse_swaps(SWAPS)
            .into_iter()
            .map(|path| SwapEntry {
                path,
                rdev: None,
                inode: None,
            })
            .collect()
    }

    #[test]
    fn mountinfo_parses_devices_points_and_sources() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 7);
        assert_eq!(m[2].dev, (7, 3));
        assert_eq!(m[2].mount_point, PathBuf::from("/mnt/x"));
        assert_eq!(m[4].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!(m[4].source, "/dev/loop5p1");
        assert_eq!(m[6].source, "/dev/loop7");
        assert_eq!(unescape_octal("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape_octal("trailing\\04"), "trailing\\04");
    }

    #[test]
    fn swaps_parse_without_the_header() {
        assert_eq!(
            parse_swaps(SWAPS),
            vec![PathBuf::from("/dev/loop8p2"), PathBuf::from("/swap file")]
        );
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn a_mounted_device_is_refused_even_with_allow_write() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let fam = DeviceFamily {
            nodes: vec![node("loop3", (7, 3), &[])],
        };
        let r = write_refusals(
            &[device("loop3", (7, 3))],
            &[Some(fam)],
            ALLOW,
            &mounts,
            &[],
            &[],
        );
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].reasons,
            vec![RefusalReason::Mounted {
                partition: None,
                mount_points: vec![PathBuf::from("/mnt/x"), PathBuf::from("/srv/bind")]
            }]
        );
        let msg = refusal_message(&r, &FLAGS);
        assert!(
            msg.contains("/dev/loop3 is mounted at /mnt/x (and 1 more)"),
            "{msg}"
        );
        assert!(!msg.contains("--allow-write"), "{msg}");
    }

    #[test]
    fn partitions_holders_swap_and_btrfs_sources_are_found() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let swaps = swaps();
        let cases = [
            (
                DeviceFamily {
                    nodes: vec![node("loop5", (7, 5), &[]), node("loop5p1", (259, 9), &[])],
                },
                "has partition loop5p1 mounted at /mnt/with space",
            ),
            (
                DeviceFamily {
                    nodes: vec![node("loop6", (7, 6), &[])],
                },
                "is mounted at /mnt/btrfs",
            ),
            (
                DeviceFamily {
                    nodes: vec![node("loop4", (7, 4), &["dm-0", "dm-1"])],
                },
                "has holders dm-0,dm-1",
            ),
            (
                DeviceFamily {
                    nodes: vec![
                        node("loop9", (7, 9), &[]),
                        node("loop9p1", (259, 1), &["md127"]),
                    ],
                },
                "has holders md127 (partition loop9p1)",
            ),
            (
                DeviceFamily {
                    nodes: vec![node("loop8", (7, 8), &[]), node("loop8p2", (259, 3), &[])],
                },
                "has partition loop8p2 as active swap",
            ),
        ];
        for (fam, expected) in cases {
            let reasons = in_use_reasons(&fam, &mounts, &swaps);
            assert_eq!(reasons.len(), 1, "{fam:?}: {reasons:?}");
            assert_eq!(reasons[0].to_string(), expected);
        }
        let free = DeviceFamily {
            nodes: vec![node("loop1", (7, 1), &[])],
        };
        assert!(in_use_reasons(&free, &mounts, &swaps).is_empty());
        let by_number = [SwapEntry {
            path: PathBuf::from("/nonexistent/swap"),
            rdev: Some((7, 1)),
            inode: None,
        }];
        assert_eq!(
            in_use_reasons(&free, &mounts, &by_number),
            vec![RefusalReason::Swap { partition: None }]
        );
    }

    #[test]
    fn one_message_lists_every_refused_device() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let targets = [
            device("loop3", (7, 3)),
            device("loop1", (7, 1)),
            device("loop4", (7, 4)),
        ];
        let families = [
            Some(DeviceFamily {
                nodes: vec![node("loop3", (7, 3), &[])],
            }),
            Some(DeviceFamily {
                nodes: vec![node("loop1", (7, 1), &[])],
            }),
            Some(DeviceFamily {
                nodes: vec![node("loop4", (7, 4), &["dm-0"])],
            }),
        ];
        let with_flag = write_refusals(&targets, &families, ALLOW, &mounts, &[], &[]);
        let msg = refusal_message(&with_flag, &FLAGS);
        assert_eq!(
            msg,
            "refusing to write: /dev/loop3 is mounted at /mnt/x (and 1 more); /dev/loop4 has holders dm-0. \
             Unmount them, swapoff them, release their holders or stop what writes them, or pick other devices"
        );
        let without_flag = write_refusals(&targets, &families, NO_FLAGS, &mounts, &[], &[]);
        assert_eq!(without_flag.len(), 3);
        let msg = refusal_message(&without_flag, &FLAGS);
        assert!(msg.contains("/dev/loop1 needs --allow-write"), "{msg}");
        assert!(
            msg.contains(
                "/dev/loop4 needs --allow-write (writing destroys its data) and has holders dm-0"
            ),
            "{msg}"
        );
        assert!(
            msg.ends_with("add --allow-write only if their data may be destroyed"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn regular_files_need_no_flag_unless_they_are_swap() {
        let dir = PathBuf::from(format!("/dev/shm/hostmax-safety-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("img");
        fs::File::create(&file).unwrap().set_len(1 << 20).unwrap();
        let info = TargetInfo::new(file.clone(), TargetKind::RegularFile, 1 << 20, 512);
        assert!(write_refusals(
            std::slice::from_ref(&info),
            &[None],
            NO_FLAGS,
            &[],
            &[],
            &[]
        )
        .is_empty());
        let swap = identify_swaps(std::slice::from_ref(&file));
        assert!(swap[0].inode.is_some());
        let r = write_refusals(&[info], &[None], ALLOW, &[], &swap, &[]);
        assert_eq!(r[0].reasons, vec![RefusalReason::Swap { partition: None }]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn families_come_from_a_sys_class_block_tree() {
        let sysfs_root = PathBuf::from(format!("/dev/shm/hostmax-sysfs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&sysfs_root);
        let sysfs = Sysfs::at(&sysfs_root);
        let root = sysfs.path("class/block");
        fs::create_dir_all(root.join("loop3/holders")).unwrap();
        fs::create_dir_all(root.join("loop3/loop3p1/holders/dm-0")).unwrap();
        fs::write(root.join("loop3/loop3p1/dev"), "259:0\n").unwrap();
        fs::create_dir_all(root.join("loop3/loop3p2/holders")).unwrap();
        fs::write(root.join("loop3/loop3p2/dev"), "259:1\n").unwrap();
        fs::create_dir_all(root.join("loop3/queue")).unwrap();
        fs::create_dir_all(root.join("loop3/mq/0")).unwrap();
        let fam = read_family(&sysfs, "loop3", (7, 3));
        assert_eq!(
            fam.nodes,
            vec![
                node("loop3", (7, 3), &[]),
                node("loop3p1", (259, 0), &["dm-0"]),
                node("loop3p2", (259, 1), &[]),
            ]
        );
        // A device without a sysfs entry is just itself.
        assert_eq!(
            read_family(&sysfs, "sdz", (8, 0)).nodes,
            vec![node("sdz", (8, 0), &[])]
        );
        fs::remove_dir_all(&sysfs_root).unwrap();
    }

    #[test]
    fn writes_fail_closed_when_the_mount_table_cannot_be_read() {
        // (That a read-only workload is never checked is the engine's `measure` test.)
        let targets = [device("nonexistent-loop", (7, 250))];
        let sources = SystemSources {
            mountinfo: PathBuf::from("/nonexistent/mountinfo"),
            ..SystemSources::default()
        };
        let err = check_write_safety(&targets, ALLOW, &sources).unwrap_err();
        assert!(err.to_string().contains("cannot be checked"), "{err}");
    }

    fn refusal(name: &str, reasons: Vec<RefusalReason>) -> Refusal {
        Refusal {
            path: PathBuf::from(format!("/dev/{name}")),
            reasons,
        }
    }

    #[test]
    fn signatures_are_named_with_the_flag_that_overrides_them() {
        use crate::signature::{ExtVersion, Signature};
        let ext4 = RefusalReason::Signature(Signature::Ext(ExtVersion::Ext4));
        let gpt = RefusalReason::Signature(Signature::Gpt {
            sector_size: 512,
            backup_only: false,
        });
        let msg = refusal_message(&[refusal("loop5", vec![ext4.clone()])], &FLAGS);
        assert_eq!(
            msg,
            "refusing to write: /dev/loop5 carries an ext4 filesystem (use --force to overwrite it)"
        );
        // Several signatures read as one list; without --allow-write both flags are named.
        let msg = refusal_message(
            &[refusal(
                "loop6",
                vec![
                    RefusalReason::NeedsAllowWrite,
                    gpt.clone(),
                    ext4.clone(),
                    RefusalReason::Signature(Signature::Swap { page_size: 4096 }),
                ],
            )],
            &FLAGS,
        );
        assert!(
            msg.contains(
                "/dev/loop6 needs --allow-write (writing destroys its data) and carries a GPT partition table \
                 (512-byte sectors), an ext4 filesystem and a swap area (use --allow-write --force to overwrite it)"
            ),
            "{msg}"
        );
        // A mounted device with a signature gets no --force hint: --force would not help.
        let mounted = RefusalReason::Mounted {
            partition: None,
            mount_points: vec![PathBuf::from("/mnt")],
        };
        let msg = refusal_message(
            &[
                refusal("loop7", vec![mounted, ext4.clone()]),
                refusal(
                    "loop8",
                    vec![RefusalReason::Partitions(vec!["loop8p1".into()])],
                ),
            ],
            &FLAGS,
        );
        assert_eq!(
            msg,
            "refusing to write: /dev/loop7 is mounted at /mnt and carries an ext4 filesystem; \
             /dev/loop8 has partitions loop8p1 (use --force to overwrite it). \
             Unmount them, swapoff them, release their holders or stop what writes them, or pick other devices"
        );
        assert!(ext4.is_forceable() && gpt.is_forceable());
        assert!(!RefusalReason::Busy.is_forceable());
        assert!(!RefusalReason::HoldsRoot { via: None }.is_forceable());
        assert!(!RefusalReason::NeedsAllowWrite.is_forceable());
    }

    #[test]
    fn partitions_need_force_but_mounts_and_root_never_yield() {
        let fam = DeviceFamily {
            nodes: vec![node("loop9", (7, 9), &[]), node("loop9p1", (259, 1), &[])],
        };
        let target = [device("loop9", (7, 9))];
        let families = [Some(fam)];
        let r = write_refusals(&target, &families, ALLOW, &[], &[], &[]);
        assert_eq!(
            r[0].reasons,
            vec![RefusalReason::Partitions(vec!["loop9p1".into()])]
        );
        let force = WriteSafety {
            allow_write: true,
            force: true,
        };
        assert!(write_refusals(&target, &families, force, &[], &[], &[]).is_empty());
        // Root on the partition: the disk is refused, through the partition, even with --force.
        let root = vec!["loop9p1".to_string(), "loop9".to_string()];
        let r = write_refusals(&target, &families, force, &[], &[], &root);
        assert_eq!(
            r[0].reasons,
            vec![RefusalReason::HoldsRoot {
                via: Some("loop9p1".into())
            }]
        );
        assert_eq!(
            refusal_message(&r, &FLAGS),
            "refusing to write: /dev/loop9 holds the root filesystem / (through loop9p1). \
             Unmount them, swapoff them, release their holders or stop what writes them, or pick other devices"
        );
        let mounts = parse_mountinfo(MOUNTINFO);
        let fam3 = [Some(DeviceFamily {
            nodes: vec![node("loop3", (7, 3), &[])],
        })];
        let r = write_refusals(&[device("loop3", (7, 3))], &fam3, force, &mounts, &[], &[]);
        assert!(matches!(r[0].reasons[0], RefusalReason::Mounted { .. }));
    }

    /// A fake sysfs with `class/block` entries `(name, dev, parent, slaves)`, laid out as the
    /// kernel does: a partition's directory (with a `partition` file) inside its disk's, and
    /// `class/block/NAME` a link to each device's directory.
    fn fake_sysfs(tag: &str, nodes: &[(&str, &str, Option<&str>, &[&str])]) -> PathBuf {
        let root = PathBuf::from(format!(
            "/dev/shm/hostmax-root-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("class/block")).unwrap();
        for (name, dev, parent, slaves) in nodes {
            let dir = match parent {
                Some(p) => root.join("devices").join(p).join(name),
                None => root.join("devices").join(name),
            };
            fs::create_dir_all(dir.join("slaves")).unwrap();
            fs::write(dir.join("dev"), format!("{dev}\n")).unwrap();
            if parent.is_some() {
                fs::write(dir.join("partition"), "1\n").unwrap();
            }
            for s in *slaves {
                fs::create_dir_all(dir.join("slaves").join(s)).unwrap();
            }
            std::os::unix::fs::symlink(&dir, root.join("class/block").join(name)).unwrap();
        }
        root
    }

    #[test]
    fn root_devices_follow_partitions_and_stacked_devices() {
        let sys = fake_sysfs(
            "stack",
            &[
                ("vda", "254:0", None, &[]),
                ("vda1", "254:1", Some("vda"), &[]),
                ("vda2", "254:2", Some("vda"), &[]),
                ("dm-0", "253:0", None, &["vda2"]),
                ("vdb", "254:16", None, &[]),
            ],
        );
        let sysfs = Sysfs::at(&sys);
        let on = |line: &str| root_device_names(&parse_mountinfo(line), &sysfs);
        assert_eq!(
            on("1 0 253:0 / / rw - ext4 /dev/mapper/root rw"),
            vec!["dm-0", "vda2", "vda"]
        );
        assert_eq!(
            on("1 0 254:1 / / rw - ext4 /dev/vda1 rw"),
            vec!["vda1", "vda"]
        );
        assert_eq!(on("1 0 254:16 / / rw - xfs /dev/vdb rw"), vec!["vdb"]);
        // The last mount on / is the visible one.
        assert_eq!(
            on("1 0 254:1 / / rw - ext4 /dev/vda1 rw\n2 1 254:16 / / rw - xfs /dev/vdb rw"),
            vec!["vdb"]
        );
        // Overlay or tmpfs roots name no block device.
        assert!(on("1 0 0:33 / / rw - overlay overlay rw").is_empty());
        assert!(on("1 0 254:1 /x /mnt rw - ext4 /dev/vda1 rw").is_empty());
        fs::remove_dir_all(&sys).unwrap();
    }

    #[test]
    fn this_hosts_root_device_is_found() {
        let mounts = parse_mountinfo(&fs::read_to_string("/proc/self/mountinfo").unwrap());
        let sysfs = Sysfs::default();
        let class_block = sysfs.path("class/block");
        let sys = class_block.as_path();
        let Some(root) = mounts
            .iter()
            .rev()
            .find(|m| m.mount_point == Path::new("/"))
        else {
            panic!("no / in /proc/self/mountinfo");
        };
        let names = root_device_names(&mounts, &sysfs);
        let backed = fs::read_dir(sys).unwrap().filter_map(|e| e.ok()).any(|e| {
            fs::read_to_string(e.path().join("dev"))
                .ok()
                .and_then(|d| parse_dev(&d))
                == Some(root.dev)
        });
        if root.dev.0 == 0 || !backed {
            eprintln!(
                "/ is not on a block device here ({:?}); nothing to find",
                root.source
            );
            return;
        }
        let first = names.first().expect("the root device");
        let dev = fs::read_to_string(sys.join(first).join("dev")).unwrap();
        assert_eq!(parse_dev(&dev), Some(root.dev), "{names:?}");
    }
}
