//! Shared harness for hostmax's integration tests; include it with `mod support;`. Its part
//! that needs no `hostmax` binary is `volumes.rs` (re-exported here), which the library
//! crates' own tests include alone.
//!
//! - [`is_root`] and [`require_root!`]: skip (with a printed reason) where root is truly absent.
//! - [`hostmax_bin`] and [`run_hostmax`]: run the built binary, optionally inside an
//!   [`IoThrottle`] so the simulated caps apply to it.
//! - [`volumes`]: N uncapped volumes, null_blk where the kernel has it (else loop devices;
//!   `HOSTMAX_TEST_BACKEND=loop|null_blk` chooses), for tests that need any block device.
//!   [`loop_volumes`]: N uncapped loop volumes, for tests of loop specifics. Build a
//!   [`SimHostSpec`] for caps.
//! - [`kernel_completions`]: the kernel's own count of completed reads and writes of a device,
//!   an oracle for the tool's counts; [`kernel_discards`] the same for discards (trims).
//! - [`rate_test_lock`]: a machine-wide lock ([`RateTestGuard`]) so tests that measure rates do
//!   not run beside each other, across test binaries too.
//! - [`require_tool`]: a command-line tool a test needs (sfdisk, mkfs.*, chromium), installed
//!   from Debian's packages when missing and we may; [`say_skipped`] and [`skip!`] print a skip
//!   reason where the person running `cargo test` sees it (libtest hides a passing test's output).
//! - [`md5`]: a file's md5, the oracle that an image was not written.
//! - [`assert_refused`]: the refusal contract (exit 2, one line naming each thing, nothing on
//!   stdout); [`read_interval_log`]: a `--hdr-log`'s counts per tag and second
//!   ([`logged_ios`] adds a tag's).
//! - [`interrupt_after`]: a real run sent SIGINT a while after its stderr says a marker
//!   (a phase, step or depth began), for the interrupted-means-not-concluded tests.
//! - [`scaled_cap`] and [`full_speed`]: the caps of tests that measure throttled rates, smaller
//!   where the CPU cannot reach them (the kernel matrix's emulated VM).

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod volumes;
// Root, skips, test volumes, the kernel's counts, the rate lock: the part the library crates'
// own tests share (they include volumes.rs alone, having no binary to run).
pub use volumes::*;

pub use hostmax_simhost::IoThrottle;
use hostmax_simhost::{find_program, NULLB_CONFIGFS_ROOT};

/// A [`Command`] for `binary` from Debian's `package`, installed first if missing
/// ([`require_tool`]); panics with the reason where it cannot be had. For helpers that cannot
/// return from their test: a test that can do without the tool uses [`require_tool`] and
/// [`skip!`].
pub fn tool_command(binary: &str, package: &str) -> Command {
    let path = require_tool(binary, package).unwrap_or_else(|why| panic!("{why}"));
    Command::new(path)
}

/// Runs `tool` (from Debian's `package`, installed if missing) with `args` and panics with its
/// output unless it succeeds: for the set-up steps of a test (mkfs, mkswap, dmsetup...).
pub fn run_tool(tool: &str, package: &str, args: &[&str]) {
    let out = tool_command(tool, package)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {tool}: {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An active swap area on a block device, made with `mkswap` and `swapon` and swapped off on
/// drop.
pub struct SwapOn(String);

impl SwapOn {
    /// Makes `node` a swap area and turns it on.
    pub fn new(node: &str) -> SwapOn {
        run_tool("mkswap", "util-linux", &["-q", node]);
        run_tool("swapon", "util-linux", &[node]);
        SwapOn(node.to_string())
    }
}

impl Drop for SwapOn {
    fn drop(&mut self) {
        let _ = tool_command("swapoff", "util-linux").arg(&self.0).status();
    }
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

/// [`run_hostmax`] that must exit 0 (the failure names the arguments and shows stderr).
pub fn run_hostmax_ok<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S]) -> Output {
    let out = run_hostmax(args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "hostmax {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The md5 of a file's bytes (`md5sum`): the oracle that an image was not written.
pub fn md5(path: &Path) -> String {
    let out = tool_command("md5sum", "coreutils")
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("run md5sum: {e}"));
    assert!(out.status.success(), "md5sum {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A JSON number as f64, or a panic naming what it was.
pub fn number(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The backing files of the loop devices still bound to a simulated host of process `pid`
/// (`hostmax-sim-PID-N` scratch files, or its `hostmaxPID_N` null_blk devices where tmpfs
/// takes no O_DIRECT), and those null_blk devices themselves: empty once that host is gone.
pub fn loops_left_by(pid: impl std::fmt::Display) -> Vec<String> {
    let markers = [format!("hostmax-sim-{pid}-"), format!("/dev/hostmax{pid}_")];
    let null_blk = format!("hostmax{pid}_");
    std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("loop/backing_file")).ok())
        .filter(|b| markers.iter().any(|m| b.contains(m)))
        .chain(
            std::fs::read_dir(NULLB_CONFIGFS_ROOT)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&null_blk)),
        )
        .collect()
}

/// Scales the caps of the tests that measure throttled rates (a float, default 1). The kernel
/// matrix's VM emulates its CPU and sets it below 1: a cap the CPU cannot reach measures the CPU,
/// not the throttle, while smaller caps are still measured as exactly.
pub const CAP_SCALE_ENV: &str = "HOSTMAX_TEST_CAP_SCALE";

/// The factor [`CAP_SCALE_ENV`] sets (1 where unset; a bad value fails the test).
pub fn cap_scale() -> f64 {
    match std::env::var(CAP_SCALE_ENV) {
        Err(_) => 1.0,
        Ok(text) => text
            .parse::<f64>()
            .ok()
            .filter(|s| *s > 0.0 && *s <= 1.0)
            .unwrap_or_else(|| panic!("{CAP_SCALE_ENV}={text:?}: give a number in (0, 1]")),
    }
}

/// `cap` (IOPS or bytes/s) times [`cap_scale`], at least 1.
pub fn scaled_cap(cap: u64) -> u64 {
    ((cap as f64 * cap_scale()).round() as u64).max(1)
}

/// Whether this machine runs at full speed ([`cap_scale`] is 1): only then may a test expect
/// a rate that only the CPU limits (an uncapped run beating a cap, a knee).
pub fn full_speed() -> bool {
    cap_scale() >= 1.0
}

/// `hostmax ARGS --json -` run to success, its stdout parsed as the report (which also proves
/// nothing else went to stdout).
pub fn run_json_stdout<S: AsRef<OsStr>>(
    args: &[S],
    in_group: Option<&IoThrottle>,
) -> serde_json::Value {
    let mut all: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
    all.push(OsStr::new("--json"));
    all.push(OsStr::new("-"));
    let out = run_hostmax(&all, in_group);
    assert_eq!(
        out.status.code(),
        Some(0),
        "hostmax {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not only JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A mount made for a test (`mount OPTIONS SOURCE TARGET`), unmounted on drop, lazily if
/// something still holds it, so a failing test never leaves it behind.
pub struct Mount(pub PathBuf);

impl Mount {
    /// Mounts `source` on `target` (created if missing) with extra `mount` options.
    pub fn new(source: &str, target: &Path, options: &[&str]) -> Mount {
        std::fs::create_dir_all(target)
            .unwrap_or_else(|err| panic!("create {}: {err}", target.display()));
        let status = Command::new("mount")
            .args(options)
            .arg(source)
            .arg(target)
            .status()
            .expect("run mount");
        assert!(status.success(), "mount {source} {}", target.display());
        Mount(target.to_path_buf())
    }

    /// A tmpfs of `size` (`4m`) on `target`.
    pub fn tmpfs(target: &Path, size: &str) -> Mount {
        Mount::new(
            "tmpfs",
            target,
            &["-t", "tmpfs", "-o", &format!("size={size}")],
        )
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Asserts a refusal: exit 2, one line on stderr naming each of `expected`, nothing on stdout,
/// no panic. Returns the line.
pub fn assert_refused(args: &[String], out: &Output, expected: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let context = format!("hostmax {args:?}\nstderr: {stderr}");
    assert_eq!(out.status.code(), Some(2), "exit code, {context}");
    assert!(out.stdout.is_empty(), "stdout not empty, {context}");
    assert_eq!(stderr.matches('\n').count(), 1, "not one line, {context}");
    assert!(!stderr.contains("panicked"), "{context}");
    for e in expected {
        assert!(stderr.contains(e), "message lacks '{e}', {context}");
    }
    stderr
}

/// (tag, second) -> count of every interval in a `--hdr-log` interval log, and its StartTime.
pub fn read_interval_log(
    path: &str,
) -> (
    std::collections::BTreeMap<(String, u64), u64>,
    std::time::Duration,
) {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).unwrap();
    let mut counts = std::collections::BTreeMap::new();
    let mut start = None;
    for entry in IntervalLogIterator::new(&bytes) {
        match entry.unwrap_or_else(|e| panic!("{path}: {e:?}")) {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(_) => {}
            LogEntry::Interval(i) => {
                let h = hostmax_aggregate::decode_histogram(i.encoded_histogram()).unwrap();
                let key = (
                    i.tag().expect("every interval is tagged").to_string(),
                    i.start_timestamp().as_secs(),
                );
                assert!(
                    counts.insert(key.clone(), h.len()).is_none(),
                    "{key:?} twice"
                );
            }
        }
    }
    (counts, start.expect("the log has a StartTime"))
}

/// The I/Os of every interval tagged `tag` in [`read_interval_log`]'s counts, all seconds added.
pub fn logged_ios(counts: &std::collections::BTreeMap<(String, u64), u64>, tag: &str) -> u64 {
    counts
        .iter()
        .filter(|((t, _), _)| t == tag)
        .map(|(_, n)| n)
        .sum()
}

/// Runs hostmax with `args`, sends it SIGINT `delay` after a line of its stderr contains
/// `marker`, and returns its output (stderr whole, the marker's line included). Panics if the
/// marker never comes, or the run does not end within a minute of the signal.
pub fn interrupt_after(args: &[String], marker: &str, delay: std::time::Duration) -> Output {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = Command::new(hostmax_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hostmax");
    let mut stdout = child.stdout.take().expect("piped");
    let reading_stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).expect("read hostmax's stderr");
        seen += &line;
        if n == 0 {
            let _ = child.kill();
            panic!("hostmax ended before saying '{marker}': {seen}");
        }
        if line.contains(marker) {
            break;
        }
    }
    let reading_stderr = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    std::thread::sleep(delay);
    // SAFETY: kill only takes a pid and a signal number; the child is ours and not yet reaped.
    let ret = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(ret, 0, "kill: {}", std::io::Error::last_os_error());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for hostmax") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("hostmax did not end within a minute of SIGINT: {seen}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    seen += &reading_stderr.join().expect("stderr reader");
    Output {
        status,
        stdout: reading_stdout.join().expect("stdout reader"),
        stderr: seen.into_bytes(),
    }
}

/// The serials of the cloud-style disks that the kernel matrix's second VM attaches
/// (tests/kernels/run.sh, `vm_disk_opts`): `hostmax-lun` is one image attached twice (two paths
/// to one LUN), `hostmax-mq` a virtio-blk disk with 4 queues, `hostmax-nvme` an NVMe namespace
/// with 4 I/O queue pairs, `hostmax-capped` a virtio-blk disk under qemu's
/// `throttling.iops-total` cap ([`VM_CAPPED_DISK_IOPS`]).
pub const VM_DISK_SERIALS: [&str; 4] = [
    "hostmax-lun",
    "hostmax-mq",
    "hostmax-nvme",
    "hostmax-capped",
];

/// The combined read+write IOPS cap qemu puts on the `hostmax-capped` disk (run.sh passes the
/// same number).
pub const VM_CAPPED_DISK_IOPS: u64 = 2000;

/// The kernel names (e.g. `vdb`, `nvme0n1`) of the block devices whose serial is `serial`,
/// sorted: virtio-blk's `/sys/block/DEV/serial`, NVMe's `/sys/block/DEV/device/serial`. Empty
/// where no such disk is attached: everywhere but the kernel matrix's disks VM.
pub fn disks_with_serial(serial: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return found;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let own = std::fs::read_to_string(dir.join("serial"))
            .or_else(|_| std::fs::read_to_string(dir.join("device/serial")));
        if own.is_ok_and(|s| s.trim() == serial) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found.sort();
    found
}

/// Skips the calling test (printing why) unless the kernel matrix's disks VM attached the
/// disk(s) with serial `$serial`; otherwise evaluates to their kernel names.
#[macro_export]
macro_rules! require_vm_disks {
    ($serial:expr) => {{
        let names = $crate::support::disks_with_serial($serial);
        if names.is_empty() {
            $crate::skip!(
                "no disk with serial {} is attached: it exists in the kernel matrix's disks VM \
                 (bash tests/kernels/run.sh)",
                $serial
            );
        }
        names
    }};
}

/// The ansible-core the fleet playbook (`examples/fleet/playbook.yml`) is tested with, from
/// PyPI through [`python_tools`] (the newest that runs on this machine's Python 3.11).
pub const ANSIBLE_CORE: &str = "ansible-core==2.19.14";

/// Where [`python_tools`] keeps its virtualenv: beside the test binaries' `target/` profile
/// folder, so it is made once and reused by every later test run (and `cargo clean` removes it).
pub fn python_tools_dir() -> PathBuf {
    // target/PROFILE/hostmax -> target/python-tools
    let target = hostmax_bin()
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("python-tools")
}

/// A virtualenv holding `requirements` (pip specifiers, pinned: `ansible-core==2.19.14`),
/// made under [`python_tools_dir`] and installed into the first time a test asks for each;
/// returns its `bin` folder. `Err` says why it cannot be had (no python3, no network for pip).
pub fn python_tools(requirements: &[&str]) -> Result<PathBuf, String> {
    let venv = python_tools_dir();
    std::fs::create_dir_all(venv.parent().expect("under target/"))
        .map_err(|e| format!("create {}: {e}", venv.display()))?;
    let _held = lock_file(&format!("{}.lock", venv.display()));
    let bin = venv.join("bin");
    if !bin.join("pip").exists() {
        let python = find_program("python3").ok_or("python3 is not installed")?;
        let make = || {
            Command::new(&python)
                .args(["-m", "venv"])
                .arg(&venv)
                .output()
        };
        let mut out = make().map_err(|e| format!("python3 -m venv: {e}"))?;
        if !out.status.success() {
            // Debian's python3 makes venvs only with python3-venv installed.
            let _ = std::fs::remove_dir_all(&venv);
            if is_root() {
                let _apt = lock_file(APT_LOCK_PATH);
                let _ = Command::new("apt-get")
                    .args([
                        "install",
                        "-y",
                        "-qq",
                        "--no-install-recommends",
                        "python3-venv",
                    ])
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .output();
            }
            out = make().map_err(|e| format!("python3 -m venv: {e}"))?;
        }
        if !out.status.success() {
            return Err(format!(
                "python3 -m venv {} failed: {}",
                venv.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    // One line per requirement installed, so each is installed once.
    let installed_list = venv.join("installed.txt");
    let installed = std::fs::read_to_string(&installed_list).unwrap_or_default();
    let missing: Vec<&str> = requirements
        .iter()
        .copied()
        .filter(|r| !installed.lines().any(|l| l == *r))
        .collect();
    if !missing.is_empty() {
        let out = Command::new(bin.join("pip"))
            .args(["install", "-q", "--disable-pip-version-check"])
            .args(&missing)
            .output()
            .map_err(|e| format!("pip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "pip install {} failed: {}",
                missing.join(" "),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ));
        }
        let mut list = installed;
        for r in missing {
            list.push_str(r);
            list.push('\n');
        }
        std::fs::write(&installed_list, list)
            .map_err(|e| format!("write {}: {e}", installed_list.display()))?;
    }
    Ok(bin)
}

/// The arguments of the smallest suite the tests run: `suite iops` on `devices`, one cell (4k,
/// 100/0 reads) of up to 5 rounds of `cell_time` each, no ramp, no purge or preconditioning
/// (files and scratch volumes need neither). Callers add `--json`, `--state-dir`, ...
pub fn one_cell_suite(devices: &[&str], cell_time: &str) -> Vec<String> {
    let mut args: Vec<String> = ["suite", "iops", "--devices"].map(String::from).to_vec();
    args.extend(devices.iter().map(|d| d.to_string()));
    args.extend(
        [
            "--block-sizes",
            "4k",
            "--mixes",
            "100/0",
            "--cell-time",
            cell_time,
            "--ramp",
            "0s",
            "--max-rounds",
            "5",
            "--no-purge",
            "--no-precondition",
        ]
        .map(String::from),
    );
    args
}

/// A device-mapper device made for a test (`dmsetup create --noudevsync`), removed on drop:
/// suspended first (dm-delay then sends on the bios it holds), resumed, and removed once
/// nothing holds it any more, retrying for a while (the I/O a stalled run left completes
/// then, the kernel's io_uring exit work lets go of the device, and udev's probe of a new
/// device, which holds it a moment, ends); still held after 15 s, it is left to the kernel's
/// deferred removal with a warning naming its holders.
pub struct DmDevice {
    dmsetup: PathBuf,
    name: String,
}

impl DmDevice {
    /// `dmsetup create NAME --table TABLE`; `Err` says why not (no dmsetup, the kernel refused).
    pub fn create(name: &str, table: &str) -> Result<DmDevice, String> {
        let dmsetup = require_tool("dmsetup", "dmsetup")?;
        let out = Command::new(&dmsetup)
            .args(["create", "--noudevsync", name, "--table", table])
            .output()
            .map_err(|e| format!("dmsetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "dmsetup create {name} --table '{table}': {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(DmDevice {
            dmsetup,
            name: name.to_string(),
        })
    }

    /// Its kernel name (`dm-0`): `/dev/dm-0` is its node whether or not udev made
    /// `/dev/mapper/NAME`.
    pub fn kernel_name(&self) -> String {
        let out = Command::new(&self.dmsetup)
            .args(["info", "-c", "--noheadings", "-o", "blkdevname", &self.name])
            .output()
            .expect("dmsetup info");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Its node, `/dev/dm-N` (there at once, with or without udev).
    pub fn node(&self) -> String {
        format!("/dev/{}", self.kernel_name())
    }

    fn dmsetup(&self, args: &[&str]) -> bool {
        Command::new(&self.dmsetup)
            .args(args)
            .arg(&self.name)
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for DmDevice {
    fn drop(&mut self) {
        self.dmsetup(&["suspend", "--noudevsync"]);
        self.dmsetup(&["resume", "--noudevsync"]);
        // Suspending sends dm-delay's held I/O on, so the run's abandoned I/O completes; what
        // may still hold it is udev's probe of the new device (its reads wait DM_DELAY each).
        use std::time::{Duration, Instant};
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if self.dmsetup(&["remove", "--noudevsync"]) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        // Still open (in the 6.12 VM: a udev worker probing the new device through the delay):
        // the kernel removes it once its last holder lets go.
        let removed = self.dmsetup(&["remove", "--deferred", "--noudevsync"]);
        let info = Command::new(&self.dmsetup)
            .args(["info", "-c", "--noheadings", "-o", "name,open", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        // Which process holds it, if any does (none: the kernel itself, e.g. io_uring's exit work).
        let node = format!("/dev/{}", self.kernel_name());
        let holders: Vec<String> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| {
                std::fs::read_dir(p.path().join("fd"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|fd| {
                        std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == node.as_str())
                    })
            })
            .map(|p| {
                let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
                format!("{} ({})", p.file_name().to_string_lossy(), comm.trim())
            })
            .collect();
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "warning: device-mapper device {} still open ({info}; processes holding {node}: {holders:?}); deferred removal {}",
            self.name,
            if removed { "set" } else { "refused" }
        );
    }
}
