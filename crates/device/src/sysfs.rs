//! [`Sysfs`]: where the kernel's sysfs is mounted (`/sys`, or a stand-in tree in tests), the
//! one way every sysfs file is read, and the one partition-to-disk resolver
//! ([`Sysfs::partition_disk`], [`Sysfs::whole_disk`]); [`KernelCounts`], the kernel's own
//! count of a block device's completed I/Os ([`Sysfs::io_counts`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The kernel's own count of a block device's completed I/Os, from its `stat` file
/// (`Documentation/block/stat.rst`): completed plus merged, per kind (fields 1+2 reads, 5+6
/// writes, 12+13 discards). Flushes are not counted. The kernel counts what reached the
/// device: one I/O larger than the device's limits (`queue/max_sectors_kb`,
/// `queue/max_segments`) counts once per piece it was split into, and everyone's I/O counts,
/// not only one program's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KernelCounts {
    /// Reads completed plus reads merged.
    pub reads: u64,
    /// Writes completed plus writes merged.
    pub writes: u64,
    /// Discards completed plus discards merged (0 before Linux 4.18, whose `stat` has no
    /// discard fields).
    pub discards: u64,
}

impl KernelCounts {
    /// Counts of `reads`, `writes` and `discards` (for tools and tests that make them).
    pub const fn new(reads: u64, writes: u64, discards: u64) -> KernelCounts {
        KernelCounts {
            reads,
            writes,
            discards,
        }
    }

    /// The same counts with [`KernelCounts::reads`] set to `reads`.
    #[must_use]
    pub const fn with_reads(mut self, reads: u64) -> KernelCounts {
        self.reads = reads;
        self
    }

    /// The same counts with [`KernelCounts::writes`] set to `writes`.
    #[must_use]
    pub const fn with_writes(mut self, writes: u64) -> KernelCounts {
        self.writes = writes;
        self
    }

    /// The same counts with [`KernelCounts::discards`] set to `discards`.
    #[must_use]
    pub const fn with_discards(mut self, discards: u64) -> KernelCounts {
        self.discards = discards;
        self
    }

    /// The counts a `stat` file's text holds; `None` when it has fewer than the 11 fields
    /// every kernel writes, or a field is not a number.
    pub fn parse_stat(text: &str) -> Option<KernelCounts> {
        let fields = text
            .split_whitespace()
            .map(|f| f.parse::<u64>().ok())
            .collect::<Option<Vec<u64>>>()?;
        if fields.len() < 11 {
            return None;
        }
        Some(KernelCounts {
            reads: fields[0] + fields[1],
            writes: fields[4] + fields[5],
            discards: match fields.get(11..13) {
                Some(d) => d[0] + d[1],
                None => 0,
            },
        })
    }

    /// What was counted since `before` (a counter that went back, as a device removed and
    /// made again under the same name does, counts from zero).
    pub fn since(&self, before: &KernelCounts) -> KernelCounts {
        let delta = |now: u64, then: u64| now.checked_sub(then).unwrap_or(now);
        KernelCounts {
            reads: delta(self.reads, before.reads),
            writes: delta(self.writes, before.writes),
            discards: delta(self.discards, before.discards),
        }
    }
}

/// The root of sysfs: `/sys` on a real host ([`Sysfs::default`]), another directory laid out
/// the same way in tests ([`Sysfs::at`]). Every path it takes is relative to that root
/// (`block/sdb/queue/scheduler`, `class/block/sdb1`, `devices/system/cpu/online`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::at("/sys")
    }
}

impl Sysfs {
    /// Sysfs as laid out under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` under the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// A file's whole text, as it is.
    pub fn read(&self, rel: impl AsRef<Path>) -> std::io::Result<String> {
        std::fs::read_to_string(self.path(rel))
    }

    /// A file's text trimmed of surrounding whitespace (the kernel ends its values with a
    /// newline); `None` when it is absent or unreadable.
    pub fn value(&self, rel: impl AsRef<Path>) -> Option<String> {
        self.read(rel).ok().map(|s| s.trim().to_string())
    }

    /// The directory of block device `name` (a kernel name: `sdb`, `sdb1`, `loop3`) in
    /// `class/block`: a disk's or a partition's.
    pub fn class_block(&self, name: &str) -> PathBuf {
        self.path("class/block").join(name)
    }

    /// The directory of whole disk `disk` in `block` (its `queue/`, `mq/`, `device/`).
    pub fn block(&self, disk: &str) -> PathBuf {
        self.path("block").join(disk)
    }

    /// The kernel's name of the block device numbered `major:minor` (`dev/block/MAJ:MIN`
    /// leads to its directory), e.g. `loop3`.
    pub fn kernel_name(&self, (major, minor): (u32, u32)) -> Option<String> {
        let dir = std::fs::canonicalize(self.path(format!("dev/block/{major}:{minor}"))).ok()?;
        dir.file_name().map(|n| n.to_string_lossy().into_owned())
    }

    /// The disk that block device `name` is a partition of; `None` for a whole disk or when
    /// sysfs does not say. The one partition-to-disk resolver: a partition has a `partition`
    /// file, and its directory sits inside its disk's.
    pub fn partition_disk(&self, name: &str) -> Option<String> {
        let node = self.class_block(name);
        if !node.join("partition").exists() {
            return None;
        }
        let dir = std::fs::canonicalize(&node).ok()?;
        dir.parent()?
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    }

    /// The kernel's count of block device `name`'s completed I/Os so far (a partition's own
    /// `stat` for a partition); `None` when sysfs has none (no such device).
    pub fn io_counts(&self, name: &str) -> Option<KernelCounts> {
        KernelCounts::parse_stat(&self.read(format!("class/block/{name}/stat")).ok()?)
    }

    /// The largest I/O, in bytes, block device `name` takes in one piece (its disk's
    /// `queue/max_sectors_kb`); the kernel splits a larger one. `None` when sysfs does not say.
    pub fn max_io_bytes(&self, name: &str) -> Option<u64> {
        let disk = self.whole_disk(name);
        let kib: u64 = self
            .value(format!("block/{disk}/queue/max_sectors_kb"))?
            .parse()
            .ok()?;
        Some(kib * 1024)
    }

    /// The whole disk block device `name` belongs to: a partition's disk, else itself. The
    /// disk is what `block/` lists (its blk-mq map and queue settings apply to its
    /// partitions too).
    pub fn whole_disk(&self, name: &str) -> String {
        self.partition_disk(name)
            .unwrap_or_else(|| name.to_string())
    }
}

/// The names in directory `dir` (a sysfs list such as `holders/`, `slaves/` or `class/block`),
/// sorted; none when it cannot be read (a device without such links has no directory).
pub(crate) fn sorted_names(dir: &Path) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_partition_resolves_to_its_disk_and_a_disk_to_itself() {
        // Laid out as the kernel does: partitions inside their disk's directory, class/block
        // and dev/block as links to them.
        let root = std::env::temp_dir().join(format!("hostmax-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let disks = root.join("devices/virtual/block");
        std::fs::create_dir_all(disks.join("sda/sda1")).unwrap();
        std::fs::write(disks.join("sda/sda1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(root.join("class/block")).unwrap();
        std::fs::create_dir_all(root.join("dev/block")).unwrap();
        for (name, dir, dev) in [("sda", "sda", "8:0"), ("sda1", "sda/sda1", "8:1")] {
            symlink(disks.join(dir), root.join("class/block").join(name)).unwrap();
            symlink(disks.join(dir), root.join("dev/block").join(dev)).unwrap();
        }
        let sysfs = Sysfs::at(&root);
        assert_eq!(sysfs.partition_disk("sda1").as_deref(), Some("sda"));
        assert_eq!(sysfs.partition_disk("sda"), None);
        assert_eq!(sysfs.whole_disk("sda1"), "sda");
        assert_eq!(sysfs.whole_disk("sda"), "sda");
        assert_eq!(sysfs.whole_disk("sdz"), "sdz");
        assert_eq!(sysfs.kernel_name((8, 1)).as_deref(), Some("sda1"));
        assert_eq!(sysfs.kernel_name((8, 2)), None);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(Sysfs::default().root(), Path::new("/sys"));
    }

    #[test]
    fn stat_counts_add_merges_and_discards() {
        // 6.x: 17 fields; reads 100+5, writes 40+2, discards 7+1.
        let now = "     100        5     2000       10       40        2      800       20        0       30       30        7        1       64        3        0        0\n";
        let counts = KernelCounts::parse_stat(now).unwrap();
        assert_eq!(
            counts,
            KernelCounts {
                reads: 105,
                writes: 42,
                discards: 8
            }
        );
        // Before 4.18: 11 fields, no discards.
        let old = "3 1 0 0 2 0 0 0 0 0 0";
        assert_eq!(
            KernelCounts::parse_stat(old),
            Some(KernelCounts {
                reads: 4,
                writes: 2,
                discards: 0
            })
        );
        assert_eq!(KernelCounts::parse_stat("1 2 3"), None);
        assert_eq!(KernelCounts::parse_stat("a b c d e f g h i j k"), None);
        let before = KernelCounts {
            reads: 100,
            writes: 50,
            discards: 0,
        };
        assert_eq!(
            counts.since(&before),
            KernelCounts {
                reads: 5,
                writes: 42,
                discards: 8
            }
        );
    }

    #[test]
    fn a_real_devices_counts_and_limits_are_read() {
        let sysfs = Sysfs::default();
        let Some(name) = std::fs::read_dir("/sys/block").ok().and_then(|mut d| {
            d.find_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        }) else {
            return;
        };
        assert!(sysfs.io_counts(&name).is_some(), "{name}");
        assert!(
            sysfs.max_io_bytes(&name).is_some_and(|b| b >= 4096),
            "{name}"
        );
        assert_eq!(sysfs.io_counts("hostmax-no-such-device"), None);
    }
}
