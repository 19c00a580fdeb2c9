//! How much memory a run may take ([`MemoryRoom`]): what the machine has available
//! (`MemAvailable` in /proc/meminfo) or, where lower, the limit of the memory cgroup the
//! process runs in. A run that needs more than its cgroup allows is killed by the kernel's
//! OOM killer with no word, so the limit is read where the machine's memory is.
//!
//! The cgroup's limit is found through a bounded, simple path: the process's own cgroup from
//! `/proc/self/cgroup`, then that directory and each one above it up to the root, taking the
//! lowest limit: cgroup v2's `memory.max` under `/sys/fs/cgroup`, v1's `memory.limit_in_bytes`
//! under `/sys/fs/cgroup/memory`. Both are read through [`Sysfs`], so a test can point them
//! at a stand-in tree. The limit is compared as it stands (what the group holds already,
//! page cache included, is not subtracted: the kernel reclaims that first).

use std::path::{Path, PathBuf};

use hostmax_device::Sysfs;

/// What bounds the memory a run may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemoryBound {
    /// The machine's available memory (`MemAvailable`).
    Machine,
    /// A memory cgroup's limit, and the file that sets it (`.../memory.max`, or cgroup v1's
    /// `.../memory.limit_in_bytes`).
    Cgroup(PathBuf),
}

/// The memory a run may take now, and what bounds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryRoom {
    /// Bytes.
    pub bytes: u64,
    /// Where the bound comes from.
    pub bound: MemoryBound,
}

impl MemoryRoom {
    /// This process's room now: the lower of the machine's available memory and its memory
    /// cgroup's limit; `None` when neither can be read.
    pub fn now() -> Option<MemoryRoom> {
        MemoryRoom::read(Path::new("/proc"), &Sysfs::default())
    }

    /// [`MemoryRoom::now`] with procfs at `proc` and sysfs at `sysfs`.
    pub fn read(proc: &Path, sysfs: &Sysfs) -> Option<MemoryRoom> {
        let machine = std::fs::read_to_string(proc.join("meminfo"))
            .ok()
            .and_then(|m| mem_available(&m))
            .map(|bytes| MemoryRoom {
                bytes,
                bound: MemoryBound::Machine,
            });
        let cgroup = std::fs::read_to_string(proc.join("self/cgroup"))
            .ok()
            .and_then(|own| cgroup_limit(&own, sysfs))
            .map(|(bytes, file)| MemoryRoom {
                bytes,
                bound: MemoryBound::Cgroup(file),
            });
        match (machine, cgroup) {
            (Some(m), Some(c)) if c.bytes < m.bytes => Some(c),
            (Some(m), _) => Some(m),
            (None, c) => c,
        }
    }

    /// "only 1.2 GiB of memory is available", or the cgroup's limit and its file: how a
    /// refusal says what it measured the need against.
    pub fn describe(&self) -> String {
        let gib = self.bytes as f64 / (1u64 << 30) as f64;
        match &self.bound {
            MemoryBound::Machine => format!("only {gib:.1} GiB of memory is available"),
            MemoryBound::Cgroup(file) => format!(
                "the memory cgroup this process runs in allows only {gib:.1} GiB ({})",
                file.display()
            ),
        }
    }
}

/// `MemAvailable` of /proc/meminfo's text, in bytes.
pub(crate) fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The lowest memory limit over the cgroups of `/proc/self/cgroup`'s text (`own`) and every
/// cgroup above them, with the file that sets it: v2's `memory.max` (the `0::` line) and v1's
/// `memory.limit_in_bytes` (the line naming the `memory` controller). `None` when no limit is
/// set ("max", or v1's page-rounded `i64::MAX`, which is above any machine's memory anyway).
fn cgroup_limit(own: &str, sysfs: &Sysfs) -> Option<(u64, PathBuf)> {
    let mut lowest: Option<(u64, PathBuf)> = None;
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (base, file) = if controllers.is_empty() {
            ("fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        // The group and each one above it: at most as many reads as the path has parts.
        let mut dir = Some(Path::new(path.trim_start_matches('/')));
        while let Some(d) = dir {
            let rel = Path::new(base).join(d).join(file);
            let limit = sysfs.value(&rel).and_then(|v| v.parse::<u64>().ok());
            if let Some(bytes) = limit.filter(|&b| lowest.as_ref().is_none_or(|(l, _)| b < *l)) {
                lowest = Some((bytes, sysfs.path(&rel)));
            }
            dir = d.parent();
        }
    }
    lowest
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in sysfs holding `files` (relative path, text) and a procfs beside it with
    /// this `cgroup` text for /proc/self/cgroup and `available_kib` in meminfo.
    fn stand_in(name: &str, files: &[(&str, &str)], cgroup: &str, available_kib: u64) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("hostmax-memory-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (rel, text) in files {
            let path = dir.join("sys").join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::write(dir.join("proc/self/cgroup"), cgroup).unwrap();
        std::fs::write(
            dir.join("proc/meminfo"),
            format!("MemTotal: 99999999 kB\nMemAvailable: {available_kib} kB\n"),
        )
        .unwrap();
        dir
    }

    fn room(dir: &Path) -> Option<MemoryRoom> {
        MemoryRoom::read(&dir.join("proc"), &Sysfs::at(dir.join("sys")))
    }

    #[test]
    fn the_lowest_cgroup_limit_on_the_way_up_bounds_the_room() {
        // v2: the group's own limit is "max", its parent's 1 GiB, the root has none.
        let dir = stand_in(
            "v2",
            &[
                ("fs/cgroup/a/b/memory.max", "max\n"),
                ("fs/cgroup/a/memory.max", "1073741824\n"),
            ],
            "0::/a/b\n",
            8 << 20,
        );
        let found = room(&dir).unwrap();
        assert_eq!(found.bytes, 1 << 30);
        assert_eq!(
            found.bound,
            MemoryBound::Cgroup(dir.join("sys/fs/cgroup/a/memory.max"))
        );
        assert!(
            found.describe().contains("allows only 1.0 GiB"),
            "{}",
            found.describe()
        );
        std::fs::remove_dir_all(&dir).unwrap();

        // v1 (a hybrid machine: the unified line has no memory.max), a lower limit deeper down.
        let dir = stand_in(
            "v1",
            &[
                (
                    "fs/cgroup/memory/memory.limit_in_bytes",
                    "9223372036854771712\n",
                ),
                ("fs/cgroup/memory/job/memory.limit_in_bytes", "2147483648\n"),
                (
                    "fs/cgroup/memory/job/x/memory.limit_in_bytes",
                    "536870912\n",
                ),
            ],
            "9:pids:/\n4:memory:/job/x\n0::/\n",
            8 << 20,
        );
        let found = room(&dir).unwrap();
        assert_eq!(found.bytes, 512 << 20);
        assert_eq!(
            found.bound,
            MemoryBound::Cgroup(dir.join("sys/fs/cgroup/memory/job/x/memory.limit_in_bytes"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_machine_bounds_the_room_when_no_cgroup_limit_is_lower() {
        let dir = stand_in(
            "machine",
            &[("fs/cgroup/a/memory.max", "68719476736\n")],
            "0::/a\n",
            2048,
        );
        let found = room(&dir).unwrap();
        assert_eq!(
            found,
            MemoryRoom {
                bytes: 2 << 20,
                bound: MemoryBound::Machine
            }
        );
        assert_eq!(found.describe(), "only 0.0 GiB of memory is available");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            mem_available("MemTotal: 100 kB\nMemAvailable:   2048 kB\n"),
            Some(2 << 20)
        );
    }
}
