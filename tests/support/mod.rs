//! Shared harness for hostmax's integration tests; include it with `mod support;`.
//!
//! - [`is_root`] and [`require_root!`]: skip (with a printed reason) where root is truly absent.
//! - [`hostmax_bin`] and [`run_hostmax`]: run the built binary, optionally inside an
//!   [`IoThrottle`] so the simulated caps apply to it.
//! - [`loop_volumes`]: N uncapped loop volumes (a [`SimulatedHost`]); build a [`SimHostSpec`]
//!   for caps.
//! - [`kernel_completions`]: the kernel's own count of completed reads and writes of a device,
//!   an oracle for the tool's counts.
//! - [`rate_test_lock`]: a machine-wide lock ([`RateTestGuard`]) so tests that measure rates do
//!   not run beside each other, across test binaries too.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use hostmax::simhost::{IoThrottle, SimHostSpec, SimulatedHost};

/// Whether the tests run as root (needed for loop devices and cgroups).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Returns from the calling test, with a printed reason, unless running as root.
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::support::is_root() {
            eprintln!(
                "skipped {}: needs root (loop devices, cgroups); run the tests as root",
                std::thread::current().name().unwrap_or("this test")
            );
            return;
        }
    };
}

/// The `hostmax` binary cargo built for these tests.
pub fn hostmax_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hostmax"))
}

/// Runs `hostmax ARGS` to completion (inside `in_group`'s cgroup if given) and returns its output.
pub fn run_hostmax<S: AsRef<OsStr>>(args: &[S], in_group: Option<&IoThrottle>) -> Output {
    let mut cmd = Command::new(hostmax_bin());
    cmd.args(args);
    if let Some(group) = in_group {
        group.command_in_group(&mut cmd);
    }
    cmd.output()
        .unwrap_or_else(|err| panic!("could not run {}: {err}", hostmax_bin().display()))
}

/// (reads completed, writes completed) of block device `kernel_name` (e.g. "loop3"), from
/// fields 1 and 5 of `/sys/block/DEV/stat`.
pub fn kernel_completions(kernel_name: &str) -> (u64, u64) {
    let path = Path::new("/sys/block").join(kernel_name).join("stat");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    let fields: Vec<u64> = text
        .split_whitespace()
        .map(|f| f.parse().expect("stat fields are numbers"))
        .collect();
    assert!(
        fields.len() >= 5,
        "{} has {} fields",
        path.display(),
        fields.len()
    );
    (fields[0], fields[4])
}

/// `count` uncapped loop volumes of `size` bytes (root only).
pub fn loop_volumes(count: usize, size: u64) -> SimulatedHost {
    SimulatedHost::build_loop_devices(&SimHostSpec::new(count, size))
        .unwrap_or_else(|err| panic!("could not build {count} loop volumes: {err}"))
}

/// Where [`rate_test_lock`] locks.
pub const RATE_LOCK_PATH: &str = "/tmp/hostmax-rate-tests.lock";

/// Held while a test measures rates; released on drop.
pub struct RateTestGuard {
    // flock locks belong to this open file description; closing it unlocks.
    _file: File,
}

/// Waits until no other rate-measuring test (in any test binary) runs, then holds the lock.
pub fn rate_test_lock() -> RateTestGuard {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(RATE_LOCK_PATH)
        .unwrap_or_else(|err| panic!("open {RATE_LOCK_PATH}: {err}"));
    loop {
        // SAFETY: `file` is open for the whole call; flock only takes the fd.
        let ret = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if ret == 0 {
            return RateTestGuard { _file: file };
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::Interrupted,
            "flock {RATE_LOCK_PATH}: {err}"
        );
    }
}
