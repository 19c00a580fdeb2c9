//! The part of the integration tests' harness that needs no `hostmax` binary: root and skips
//! ([`require_root!`], [`skip!`]), tools from Debian's packages ([`require_tool`]), test
//! volumes ([`volumes`], [`loop_volumes`]), the kernel's own I/O counts
//! ([`kernel_completions`]) and the rate tests' lock ([`rate_test_lock`]).
//!
//! `tests/support/mod.rs` re-exports it whole; the library crates' own integration tests
//! (`crates/engine/tests/`, `crates/aggregate/tests/`, `crates/trace/tests/`), which cannot
//! run the CLI's binary, include this file alone as their `support` module:
//! `#[path = "../../../tests/support/volumes.rs"] mod support;` (the macros name
//! `$crate::support::`).

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Every test's scratch directory: `/dev/shm/hostmax-test-PID-TAG`, removed on drop. (Not
/// every test binary uses it, hence the allow.)
#[allow(unused_imports)]
pub use hostmax_simhost::ScratchDir;
use hostmax_simhost::{find_program, FileLock};
pub use hostmax_simhost::{null_blk_available, SimHostSpec, SimulatedHost};

/// Whether the tests run as root (needed for loop devices and cgroups).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Returns from the calling test, with a printed reason, unless running as root.
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::support::is_root() {
            $crate::support::say_skipped(
                "needs root (loop devices, cgroups); run the tests as root",
            );
            return;
        }
    };
}

/// Returns from the calling test after printing `skipped TEST: REASON` visibly ([`say_skipped`]).
#[macro_export]
macro_rules! skip {
    ($($reason:tt)+) => {{
        $crate::support::say_skipped(&format!($($reason)+));
        return;
    }};
}

/// Prints `skipped TEST: REASON` straight to the process's stderr. libtest captures what
/// `eprintln!` prints and shows it only for failing tests; a write to the stderr handle itself
/// is not captured, so the person running `cargo test` sees why a test did not run.
pub fn say_skipped(reason: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    let _ = writeln!(std::io::stderr().lock(), "skipped {test}: {reason}");
}

/// (reads, writes) the kernel completed for block device `kernel_name` (e.g. "loop3"), as
/// submitted: fields 1+2 and 5+6 of `/sys/block/DEV/stat` (completed requests plus the I/Os
/// merged into them: two random 4 KiB reads that happen to be adjacent become one request),
/// once they have settled.
///
/// The block layer completes a request to its submitter (io_uring posts the CQE) before it
/// counts it in these statistics, and on a busy machine the completing kernel thread can be
/// preempted in between: a read right after a run may lag by an I/O or two. Read until two
/// readings 20 ms apart agree (at most one second).
pub fn kernel_completions(kernel_name: &str) -> (u64, u64) {
    settled(|| read_kernel_completions(kernel_name))
}

/// (discards, sectors) the kernel completed for block device `kernel_name`: fields 12+13
/// (discard requests completed plus the discards merged into them) and 14 (512-byte sectors
/// discarded) of `/sys/block/DEV/stat`, once settled as [`kernel_completions`] are.
pub fn kernel_discards(kernel_name: &str) -> (u64, u64) {
    settled(|| {
        let fields = kernel_stat_fields(kernel_name, 14);
        (fields[11] + fields[12], fields[13])
    })
}

/// Whether block device `kernel_name` takes discards (`queue/discard_max_bytes` is not 0).
pub fn discard_supported(kernel_name: &str) -> bool {
    let path = Path::new("/sys/block")
        .join(kernel_name)
        .join("queue/discard_max_bytes");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    text.trim() != "0"
}

/// `read()` once two readings 20 ms apart agree (at most one second): the block layer counts
/// an I/O in `/sys/block/DEV/stat` a moment after its completion reaches the submitter.
fn settled<T: PartialEq>(read: impl Fn() -> T) -> T {
    let mut last = read();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = read();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// The baseline [`kernel_completions`] of each device before a counted run, once nothing but
/// the run will read it: opens each path once first, since the kernel reads a new disk's
/// partition table on its first open (a loop device attached with partscan, a fresh null_blk
/// disk), and waits for udev, where it runs, to finish probing new devices (its blkid reads
/// a fresh disk's head and tail: 35 reads of a null_blk device in the kernel matrix's VMs).
pub fn baseline_completions(paths: &[String], names: &[String]) -> Vec<(u64, u64)> {
    for path in paths {
        drop(File::open(path).unwrap_or_else(|err| panic!("open {path}: {err}")));
    }
    if let Some(udevadm) = find_program("udevadm") {
        // Without a running udevd this returns at once; its status does not matter.
        let _ = Command::new(udevadm)
            .args(["settle", "--timeout=30"])
            .output();
    }
    names.iter().map(|n| kernel_completions(n)).collect()
}

fn read_kernel_completions(kernel_name: &str) -> (u64, u64) {
    let fields = kernel_stat_fields(kernel_name, 6);
    (fields[0] + fields[1], fields[4] + fields[5])
}

/// The fields of `/sys/block/DEV/stat`, at least `at_least` of them (the discard fields came
/// in Linux 4.18).
fn kernel_stat_fields(kernel_name: &str, at_least: usize) -> Vec<u64> {
    let path = Path::new("/sys/block").join(kernel_name).join("stat");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    let fields: Vec<u64> = text
        .split_whitespace()
        .map(|f| f.parse().expect("stat fields are numbers"))
        .collect();
    assert!(
        fields.len() >= at_least,
        "{} has {} fields, not {at_least}",
        path.display(),
        fields.len()
    );
    fields
}

/// `count` uncapped loop volumes of `size` bytes (root only).
pub fn loop_volumes(count: usize, size: u64) -> SimulatedHost {
    SimulatedHost::build_loop_devices(&SimHostSpec::new(count, size))
        .unwrap_or_else(|err| panic!("could not build {count} loop volumes: {err}"))
}

/// Loop volumes of `size` bytes, each capped at its own IOPS by a throttle (root only).
pub fn capped_loop_volumes(caps: &[u64], size: u64) -> SimulatedHost {
    let spec = SimHostSpec::new(caps.len(), size)
        .with_volume_iops_caps(caps.iter().map(|&c| Some(c)).collect());
    SimulatedHost::build_loop_devices(&spec)
        .unwrap_or_else(|err| panic!("could not build volumes capped at {caps:?}: {err}"))
}

/// Chooses the backend of [`volumes`]: `loop`, `null_blk`, or unset for null_blk where available.
pub const BACKEND_ENV: &str = "HOSTMAX_TEST_BACKEND";

/// What [`volumes`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBackend {
    /// Loop devices on tmpfs.
    Loop,
    /// Memory-backed null_blk devices.
    NullBlk,
}

/// The backend of [`volumes`] for this process, decided (and printed) once: null_blk when
/// [`null_blk_available`] says so, unless [`BACKEND_ENV`] says `loop`. `null_blk` there makes its
/// absence a failure instead of a fallback.
pub fn test_backend() -> TestBackend {
    static BACKEND: OnceLock<TestBackend> = OnceLock::new();
    *BACKEND.get_or_init(|| {
        let asked = std::env::var(BACKEND_ENV).unwrap_or_default();
        let (backend, why) = match (asked.as_str(), null_blk_available()) {
            ("loop", _) => (TestBackend::Loop, format!("{BACKEND_ENV}=loop")),
            ("null_blk" | "", Ok(())) => (TestBackend::NullBlk, "the kernel has it".to_string()),
            ("", Err(reason)) => (TestBackend::Loop, reason),
            ("null_blk", Err(reason)) => {
                panic!("{BACKEND_ENV}=null_blk but null_blk is unavailable: {reason}")
            }
            (other, _) => panic!("{BACKEND_ENV}={other:?}: use loop, null_blk or leave it unset"),
        };
        let what = match backend {
            TestBackend::Loop => "loop devices on tmpfs",
            TestBackend::NullBlk => "null_blk devices",
        };
        eprintln!("test volumes: {what} ({why})");
        backend
    })
}

/// `count` uncapped block volumes of `size` bytes (a whole number of MiB; root only): null_blk
/// or loop devices as [`test_backend`] chose. For tests that need any block device; tests of
/// loop specifics (backing files, `loop_device()`, host caps) use [`loop_volumes`].
pub fn volumes(count: usize, size: u64) -> SimulatedHost {
    match test_backend() {
        TestBackend::Loop => loop_volumes(count, size),
        TestBackend::NullBlk => SimulatedHost::build_null_blk(&SimHostSpec::new(count, size))
            .unwrap_or_else(|err| panic!("could not build {count} null_blk volumes: {err}")),
    }
}

/// Where [`rate_test_lock`] locks.
pub const RATE_LOCK_PATH: &str = "/tmp/hostmax-rate-tests.lock";

/// Held while a test measures rates; released on drop.
pub struct RateTestGuard {
    _held: FileLock,
}

/// Waits until no other rate-measuring test (in any test binary) runs, then holds the lock.
pub fn rate_test_lock() -> RateTestGuard {
    RateTestGuard {
        _held: lock_file(RATE_LOCK_PATH),
    }
}

/// Where [`require_tool`] serialises apt-get (dpkg takes one installer at a time).
pub const APT_LOCK_PATH: &str = "/tmp/hostmax-tests-apt.lock";

/// The path of command `binary`, installing Debian's `package` when it is missing and we may
/// (root, apt-get present; `apt-get update` once if the first install finds no such package).
/// `Err` says why the tool cannot be had: only then may a test skip, with [`skip!`].
pub fn require_tool(binary: &str, package: &str) -> Result<PathBuf, String> {
    if let Some(found) = find_program(binary) {
        return Ok(found);
    }
    if !is_root() {
        return Err(format!(
            "{binary} is not installed and installing it needs root (apt-get install -y {package})"
        ));
    }
    let _apt = lock_file(APT_LOCK_PATH);
    // Another test may have installed it while this one waited for the lock.
    if let Some(found) = find_program(binary) {
        return Ok(found);
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let mut out =
        install().map_err(|e| format!("{binary} is not installed and apt-get cannot run: {e}"))?;
    if !out.status.success() {
        // A fresh machine has no package lists yet.
        let _ = Command::new("apt-get").args(["update", "-qq"]).output();
        out = install().map_err(|e| format!("apt-get cannot run: {e}"))?;
    }
    if !out.status.success() {
        return Err(format!(
            "{binary} is not installed and 'apt-get install -y {package}' failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    find_program(binary)
        .ok_or_else(|| format!("apt-get installed {package} but {binary} is not on PATH"))
}

/// Waits for an exclusive flock on `path` (made if missing) and holds it until dropped.
pub fn lock_file(path: &str) -> FileLock {
    FileLock::acquire(Path::new(path)).unwrap_or_else(|err| panic!("lock {path}: {err}"))
}

/// The volumes' paths as `--devices` arguments.
pub fn volume_paths(host: &SimulatedHost) -> Vec<String> {
    host.device_paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// The volumes' kernel names (`loop3`), for [`kernel_completions`]; block-device volumes only.
pub fn volume_kernel_names(host: &SimulatedHost) -> Vec<String> {
    host.volumes()
        .iter()
        .map(|v| {
            v.kernel_name()
                .expect("the host was built from block devices")
                .to_string()
        })
        .collect()
}
