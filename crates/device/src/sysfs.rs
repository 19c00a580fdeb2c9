//! [`Sysfs`]: where the kernel's sysfs is mounted (`/sys`, or a stand-in tree in tests), the
//! one way every sysfs file is read, and the one partition-to-disk resolver
//! ([`Sysfs::partition_disk`], [`Sysfs::whole_disk`]).

use std::path::{Path, PathBuf};

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

    /// The whole disk block device `name` belongs to: a partition's disk, else itself. The
    /// disk is what `block/` lists (its blk-mq map and queue settings apply to its
    /// partitions too).
    pub fn whole_disk(&self, name: &str) -> String {
        self.partition_disk(name)
            .unwrap_or_else(|| name.to_string())
    }
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
}
