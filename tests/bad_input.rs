//! Bad input, run through the real `hostmax` binary: every case must exit 2 with exactly one
//! line on stderr naming the offending thing, no panic or backtrace, and nothing on stdout.
//! The block-device cases attach loop devices over image files in /dev/shm (the harness's,
//! detached by the kernel once dropped) and unmount in `Drop` guards.

mod support;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use support::{kernel_completions, tool_command, Mount, ScratchDir};

const HOSTMAX: &str = env!("CARGO_BIN_EXE_hostmax");

/// A new sparse file in `dir`, as a command-line argument.
fn file_arg(dir: &ScratchDir, name: &str, len: u64) -> String {
    dir.file(name, len).display().to_string()
}

/// A loop device over an image file (the harness's: detached by the kernel once dropped).
struct LoopDevice(String, hostmax_simhost::LoopDevice);

impl LoopDevice {
    fn attach(image: &str) -> LoopDevice {
        let backing = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(image)
            .unwrap_or_else(|e| panic!("open {image}: {e}"));
        let dev = hostmax_simhost::LoopDevice::attach(&backing, &Default::default())
            .unwrap_or_else(|e| panic!("attach {image}: {e}"));
        LoopDevice(dev.path().display().to_string(), dev)
    }

    /// Completed (and merged) writes, from /sys/block/DEV/stat.
    fn writes_completed(&self) -> u64 {
        kernel_completions(self.1.kernel_name()).1
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

fn run(args: &[String]) -> Output {
    Command::new(HOSTMAX)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run hostmax")
}

/// Asserts the bad-input contract and that the message names `expected`.
fn assert_bad_input(label: &str, args: &[String], out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let context = format!("case {label}: hostmax {args:?}\nstderr: {stderr}");
    assert_eq!(out.status.code(), Some(2), "exit code, {context}");
    assert!(
        out.stdout.is_empty(),
        "stdout not empty: {:?}, {context}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.ends_with('\n'), "{context}");
    assert_eq!(stderr.matches('\n').count(), 1, "not one line, {context}");
    assert!(
        stderr.starts_with("hostmax: ") && stderr.len() > "hostmax: \n".len(),
        "{context}"
    );
    let lower = stderr.to_lowercase();
    assert!(
        !lower.contains("panicked") && !lower.contains("backtrace"),
        "{context}"
    );
    assert!(
        stderr.contains(expected),
        "message does not name '{expected}', {context}"
    );
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_bad_input_exits_2_with_one_line_naming_it() {
    let dir = ScratchDir::new("table");
    let f = file_arg(&dir, "f", 1 << 20);
    let small = file_arg(&dir, "small", 64 << 10);
    let empty = file_arg(&dir, "empty", 0);
    fs::create_dir(dir.path("subdir")).unwrap();
    let missing = dir.path("missing");
    let nomatch = dir.path("nomatch*");
    let only_dirs = dir.path("subd*");
    let json_missing_dir = dir.path("no-such-dir/report.json");
    let d = |extra: &[&str]| -> Vec<String> {
        let mut v = strings(&["--devices", &f]);
        v.extend(strings(extra));
        v
    };

    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "nonexistent path",
            strings(&["--devices", &missing]),
            missing.as_str(),
        ),
        (
            "directory",
            strings(&["--devices", &dir.path("subdir")]),
            "is a directory",
        ),
        (
            "character device",
            strings(&["--devices", "/dev/null"]),
            "/dev/null is a character device",
        ),
        (
            "pattern matching nothing",
            strings(&["--devices", &nomatch]),
            nomatch.as_str(),
        ),
        (
            "pattern matching only directories",
            strings(&["--devices", &only_dirs]),
            only_dirs.as_str(),
        ),
        (
            "malformed pattern",
            strings(&["--devices", "/dev/sd[b-"]),
            "/dev/sd[b-",
        ),
        (
            "empty device string",
            strings(&["--devices", ""]),
            "empty path",
        ),
        (
            "--devices without a value",
            strings(&["--devices"]),
            "--devices",
        ),
        ("no --devices at all", vec![], "--devices"),
        (
            "no --devices, only options",
            strings(&["--bs", "4k"]),
            "no devices given",
        ),
        ("empty file", strings(&["--devices", &empty]), "empty file"),
        ("bs 0", d(&["--bs", "0"]), "block size 0 is out of range"),
        (
            "bs not a multiple of 512",
            d(&["--bs", "3000"]),
            "use e.g. 2560 or 3072 (--bs)",
        ),
        (
            "bs above 8 MiB",
            d(&["--bs", "16m"]),
            "block size 16777216 is out of range",
        ),
        (
            "bs below 512",
            d(&["--bs", "256"]),
            "block size 256 is out of range",
        ),
        ("bs garbage", d(&["--bs", "4q"]), "'4q'"),
        ("bs fraction", d(&["--bs", "4.5k"]), "'4.5k'"),
        (
            "bs larger than the file",
            strings(&["--devices", &small, "--bs", "128k"]),
            small.as_str(),
        ),
        (
            "bs larger than the working set",
            d(&["--size", "4k", "--bs", "8k"]),
            "--size 4k",
        ),
        (
            "size not a multiple of bs",
            d(&["--size", "6k"]),
            "--size 6k",
        ),
        (
            "size bigger than the device",
            d(&["--size", "2m"]),
            "--size 2m",
        ),
        ("size 0", d(&["--size", "0"]), "--size 0"),
        ("size negative", d(&["--size", "-1g"]), "negative"),
        ("iodepth 0", d(&["--iodepth", "0"]), "--iodepth"),
        ("iodepth 100000", d(&["--iodepth", "100000"]), "100000"),
        (
            "complete-batch 0",
            d(&["--complete-batch", "0"]),
            "--complete-batch",
        ),
        (
            "complete-batch 5000",
            d(&["--complete-batch", "5000"]),
            "--complete-batch",
        ),
        ("iodepth garbage", d(&["--iodepth", "abc"]), "--iodepth"),
        ("iodepth negative", d(&["--iodepth", "-1"]), "--iodepth"),
        ("runtime garbage", d(&["--runtime", "abc"]), "'abc'"),
        ("runtime negative", d(&["--runtime", "-5s"]), "'-5s'"),
        ("runtime unknown suffix", d(&["--runtime", "10x"]), "'10x'"),
        ("runtime 0", d(&["--runtime", "0"]), "runtime is zero"),
        ("ramp garbage", d(&["--ramp", "soon"]), "--ramp"),
        (
            "rwmixread over 100",
            d(&["--rw", "randrw", "--rwmixread", "101"]),
            "'101'",
        ),
        (
            "rwmixread negative",
            d(&["--rw", "randrw", "--rwmixread", "-1"]),
            "--rwmixread",
        ),
        (
            "rwmixread with randread",
            d(&["--rw", "randread", "--rwmixread", "70"]),
            "--rwmixread 70 conflicts with --rw randread",
        ),
        (
            "rwmixread with the default pattern",
            d(&["--rwmixread", "70"]),
            "conflicts",
        ),
        ("rw bogus", d(&["--rw", "bogus"]), "'bogus'"),
        ("rw empty", d(&["--rw", ""]), "--rw"),
        ("cpus that do not exist", d(&["--cpus", "9999"]), "9999"),
        ("cpus open range", d(&["--cpus", "1-"]), "'1-'"),
        ("cpus letters", d(&["--cpus", "a"]), "'a'"),
        ("cpus reversed range", d(&["--cpus", "3-1"]), "3-1"),
        (
            "cpus beyond any machine",
            d(&["--cpus", "0-4000000000"]),
            "4000000000",
        ),
        (
            "json into a missing directory",
            d(&["--json", &json_missing_dir]),
            "no-such-dir",
        ),
        (
            "json is a directory",
            d(&["--json", &dir.path("subdir")]),
            "is a directory",
        ),
        (
            "json onto a device node",
            d(&["--json", "/dev/null"]),
            "not a regular file",
        ),
        // One output-destination check for every output option and command.
        ("hdr-log to stdout", d(&["--hdr-log", "-"]), "--hdr-log -"),
        (
            "hdr-log is a directory",
            d(&["--hdr-log", &dir.path("subdir")]),
            "is a directory",
        ),
        (
            "json and hdr-log the same file",
            d(&[
                "--json",
                &dir.path("r.out"),
                "--hdr-log",
                &dir.path("r.out"),
            ]),
            "writes that file too",
        ),
        (
            "json onto the measured file",
            d(&["--json", &f]),
            "is also an input (--devices)",
        ),
        (
            "sweep svg to stdout",
            strings(&["sweep", "--devices", &f, "--svg", "-"]),
            "--svg -",
        ),
        (
            "sweep svg into a missing directory",
            strings(&["sweep", "--devices", &f, "--svg", &json_missing_dir]),
            "no-such-dir",
        ),
        (
            "curve svg onto the measured file",
            strings(&["curve", "--devices", &f, "--svg", &f]),
            "is also an input (--devices)",
        ),
        (
            "suite html to stdout",
            strings(&["suite", "iops", "--devices", &f, "--html", "-"]),
            "--html -",
        ),
        (
            "suite json is a directory",
            strings(&[
                "suite",
                "iops",
                "--devices",
                &f,
                "--json",
                &dir.path("subdir"),
            ]),
            "is a directory",
        ),
        (
            "doctor json onto a device node",
            strings(&["doctor", "--json", "/dev/null"]),
            "not a regular file",
        ),
        ("seed garbage", d(&["--seed", "xyz"]), "'xyz'"),
        ("seed negative", d(&["--seed", "-1"]), "'-1'"),
        ("rate-iops 0", d(&["--rate-iops", "0"]), "'0'"),
        ("rate-iops garbage", d(&["--rate-iops", "fast"]), "'fast'"),
        (
            "arrival without a rate",
            d(&["--arrival", "poisson"]),
            "--rate-iops",
        ),
        (
            "arrival unknown",
            d(&["--rate-iops", "10", "--arrival", "bursty"]),
            "use even or poisson",
        ),
        (
            "curve rates garbage",
            strings(&["curve", "--devices", &f, "--rates", "0.5x,0x"]),
            "'0x' is not an offered rate",
        ),
        (
            // Refused before step 1, not after running it.
            "curve depth beyond the engine's",
            strings(&["curve", "--devices", &f, "--depths", "1,8192"]),
            "queue depth 8192 is out of range: use 1 to 4096 (--depths)",
        ),
        (
            "curve rates with depths",
            strings(&["curve", "--devices", &f, "--rates", "0.5x", "--depths", "1"]),
            "cannot be used with '--depths",
        ),
        (
            "curve rates with a rate",
            strings(&[
                "curve",
                "--devices",
                &f,
                "--rates",
                "1k",
                "--rate-iops",
                "5",
            ]),
            "cannot be used with '--rate-iops",
        ),
        ("unknown flag", d(&["--bogus"]), "--bogus"),
        (
            "fio's flag spelled wrong",
            d(&["--block-size", "4k"]),
            "--block-size",
        ),
        ("stray positional argument", d(&["extra"]), "extra"),
        (
            "demo with --devices",
            strings(&["demo", "--devices", &f]),
            "--devices",
        ),
        (
            "--force without --allow-write",
            d(&["--force"]),
            "--force needs --allow-write",
        ),
        (
            "--force on a write run without --allow-write",
            d(&["--rw", "randwrite", "--force"]),
            "add --allow-write",
        ),
        ("--force with a value", d(&["--force=yes"]), "--force"),
        (
            "on-error garbage",
            d(&["--on-error", "ignore"]),
            "--on-error",
        ),
    ];
    assert!(cases.len() >= 30);
    for (label, args, expected) in &cases {
        let out = run(args);
        assert_bad_input(label, args, &out, expected);
    }
    // Nothing was written to the target along the way.
    assert!(fs::read(&f).unwrap().iter().all(|&b| b == 0));
}

#[test]
fn help_and_version_exit_0() {
    for flag in ["--help", "-h", "--version", "-V"] {
        let out = run(&strings(&[flag]));
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert!(!out.stdout.is_empty(), "{flag}");
    }
    let help = String::from_utf8_lossy(&run(&strings(&["--help"])).stdout).into_owned();
    for option in [
        "--devices",
        "--rw",
        "--rwmixread",
        "--bs",
        "--iodepth",
        "--size",
        "--runtime",
        "--ramp",
        "--cpus",
        "--seed",
        "--rate-iops",
        "--json",
        "--allow-write",
        "--no-latency",
        "demo",
    ] {
        assert!(help.contains(option), "--help lacks {option}");
    }
}

#[test]
fn more_devices_than_the_open_file_limit_allows() {
    let dir = ScratchDir::new("nofile");
    let files: Vec<String> = (0..3)
        .map(|i| file_arg(&dir, &format!("f{i}"), 1 << 20))
        .collect();
    let mut args = strings(&["--devices"]);
    args.extend(files.iter().cloned());
    let mut cmd = Command::new(HOSTMAX);
    cmd.args(&args);
    // SAFETY: runs in the child between fork and exec; setrlimit is async-signal-safe and
    // only reads the local struct.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 20,
                rlim_max: 20,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run hostmax");
    assert_bad_input(
        "open-file limit",
        &args,
        &out,
        "open-file limit (ulimit -n) is 20",
    );
}

/// A missing `/dev/...` path with `--size` is a mistyped device name, not a file to make in
/// devtmpfs: refused (exit 2, one line), and nothing made there. A file of --size in a
/// filesystem mounted below /dev (/dev/shm) is still made.
#[test]
fn a_missing_dev_path_with_size_is_refused_not_made() {
    let missing = format!("/dev/hostmax-no-such-disk-{}", std::process::id());
    let args = strings(&[
        "--devices",
        &missing,
        "--size",
        "1m",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ]);
    assert_bad_input(
        "a missing /dev path with --size",
        &args,
        &run(&args),
        &format!("{missing} does not exist, and hostmax makes no file under /dev"),
    );
    let made = fs::symlink_metadata(&missing).is_ok_and(|m| m.is_file());
    if made {
        let _ = fs::remove_file(&missing);
    }
    assert!(!made, "{missing} made");
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && std::fs::metadata(shm).map(|m| m.dev()).ok()
            != std::fs::metadata("/dev").map(|m| m.dev()).ok()
    {
        let file = format!("/dev/shm/hostmax-size-{}.img", std::process::id());
        let args = strings(&[
            "--devices",
            &file,
            "--size",
            "1m",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
        ]);
        let out = run(&args);
        let made = Path::new(&file).exists();
        let _ = std::fs::remove_file(&file);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(made);
    }
}

#[test]
fn unwritable_json_directory() {
    if !is_root() {
        skip!("mounting a read-only tmpfs needs root");
    }
    let dir = ScratchDir::new("rojson");
    let f = file_arg(&dir, "f", 1 << 20);
    let ro = dir.0.join("ro");
    let _mount = Mount::new("tmpfs", &ro, &["-t", "tmpfs", "-o", "ro,size=1m"]);
    let json = ro.join("report.json").to_string_lossy().into_owned();
    let args = strings(&["--devices", &f, "--json", &json]);
    assert_bad_input(
        "read-only json dir",
        &args,
        &run(&args),
        "cannot create files in",
    );
}

/// An SVG whose filesystem is full is refused before the run (a one-line error naming --svg,
/// the old file as it was). One that fills during the run is kept elsewhere:
/// tests/outputs.rs.
#[test]
fn a_sweep_svg_on_a_full_filesystem_is_refused_before_the_run() {
    if !is_root() {
        skip!("mounting a small tmpfs needs root");
    }
    let dir = ScratchDir::new("svg-full");
    let f = file_arg(&dir, "f", 1 << 20);
    let small = dir.0.join("small");
    let _mount = Mount::tmpfs(&small, "8k");
    let svg = small.join("sweep.svg");
    fs::write(&svg, "old").unwrap();
    // Fill the rest of the tmpfs (the write stops at ENOSPC).
    let _ = fs::write(small.join("filler"), vec![1u8; 16 << 10]);
    let args = strings(&[
        "sweep",
        "--devices",
        &f,
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--steps",
        "1",
        "--svg",
        &svg.display().to_string(),
    ]);
    assert_bad_input(
        "svg on a full filesystem",
        &args,
        &run(&args),
        "free, less than the 1 MiB an output needs; free some space there or choose another path",
    );
    assert_eq!(fs::read_to_string(&svg).unwrap(), "old");
    let mut left: Vec<String> = fs::read_dir(&small)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["filler", "sweep.svg"], "a temporary file was left");
}

#[test]
fn writing_a_block_device_needs_allow_write() {
    if !is_root() {
        skip!("attaching loop devices needs root");
    }
    let dir = ScratchDir::new("allow");
    let img = file_arg(&dir, "img", 16 << 20);
    let dev = LoopDevice::attach(&img);
    let before = dev.writes_completed();
    for rw in ["randwrite", "write", "randrw"] {
        let args = strings(&[
            "--devices",
            &dev.0,
            "--rw",
            rw,
            "--runtime",
            "1s",
            "--ramp",
            "0",
        ]);
        let out = run(&args);
        assert_bad_input(rw, &args, &out, &format!("{} needs --allow-write", dev.0));
    }
    // Named twice, once through a symlink: one device, one reason.
    let link = dir.path("by-id-link");
    std::os::unix::fs::symlink(&dev.0, &link).unwrap();
    let args = strings(&["--devices", &link, &dev.0, "--rw", "randwrite"]);
    let out = run(&args);
    assert_bad_input("symlink", &args, &out, "needs --allow-write");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr)
            .matches("needs --allow-write")
            .count(),
        1
    );
    assert_eq!(
        dev.writes_completed(),
        before,
        "a refused run wrote to {}",
        dev.0
    );
}

fn mkfs_ext4(dev: &str) {
    let status = tool_command("mkfs.ext4", "e2fsprogs")
        .args(["-q", "-F", dev])
        .status()
        .expect("run mkfs.ext4");
    assert!(status.success(), "mkfs.ext4 {dev}");
}

fn fsck_clean(dev: &str) {
    let out = tool_command("fsck.ext4", "e2fsprogs")
        .args(["-n", dev])
        .output()
        .expect("run fsck.ext4");
    assert_eq!(
        out.status.code(),
        Some(0),
        "fsck.ext4 -n {dev}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_mounted_device_is_refused_even_with_allow_write() {
    if !is_root() {
        skip!("loop devices and mounts need root");
    }
    let dir = ScratchDir::new("mounted");
    let img = file_arg(&dir, "ext4.img", 32 << 20);
    let free_img = file_arg(&dir, "free.img", 16 << 20);
    let dev = LoopDevice::attach(&img);
    let free = LoopDevice::attach(&free_img);
    mkfs_ext4(&dev.0);
    let mount = Mount::new(&dev.0, &dir.0.join("mnt"), &[]);
    for rw in ["randwrite", "write", "randrw"] {
        let args = strings(&["--devices", &dev.0, "--rw", rw, "--allow-write"]);
        let out = run(&args);
        assert_bad_input(rw, &args, &out, "mounted");
        assert!(String::from_utf8_lossy(&out.stderr).contains(&dev.0));
    }
    // Two devices: ONE message, naming only the refused one; the free one is not written.
    let before = free.writes_completed();
    let args = strings(&[
        "--devices",
        &free.0,
        &dev.0,
        "--rw",
        "randwrite",
        "--allow-write",
    ]);
    let out = run(&args);
    assert_bad_input(
        "mounted among free",
        &args,
        &out,
        &format!("{} is mounted at", dev.0),
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&free.0));
    assert_eq!(free.writes_completed(), before);
    // Reading a mounted device is allowed.
    let read = run(&strings(&[
        "--devices",
        &dev.0,
        "--rw",
        "randread",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ]));
    assert_eq!(
        read.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    drop(mount);
    fsck_clean(&dev.0);
}

#[test]
fn a_device_with_a_mounted_partition_is_refused() {
    if !is_root() {
        skip!("loop devices and mounts need root");
    }
    let dir = ScratchDir::new("partition");
    let img = file_arg(&dir, "part.img", 32 << 20);
    let dev = LoopDevice::attach(&img);
    // This kernel reads no partition tables (no MSDOS/EFI parsers), so add the partition
    // with BLKPG as partx would: sectors 2048 to the end. Detaching removes it.
    let status = tool_command("addpart", "util-linux")
        .args([&dev.0, "1", "2048", &((32 << 20) / 512 - 2048).to_string()])
        .status()
        .expect("run addpart");
    assert!(status.success(), "addpart {}", dev.0);
    let part = format!("{}p1", dev.0);
    // Partition nodes appear asynchronously after the scan.
    for _ in 0..100 {
        if Path::new(&part).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(Path::new(&part).exists(), "{part} did not appear");
    mkfs_ext4(&part);
    let mount = Mount::new(&part, &dir.0.join("mnt"), &[]);
    let args = strings(&["--devices", &dev.0, "--rw", "write", "--allow-write"]);
    let out = run(&args);
    assert_bad_input(
        "mounted partition",
        &args,
        &out,
        &format!(
            "{} has partition {}p1 mounted at",
            dev.0,
            dev.1.kernel_name()
        ),
    );
    drop(mount);
    fsck_clean(&part);
}

#[test]
fn buffers_larger_than_memory_are_refused_before_starting() {
    // 32 targets x iodepth 4096 x 8 MiB = 1 TiB of I/O buffers.
    let dir = ScratchDir::new("memory");
    let files: Vec<String> = (0..32)
        .map(|i| file_arg(&dir, &format!("f{i}"), 16 << 20))
        .collect();
    let mut args = strings(&["--devices"]);
    args.extend(files.iter().cloned());
    args.extend(strings(&[
        "--iodepth",
        "4096",
        "--bs",
        "8m",
        "--rw",
        "randwrite",
        "--runtime",
        "1s",
    ]));
    let out = run(&args);
    assert_bad_input(
        "buffers beyond memory",
        &args,
        &out,
        "I/O buffers would need 1024.0 GiB",
    );
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("lower the queue depth or the block size (--iodepth, --bs)"));
    // Refused before any I/O: every file is still all holes and zeros.
    for f in &files {
        let meta = fs::metadata(f).unwrap();
        assert_eq!(
            std::os::unix::fs::MetadataExt::blocks(&meta),
            0,
            "{f} was written"
        );
    }
}

/// A seccomp filter that fails `io_uring_setup` with EPERM, as containers' default profiles
/// do: hostmax names the cause and the fix, exits 2, and gets there before any device (this one
/// does not exist, and must not be what it complains about).
#[cfg(target_arch = "x86_64")]
#[test]
fn io_uring_blocked_by_seccomp_is_named_before_any_device_is_opened() {
    /// `struct sock_filter` from <linux/filter.h>.
    #[repr(C)]
    struct SockFilter {
        code: u16,
        jt: u8,
        jf: u8,
        k: u32,
    }
    /// `struct sock_fprog`.
    #[repr(C)]
    struct SockFprog {
        len: u16,
        filter: *const SockFilter,
    }
    const NR_IO_URING_SETUP: u32 = 425;
    let args: Vec<String> = [
        "--devices",
        "/dev/hostmax-no-such-device",
        "--runtime",
        "1s",
    ]
    .map(String::from)
    .to_vec();
    let mut cmd = Command::new(HOSTMAX);
    cmd.args(&args).env_remove("RUST_BACKTRACE");
    // SAFETY: the closure runs in the forked child before exec and only calls prctl with a
    // filter that lives on its own stack for the call.
    unsafe {
        cmd.pre_exec(|| {
            let filter = [
                // A = seccomp_data.nr
                SockFilter {
                    code: 0x20,
                    jt: 0,
                    jf: 0,
                    k: 0,
                },
                // if A == io_uring_setup fall through, else skip one
                SockFilter {
                    code: 0x15,
                    jt: 0,
                    jf: 1,
                    k: NR_IO_URING_SETUP,
                },
                // SECCOMP_RET_ERRNO | EPERM
                SockFilter {
                    code: 0x06,
                    jt: 0,
                    jf: 0,
                    k: 0x0005_0000 | libc::EPERM as u32,
                },
                // SECCOMP_RET_ALLOW
                SockFilter {
                    code: 0x06,
                    jt: 0,
                    jf: 0,
                    k: 0x7fff_0000,
                },
            ];
            let program = SockFprog {
                len: filter.len() as u16,
                filter: filter.as_ptr(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, 2, &program as *const SockFprog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run hostmax under the filter");
    assert_bad_input("seccomp", &args, &out, "seccomp");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("no-such-device"), "{stderr}");
}

/// Files, merge inputs, resume directories and spec files (issue 12): each case exits 2 with
/// one line naming it, and nothing is written: the file of data keeps its bytes, no file is
/// made, no merged report appears.
#[test]
fn files_merges_resume_dirs_and_spec_files_are_refused_writing_nothing() {
    let dir = ScratchDir::new("bad-issue12");
    let p = |name: &str| dir.join(name).display().to_string();
    // A file of someone's data, and a filesystem image.
    let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8 | 1).collect();
    fs::write(dir.join("data.ibd"), &data).unwrap();
    let image = file_arg(&dir, "ext4.img", 16 << 20);
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", &image])
        .status();
    assert!(mkfs.is_ok_and(|s| s.success()), "mkfs.ext4 {image}");
    let image_before = fs::read(&image).unwrap();
    // A real report, and reports made from it.
    let target = file_arg(&dir, "t.img", 8 << 20);
    let report_path = p("r.json");
    let out = run(&strings(&[
        "--devices",
        &target,
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--json",
        &report_path,
    ]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&report_path).unwrap()).unwrap();
    let variant = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = report.clone();
        edit(&mut v);
        fs::write(dir.join(name), v.to_string()).unwrap();
        p(name)
    };
    let set = |field: &'static str, value: serde_json::Value| {
        move |v: &mut serde_json::Value| v[field] = value.clone()
    };
    let copy = variant("copy.json", &|_| {});
    let later = variant("later.json", &|v| {
        v["run_id"] = "0123456789abcdef0123456789abcdef".into();
        v["started_at"] = "2031-01-01T00:00:00.000Z".into();
        v["ended_at"] = "2031-01-01T00:00:01.000Z".into();
    });
    let not_a_time = variant("soon.json", &|v| {
        v["run_id"] = "1".into();
        v["started_at"] = "soon".into();
    });
    let backwards = variant("backwards.json", &|v| {
        v["run_id"] = "2".into();
        v["started_at"] = "2031-01-01T00:00:02Z".into();
        v["ended_at"] = "2031-01-01T00:00:01Z".into();
    });
    let old = variant("old.json", &|v| {
        let o = v.as_object_mut().unwrap();
        for f in ["run_id", "started_at", "ended_at"] {
            o.remove(f);
        }
    });
    let verify_root = variant("verify.json", &|v| {
        let version = v["schema_version"].clone();
        *v = serde_json::json!({"schema_version": version, "verdict": {}, "phases": [v.clone()]});
    });
    let suite_root = variant("suite.json", &set("host", serde_json::Value::Null));
    let fleet = p("fleet.json");
    let merge = |files: &[&str], extra: &[&str]| {
        let mut v = vec!["merge".to_string()];
        v.extend(files.iter().map(|s| s.to_string()));
        v.extend(["--json".to_string(), fleet.clone()]);
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    // Resume directories and spec files.
    fs::write(dir.join("afile"), "x").unwrap();
    fs::create_dir_all(dir.join("bad.state/rounds")).unwrap();
    fs::write(dir.join("bad.state/suite.json"), "{").unwrap();
    fs::write(dir.join("bad.toml"), "tolerance = [").unwrap();
    fs::write(dir.join("bad2.toml"), "[host]\niops = \"many\"\n").unwrap();
    let data_file = p("data.ibd");
    let write = |dev: &str, extra: &[&str]| {
        let mut v = strings(&["--devices", dev, "--rw", "randwrite", "--runtime", "1s"]);
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        (
            "file of data, randwrite",
            write(&data_file, &[]),
            format!("{data_file} needs --allow-write"),
        ),
        (
            "file of data, randrw",
            strings(&["--devices", &data_file, "--rw", "randrw"]),
            "needs --allow-write".into(),
        ),
        (
            "file of data, sequential write",
            strings(&["--devices", &data_file, "--rw", "write"]),
            "needs --allow-write".into(),
        ),
        (
            "file of data through a second name",
            write(&format!("{}/./data.ibd", dir.0.display()), &[]),
            "needs --allow-write".into(),
        ),
        (
            "filesystem image with --allow-write",
            write(&image, &["--allow-write"]),
            "carries an ext4 filesystem (use --force".into(),
        ),
        (
            "suite on a file of data",
            strings(&["suite", "iops", "--devices", &data_file, "--mixes", "0/100"]),
            "needs --allow-write".into(),
        ),
        (
            "missing file without --size",
            write(&p("new.img"), &[]),
            "--size".into(),
        ),
        (
            "new file in a missing directory",
            write(&p("nodir/new.img"), &["--size", "4m"]),
            "nodir".into(),
        ),
        (
            "new file, --size not whole blocks",
            write(&p("new.img"), &["--size", "4m", "--bs", "3k"]),
            "--bs".into(),
        ),
        (
            "new file, --size 0",
            write(&p("new.img"), &["--size", "0"]),
            "--size 0".into(),
        ),
        (
            "the same report twice",
            merge(&[&report_path, &report_path], &[]),
            "is the same run as".into(),
        ),
        (
            "a copy of a report",
            merge(&[&report_path, &copy], &[]),
            "is the same run as".into(),
        ),
        (
            "runs years apart",
            merge(&[&report_path, &later], &[]),
            "not measured together".into(),
        ),
        (
            "started_at not a time",
            merge(&[&report_path, &not_a_time], &[]),
            "not an RFC 3339 time".into(),
        ),
        (
            "window ends before it starts",
            merge(&[&report_path, &backwards], &[]),
            "ended_at is before started_at".into(),
        ),
        (
            "old and new reports mixed",
            merge(&[&report_path, &old], &[]),
            "no started_at/ended_at".into(),
        ),
        (
            "a verify root given to merge",
            merge(&[&report_path, &verify_root], &[]),
            "not a hostmax report".into(),
        ),
        (
            "a report without host figures",
            merge(&[&report_path, &suite_root], &[]),
            "not a hostmax report".into(),
        ),
        (
            "merge written over a report it reads",
            strings(&["merge", &report_path, &copy, "--json", &copy]),
            "is also an input".into(),
        ),
        (
            "--min-overlap above 100",
            merge(&[&report_path], &["--min-overlap", "150"]),
            "--min-overlap".into(),
        ),
        (
            "--min-overlap not a number",
            merge(&[&report_path], &["--min-overlap", "most"]),
            "--min-overlap".into(),
        ),
        (
            "--resume of nothing",
            strings(&["suite", "--resume", &p("nope.state")]),
            "nope.state".into(),
        ),
        (
            "--resume of a file",
            strings(&["suite", "--resume", &p("afile")]),
            "afile".into(),
        ),
        (
            "--resume of a corrupt checkpoint",
            strings(&["suite", "--resume", &p("bad.state")]),
            "not a suite checkpoint".into(),
        ),
        (
            "--spec-file missing",
            strings(&["--devices", &target, "--spec-file", &p("nope.toml")]),
            "nope.toml".into(),
        ),
        (
            "--spec-file malformed",
            strings(&["--devices", &target, "--spec-file", &p("bad.toml")]),
            "not a valid spec file".into(),
        ),
        (
            "--spec-file wrong type",
            strings(&["--devices", &target, "--spec-file", &p("bad2.toml")]),
            "not a valid spec file".into(),
        ),
    ];
    assert!(cases.len() >= 20);
    for (label, args, expected) in &cases {
        let out = run(args);
        assert_bad_input(label, args, &out, expected);
    }
    assert!(
        fs::read(dir.join("data.ibd")).unwrap() == data,
        "the file of data changed"
    );
    assert!(
        fs::read(&image).unwrap() == image_before,
        "the image changed"
    );
    assert!(!dir.join("new.img").exists(), "a refused run made a file");
    assert!(
        !dir.join("nodir").exists(),
        "a refused run made a directory"
    );
    assert!(!Path::new(&fleet).exists(), "a refused merge wrote {fleet}");
}

#[test]
fn slips_of_fio_users_get_a_hint_and_errors_point_to_the_subcommands_help() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "a positional device",
            &["/dev/sdb"],
            "name devices with --devices (hostmax --devices /dev/sdb ...)",
        ),
        (
            "a suite option misspelt",
            &["suite", "iops", "--bogus"],
            "see 'hostmax suite --help'",
        ),
        (
            "a sweep value",
            &["sweep", "--steps", "x"],
            "see 'hostmax sweep --help'",
        ),
        (
            "a suite without its test",
            &["suite", "--devices", "/dev/null"],
            "which test? give iops, throughput or latency",
        ),
    ];
    for (label, argv, expected) in cases {
        let args = strings(argv);
        assert_bad_input(label, &args, &run(&args), expected);
    }
}

#[test]
fn every_enum_option_lists_its_values_in_help() {
    let help = String::from_utf8_lossy(&run(&strings(&["--help"])).stdout).into_owned();
    // The option's entry: its line and, when clap puts the text below it, the lines up to the
    // next option.
    let line = |option: &str| {
        let mut lines = help
            .lines()
            .skip_while(|l| !l.trim_start().starts_with(option));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no {option} in --help"));
        let rest: Vec<&str> = lines
            .take_while(|l| !l.trim_start().starts_with('-'))
            .collect();
        format!("{first} {}", rest.join(" "))
    };
    for (option, values) in [
        ("--on-error", &["continue", "stop-device", "stop-all"][..]),
        (
            "--rw",
            &["randread", "randwrite", "randrw", "read", "write"][..],
        ),
    ] {
        let text = line(option);
        for value in values {
            assert!(text.contains(value), "{option} help lacks {value}: {text}");
        }
    }
    assert!(line("--filename").contains("colon-separated"));
}

/// Runs hostmax, killing it (and failing) if it has not ended within `secs`: a value that
/// overflowed once made runs that never end.
fn run_within(args: &[String], secs: u64) -> Output {
    let mut child = Command::new(HOSTMAX)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hostmax");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "hostmax {args:?} still running after {secs} s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("hostmax's output")
}

/// Durations, rates and start times too large for a run are one-line refusals naming the
/// bound (exit 2), never an overflow panic or a run that cannot end.
#[test]
fn durations_rates_and_start_times_that_overflow_are_refused() {
    let dir = ScratchDir::new("overflow");
    let f = file_arg(&dir, "f", 1 << 20);
    let d = |extra: &[&str]| -> Vec<String> {
        let mut v = strings(&["--devices", &f, "--ramp", "0s"]);
        v.extend(strings(extra));
        v
    };
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "runtime of i64::MAX seconds",
            d(&["--runtime", "9223372036854775807s"]),
            "at most 8760h",
        ),
        (
            "runtime of u64::MAX milliseconds",
            d(&["--runtime", "18446744073709551615ms"]),
            "at most 8760h",
        ),
        (
            "ramp beyond a year",
            strings(&["--devices", &f, "--runtime", "1s", "--ramp", "8761h"]),
            "at most 8760h",
        ),
        (
            "rate beyond what can be paced",
            d(&["--runtime", "1s", "--rate-iops", "18446744073709551615"]),
            "at most 1000000000",
        ),
        (
            "relative start beyond a year",
            d(&["--runtime", "1s", "--start-at", "+18446744073709551615ms"]),
            "at most 8760h",
        ),
        (
            "absolute start in year 9999",
            d(&["--runtime", "1s", "--start-at", "9999-12-31T00:00:00Z"]),
            "at most 365 days ahead",
        ),
        (
            "suite cell time",
            strings(&[
                "suite",
                "iops",
                "--devices",
                &f,
                "--cell-time",
                "9223372036854775807s",
            ]),
            "at most 8760h",
        ),
        (
            "verify runtime",
            strings(&[
                "verify",
                "--devices",
                &f,
                "--expect-volume-iops",
                "10",
                "--runtime",
                "153722867280912930m",
            ]),
            "at most 8760h",
        ),
    ];
    for (label, args, expected) in cases {
        let out = run_within(&args, 30);
        assert_bad_input(label, &args, &out, expected);
    }
}

/// A missing `--devices` path given with `--size` becomes a new file only for a run that
/// starts: a later refusal (polling on a file, buffers beyond memory) takes it away again.
#[test]
fn a_file_made_for_size_is_removed_when_the_run_is_refused() {
    let dir = ScratchDir::new("made-file");
    let new = dir.path("new.img");
    let args = strings(&[
        "--devices",
        &new,
        "--size",
        "1m",
        "--iopoll",
        "--runtime",
        "1s",
    ]);
    let out = run(&args);
    assert_bad_input("--iopoll on a new file", &args, &out, "--iopoll");
    assert!(!Path::new(&new).exists(), "{new} was left behind");
    // 4 new files x iodepth 4096 x 8 MiB, twice for a mix: 256 GiB of buffers.
    let news: Vec<String> = (0..4).map(|i| dir.path(&format!("n{i}.img"))).collect();
    let mut args = strings(&["--devices"]);
    args.extend(news.iter().cloned());
    args.extend(strings(&[
        "--size",
        "8m",
        "--bs",
        "8m",
        "--iodepth",
        "4096",
        "--rw",
        "randrw",
        "--runtime",
        "1s",
    ]));
    let out = run(&args);
    assert_bad_input(
        "buffers beyond memory",
        &args,
        &out,
        "I/O buffers would need",
    );
    for n in &news {
        assert!(!Path::new(n).exists(), "{n} was left behind");
    }
    // A file that was there before is never removed.
    let kept = file_arg(&dir, "kept.img", 1 << 20);
    let args = strings(&["--devices", &kept, "--iopoll", "--runtime", "1s"]);
    let out = run(&args);
    assert_bad_input("--iopoll on an existing file", &args, &out, "--iopoll");
    assert!(Path::new(&kept).exists());
}

/// A run killed mid-way leaves its `--hdr-log` temporary file (`.NAME.tmp-PID-0`); the next
/// run writing to that directory removes it, since its process is gone.
#[test]
fn a_killed_runs_temporary_file_is_removed_by_the_next_run() {
    let dir = ScratchDir::new("stale-temp");
    let f = file_arg(&dir, "f", 1 << 20);
    let log = dir.path("run.hlog");
    let mut child = Command::new(HOSTMAX)
        .args(strings(&[
            "--devices",
            &f,
            "--runtime",
            "60s",
            "--ramp",
            "0s",
            "--hdr-log",
            &log,
        ]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run hostmax");
    let temp = dir.join(&format!(".run.hlog.tmp-{}-0", child.id()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !temp.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no {}",
            temp.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(temp.exists(), "SIGKILL leaves the temporary file");
    let out = run(&strings(&[
        "--devices",
        &f,
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--hdr-log",
        &log,
    ]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!temp.exists(), "{} is still there", temp.display());
    assert!(Path::new(&log).exists());
}

/// On `--resume` the checkpoint fixes the outputs and the CPUs: a refusal says to make them
/// usable again or start a new suite, never to give another path or other --cpus, which
/// --resume refuses.
#[test]
fn resume_refusals_name_fixes_that_resume_allows() {
    let dir = ScratchDir::new("resume-fixes");
    let f = file_arg(&dir, "f", 8 << 20);
    fs::create_dir(dir.path("out")).unwrap();
    let json = dir.path("out/s.json");
    let state = dir.path("s.state");
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    let cpus: Vec<usize> = (0..nix::sched::CpuSet::count())
        .filter(|&c| allowed.is_set(c).unwrap_or(false))
        .collect();
    let mut args = strings(&[
        "suite",
        "iops",
        "--devices",
        &f,
        "--block-sizes",
        "4k",
        "--mixes",
        "100/0",
        "--cell-time",
        "200ms",
        "--max-rounds",
        "5",
        "--no-precondition",
        "--no-purge",
        "--json",
        &json,
        "--state-dir",
        &state,
    ]);
    // The last allowed CPU: a resume narrowed to the first one no longer has it.
    let last = *cpus.last().unwrap();
    if cpus.len() > 1 {
        args.extend(strings(&["--cpus", &last.to_string()]));
    }
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::remove_dir_all(dir.path("out")).unwrap();
    let resume = strings(&["suite", "--resume", &state]);
    let out = run(&resume);
    assert_bad_input(
        "resume, output directory gone",
        &resume,
        &out,
        &format!(
            "keeps this path in its checkpoint: give another with --resume {state} --json PATH"
        ),
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("choose another path"));
    // A new --json given with --resume is refused in its own words (its fix works).
    let gone = dir.path("out/again.json");
    let with_json = strings(&["suite", "--resume", &state, "--json", &gone]);
    let out = run(&with_json);
    assert_bad_input(
        "resume, new --json in a missing directory",
        &with_json,
        &out,
        "create it or choose another path",
    );
    fs::create_dir(dir.path("out")).unwrap();
    // A device of another size: not the suite's, and no --size to offer.
    fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let out = run(&resume);
    assert_bad_input(
        "resume, device shrunk",
        &resume,
        &out,
        "is not the device the suite started on",
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--size"));
    fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    if cpus.len() > 1 {
        let first = cpus[0];
        let out = tool_command("taskset", "util-linux")
            .args(["-c", &first.to_string(), HOSTMAX])
            .args(&resume)
            .env_remove("RUST_BACKTRACE")
            .output()
            .expect("run hostmax under taskset");
        assert_bad_input(
            "resume, CPU gone",
            &resume,
            &out,
            "--resume cannot change it",
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("CPU {last}")));
    }
}

/// A verify phase's block size is set by verify (`--throughput-bs` for the throughput phase),
/// not by `--bs`: its refusals name the option that works.
#[test]
fn verify_phase_refusals_name_the_option_that_sets_the_block_size() {
    let dir = ScratchDir::new("verify-phase");
    let f = file_arg(&dir, "f", 8 << 20);
    let args = strings(&[
        "verify",
        "--devices",
        &f,
        "--expect-volume-mbps",
        "10",
        "--size",
        "512k",
    ]);
    let out = run(&args);
    assert_bad_input(
        "throughput phase larger than --size",
        &args,
        &out,
        "--throughput-bs 1m is larger than --size 512k",
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--bs "));
}

/// A file name holding ESC or BEL reaches the terminal escaped (`\x1b`, `\x07`) in every error
/// line, wherever the error came from: merge's per-file errors, a `--json` folder that is
/// missing, a malformed `--devices` pattern, a missing `--devices` path.
#[test]
fn control_characters_of_names_in_errors_are_escaped() {
    let dir = ScratchDir::new("escape-errors");
    let evil = |name: &str| format!("{}/{name}", dir.0.display());
    let report = evil("r\x1b[2J\x07.json");
    fs::write(&report, "{\"schema_version\": 2}").unwrap();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("merge, not a report", strings(&["merge", &report, &report])),
        (
            "merge, no such file",
            strings(&["merge", &evil("gone\x1b]0;x\x07.json"), &report]),
        ),
        (
            "--json folder missing",
            strings(&[
                "--devices",
                &report,
                "--json",
                &evil("no\x1b[31m\x07dir/out.json"),
            ]),
        ),
        (
            "--devices pattern malformed",
            strings(&["--devices", &evil("a\x1b[2J[")]),
        ),
        (
            "--devices path missing",
            strings(&["--devices", &evil("nothere\x07")]),
        ),
    ];
    for (label, args) in cases {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{label}: {stderr:?}");
        for c in stderr.chars().filter(|&c| c != '\n') {
            assert!(!c.is_control(), "{label}: {c:?} printed raw: {stderr:?}");
        }
        assert!(
            stderr.contains(r"\x1b") || stderr.contains(r"\x07"),
            "{label}: the name is not shown escaped: {stderr:?}"
        );
    }
}

/// A `--devices` path that exists with a glob metacharacter in its name (even one that is no
/// valid pattern, such as a lone `[`) is that path, not a pattern to expand or refuse.
#[test]
fn an_existing_path_with_a_bracket_is_taken_literally() {
    let dir = ScratchDir::new("bracket-literal");
    let odd = file_arg(&dir, "vol[1", 16 << 20);
    let json = dir.0.join("r.json").display().to_string();
    let args = strings(&[
        "--devices",
        &odd,
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--json",
        &json,
    ]);
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["devices"][0]["path"], odd.as_str());
}

/// A memory cgroup of its own (v1 `memory`, else v2 with the `memory` controller), removed on
/// drop with the controller's delegation it made; its name carries this process's pid.
struct MemoryGroup {
    dir: std::path::PathBuf,
    /// The file that sets its limit (`memory.limit_in_bytes` or `memory.max`).
    limit_file: std::path::PathBuf,
    /// The v2 root whose children it gave the controller to (taken back on drop).
    delegated: Option<std::path::PathBuf>,
}

impl MemoryGroup {
    /// A group whose members may use at most `bytes`; `Err` says why none could be made.
    fn with_limit(bytes: u64) -> Result<MemoryGroup, String> {
        let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| e.to_string())?;
        let mut found = None;
        let mut delegated = None;
        for line in mounts.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, at, kind, options, ..] = fields[..] else {
                continue;
            };
            match kind {
                "cgroup" if options.split(',').any(|o| o == "memory") => {
                    found = Some((std::path::PathBuf::from(at), "memory.limit_in_bytes"));
                    break;
                }
                "cgroup2" if found.is_none() => {
                    let controllers = fs::read_to_string(Path::new(at).join("cgroup.controllers"))
                        .unwrap_or_default();
                    if controllers.split_whitespace().any(|c| c == "memory") {
                        // Children get the controller only where the root hands it down.
                        let control = Path::new(at).join("cgroup.subtree_control");
                        let given = fs::read_to_string(&control).unwrap_or_default();
                        if !given.split_whitespace().any(|c| c == "memory")
                            && fs::write(&control, "+memory").is_ok()
                        {
                            delegated = Some(std::path::PathBuf::from(at));
                        }
                        found = Some((std::path::PathBuf::from(at), "memory.max"));
                    }
                }
                _ => {}
            }
        }
        let (root, file) = found.ok_or("no memory cgroup controller is mounted")?;
        let dir = root.join(format!("hostmax-mem-{}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let group = MemoryGroup {
            limit_file: dir.join(file),
            dir,
            delegated,
        };
        fs::write(&group.limit_file, bytes.to_string())
            .map_err(|e| format!("{}: {e}", group.limit_file.display()))?;
        Ok(group)
    }

    /// Makes `cmd`'s child join the group before it runs.
    fn command_in<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        hostmax_simhost::command_in_cgroup(cmd, &self.dir)
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
        if let Some(root) = &self.delegated {
            let _ = fs::write(root.join("cgroup.subtree_control"), "-memory");
        }
    }
}

/// A run whose I/O buffers fit in the machine's memory but not in the memory cgroup it runs in
/// is refused before any I/O (exit 2) naming the cgroup's limit, instead of being OOM-killed.
#[test]
fn buffers_beyond_the_memory_cgroups_limit_are_refused_naming_it() {
    if !is_root() {
        eprintln!("skipped: needs root (a memory cgroup)");
        return;
    }
    let group = match MemoryGroup::with_limit(512 << 20) {
        Ok(g) => g,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let dir = ScratchDir::new("memory-cgroup");
    let file = file_arg(&dir, "t.img", 16 << 20);
    // 1 GiB of buffers: within the machine's memory, twice the group's limit.
    let args = strings(&[
        "--devices",
        &file,
        "--iodepth",
        "1024",
        "--bs",
        "1m",
        "--runtime",
        "1s",
    ]);
    let mut cmd = Command::new(HOSTMAX);
    cmd.args(&args).env_remove("RUST_BACKTRACE");
    let out = group.command_in(&mut cmd).output().expect("run hostmax");
    assert_bad_input(
        "buffers beyond the cgroup's limit",
        &args,
        &out,
        "I/O buffers would need 1.0 GiB",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "the memory cgroup this process runs in allows only 0.5 GiB ({})",
            group.limit_file.display()
        )),
        "{stderr}"
    );
}
