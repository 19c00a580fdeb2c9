//! Same media by any name: a write is refused, whatever the flags, when its target reaches
//! storage that something mounted, swapped on or built on uses under another name (a second
//! loop device over an overlapping range of a mounted image, the image file itself, the file
//! behind an active swap loop device, a dm device over the same disk range, another path to
//! the same LUN); ranges that do not overlap stay writable. And what a run writes through is
//! what was checked: a file swapped for another while the run starts is never written.
//!
//! Loop devices over /dev/shm files here (root needed); the dm and two-path cases run in the
//! kernel matrix's VMs (tests/kernels/run.sh) and skip elsewhere, saying why. Every mount, swap
//! area and loop device is undone in `Drop` guards.

mod support;

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hostmax_simhost::{LoopDevice, LoopOptions};
use support::*;

const MIB: u64 = 1 << 20;

/// A loop device over `file` from `offset` for `size_limit` bytes, with buffered backing I/O:
/// these tests check refusals, and tmpfs takes O_DIRECT only from Linux 6.6 on (Debian 12's 6.1
/// refuses a direct-I/O loop device over a /dev/shm file).
fn attach(file: &Path, offset: u64, size_limit: u64) -> LoopDevice {
    let backing = OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    LoopDevice::attach(
        &backing,
        &LoopOptions::default()
            .with_offset(offset)
            .with_size_limit(size_limit)
            .with_direct_io(false),
    )
    .expect("attach a loop device")
}

fn path_of(dev: &LoopDevice) -> String {
    dev.path().display().to_string()
}

fn write_args(target: &str, flags: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["--devices", target, "--rw", "randwrite", "--runtime", "1s"]
        .iter()
        .chain(["--ramp", "0s"].iter())
        .chain(flags)
        .map(|s| s.to_string())
        .collect();
    v.push("--json".into());
    v.push("-".into());
    v
}

/// Runs a write that must be refused (with both flags: no flag overrides shared media) and
/// checks the one-line message names the shared medium, its user and the rule.
fn assert_shared(target: &str, user: &str, medium: &str) -> String {
    let args = write_args(target, &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[
            target,
            "shares its media",
            medium,
            user,
            "no flag overrides",
        ],
    )
}

#[test]
fn a_mounted_image_is_not_written_through_another_loop_device_or_the_file_itself() {
    require_root!();
    let dir = ScratchDir::new("same-media-mount");
    let image = dir.file("fs.img", 128 * MIB);
    let image_name = image.display().to_string();
    // The filesystem lives in the first 64 MiB; the rest of the file is used by nothing.
    let mounted = attach(&image, 0, 64 * MIB);
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &path_of(&mounted)]);
    let _mount = Mount::new(&path_of(&mounted), &dir.join("mnt"), &[]);
    let user = format!("{}, mounted at", path_of(&mounted));

    // Overlapping the mounted range: refused, whatever the flags.
    let overlapping = attach(&image, 32 * MIB, 0);
    let before = kernel_completions(overlapping.kernel_name()).1;
    assert_shared(&path_of(&overlapping), &user, &image_name);
    assert_eq!(kernel_completions(overlapping.kernel_name()).1, before);
    // The image file itself.
    assert_shared(&image_name, &user, &image_name);

    // The case: a whole second device from 64 MiB on is apart from a mount of the
    // first 64 MiB and may be written (it holds nothing). The overlapping device goes first:
    // this test holds it open for writing, which makes its range in use.
    drop(overlapping);
    let apart = attach(&image, 64 * MIB, 0);
    let args = write_args(&path_of(&apart), &["--allow-write"]);
    let out = run_hostmax(&args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_mount_of_the_whole_image_refuses_a_loop_device_at_64m_and_the_file() {
    require_root!();
    let dir = ScratchDir::new("same-media-whole");
    let image = dir.file("fs.img", 128 * MIB);
    let image_name = image.display().to_string();
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &image_name]);
    let mounted = attach(&image, 0, 0);
    let _mount = Mount::new(&path_of(&mounted), &dir.join("mnt"), &[]);
    let second = attach(&image, 64 * MIB, 0);
    let user = format!("{}, mounted at", path_of(&mounted));
    let line = assert_shared(&path_of(&second), &user, &image_name);
    eprintln!("{line}");
    assert_shared(&image_name, &user, &image_name);

    // Two loop devices over different ranges of a file nothing uses: both writable at once.
    let free = dir.file("free.img", 64 * MIB);
    let (a, b) = (attach(&free, 0, 32 * MIB), attach(&free, 32 * MIB, 0));
    let mut args = write_args(&path_of(&a), &["--allow-write"]);
    args.insert(2, path_of(&b));
    let out = run_hostmax(&args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_backing_file_of_an_active_swap_loop_device_is_refused() {
    require_root!();
    let dir = ScratchDir::new("same-media-swap");
    let file = dir.file("swap.img", 64 * MIB);
    let dev = attach(&file, 0, 0);
    let node = path_of(&dev);
    let _swap = SwapOn::new(&node);
    let file_name = file.display().to_string();
    let user = format!("{node}, active swap");
    assert_shared(&file_name, &user, &file_name);
    // And another loop device over the same file, by any offset inside it.
    let other = attach(&file, 16 * MIB, 0);
    assert_shared(&path_of(&other), &user, &file_name);
}

/// Keeps two inodes alive under names `a` and `b` and swaps which one `target` names, each
/// step an atomic rename of a fresh hard link, until `stop`.
fn swap_names(a: PathBuf, b: PathBuf, target: PathBuf, stop: Arc<AtomicBool>) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let from = if n.is_multiple_of(2) { &a } else { &b };
        let link = target.with_extension(format!("link{}", n % 2));
        let _ = fs::remove_file(&link);
        if fs::hard_link(from, &link).is_ok() {
            let _ = fs::rename(&link, &target);
        }
        n += 1;
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

fn checksum(path: &Path) -> u64 {
    let mut bytes = Vec::new();
    File::open(path).unwrap().read_to_end(&mut bytes).unwrap();
    // FNV-1a: any change to the image shows.
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

#[test]
fn a_file_swapped_for_an_image_while_a_run_starts_is_never_written() {
    let dir = ScratchDir::new("same-media-race");
    let image = dir.file("image.img", 16 * MIB);
    let status = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&image)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        // A signature of our own is as good: any data makes the image someone's.
        fs::write(&image, vec![0x5au8; 16 * MIB as usize]).unwrap();
    }
    let image_sum = checksum(&image);
    let image_inode = {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(&image).unwrap();
        format!("{}:{}", m.dev(), m.ino())
    };
    let sparse = dir.join("sparse.img");
    let target = dir.join("T.img");
    let (mut written, mut refused) = (0, 0);
    for _ in 0..12 {
        // A fresh all-holes file each try: once written it holds data and needs consent.
        File::create(&sparse).unwrap().set_len(16 * MIB).unwrap();
        fs::hard_link(&sparse, &target).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (a, b, t, s) = (sparse.clone(), image.clone(), target.clone(), stop.clone());
            std::thread::spawn(move || swap_names(a, b, t, s))
        };
        let args = [
            "--devices",
            target.to_str().unwrap(),
            "--rw",
            "randwrite",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--json",
            "-",
        ];
        let out = run_hostmax(&args, None);
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {
                written += 1;
                let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let inode = report["devices"][0]["identity"]["inode"]
                    .as_str()
                    .unwrap_or("");
                assert_ne!(inode, image_inode, "the image was the target: {stderr}");
            }
            Some(2) => refused += 1,
            other => panic!("exit {other:?}: {stderr}"),
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(
            checksum(&image),
            image_sum,
            "the image was written: {stderr}"
        );
        let _ = fs::remove_file(&target);
    }
    eprintln!("{written} runs wrote the sparse file, {refused} were refused");
}

/// A device-mapper linear device over part of a loop volume, removed on drop.
fn dm_linear(name: &str, dev: &LoopDevice, start_sector: u64, sectors: u64) -> DmDevice {
    let table = format!("0 {sectors} linear {} {start_sector}", path_of(dev));
    DmDevice::create(name, &table).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_dm_linear_device_in_use_refuses_its_member_and_an_overlapping_sibling() {
    require_root!();
    if !Path::new("/sys/module/dm_mod").exists() {
        let _ = Command::new("modprobe").arg("dm-mod").status();
    }
    let dm_driver = fs::read_to_string("/proc/misc").is_ok_and(|m| m.contains("device-mapper"));
    if !dm_driver {
        skip!("no device-mapper in this kernel (it is in the kernel matrix's VMs: bash tests/kernels/run.sh)");
    }
    let dir = ScratchDir::new("same-media-dm");
    let file = dir.file("pv.img", 96 * MIB);
    let member = attach(&file, 0, 0);
    let tag = std::process::id();
    let used = dm_linear(&format!("hostmax-used-{tag}"), &member, 0, 65536);
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &used.node()]);
    let _mount = Mount::new(&used.node(), &dir.join("mnt"), &[]);
    // From 16 MiB: overlaps the mounted device's 32 MiB. From 48 MiB: beside both.
    let sibling = dm_linear(&format!("hostmax-sib-{tag}"), &member, 32768, 65536);
    let beside = dm_linear(&format!("hostmax-beside-{tag}"), &member, 98304, 65536);
    let args = write_args(&sibling.node(), &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &["shares its media", "mounted at", "no flag overrides"],
    );
    // The member itself is held (existing rule) and another loop device over its file too.
    let args = write_args(&path_of(&member), &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["has holders"]);
    let again = attach(&file, 0, 0);
    let args = write_args(&path_of(&again), &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["shares its media", "no flag overrides"]);
    // This test holds that loop device open for writing, which keeps all of the file in use.
    drop(again);
    // The device beside the mounted one (a linear table: exact ranges) is apart.
    let args = write_args(&beside.node(), &["--allow-write"]);
    let out = run_hostmax(&args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_paths_to_one_lun_one_mounted_refuse_the_other() {
    require_root!();
    let names = require_vm_disks!("hostmax-lun");
    assert_eq!(names.len(), 2, "one LUN on two paths: {names:?}");
    let (first, second) = (format!("/dev/{}", names[0]), format!("/dev/{}", names[1]));
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &first]);
    let dir = ScratchDir::new("same-media-lun");
    let _mount = Mount::new(&first, &dir.join("mnt"), &[]);
    let args = write_args(&second, &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[
            "shares its media",
            "serial hostmax-lun",
            "mounted at",
            "no flag overrides",
        ],
    );
}

/// A helper process for a test (a mount in its own namespace, an open descriptor), killed on
/// drop.
struct Helper(std::process::Child);

impl Helper {
    /// Runs `script` in `sh` (with `unshare` options first, if any) and waits for it to print
    /// `ready` on stdout.
    fn start(unshare: &[&str], script: &str) -> Helper {
        use std::io::{BufRead, BufReader};
        let mut cmd = if unshare.is_empty() {
            Command::new("sh")
        } else {
            let mut c = Command::new("unshare");
            c.args(unshare).arg("sh");
            c
        };
        let mut child = cmd
            .arg("-c")
            .arg(script)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run sh");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let helper = Helper(child);
        assert_eq!(
            line.trim(),
            "ready",
            "the helper did not get ready: {script}"
        );
        helper
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loop device set up by `losetup` (this test holds no descriptor of it), detached on drop.
struct Losetup(String);

impl Losetup {
    /// `losetup --show NODE FILE`, NODE being `--find` for a free one. A named node may be
    /// busy for a while: the tests beside this one take free nodes with `--find`, and one may
    /// hold the node this test just detached until it ends; so it is tried for up to 60 s.
    fn attach(node: &str, file: &Path) -> Losetup {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let out = Command::new("losetup")
                .args(["--show", node])
                .arg(file)
                .output()
                .unwrap();
            if out.status.success() {
                return Losetup(String::from_utf8_lossy(&out.stdout).trim().to_string());
            }
            let stderr = String::from_utf8_lossy(&out.stderr);
            let busy = node != "--find" && stderr.contains("busy");
            assert!(
                busy && std::time::Instant::now() < deadline,
                "losetup --show {node} {}: {stderr}",
                file.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Losetup {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn a_suite_resumed_on_a_loop_device_re_pointed_to_a_new_file_of_the_same_name_is_refused() {
    require_root!();
    let dir = ScratchDir::new("same-media-resume");
    let image = dir.file("vol.img", 32 * MIB);
    let node = Losetup::attach("--find", &image);
    let state = dir.join("suite.state");
    let mut suite = one_cell_suite(&[&node.0], "1s");
    suite.extend(["--state-dir", state.to_str().unwrap()].map(String::from));
    let out = interrupt_after(&suite, "[round 1] cell 1/", std::time::Duration::ZERO);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same node over a new file of the same name and size: another volume.
    let path = node.0.clone();
    drop(node);
    fs::remove_file(&image).unwrap();
    File::create(&image).unwrap().set_len(32 * MIB).unwrap();
    let again = Losetup::attach(&path, &image);
    let args: Vec<String> = ["suite", "--resume", state.to_str().unwrap()]
        .map(String::from)
        .to_vec();
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &[&again.0, "backing file"]);
}

/// A read run that must be refused for overlapping targets.
fn assert_overlap_refused(targets: &[&str], expected: &[&str]) {
    let mut args = vec!["--devices".to_string()];
    args.extend(targets.iter().map(|t| t.to_string()));
    args.extend(["--runtime", "1s", "--ramp", "0s"].map(String::from));
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, expected);
}

#[test]
fn targets_that_reach_the_same_storage_are_refused_unless_allowed() {
    require_root!();
    let dir = ScratchDir::new("same-media-overlap");
    let image = dir.file("vol.img", 96 * MIB);
    let image_name = image.display().to_string();
    let whole = attach(&image, 0, 0);
    let same = attach(&image, 0, 0);
    let from_32m = attach(&image, 32 * MIB, 0);
    let first_32m = attach(&image, 0, 32 * MIB);
    let rule = "the same blocks would be measured twice";
    // Two loop devices over one file, a loop device and its own file, overlapping offsets.
    assert_overlap_refused(
        &[&path_of(&whole), &path_of(&same)],
        &[
            "reach the same storage",
            &image_name,
            rule,
            "--allow-overlap",
        ],
    );
    assert_overlap_refused(&[&path_of(&whole), &image_name], &[rule]);
    assert_overlap_refused(&[&path_of(&from_32m), &path_of(&whole)], &[rule]);
    // Ranges apart are two volumes.
    let args = [
        "--devices",
        &path_of(&first_32m),
        &path_of(&from_32m),
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ];
    run_hostmax_ok(&args);
    // And the user may ask for the overlap.
    let mut allowed = vec!["--allow-overlap", "--devices"];
    let (a, b) = (path_of(&whole), path_of(&same));
    allowed.extend([a.as_str(), b.as_str(), "--runtime", "1s", "--ramp", "0s"]);
    run_hostmax_ok(&allowed);
}

#[test]
fn an_image_mounted_in_another_mount_namespace_is_not_written() {
    require_root!();
    let dir = ScratchDir::new("same-media-netns");
    let image = dir.file("fs.img", 64 * MIB);
    let image_name = image.display().to_string();
    let mounted = attach(&image, 0, 0);
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &path_of(&mounted)]);
    let mnt = dir.join("mnt");
    fs::create_dir_all(&mnt).unwrap();
    // Mounted only inside a namespace of its own: this process's mount table never shows it.
    let _holder = Helper::start(
        &["--mount", "--propagation", "private"],
        &format!(
            "mount {} {} && echo ready && exec sleep 120",
            path_of(&mounted),
            mnt.display()
        ),
    );
    let other = attach(&image, 0, 0);
    let before = kernel_completions(other.kernel_name()).1;
    for target in [path_of(&other), image_name.clone()] {
        let user = format!("{}, mounted at {}", path_of(&mounted), mnt.display());
        let said = assert_shared(&target, &user, &image_name);
        assert!(said.contains("(in the mount namespace of pid"), "{said}");
    }
    assert_eq!(kernel_completions(other.kernel_name()).1, before);
}

#[test]
fn a_lazily_unmounted_filesystem_still_open_keeps_its_image_in_use() {
    require_root!();
    let dir = ScratchDir::new("same-media-lazy");
    let image = dir.file("fs.img", 64 * MIB);
    let image_name = image.display().to_string();
    let mounted = attach(&image, 0, 0);
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &path_of(&mounted)]);
    let mount = Mount::new(&path_of(&mounted), &dir.join("mnt"), &[]);
    fs::write(mount.0.join("held"), "data").unwrap();
    let _holder = Helper::start(
        &[],
        &format!(
            "exec 3<{}; echo ready; exec sleep 120",
            mount.0.join("held").display()
        ),
    );
    let status = Command::new("umount")
        .arg("-l")
        .arg(&mount.0)
        .status()
        .unwrap();
    assert!(status.success());
    // Gone from every mount table, still alive: its device is claimed.
    assert_shared(
        &image_name,
        &format!("{}, claimed", path_of(&mounted)),
        &image_name,
    );
}

#[test]
fn an_image_whose_name_ends_in_a_space_is_still_known_by_its_inode() {
    require_root!();
    let dir = ScratchDir::new("same-media-space");
    // sysfs trims the backing file's name: "fs.img " shows as "fs.img", which does not exist.
    let image = dir.file("fs.img ", 64 * MIB);
    let image_name = image.display().to_string();
    let mounted = attach(&image, 0, 0);
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &path_of(&mounted)]);
    let _mount = Mount::new(&path_of(&mounted), &dir.join("mnt"), &[]);
    let user = format!("{}, mounted at", path_of(&mounted));
    assert_shared(&image_name, &user, "fs.img");
    let other = attach(&image, 0, 0);
    assert_shared(&path_of(&other), &user, "fs.img");
}

#[test]
fn a_loop_device_open_for_writing_by_another_process_keeps_its_file_in_use() {
    require_root!();
    let dir = ScratchDir::new("same-media-writer");
    let image = dir.file("disk.img", 64 * MIB);
    let image_name = image.display().to_string();
    let used = Losetup::attach("--find", &image);
    // The targets: the file itself, and a loop device over it (buffered: what every kernel
    // here writes, where tmpfs takes no O_DIRECT before Linux 6.6).
    let target = attach(&image, 0, 0);
    // A program (a VM, dd) writing through another loop device over the file.
    let _writer = Helper::start(
        &[],
        &format!("exec 3<>{}; echo ready; exec sleep 120", used.0),
    );
    for name in [image_name.clone(), path_of(&target)] {
        let args = write_args(&name, &["--allow-write", "--force"]);
        let out = run_hostmax(&args, None);
        let writer = format!("(sleep), which has {} open for writing", used.0);
        assert_refused(&args, &out, &["pid ", &writer, "no flag overrides"]);
    }
    // Open only for reading (udev's probe, blkid): not in use.
    drop(_writer);
    let _reader = Helper::start(
        &[],
        &format!("exec 3<{}; echo ready; exec sleep 120", used.0),
    );
    let args = write_args(&path_of(&target), &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_device_another_process_writes_is_not_written() {
    require_root!();
    let dir = ScratchDir::new("same-media-device-writer");
    let image = dir.file("disk.img", 32 * MIB);
    // A VM's raw disk: a block device another program holds open for writing (qemu opens one
    // without O_EXCL, so no claim shows it). Set up by losetup: this test holds no descriptor.
    let disk = Losetup::attach("--find", &image);
    let kernel_name = disk.0.trim_start_matches("/dev/").to_string();
    let vm = Helper::start(
        &[],
        &format!("exec 3<>{}; echo ready; exec sleep 120", disk.0),
    );
    vm.wait_for_comm("sleep");
    let before = kernel_completions(&kernel_name).1;
    let named = format!(
        "pid {} (sleep), which has {} open for writing",
        vm.pid(),
        disk.0
    );
    let image_name = image.display().to_string();
    // The device itself, and its file by any name.
    assert_shared(&disk.0, &named, &image_name);
    assert_shared(&image_name, &named, &image_name);
    assert_eq!(
        kernel_completions(&kernel_name).1,
        before,
        "the VM's disk was written"
    );
    // Only read by it: the user's consent decides.
    drop(vm);
    let _reader = Helper::start(
        &[],
        &format!("exec 3<{}; echo ready; exec sleep 120", disk.0),
    );
    let args = write_args(&disk.0, &["--allow-write"]);
    run_hostmax_ok(&args);
    assert!(kernel_completions(&kernel_name).1 > before);
}

/// A file of `size` bytes of data (no signature: someone's image or database) in `dir`.
fn data_file(dir: &ScratchDir, name: &str, size: u64) -> PathBuf {
    let path = dir.join(name);
    let bytes: Vec<u8> = (0..size as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 1)
        .collect();
    fs::write(&path, bytes).unwrap();
    path
}

impl Helper {
    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Waits until the helper's `comm` is `name` (its script's last `exec` happened).
    fn wait_for_comm(&self, name: &str) {
        let path = format!("/proc/{}/comm", self.pid());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while fs::read_to_string(&path).unwrap_or_default().trim() != name {
            assert!(
                std::time::Instant::now() < deadline,
                "{path} never became {name}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

#[test]
fn a_file_another_process_writes_is_not_written_by_any_name() {
    require_root!();
    let dir = ScratchDir::new("same-media-file-writer");
    let image = data_file(&dir, "vm.img", 32 * MIB);
    let image_name = image.display().to_string();
    // Three ways to the same inode: its name, a hard link, a loop device over it.
    let alias = dir.join("alias.img");
    fs::hard_link(&image, &alias).unwrap();
    // (Set up by losetup: this test holds no descriptor of it, which would be a writer too.)
    let target = Losetup::attach("--find", &image);
    let kernel_name = target.0.trim_start_matches("/dev/").to_string();
    let sum = md5(&image);
    let before = kernel_completions(&kernel_name).1;
    // A VM's raw disk (O_RDWR), a log or journal appended to (O_WRONLY | O_APPEND).
    for redirect in ["<>", ">>"] {
        let writer = Helper::start(
            &[],
            &format!("exec 3{redirect}{image_name}; echo ready; exec sleep 120"),
        );
        writer.wait_for_comm("sleep");
        let named = format!(
            "pid {} (sleep), which has {image_name} open for writing",
            writer.pid()
        );
        for name in [
            image_name.clone(),
            alias.display().to_string(),
            target.0.clone(),
        ] {
            assert_shared(&name, &named, &name_of_medium(&name, &image_name));
        }
    }
    assert_eq!(md5(&image), sum, "the image was written");
    assert_eq!(kernel_completions(&kernel_name).1, before);
    // Only read (a backup, md5sum): not a writer, so the user's consent decides.
    let _reader = Helper::start(
        &[],
        &format!("exec 3<{image_name}; echo ready; exec sleep 120"),
    );
    let args = write_args(&image_name, &["--allow-write"]);
    run_hostmax_ok(&args);
    assert_ne!(md5(&image), sum, "consent given, nothing written");
}

/// The medium a refusal names for target `name` over the file `image`: a loop device's backing
/// file, else the target's own path.
fn name_of_medium(name: &str, image: &str) -> String {
    if name.starts_with("/dev/loop") {
        image.to_string()
    } else {
        name.to_string()
    }
}

#[test]
fn a_file_another_process_maps_shared_and_writable_is_not_written_where_mapped() {
    require_root!();
    let python = match require_tool("python3", "python3-minimal") {
        Ok(p) => p,
        Err(why) => skip!("{why}"),
    };
    let dir = ScratchDir::new("same-media-mapped");
    let image = data_file(&dir, "db.img", 32 * MIB);
    let image_name = image.display().to_string();
    // A database's way: map the first MiB shared and writable, then close the descriptor, so
    // only the mapping (no descriptor) shows the process writing.
    let script = dir.join("map.py");
    fs::write(
        &script,
        // libc's mmap through ctypes: Python's own mmap module keeps a descriptor.
        "import ctypes, os, sys, time\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         libc.mmap.restype = ctypes.c_void_p\n\
         libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, \
         ctypes.c_int, ctypes.c_long]\n\
         fd = os.open(sys.argv[1], os.O_RDWR)\n\
         PROT_READ_WRITE, MAP_SHARED = 3, 1\n\
         addr = libc.mmap(None, 1 << 20, PROT_READ_WRITE, MAP_SHARED, fd, 0)\n\
         assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()\n\
         os.close(fd)\n\
         print('ready', flush=True)\n\
         time.sleep(120)\n",
    )
    .unwrap();
    let mapper = Helper::start(
        &[],
        &format!(
            "exec {} {} {image_name}",
            python.display(),
            script.display()
        ),
    );
    let sum = md5(&image);
    let named = format!(
        "pid {} (python3), which maps {image_name} shared and writable",
        mapper.pid()
    );
    assert_shared(&image_name, &named, &image_name);
    let head = attach(&image, 0, 2 * MIB);
    assert_shared(&path_of(&head), &named, &image_name);
    assert_eq!(md5(&image), sum, "the mapped file was written");
    // Past the mapped MiB the file is apart from the mapping.
    let beside = attach(&image, 2 * MIB, 0);
    let before = kernel_completions(beside.kernel_name()).1;
    let args = write_args(&path_of(&beside), &["--allow-write"]);
    run_hostmax_ok(&args);
    assert!(kernel_completions(beside.kernel_name()).1 > before);
}

/// Runs a write of `target` (with both flags) that waits for `--start-at +4s`, calls
/// `meanwhile` once the run is checked, holds its targets and waits, and asserts the run was
/// then refused (exit 2). Gives back what the run said after its first line, and what
/// `meanwhile` returned (kept alive until the run ended).
fn refused_after_the_wait<T>(target: &str, meanwhile: impl FnOnce() -> T) -> (String, T) {
    use std::io::{BufRead, BufReader};
    let mut args = write_args(target, &["--allow-write", "--force"]);
    args.extend(["--start-at".to_string(), "+4s".to_string()]);
    let mut child = Command::new(hostmax_bin())
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("starting at"), "{line}");
    let kept = meanwhile();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{line}{rest}");
    (rest, kept)
}

#[test]
fn a_writer_that_opens_the_file_while_the_run_waits_to_start_is_refused_before_any_write() {
    require_root!();
    let dir = ScratchDir::new("same-media-late-writer");
    let image = data_file(&dir, "vm.img", 32 * MIB);
    let image_name = image.display().to_string();
    let sum = md5(&image);
    // Checked and held (this process's own descriptor is no writer); now a VM opens it.
    let (said, writer) = refused_after_the_wait(&image_name, || {
        Helper::start(
            &[],
            &format!("exec 3<>{image_name}; echo ready; exec sleep 120"),
        )
    });
    assert!(
        said.contains(&format!("pid {}", writer.pid())) && said.contains("open for writing"),
        "{said}"
    );
    assert_eq!(md5(&image), sum, "written");
}

#[test]
fn a_mount_made_while_waiting_for_the_start_time_is_refused_before_any_write() {
    require_root!();
    let dir = ScratchDir::new("same-media-start-at");
    let image = dir.file("fs.img", 64 * MIB);
    let image_name = image.display().to_string();
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &image_name]);
    let target = attach(&image, 0, 0);
    let before = kernel_completions(target.kernel_name()).1;
    // Checked, held and waiting: now another name of the image gets mounted.
    let (said, (other, mount)) = refused_after_the_wait(&path_of(&target), || {
        let other = attach(&image, 0, 0);
        let mount = Mount::new(&path_of(&other), &dir.join("mnt"), &[]);
        (other, mount)
    });
    assert!(
        said.contains("shares its media") && said.contains(&path_of(&other)),
        "{said}"
    );
    assert_eq!(
        kernel_completions(target.kernel_name()).1,
        before,
        "written"
    );
    drop(mount);
    run_tool("fsck.ext4", "e2fsprogs", &["-n", "-f", &image_name]);
}

#[test]
fn a_signal_during_the_checks_calls_a_write_run_off_before_its_first_write() {
    use std::os::unix::fs::PermissionsExt;
    require_root!();
    let dir = ScratchDir::new("same-media-sigint");
    let image = dir.file("vol.img", 64 * MIB);
    let target = attach(&image, 0, 0);
    // A slow wipefs: the checks take seconds, and a Ctrl-C comes in the middle.
    let real = require_tool("wipefs", "util-linux").unwrap_or_else(|e| panic!("{e}"));
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("probing");
    let stub = bin.join("wipefs");
    fs::write(
        &stub,
        format!(
            "#!/bin/sh\ntouch {}\nsleep 2\nexec {} \"$@\"\n",
            marker.display(),
            real.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
    let before = kernel_completions(target.kernel_name()).1;
    let args = write_args(&path_of(&target), &["--allow-write"]);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = Command::new(hostmax_bin())
        .args(&args)
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline, "wipefs never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(
        kernel_completions(target.kernel_name()).1,
        before,
        "written after the signal: {stderr}"
    );
}

/// Why this kernel shows no GPT partitions, if it does not: its configuration
/// (`/proc/config.gz`) lacks `CONFIG_EFI_PARTITION` (this machine's own minimal kernel reads no
/// partition table at all; the kernel matrix's Debian kernels do).
fn no_gpt_partitions() -> Option<String> {
    let out = Command::new("zcat").arg("/proc/config.gz").output().ok()?;
    let config = String::from_utf8_lossy(&out.stdout);
    (out.status.success() && !config.contains("CONFIG_EFI_PARTITION=y")).then(|| {
        "this kernel reads no GPT partition table (no CONFIG_EFI_PARTITION in /proc/config.gz); the kernel matrix's VMs run it (bash tests/kernels/run.sh)".to_string()
    })
}

/// A loop device set up by `losetup --partscan` (the kernel then shows its partitions), detached
/// on drop.
struct PartitionedLoop(String);

impl PartitionedLoop {
    fn attach(file: &Path) -> PartitionedLoop {
        let out = tool_command("losetup", "util-linux")
            .args(["--partscan", "--find", "--show"])
            .arg(file)
            .output()
            .expect("run losetup");
        assert!(
            out.status.success(),
            "losetup --partscan: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PartitionedLoop(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The node of partition `n` (`/dev/loop3p1`), once udev-less devtmpfs shows it.
    fn partition(&self, n: u32) -> String {
        let node = format!("{}p{n}", self.0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !Path::new(&node).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "{node} never appeared"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        node
    }
}

impl Drop for PartitionedLoop {
    fn drop(&mut self) {
        let _ = tool_command("losetup", "util-linux")
            .args(["--detach", &self.0])
            .status();
    }
}

#[test]
fn a_mounted_partition_of_a_loop_device_keeps_its_whole_image_in_use() {
    require_root!();
    let dir = ScratchDir::new("same-media-partition");
    let image = dir.file("disk.img", 64 * MIB);
    // One partition from 1 MiB to 33 MiB, with ext4 on it, mounted through the partition node.
    let table = "label: gpt\nstart=2048, size=65536, type=linux\n";
    let mut sfdisk = tool_command("sfdisk", "fdisk")
        .args(["--quiet", "--no-reread", "--no-tell-kernel"])
        .arg(&image)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("run sfdisk");
    std::io::Write::write_all(&mut sfdisk.stdin.take().unwrap(), table.as_bytes()).unwrap();
    assert!(sfdisk.wait().unwrap().success(), "sfdisk");
    if let Some(why) = no_gpt_partitions() {
        skip!("{why}");
    }
    let disk = PartitionedLoop::attach(&image);
    let partition = disk.partition(1);
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &partition]);
    let _mount = Mount::new(&partition, &dir.join("mnt"), &[]);
    let image_name = image.display().to_string();
    // Another loop device over the image, the image file itself, and a loop device over just
    // the partition's range: each reaches the mounted filesystem's blocks.
    let whole = attach(&image, 0, 0);
    assert_shared(&path_of(&whole), &disk.0, &image_name);
    drop(whole);
    assert_shared(&image_name, &disk.0, &image_name);
    let part_range = attach(&image, MIB, 32 * MIB);
    assert_shared(&path_of(&part_range), &disk.0, &image_name);
    drop(part_range);
    // The partitioned device itself: its partition is mounted (and it has partitions).
    let args = write_args(&disk.0, &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["has partition", "mounted at"]);
    // Past the partition's end (from 40 MiB) too: the mount claims the whole partitioned
    // device, and a claim does not say which of its blocks are used, so all of them are.
    let beside = attach(&image, 40 * MIB, 16 * MIB);
    assert_shared(&path_of(&beside), &disk.0, &image_name);
}

/// An md array, stopped on drop.
struct MdArray(String);

impl Drop for MdArray {
    fn drop(&mut self) {
        let _ = Command::new("mdadm").args(["--stop", &self.0]).output();
    }
}

#[test]
fn an_image_in_an_md_array_is_not_written_by_any_name() {
    require_root!();
    if !Path::new("/proc/mdstat").exists() {
        let _ = Command::new("modprobe")
            .args(["-a", "md-mod", "raid1"])
            .status();
    }
    if !Path::new("/proc/mdstat").exists() {
        skip!("no md in this kernel (no /proc/mdstat; it is in the kernel matrix's VMs: bash tests/kernels/run.sh)");
    }
    let mdadm = require_tool("mdadm", "mdadm").unwrap_or_else(|e| panic!("{e}"));
    let dir = ScratchDir::new("same-media-md");
    let (a, b) = (dir.file("a.img", 48 * MIB), dir.file("b.img", 48 * MIB));
    let (la, lb) = (attach(&a, 0, 0), attach(&b, 0, 0));
    let name = format!("/dev/md/hostmax-{}", std::process::id());
    let out = Command::new(&mdadm)
        .args(["--create", &name, "--run", "--level=1", "--raid-devices=2"])
        .args(["--metadata=1.2", "--assume-clean", "--homehost=any"])
        .args([path_of(&la), path_of(&lb)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mdadm --create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _array = MdArray(name.clone());
    let a_name = a.display().to_string();
    // The member itself has a holder; another loop device over its file and the file itself
    // reach the array's blocks through a device md claims.
    let args = write_args(&path_of(&la), &["--allow-write", "--force"]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["has holders"]);
    let again = attach(&a, 0, 0);
    assert_shared(&path_of(&again), &path_of(&la), &a_name);
    drop(again);
    assert_shared(&a_name, &path_of(&la), &a_name);
}
