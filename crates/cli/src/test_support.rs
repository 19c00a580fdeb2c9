//! Helpers shared by this crate's unit tests.

use std::fs;
use std::path::{Path, PathBuf};

/// Prefix of unit-test scratch directories: `hostmax-unit-PID-TAG`.
const PREFIX: &str = "hostmax-unit-";

/// A fresh directory `/dev/shm/hostmax-unit-PID-TAG` (tmpfs takes `O_DIRECT`; the system
/// temporary directory where there is no /dev/shm), removed on drop, and by the next test run
/// if this one was killed.
pub(crate) struct ScratchDir(pub PathBuf);

impl ScratchDir {
    pub(crate) fn new(tag: &str) -> ScratchDir {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| {
            crate::simhost::sweep_dead_owners(&base, PREFIX);
        });
        let dir = base.join(format!("{PREFIX}{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create scratch dir");
        ScratchDir(dir)
    }

    /// A sparse file of `len` bytes in the directory.
    pub(crate) fn file(&self, name: &str, len: u64) -> PathBuf {
        let path = self.0.join(name);
        fs::File::create(&path)
            .and_then(|f| f.set_len(len))
            .expect("create scratch file");
        path
    }

    /// The names in the directory, sorted.
    pub(crate) fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .expect("read scratch dir")
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

    /// A file holding `text` in the directory.
    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        fs::write(&path, text).expect("write scratch file");
        path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A regular-file target of `size` bytes at `path` with 512-byte blocks, as a probe would
/// describe it (nothing is read).
pub(crate) fn file_target(path: impl Into<PathBuf>, size: u64) -> hostmax_engine::TargetInfo {
    hostmax_engine::TargetInfo {
        path: path.into(),
        kind: hostmax_engine::TargetKind::RegularFile,
        size,
        logical_block_size: 512,
        rdev: None,
        kernel_name: None,
    }
}
