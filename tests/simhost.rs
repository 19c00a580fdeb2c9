//! The simulated host: loop volumes (and null_blk volumes, where the kernel has null_blk) come
//! and go, nothing survives a SIGKILL, and the cgroup caps (per volume and for the host) hold
//! when measured.
//!
//! Rate tests and the SIGKILL test re-run this test binary as a child process
//! ([`child_process_entry`] with `HOSTMAX_SIMHOST_CHILD` set), so the child can sit in a cgroup or
//! be killed without touching the test process.

mod support;

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use hostmax_simhost::{
    null_blk_available, AlignedBlock, CgroupFlavor, IoThrottle, ParentDevice, SimHostMode,
    SimHostSpec, SimulatedHost,
};
use support::{kernel_completions, loop_volumes, rate_test_lock, scaled_cap};

const MIB: u64 = 1024 * 1024;

const CHILD_ENV: &str = "HOSTMAX_SIMHOST_CHILD";
const CHILD_DEVICES_ENV: &str = "HOSTMAX_SIMHOST_CHILD_DEVICES";
const WARMUP: Duration = Duration::from_millis(300);
/// How long completions are timed after the warm-up.
const MEASURE: Duration = Duration::from_secs(2);
/// Readers per device in the rate child: a few I/Os queue in the throttle, so a reader that is
/// late to get a CPU (a busy 2-core machine) costs no throttle slot.
const READERS_PER_DEVICE: usize = 4;

/// What `/sys/block/NAME/loop/backing_file` says, if the device is bound.
fn backing_file(kernel_name: &str) -> Option<String> {
    fs::read_to_string(format!("/sys/block/{kernel_name}/loop/backing_file"))
        .ok()
        .map(|s| s.trim_end().to_owned())
}

fn sys_value(kernel_name: &str, leaf: &str) -> String {
    let path = format!("/sys/block/{kernel_name}/{leaf}");
    fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {path}: {err}"))
        .trim_end()
        .to_owned()
}

/// Polls `done` for up to 5 s: device teardown after a close or a kill is quick but not instant
/// when something else (udev, blkid) briefly holds a device open.
fn eventually(what: &str, mut done: impl FnMut() -> Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match done() {
            None => return,
            Some(problem) if Instant::now() > deadline => panic!("{what}: {problem}"),
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn open_direct(path: &Path, write: bool) -> fs::File {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap_or_else(|err| panic!("open {} O_DIRECT: {err}", path.display()))
}

#[test]
fn spec_validation_names_the_field() {
    let cases = [
        (SimHostSpec::new(0, MIB), "volumes"),
        (SimHostSpec::new(2, 1000), "multiple of 4096"),
        (SimHostSpec::new(2, MIB).with_volume_iops(0), "volume_iops"),
        (SimHostSpec::new(2, MIB).with_host_iops(0), "host cap"),
        (
            SimHostSpec::new(3, MIB).with_volume_bps_caps(vec![Some(1)]),
            "volume_bps has 1 entries for 3 volumes",
        ),
    ];
    for (spec, expected) in cases {
        let err = SimulatedHost::build(&spec).expect_err("a bad spec must be refused");
        assert!(
            err.to_string().contains(expected),
            "{err} (wanted {expected:?})"
        );
    }
    SimHostSpec::new(2, MIB)
        .with_volume_iops(100)
        .with_host_bps(MIB)
        .validate()
        .expect("a good spec passes");
}

#[test]
fn loop_volumes_appear_and_disappear() {
    require_root!();
    let size = 16 * MIB;
    let host = loop_volumes(3, size);
    assert_eq!(host.mode(), &SimHostMode::LoopDevices);
    assert!(host.throttle().is_none(), "no caps asked, no cgroup made");
    // Files on tmpfs, or slices of one null_blk device where tmpfs takes no O_DIRECT.
    let null_blk_parent = host.host_device().map(|parent| {
        assert!(matches!(parent, ParentDevice::NullBlk(_)), "{parent:?}");
        parent.path().display().to_string()
    });
    let mut names = Vec::new();
    let mut backings = Vec::new();
    for volume in host.volumes() {
        let device = volume.loop_device().expect("loop mode");
        let name = device.kernel_name().to_owned();
        assert_eq!(volume.path(), Path::new(&format!("/dev/{name}")));
        assert_eq!(device.major_minor().0, 7, "loop devices have major 7");
        let backing = backing_file(&name).expect("device is bound");
        match &null_blk_parent {
            None => assert!(
                backing.starts_with("/dev/shm/hostmax-sim-") && backing.ends_with(" (deleted)"),
                "{name} backed by {backing}"
            ),
            Some(parent) => assert_eq!(&backing, parent, "{name}"),
        }
        assert_eq!(sys_value(&name, "loop/dio"), "1", "{name} direct I/O");
        assert_eq!(sys_value(&name, "loop/autoclear"), "1", "{name} autoclear");
        assert_eq!(device.size_bytes().unwrap(), size);

        // The kernel's counters see our O_DIRECT I/O.
        let (reads0, writes0) = kernel_completions(&name);
        let file = open_direct(volume.path(), true);
        let mut block = AlignedBlock::new();
        block.as_mut_slice().fill(0xA5);
        file.write_all_at(block.as_slice(), 8192).unwrap();
        block.as_mut_slice().fill(0);
        file.read_exact_at(block.as_mut_slice(), 8192).unwrap();
        assert!(
            block.as_slice().iter().all(|&b| b == 0xA5),
            "read back what was written"
        );
        drop(file);
        let (reads1, writes1) = kernel_completions(&name);
        assert!(reads1 > reads0, "{name}: reads {reads0} -> {reads1}");
        assert!(writes1 > writes0, "{name}: writes {writes0} -> {writes1}");

        names.push(name);
        backings.push(backing);
    }
    if null_blk_parent.is_none() {
        let scratch = Path::new(backings[0].trim_end_matches(" (deleted)"))
            .parent()
            .unwrap()
            .to_path_buf();
        assert!(
            !scratch.exists(),
            "{} is removed once built",
            scratch.display()
        );
    }

    drop(host);
    // Freed, or already taken by another test with another backing file.
    for (name, backing) in names.iter().zip(&backings) {
        eventually(&format!("{name} detached"), || match backing_file(name) {
            Some(now) if &now == backing => Some(format!("still backed by {now}")),
            _ => None,
        });
    }
}

#[test]
fn parallel_builds_get_distinct_devices() {
    require_root!();
    // Threads racing for LOOP_CTL_GET_FREE must each end up with their own devices.
    let hosts: Vec<SimulatedHost> = std::thread::scope(|scope| {
        let builders: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| loop_volumes(4, MIB)))
            .collect();
        builders.into_iter().map(|b| b.join().unwrap()).collect()
    });
    let mut names: Vec<String> = hosts
        .iter()
        .flat_map(|h| h.volumes())
        .map(|v| v.loop_device().unwrap().kernel_name().to_owned())
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 24, "distinct devices: {names:?}");
    for name in &names {
        let backing = backing_file(name).expect("bound");
        assert!(
            backing.starts_with("/dev/shm/hostmax-sim-"),
            "{name}: {backing}"
        );
    }
}

#[test]
fn throttle_members_move_out_on_drop() {
    require_root!();
    let throttle = IoThrottle::create().expect("create cgroup");
    let group = throttle.path().to_path_buf();
    let name = group.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("hostmax-{}-", std::process::id())),
        "{name}"
    );
    let mut sleeper = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let sleeper_pid = sleeper.id();
    // It starts in a cgroup of its own, which is where it must go back to (not the root).
    let origin = group
        .parent()
        .unwrap()
        .join(format!("hostmax-test-origin-{}", std::process::id()));
    fs::create_dir(&origin).expect("create the origin cgroup");
    fs::write(origin.join("cgroup.procs"), sleeper_pid.to_string()).expect("join origin");
    throttle.join_pid(sleeper_pid).expect("join");
    assert_eq!(throttle.members().unwrap(), vec![sleeper_pid]);
    let in_group = |pid: u32| {
        fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .unwrap()
            .lines()
            .any(|l| l.ends_with(&format!(":/{name}")))
    };
    assert!(in_group(sleeper_pid));
    drop(throttle);
    assert!(!group.exists(), "{} removed", group.display());
    assert!(!in_group(sleeper_pid), "moved back out");
    let origin_name = origin.file_name().unwrap().to_string_lossy().into_owned();
    let back_home = fs::read_to_string(format!("/proc/{sleeper_pid}/cgroup"))
        .unwrap()
        .lines()
        .any(|l| l.ends_with(&format!(":/{origin_name}")));
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    fs::remove_dir(&origin).expect("remove the origin cgroup");
    assert!(back_home, "moved back to the cgroup it came from");
}

#[test]
fn host_cap_volumes_are_slices_of_the_parent() {
    require_root!();
    let size = 4 * MIB;
    let spec = SimHostSpec::new(3, size).with_host_iops(1_000_000);
    let host = SimulatedHost::build(&spec).expect("build");
    let parent = host
        .host_device()
        .expect("a host cap makes a parent device");
    let throttle = host.throttle().expect("a host cap makes a cgroup");
    let rules = fs::read_to_string(throttle.path().join("blkio.throttle.read_iops_device"))
        .unwrap_or_default();
    let (major, minor) = parent.major_minor();
    if throttle.flavor() == hostmax_simhost::CgroupFlavor::V1Blkio {
        assert!(
            rules.contains(&format!("{major}:{minor} 1000000")),
            "rules: {rules}"
        );
    }
    assert_eq!(parent.size_bytes().unwrap(), 3 * size);
    for (index, volume) in host.volumes().iter().enumerate() {
        let name = volume.loop_device().unwrap().kernel_name();
        assert_eq!(
            backing_file(name).as_deref(),
            Some(parent.path().to_str().unwrap())
        );
        assert_eq!(
            sys_value(name, "loop/offset"),
            (index as u64 * size).to_string()
        );
        assert_eq!(sys_value(name, "loop/sizelimit"), size.to_string());
        assert_eq!(sys_value(name, "loop/dio"), "1", "{name} direct I/O");
        assert_eq!(volume.loop_device().unwrap().size_bytes().unwrap(), size);
    }
    // A write to volume 1 lands at offset `size` of the parent and nowhere else.
    let mut block = AlignedBlock::new();
    block.as_mut_slice().fill(0x3C);
    open_direct(host.volumes()[1].path(), true)
        .write_all_at(block.as_slice(), 0)
        .unwrap();
    let parent_file = open_direct(parent.path(), false);
    parent_file
        .read_exact_at(block.as_mut_slice(), size)
        .unwrap();
    assert!(block.as_slice().iter().all(|&b| b == 0x3C));
    for other in [0, 2] {
        open_direct(host.volumes()[other].path(), false)
            .read_exact_at(block.as_mut_slice(), 0)
            .unwrap();
        assert!(
            block.as_slice().iter().all(|&b| b == 0),
            "volume {other} untouched"
        );
    }
    let group = throttle.path().to_path_buf();
    drop(parent_file);
    drop(host);
    assert!(!group.exists(), "{} removed on drop", group.display());
}

#[test]
fn null_blk_hosts_refuse_host_caps_and_partial_mebibytes() {
    // Refused before anything is made, so this runs with or without null_blk.
    let cases = [
        (
            SimHostSpec::new(2, 16 * MIB).with_host_iops(1000),
            "host caps need loop volumes",
        ),
        (
            SimHostSpec::new(2, 16 * MIB).with_host_bps(MIB),
            "host caps need loop volumes",
        ),
        (
            SimHostSpec::new(2, MIB + 4096),
            "not a positive whole number of MiB",
        ),
    ];
    for (spec, expected) in cases {
        let err = SimulatedHost::build_null_blk(&spec).expect_err("must be refused");
        assert!(
            err.to_string().contains(expected),
            "{err} (wanted {expected:?})"
        );
    }
}

#[test]
fn null_blk_volumes_appear_capped_and_vanish_on_drop() {
    require_root!();
    if let Err(reason) = null_blk_available() {
        skip!("the kernel cannot make null_blk devices here: {reason}");
    }
    let size = 16 * MIB;
    let spec = SimHostSpec::new(2, size)
        .with_volume_iops(1000)
        .with_volume_bps(8 * MIB);
    let host = SimulatedHost::build_null_blk(&spec).expect("build null_blk volumes");
    assert_eq!(host.mode(), &SimHostMode::NullBlk);
    assert!(host.host_device().is_none());
    let throttle = host.throttle().expect("caps make a cgroup");
    let mut made = Vec::new();
    for volume in host.volumes() {
        assert!(volume.loop_device().is_none());
        let device = volume.null_blk_device().expect("null_blk mode");
        let name = device.kernel_name().to_owned();
        assert_eq!(volume.kernel_name(), Some(name.as_str()));
        assert_eq!(volume.path(), Path::new(&format!("/dev/{name}")));
        let (major, minor) = device.major_minor();
        assert_eq!(sys_value(&name, "dev"), format!("{major}:{minor}"));
        assert_eq!(sys_value(&name, "size"), (size / 512).to_string());
        assert_eq!(
            sys_value(&name, "queue/logical_block_size"),
            "512",
            "{name}"
        );
        assert!(device.config_dir().is_dir());
        // The caps are rules on this device in the host's cgroup.
        let rules = match throttle.flavor() {
            CgroupFlavor::V1Blkio => {
                fs::read_to_string(throttle.path().join("blkio.throttle.read_iops_device")).unwrap()
            }
            CgroupFlavor::V2Io => fs::read_to_string(throttle.path().join("io.max")).unwrap(),
            // A flavor newer than this test: it does not know where its rules are.
            other => panic!("this test does not know where {other} keeps its rules"),
        };
        let rule = rules
            .lines()
            .find(|l| l.starts_with(&format!("{major}:{minor} ")))
            .unwrap_or_else(|| panic!("no rule for {name} ({major}:{minor}) in {rules}"));
        assert!(rule.contains("1000"), "{rule}");
        // Memory-backed: what is written reads back, and the kernel counts it.
        let (reads0, writes0) = kernel_completions(&name);
        let file = open_direct(volume.path(), true);
        let mut block = AlignedBlock::new();
        block.as_mut_slice().fill(0x5A);
        file.write_all_at(block.as_slice(), 8192).unwrap();
        block.as_mut_slice().fill(0);
        file.read_exact_at(block.as_mut_slice(), 8192).unwrap();
        assert!(
            block.as_slice().iter().all(|&b| b == 0x5A),
            "{name}: read back what was written"
        );
        drop(file);
        let (reads1, writes1) = kernel_completions(&name);
        assert!(
            reads1 > reads0 && writes1 > writes0,
            "{name} counted no I/O"
        );
        made.push((name, device.config_dir().to_path_buf()));
    }
    assert_ne!(made[0].0, made[1].0, "two distinct disks");
    drop(host);
    for (name, config_dir) in &made {
        eventually(&format!("{name} removed"), || {
            let disk = Path::new("/sys/block").join(name);
            (disk.exists() || config_dir.exists() || Path::new("/dev").join(name).exists())
                .then(|| format!("{} or {} still there", disk.display(), config_dir.display()))
        });
    }
}

#[test]
fn plain_file_fallback_takes_o_direct() {
    let spec = SimHostSpec::new(2, MIB).with_volume_iops(500);
    let host = SimulatedHost::build_plain_files(&spec, "testing the fallback").expect("build");
    assert!(
        matches!(host.mode(), SimHostMode::PlainFiles { reason } if reason == "testing the fallback")
    );
    assert!(host.throttle().is_none(), "plain files are never capped");
    let paths = host.device_paths();
    assert_eq!(paths.len(), 2);
    for (path, volume) in paths.iter().zip(host.volumes()) {
        assert_eq!(fs::metadata(path).unwrap().len(), MIB);
        assert_eq!(volume.iops_cap(), None);
        let mut block = AlignedBlock::new();
        open_direct(path, false)
            .read_exact_at(block.as_mut_slice(), MIB - 4096)
            .unwrap();
    }
    let dir = paths[0].parent().unwrap().to_path_buf();
    drop(host);
    assert!(!dir.exists(), "{} removed on drop", dir.display());

    // Without root, `build` itself falls back to plain files and says why.
    if !support::is_root() {
        let host = SimulatedHost::build(&spec).expect("build without root");
        assert!(
            matches!(host.mode(), SimHostMode::PlainFiles { reason } if reason.contains("not root")),
            "{:?}",
            host.mode()
        );
    }
}

/// Kills its child on drop, so a failing test leaves no sleeper behind.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Re-runs this test binary as a child running only [`child_process_entry`] in `role`.
fn child_command(role: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_process_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, role)
    .stdout(Stdio::piped());
    cmd
}

/// The rest of a child's output line after `marker` (libtest may print "test ... " before it).
fn child_line<'l>(line: &'l str, marker: &str) -> Option<&'l str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

/// Does nothing in a normal test run; in a child started by [`child_command`] it plays its role.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    match role.as_str() {
        "hold-host" => child_hold_hosts(),
        "read-loop" => child_read_loop(),
        other => panic!("unknown child role {other:?}"),
    }
}

/// Child role: build a capped host with a parent device and an uncapped one, report, sleep.
fn child_hold_hosts() {
    let capped = SimHostSpec::new(3, 8 * MIB)
        .with_volume_iops(5000)
        .with_host_iops(10_000);
    let capped = SimulatedHost::build(&capped).expect("build capped host");
    let plain = SimulatedHost::build(&SimHostSpec::new(2, 8 * MIB)).expect("build plain host");
    let mut names: Vec<&str> = capped
        .volumes()
        .iter()
        .chain(plain.volumes())
        .map(|v| v.loop_device().unwrap().kernel_name())
        .collect();
    names.push(capped.host_device().unwrap().kernel_name());
    println!("CHILD-DEVICES {}", names.join(" "));
    println!(
        "CHILD-CGROUP {}",
        capped.throttle().unwrap().path().display()
    );
    println!("CHILD-READY");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn sigkilled_owner_leaves_no_loop_device_behind() {
    require_root!();
    let mut child = ChildGuard(child_command("hold-host").spawn().expect("spawn child"));
    let pid = child.0.id();
    let stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut devices = Vec::new();
    let mut cgroup = None;
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(rest) = child_line(&line, "CHILD-DEVICES ") {
            devices = rest.split(' ').map(str::to_owned).collect();
        } else if let Some(rest) = child_line(&line, "CHILD-CGROUP ") {
            cgroup = Some(PathBuf::from(rest));
        } else if child_line(&line, "CHILD-READY").is_some() {
            break;
        }
    }
    assert_eq!(devices.len(), 6, "child reported its devices");
    let cgroup = cgroup.expect("child reported its cgroup");
    // Backed by files in its scratch directory, or (before Linux 6.6) by its null_blk devices.
    let prefixes = [
        format!("/dev/shm/hostmax-sim-{pid}-"),
        format!("/dev/hostmax{pid}_"),
    ];
    let child_backed = || -> Vec<String> {
        let mut found = Vec::new();
        for entry in fs::read_dir("/sys/block").unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(backing) =
                backing_file(&name).filter(|b| prefixes.iter().any(|prefix| b.starts_with(prefix)))
            {
                found.push(format!("{name} -> {backing}"));
            }
        }
        found
    };
    // 2 plain volumes and the parent are backed by files in the child's directory (the 3 capped
    // volumes are backed by the parent, so while any of them lives the parent does too); on
    // null_blk parents all 5 volumes are backed by the child's null_blk devices.
    let null_blk_parents = devices.last().unwrap().starts_with("hostmax");
    let backed = if null_blk_parents { 5 } else { 3 };
    assert_eq!(child_backed().len(), backed, "{:?}", child_backed());
    assert!(cgroup.exists());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.0.wait().unwrap();

    eventually("the killed child's loop devices are detached", || {
        let left = child_backed();
        (!left.is_empty()).then(|| format!("{left:?}"))
    });
    // Its devices are free now or belong to someone else (not backed by its parent device).
    let parent = devices.last().unwrap();
    for name in &devices[..5] {
        if let Some(backing) = backing_file(name) {
            assert!(
                backing != format!("/dev/{parent}") || backing_file(parent).is_none(),
                "{name} still backed by the child's parent {parent}"
            );
        }
    }
    // The empty cgroup of the dead child is swept by the next builder.
    SimulatedHost::sweep_stale();
    assert!(!cgroup.exists(), "{} swept", cgroup.display());
    // So are its null_blk devices.
    let left: Vec<_> = fs::read_dir(hostmax_simhost::NULLB_CONFIGFS_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("hostmax{pid}_"))
        })
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?} swept");
}

/// Child role: [`READERS_PER_DEVICE`] threads per device in `HOSTMAX_SIMHOST_CHILD_DEVICES`, each a
/// loop of 4 KiB O_DIRECT preads; prints the [`Rate`] of each device and of all together over
/// [`MEASURE`] after the warm-up.
fn child_read_loop() {
    let devices: Vec<PathBuf> = std::env::var(CHILD_DEVICES_ENV)
        .expect("devices")
        .split(',')
        .map(PathBuf::from)
        .collect();
    let barrier = Arc::new(Barrier::new(devices.len() * READERS_PER_DEVICE));
    let mut readers = Vec::new();
    for path in &devices {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let blocks = sys_value(&name, "size").parse::<u64>().unwrap() * 512 / 4096;
        for reader in 0..READERS_PER_DEVICE as u64 {
            let barrier = Arc::clone(&barrier);
            let file = open_direct(path, false);
            readers.push(std::thread::spawn(move || {
                let mut block = AlignedBlock::new();
                let mut completions = Vec::new();
                barrier.wait();
                let measure_from = Instant::now() + WARMUP;
                let stop = measure_from + MEASURE;
                let mut i = reader;
                loop {
                    file.read_exact_at(block.as_mut_slice(), (i % blocks) * 4096)
                        .unwrap();
                    i += READERS_PER_DEVICE as u64;
                    let now = Instant::now();
                    if now >= stop {
                        break;
                    }
                    if now >= measure_from {
                        completions.push((now - measure_from).as_secs_f64());
                    }
                }
                completions
            }));
        }
    }
    let per_reader: Vec<Vec<f64>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let mut all = Vec::new();
    for (path, readers) in devices.iter().zip(per_reader.chunks(READERS_PER_DEVICE)) {
        let device: Vec<f64> = readers.concat();
        println!("CHILD-RATE {} {}", path.display(), Rate::of(device.clone()));
        all.extend(device);
    }
    println!("CHILD-RATE all {}", Rate::of(all));
}

/// The rate of a set of completions (seconds since the window opened).
///
/// blk-throttle releases I/O in bursts, one per 100 ms slice, so a plain count over a 2 s window
/// is off by up to a burst (5%) depending on where the window's edges fall. The slope of the
/// least-squares line through (time, completions so far) is not: a staircase of 20 steps moves it
/// by about (1/20)^2.
#[derive(Debug, Clone, Copy)]
struct Rate {
    /// Completions per second, from the fitted slope.
    slope: f64,
    /// Completions per second, from the count over the window.
    mean: f64,
}

impl Rate {
    fn of(mut completions: Vec<f64>) -> Rate {
        completions.sort_by(f64::total_cmp);
        let n = completions.len() as f64;
        let mean_t = completions.iter().sum::<f64>() / n;
        let mean_i = (n - 1.0) / 2.0;
        let (mut cov, mut var) = (0.0, 0.0);
        for (i, t) in completions.iter().enumerate() {
            cov += (t - mean_t) * (i as f64 - mean_i);
            var += (t - mean_t) * (t - mean_t);
        }
        Rate {
            slope: if var > 0.0 { cov / var } else { 0.0 },
            mean: n / MEASURE.as_secs_f64(),
        }
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} {:.1}", self.slope, self.mean)
    }
}

impl std::str::FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Rate, String> {
        let (slope, mean) = s.split_once(' ').ok_or(format!("bad rate {s:?}"))?;
        Ok(Rate {
            slope: slope.parse().map_err(|e| format!("{s:?}: {e}"))?,
            mean: mean.parse().map_err(|e| format!("{s:?}: {e}"))?,
        })
    }
}

/// Runs the read-loop child inside `group` over `devices`; returns its rates by device path,
/// and for all devices together under the key "all".
fn measure_read_rates(group: &IoThrottle, devices: &[&Path]) -> HashMap<String, Rate> {
    let list: Vec<String> = devices.iter().map(|p| p.display().to_string()).collect();
    let mut cmd = child_command("read-loop");
    cmd.env(CHILD_DEVICES_ENV, list.join(","));
    group.command_in_group(&mut cmd);
    let output = cmd.output().expect("run read-loop child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}");
    let rates: HashMap<String, Rate> = stdout
        .lines()
        .filter_map(|l| child_line(l, "CHILD-RATE "))
        .map(|l| {
            let (name, rate) = l.split_once(' ').unwrap();
            (name.to_owned(), rate.parse().unwrap())
        })
        .collect();
    assert_eq!(rates.len(), devices.len() + 1, "child output: {stdout}");
    rates
}

/// The fitted rate must be within 5% of `expected` (and the plain count within 10%).
fn assert_rate(what: &str, rate: Rate, expected: f64) {
    let off = |v: f64| (v - expected) / expected;
    eprintln!(
        "{what}: {:.0} IOPS ({:+.2}%), counted {:.0} ({:+.2}%), expected {expected:.0}",
        rate.slope,
        off(rate.slope) * 100.0,
        rate.mean,
        off(rate.mean) * 100.0,
    );
    assert!(
        off(rate.slope).abs() <= 0.05,
        "{what}: {:.0} IOPS is not within 5% of {expected:.0}",
        rate.slope
    );
    assert!(
        off(rate.mean).abs() <= 0.10,
        "{what}: counted {:.0} IOPS, not within 10% of {expected:.0}",
        rate.mean
    );
}

#[test]
fn capped_volumes_read_at_their_caps() {
    require_root!();
    let _rate = rate_test_lock();
    // 4 KiB reads: a bandwidth cap of a whole number of blocks per second.
    let bps_cap = scaled_cap(1024) * 4096;
    let spec = SimHostSpec::new(3, 16 * MIB)
        .with_volume_iops_caps(vec![Some(scaled_cap(1000)), Some(scaled_cap(3000)), None])
        .with_volume_bps_caps(vec![None, None, Some(bps_cap)]);
    let host = SimulatedHost::build(&spec).expect("build");
    let throttle = host.throttle().expect("caps make a cgroup");
    let paths = host.device_paths();
    let rates = measure_read_rates(throttle, &[&paths[0], &paths[1], &paths[2]]);
    let rate = |i: usize| rates[&paths[i].display().to_string()];
    let (low, high) = (scaled_cap(1000), scaled_cap(3000));
    assert_rate(&format!("volume capped at {low} IOPS"), rate(0), low as f64);
    assert_rate(
        &format!("volume capped at {high} IOPS"),
        rate(1),
        high as f64,
    );
    assert_rate(
        &format!("volume capped at {bps_cap} B/s, 4 KiB reads"),
        rate(2),
        (bps_cap / 4096) as f64,
    );
}

#[test]
fn host_cap_bounds_the_sum_of_volumes() {
    require_root!();
    let _rate = rate_test_lock();
    let (volume_cap, host_cap) = (scaled_cap(2000), scaled_cap(5000));
    let spec = SimHostSpec::new(4, 16 * MIB)
        .with_volume_iops(volume_cap)
        .with_host_iops(host_cap);
    let host = SimulatedHost::build(&spec).expect("build");
    let throttle = host.throttle().expect("caps make a cgroup");
    let paths = host.device_paths();
    let devices: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let rates = measure_read_rates(throttle, &devices);
    for path in &paths {
        let rate = rates[&path.display().to_string()];
        eprintln!("{}: {:.0} IOPS", path.display(), rate.slope);
        assert!(
            rate.slope <= volume_cap as f64 * 1.05,
            "{} over its own cap",
            path.display()
        );
    }
    assert_rate(
        &format!("4 volumes of {volume_cap} under a {host_cap} host cap, together"),
        rates["all"],
        host_cap as f64,
    );
}
