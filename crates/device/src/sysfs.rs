//! [`Sysfs`]: where the kernel's sysfs is mounted (`/sys`, or a stand-in tree in tests), the
//! one way every sysfs file is read (each read within a [`Patience`]: a hung driver's
//! attribute cannot hold a run), and the one partition-to-disk resolver
//! ([`Sysfs::partition_disk`], [`Sysfs::whole_disk`]); [`KernelCounts`], the kernel's own
//! count of a block device's completed I/Os ([`Sysfs::io_counts`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::Patience;

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
///
/// Every file is read within its [`Patience`] (on a thread of its own: at most
/// [`crate::READ_PATIENCE`] by default, and called off as the process set with
/// [`crate::call_off_waits_by`]): a driver whose attribute never answers holds a thread of
/// its own, not the caller. A file that gave no answer in time gives none again for the rest
/// of the process (every later read of it fails at once), so no wait is repeated.
#[derive(Debug, Clone)]
pub struct Sysfs {
    root: PathBuf,
    patience: Patience,
}

/// Two views of sysfs are the same when their roots are.
impl PartialEq for Sysfs {
    fn eq(&self, other: &Sysfs) -> bool {
        self.root == other.root
    }
}

impl Eq for Sysfs {}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::at("/sys")
    }
}

/// Sysfs files that gave no answer within their patience ([`Sysfs::read`]).
static UNANSWERED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn unanswered() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    UNANSWERED.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sysfs {
    /// Sysfs as laid out under `root`, each read waiting as [`Patience::default`] does.
    pub fn at(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs {
            root: root.into(),
            patience: Patience::default(),
        }
    }

    /// The same view, each read waiting as `patience` says.
    #[must_use]
    pub fn with_patience(mut self, patience: Patience) -> Sysfs {
        self.patience = patience;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` under the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// A file's whole text, as it is (`rel` may also be a whole path under the root, such as
    /// one a directory listing gave).
    ///
    /// # Errors
    ///
    /// The read's own; [`std::io::ErrorKind::TimedOut`] when the file gave no answer within
    /// the patience, or gave none before ([`Sysfs`]); [`std::io::ErrorKind::Interrupted`] when
    /// the wait was called off.
    pub fn read(&self, rel: impl AsRef<Path>) -> std::io::Result<String> {
        let path = self.path(rel);
        let what = format!("a read of {}", path.display());
        if unanswered().contains(&path) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{what}: it gave no answer before"),
            ));
        }
        let reading = path.clone();
        let read = self
            .patience
            .within(&what, move || std::fs::read_to_string(reading))
            .and_then(|read| read);
        if read
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::TimedOut)
        {
            unanswered().insert(path);
        }
        read
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

    /// A stand-in tree whose device's `stat` is a FIFO nobody writes (a hung driver's
    /// attribute): a read of it ends within its patience (in a thread of the test's, so a read
    /// that never ends fails the test instead of hanging it), gives no count, and the next
    /// read of it fails at once; a read called off ends at once.
    #[test]
    fn an_attribute_that_never_answers_is_given_up_within_the_patience() {
        let root = std::env::temp_dir().join(format!("hostmax-sysfs-hung-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("class/block/hung0")).unwrap();
        std::fs::write(root.join("class/block/hung0/size"), "2048\n").unwrap();
        let fifo = crate::device_reads::tests::Fifo::make(root.join("class/block/hung0/stat"));
        let patience = Patience::new(
            std::time::Duration::from_millis(300),
            crate::PROGRAM_PATIENCE,
        );
        let sysfs = Sysfs::at(&root).with_patience(patience);
        let within = |read: Box<dyn FnOnce() -> Option<KernelCounts> + Send>| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(read()));
            let started = std::time::Instant::now();
            let got = rx
                .recv_timeout(std::time::Duration::from_secs(5))
                .expect("the read of a hung attribute ended");
            (got, started.elapsed())
        };
        let first = sysfs.clone();
        let (got, took) = within(Box::new(move || first.io_counts("hung0")));
        assert_eq!(got, None);
        assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
        let err = sysfs.read("class/block/hung0/stat").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("gave no answer before"), "{err}");
        // The rest of the tree answers.
        assert_eq!(
            sysfs.value("class/block/hung0/size").as_deref(),
            Some("2048")
        );
        // Called off: a signal ends the wait at once (a fresh file, never given up on).
        let other = crate::device_reads::tests::Fifo::make(root.join("class/block/hung0/inflight"));
        let called_off = Sysfs::at(&root).with_patience(Patience::default().called_off_by(|| true));
        let err = called_off.read("class/block/hung0/inflight").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted, "{err}");
        drop((fifo, other));
        std::fs::remove_dir_all(&root).unwrap();
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
