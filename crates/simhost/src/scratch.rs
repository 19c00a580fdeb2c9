//! [`ScratchDir`]: a directory of this process's own, removed on drop; the one scratch-directory
//! helper of the simulated host, the CLI's unit tests and the integration tests.
//!
//! Each is named `<prefix><pid>-<tag>`, so [`sweep_dead_owners`] can remove those of processes
//! that were killed before their drop ran.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::SimHostError;

/// Prefix of the tests' scratch directories ([`ScratchDir::new`]): `hostmax-test-PID-TAG`.
pub const TEST_SCRATCH_PREFIX: &str = "hostmax-test-";

/// A directory of this process's own, removed with its contents on drop.
///
/// [`ScratchDir::new`] is the tests' kind (on tmpfs, which takes `O_DIRECT`; panics on
/// failure); [`ScratchDir::create_private`] is the simulated host's (any base, mode 0700,
/// errors returned).
#[derive(Debug)]
pub struct ScratchDir(pub PathBuf);

impl ScratchDir {
    /// A fresh `/dev/shm/hostmax-test-PID-TAG` (the system temporary directory where there is
    /// no /dev/shm), emptied first if a test of this process made it before. The first one of
    /// a process also removes those of test processes that were killed before their drop ran.
    /// Panics where it cannot be made: for tests.
    pub fn new(tag: &str) -> ScratchDir {
        let base = tmpfs_base();
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| {
            sweep_dead_owners(&base, TEST_SCRATCH_PREFIX);
        });
        let dir = base.join(owned_name(TEST_SCRATCH_PREFIX, tag));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("create {}: {err}", dir.display()));
        ScratchDir(dir)
    }

    /// A new private (mode 0700) directory `<base>/<prefix><pid>-<tag>`; an error if it
    /// exists already.
    pub fn create_private(
        base: &Path,
        prefix: &str,
        tag: &str,
    ) -> Result<ScratchDir, SimHostError> {
        let path = base.join(owned_name(prefix, tag));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(SimHostError::io("create directory", &path))?;
        Ok(ScratchDir(path))
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A path inside the directory, as a command-line argument.
    pub fn path(&self, name: &str) -> String {
        self.join(name).display().to_string()
    }

    /// A new sparse file of `len` bytes in the directory, open for reading and writing and
    /// readable by this user only; an error if it exists already.
    pub fn new_file(&self, name: &str, len: u64) -> Result<(File, PathBuf), SimHostError> {
        let path = self.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(SimHostError::io("create", &path))?;
        file.set_len(len)
            .map_err(SimHostError::io("set the size of", &path))?;
        Ok((file, path))
    }

    /// A sparse file of `len` bytes in the directory (replacing one of that name); panics
    /// where it cannot be made: for tests.
    pub fn file(&self, name: &str, len: u64) -> PathBuf {
        let path = self.join(name);
        File::create(&path)
            .and_then(|f| f.set_len(len))
            .unwrap_or_else(|err| panic!("create {}: {err}", path.display()));
        path
    }

    /// A file holding `text` in the directory; panics where it cannot be written: for tests.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.join(name);
        fs::write(&path, text).unwrap_or_else(|err| panic!("write {}: {err}", path.display()));
        path
    }

    /// The names in the directory, sorted; panics where it cannot be read: for tests.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .unwrap_or_else(|err| panic!("read {}: {err}", self.0.display()))
            .map(|e| {
                e.expect("scratch entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `<prefix><pid>-<tag>`: the name [`sweep_dead_owners`] reads the owner's pid back from.
fn owned_name(prefix: &str, tag: &str) -> String {
    format!("{prefix}{}-{tag}", std::process::id())
}

/// `/dev/shm`, else the system temporary directory: where tests' scratch directories and
/// other per-process marks live (tmpfs, so they go with a reboot as devices do).
pub(crate) fn tmpfs_base() -> PathBuf {
    if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    }
}

/// Removes the directories in `base` named `<prefix><pid>` or `<prefix><pid>-<anything>` whose
/// process `pid` is gone (what a killed run, or a killed test, left behind); returns how many.
/// Directories of live processes, and names that do not fit, are left alone.
pub fn sweep_dead_owners(base: &Path, prefix: &str) -> usize {
    sweep_dead_owners_with(base, prefix, |_, _| {})
}

/// [`sweep_dead_owners`], calling `before_removal(tag, dir)` on each dead owner's directory
/// first (`tag` is what follows `<prefix><pid>-`, empty without it): to undo what the
/// directory stands for.
pub(crate) fn sweep_dead_owners_with(
    base: &Path,
    prefix: &str,
    mut before_removal: impl FnMut(&str, &Path),
) -> usize {
    let Ok(entries) = fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let (pid, tag) = rest.split_once('-').unwrap_or((rest, ""));
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid_alive(pid) {
            continue;
        }
        before_removal(tag, &entry.path());
        if fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether process `pid` exists.
pub(crate) fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeping_removes_only_dead_owners_directories() {
        let scratch = ScratchDir::new("sweep");
        // 4194305 is above the kernel's largest pid_max, so no process has it.
        let me = std::process::id();
        let names = [
            "leftover-4194305-html".to_string(),
            "leftover-4194305".to_string(),
            format!("leftover-{me}-live"),
            "leftover-notapid-x".to_string(),
            "other-4194305-x".to_string(),
        ];
        for name in &names {
            fs::create_dir(scratch.0.join(name)).unwrap();
            fs::write(scratch.0.join(name).join("f"), "x").unwrap();
        }
        assert_eq!(sweep_dead_owners(&scratch.0, "leftover-"), 2);
        let mut left = scratch.entries();
        left.sort();
        assert_eq!(
            left,
            [
                format!("leftover-{me}-live"),
                "leftover-notapid-x".to_string(),
                "other-4194305-x".to_string()
            ]
        );
    }
}
