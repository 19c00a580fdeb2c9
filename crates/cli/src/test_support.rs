//! Helpers shared by this crate's unit tests.

use std::path::PathBuf;

/// The scratch directory of every hostmax test: `/dev/shm/hostmax-test-PID-TAG`, removed on
/// drop (and by the next test run if this one was killed).
pub(crate) use hostmax_simhost::ScratchDir;

/// A regular-file target of `size` bytes at `path` with 512-byte blocks, as a probe would
/// describe it (nothing is read).
pub(crate) fn file_target(path: impl Into<PathBuf>, size: u64) -> hostmax_engine::TargetInfo {
    hostmax_engine::TargetInfo::new(path, hostmax_engine::TargetKind::RegularFile, size, 512)
}
