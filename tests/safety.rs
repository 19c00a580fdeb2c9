//! Write safety on real loop devices: a device that carries data (a filesystem, a partition
//! table, partitions) is refused without `--force`; a mounted device and an active swap device
//! are refused even with it; a refusal names every refused device in one line, exits 2 and
//! writes nothing (the kernel's own write counts prove it). Every mount, swap area and loop
//! device is undone in `Drop` guards, also when an assertion fails.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use hostmax_simhost::LoopDevice;
use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// The loop devices of a simulated host of `count` volumes.
fn devices(host: &SimulatedHost) -> Vec<&LoopDevice> {
    host.volumes()
        .iter()
        .map(|v| v.loop_device().expect("a loop volume"))
        .collect()
}

fn path_of(dev: &LoopDevice) -> String {
    dev.path().display().to_string()
}

fn writes(dev: &LoopDevice) -> u64 {
    kernel_completions(dev.kernel_name()).1
}

fn mkfs_ext4(dev: &LoopDevice) {
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", "-F", &path_of(dev)]);
}

fn fsck_clean(dev: &LoopDevice) {
    let out = tool_command("fsck.ext4", "e2fsprogs")
        .args(["-n", &path_of(dev)])
        .output()
        .expect("run fsck.ext4");
    assert_eq!(
        out.status.code(),
        Some(0),
        "fsck.ext4 -n {}: {}{}",
        path_of(dev),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Flushes what the tools wrote so the kernel's write counts are settled before measuring.
fn settle(dev: &LoopDevice) {
    let _ = tool_command("blockdev", "util-linux")
        .args(["--flushbufs", &path_of(dev)])
        .status();
}

/// A partition added with `addpart`, deleted on drop: a loop device without partition
/// scanning keeps added partitions after it is detached, and the next user of it would
/// inherit them.
struct AddedPartition(String);

impl AddedPartition {
    fn add(dev: &LoopDevice, start_sector: u64, sectors: u64) -> AddedPartition {
        let path = path_of(dev);
        let guard = AddedPartition(path.clone());
        run_tool(
            "addpart",
            "util-linux",
            &[&path, "1", &start_sector.to_string(), &sectors.to_string()],
        );
        guard
    }
}

impl Drop for AddedPartition {
    fn drop(&mut self) {
        let _ = tool_command("delpart", "util-linux")
            .args([&self.0, "1"])
            .status();
    }
}

fn args(devs: &[&LoopDevice], extra: &[&str]) -> Vec<String> {
    let mut v = vec!["--devices".to_string()];
    v.extend(devs.iter().map(|d| path_of(d)));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

const SHORT_WRITE: &[&str] = &["--rw", "randwrite", "--runtime", "1s", "--ramp", "0s"];

#[test]
fn an_unmounted_ext4_device_needs_force_and_stays_clean_until_then() {
    require_root!();
    let host = loop_volumes(2, 32 * MIB);
    let devs = devices(&host);
    let (ext4, free) = (devs[0], devs[1]);
    mkfs_ext4(ext4);
    settle(ext4);
    let before = (writes(ext4), writes(free));

    // With --allow-write: refused, named with its signature and the flag that overrides it;
    // the free device beside it is not named and neither device is written.
    let mut a = args(&[free, ext4], SHORT_WRITE);
    a.push("--allow-write".into());
    let msg = assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[&format!(
            "{} carries an ext4 filesystem (use --force to overwrite it)",
            path_of(ext4)
        )],
    );
    assert!(!msg.contains(&path_of(free)), "{msg}");
    // Without --allow-write both reasons and both flags are named.
    let a = args(&[ext4], SHORT_WRITE);
    assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[
            "needs --allow-write",
            "carries an ext4 filesystem (use --allow-write --force to overwrite it)",
        ],
    );
    // --force alone is bad input.
    let mut a = args(&[ext4], SHORT_WRITE);
    a.push("--force".into());
    assert_refused(&a, &run_hostmax(&a, None), &["--force needs --allow-write"]);
    // Reading it needs no flag.
    let a = args(
        &[ext4],
        &["--rw", "randread", "--runtime", "1s", "--ramp", "0s"],
    );
    let out = run_hostmax(&a, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        (writes(ext4), writes(free)),
        before,
        "a refused run wrote to a device"
    );
    fsck_clean(ext4);

    // With --force --allow-write a short write run proceeds.
    let mut a = args(&[ext4], SHORT_WRITE);
    a.extend(["--allow-write", "--force", "--json", "-"].map(String::from));
    let out = run_hostmax(&a, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let ios = report["devices"][0]["write"]["ios"].as_u64().unwrap();
    assert!(ios > 0, "no writes counted: {report}");
    let written = writes(ext4) - before.0;
    assert!(
        written >= ios,
        "the kernel completed {written} writes, hostmax counted {ios}"
    );
}

/// A GPT for 4096-byte sectors written by hand: a protective MBR and the header at LBA 1.
fn write_gpt_4k_by_hand(dev: &LoopDevice) {
    use std::os::unix::fs::FileExt;
    let mut sector0 = [0u8; 512];
    // Protective MBR entry: type 0xEE from LBA 1 over the whole disk.
    sector0[446 + 4] = 0xee;
    sector0[446 + 8..446 + 12].copy_from_slice(&1u32.to_le_bytes());
    sector0[446 + 12..446 + 16].copy_from_slice(&u32::MAX.to_le_bytes());
    sector0[510] = 0x55;
    sector0[511] = 0xaa;
    let mut header = [0u8; 92];
    header[..8].copy_from_slice(b"EFI PART");
    header[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
    header[12..16].copy_from_slice(&92u32.to_le_bytes());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dev.path())
        .unwrap();
    file.write_all_at(&sector0, 0).unwrap();
    file.write_all_at(&header, 4096).unwrap();
    file.sync_all().unwrap();
}

#[test]
fn partition_tables_and_partitions_are_refused() {
    require_root!();
    // A real GPT from sfdisk (util-linux's fdisk package) with one partition.
    let sfdisk = match require_tool("sfdisk", "fdisk") {
        Ok(path) => path,
        Err(reason) => skip!("{reason}"),
    };
    let host = loop_volumes(3, 32 * MIB);
    let devs = devices(&host);
    let (sfdisk_gpt, hand_gpt, parted) = (devs[0], devs[1], devs[2]);
    let script = "label: gpt\n,16M,L\n";
    let mut child = Command::new(&sfdisk)
        .args(["-q", "--no-reread", &path_of(sfdisk_gpt)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run sfdisk (install util-linux's fdisk package)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    // It cannot re-read the table on this kernel (no partition parsers): that part may fail.
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sfdisk: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    write_gpt_4k_by_hand(hand_gpt);
    // Partitions the kernel lists: this kernel parses no tables, so add one as partx would.
    // Declared after `host`: deleted before the loop device goes.
    let _part = AddedPartition::add(parted, 2048, 16 * MIB / 512);
    let part = format!("{}p1", path_of(parted));
    for _ in 0..100 {
        if Path::new(&part).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for d in &devs {
        settle(d);
    }
    let before: Vec<u64> = devs.iter().map(|d| writes(d)).collect();

    let mut a = args(&devs, SHORT_WRITE);
    a.push("--allow-write".into());
    let msg = assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[
            &format!(
                "{} carries a GPT partition table (512-byte sectors) (use --force to overwrite it)",
                path_of(sfdisk_gpt)
            ),
            &format!(
                "{} carries a GPT partition table (4096-byte sectors)",
                path_of(hand_gpt)
            ),
            &format!(
                "{} has partitions {}p1",
                path_of(parted),
                parted.kernel_name()
            ),
        ],
    );
    assert_eq!(msg.matches("use --force").count(), 3, "{msg}");
    let after: Vec<u64> = devs.iter().map(|d| writes(d)).collect();
    assert_eq!(after, before, "a refused run wrote to a device");
    // The table is intact.
    let out = Command::new(&sfdisk)
        .args(["--dump", &path_of(sfdisk_gpt)])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("label: gpt"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_mounted_device_is_refused_even_with_force() {
    require_root!();
    let scratch = ScratchDir::new("mounted");
    let host = loop_volumes(2, 32 * MIB);
    let devs = devices(&host);
    let (ext4, free) = (devs[0], devs[1]);
    mkfs_ext4(ext4);
    let mount = Mount::new(&path_of(ext4), &scratch.0.join("mnt"), &[]);
    settle(free);
    let before = writes(free);
    for rw in ["randwrite", "write", "randrw"] {
        let a = args(
            &[free, ext4],
            &["--rw", rw, "--allow-write", "--force", "--runtime", "1s"],
        );
        let msg = assert_refused(
            &a,
            &run_hostmax(&a, None),
            &[&format!("{} is mounted at", path_of(ext4)), "Unmount"],
        );
        // --force cannot help here, so it is not suggested.
        assert!(!msg.contains("use --force"), "{msg}");
        assert!(!msg.contains(&path_of(free)), "{msg}");
    }
    assert_eq!(writes(free), before, "the free device was written");
    drop(mount);
    fsck_clean(ext4);
}

#[test]
fn active_swap_is_refused_even_with_force() {
    require_root!();
    let host = loop_volumes(3, 32 * MIB);
    let devs = devices(&host);
    let (swap, ext4, free) = (devs[0], devs[1], devs[2]);
    mkfs_ext4(ext4);
    // Declared after `host`: swapped off before the loop devices go.
    let _swap = SwapOn::new(&path_of(swap));
    for d in &devs {
        settle(d);
    }
    let before: Vec<u64> = devs.iter().map(|d| writes(d)).collect();
    let a = args(
        &[swap, ext4, free],
        &[
            "--rw",
            "randwrite",
            "--allow-write",
            "--force",
            "--runtime",
            "1s",
        ],
    );
    let msg = assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[&format!("{} is active swap", path_of(swap))],
    );
    // With --force the ext4 device may be written: only the swap device is named.
    assert!(!msg.contains(&path_of(ext4)), "{msg}");
    assert!(!msg.contains(&path_of(free)), "{msg}");
    // Without --force: ONE line lists both refused devices, each with its reasons.
    let a = args(
        &[swap, ext4, free],
        &["--rw", "randwrite", "--allow-write", "--runtime", "1s"],
    );
    let msg = assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[
            &format!("{} is active swap and carries a swap area;", path_of(swap)),
            &format!(
                "{} carries an ext4 filesystem (use --force to overwrite it)",
                path_of(ext4)
            ),
        ],
    );
    assert!(!msg.contains(&path_of(free)), "{msg}");
    let after: Vec<u64> = devs.iter().map(|d| writes(d)).collect();
    assert_eq!(after, before, "a refused run wrote to a device");
    fsck_clean(ext4);
}

#[test]
fn the_root_device_is_refused_even_with_force() {
    // The checks alone, on this host's real state: nothing is opened for writing, so this is
    // safe against the real root disk (which a sandbox may not even let us open).
    use hostmax::error::FLAG_WORDS;
    use hostmax_device::safety::{parse_mountinfo, root_device_names};
    use hostmax_device::{
        check_write_safety, Sysfs, SystemSources, TargetInfo, TargetKind, WriteSafety,
    };
    let sysfs = Sysfs::default();
    let mounts = parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap());
    let names = root_device_names(&mounts, &sysfs);
    let Some(root) = names.first() else {
        skip!("/ is not on a block device here");
    };
    // The root device itself and everything under it (its whole disk, stacked devices).
    for name in &names {
        let dev = std::fs::read_to_string(sysfs.class_block(name).join("dev")).unwrap();
        let (major, minor) = dev.trim().split_once(':').unwrap();
        let rdev = (major.parse().unwrap(), minor.parse().unwrap());
        let target = TargetInfo::new(
            format!("/dev/{name}"),
            TargetKind::BlockDevice,
            1 << 30,
            512,
        )
        .with_device(rdev, name.clone());
        let flags = WriteSafety::new(true, true);
        let err = check_write_safety(&[target], flags, &SystemSources::default())
            .expect_err("the root device was accepted")
            .message(&FLAG_WORDS);
        assert!(err.contains("holds the root filesystem /"), "{err}");
        assert!(!err.contains("use --force"), "{err}");
        if name == root {
            assert!(err.contains("is mounted at /"), "{err}");
        }
    }
}

/// `n` bytes that are not all zero and not any signature: a file of someone's data.
fn data_bytes(n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8 | 1)
        .collect()
}

/// Asserts the exit code, showing stderr otherwise.
fn assert_exit(out: &Output, code: i32) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
}

fn file_args(path: &Path, extra: &[&str]) -> Vec<String> {
    let mut v = vec!["--devices".to_string(), path.display().to_string()];
    v.extend(SHORT_WRITE.iter().chain(extra).map(|s| s.to_string()));
    v
}

#[test]
fn a_file_of_data_survives_byte_for_byte_without_allow_write() {
    let dir = ScratchDir::new("file-data");
    let path = dir.join("data.ibd");
    let data = data_bytes(4 * MIB as usize);
    std::fs::write(&path, &data).unwrap();
    let a = file_args(&path, &[]);
    let msg = assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[&format!("{} needs --allow-write", path.display())],
    );
    assert!(msg.contains("Add --allow-write only if"), "{msg}");
    assert!(std::fs::read(&path).unwrap() == data, "the file changed");
    // A mixed workload writes too; a read-only one needs no flag and changes nothing.
    let mixed = |rw: &str| {
        let mut a = file_args(&path, &[]);
        let at = a.iter().position(|x| x == "randwrite").unwrap();
        a[at] = rw.to_string();
        a
    };
    let a = mixed("randrw");
    assert_refused(&a, &run_hostmax(&a, None), &["needs --allow-write"]);
    let a = mixed("randread");
    let out = run_hostmax(&a, None);
    assert_exit(&out, 0);
    assert!(std::fs::read(&path).unwrap() == data, "the file changed");
    // With the flag, the user's consent, it is written.
    let a = file_args(&path, &["--allow-write"]);
    let out = run_hostmax(&a, None);
    assert_exit(&out, 0);
    assert!(
        std::fs::read(&path).unwrap() != data,
        "--allow-write wrote nothing"
    );
}

#[test]
fn a_filesystem_image_file_needs_force_and_a_sparse_file_nothing() {
    let dir = ScratchDir::new("file-image");
    let image = dir.file("ext4.img", 16 * MIB);
    run_tool(
        "mkfs.ext4",
        "e2fsprogs",
        &["-q", "-F", image.to_str().unwrap()],
    );
    let before = std::fs::read(&image).unwrap();
    let a = file_args(&image, &["--allow-write"]);
    assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[&format!(
            "{} carries an ext4 filesystem (use --force to overwrite it)",
            image.display()
        )],
    );
    assert!(
        std::fs::read(&image).unwrap() == before,
        "the image changed"
    );
    let a = file_args(&image, &["--allow-write", "--force"]);
    let out = run_hostmax(&a, None);
    assert_exit(&out, 0);
    // A sparse file holds no data: nothing to lose, no flag needed.
    let sparse = dir.file("sparse.img", 8 * MIB);
    let out = run_hostmax(&file_args(&sparse, &[]), None);
    assert_exit(&out, 0);
}

#[test]
fn a_file_hostmax_creates_needs_no_flag() {
    let dir = ScratchDir::new("file-create");
    let path = dir.join("new.img");
    let a = file_args(&path, &["--size", "4m", "--json", "-"]);
    let out = run_hostmax(&a, None);
    assert_exit(&out, 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 * MIB);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    // The report says what the device is: here a file, by its inode, and its size.
    let identity = &report["devices"][0]["identity"];
    assert!(identity["inode"].is_string(), "{identity}");
    assert_eq!(identity["size"], 4 * MIB, "{identity}");
    assert!(
        report["devices"][0]["write"]["ios"].as_u64().unwrap() > 0,
        "{report}"
    );
    // Without --size a missing file is bad input that says how to have it made; nothing is made.
    let missing = dir.join("missing.img");
    let a = file_args(&missing, &[]);
    assert_refused(&a, &run_hostmax(&a, None), &["does not exist", "--size"]);
    assert!(!missing.exists());
    // A file in a directory that does not exist is refused, and no directory is made.
    let nowhere = dir.join("no-such-dir/new.img");
    let a = file_args(&nowhere, &["--size", "4m"]);
    assert_refused(&a, &run_hostmax(&a, None), &["no-such-dir", "does not"]);
    assert!(!dir.join("no-such-dir").exists());
    // Bad input found after the devices (here --size not a multiple of --bs) makes no file.
    let later = dir.join("later.img");
    let a = file_args(&later, &["--size", "4m", "--bs", "3k"]);
    let out = run_hostmax(&a, None);
    assert_exit(&out, 2);
    assert!(!later.exists(), "a refused run made a file");
}

/// A sticky, world-writable directory like `/tmp` (this test's own, owned by root) in `dir`.
fn sticky_dir(dir: &ScratchDir) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    tmp
}

/// A symbolic link at `link` to `to`, owned by `uid` (65534: nobody, as another user of a
/// shared host would plant it).
fn link_owned_by(to: &Path, link: &Path, uid: u32) {
    std::os::unix::fs::symlink(to, link).unwrap();
    std::os::unix::fs::lchown(link, Some(uid), Some(uid)).unwrap();
}

const NOBODY: u32 = 65534;

#[test]
fn another_users_link_in_a_sticky_directory_is_not_followed_to_a_device() {
    require_root!();
    let host = loop_volumes(1, 32 * MIB);
    let dev = devices(&host)[0];
    let dir = ScratchDir::new("safety-link-device");
    let tmp = sticky_dir(&dir);
    // `/tmp/x -> /dev/loopN`, and `/tmp/d -> /dev` (the device found through it), both planted
    // by another user.
    let planted = tmp.join("x");
    link_owned_by(dev.path(), &planted, NOBODY);
    link_owned_by(Path::new("/dev"), &tmp.join("d"), NOBODY);
    let through_dir = tmp.join("d").join(dev.kernel_name());
    let pattern = format!("{}/x*", tmp.display());
    settle(dev);
    let before = writes(dev);
    let rule =
        "is a symbolic link of another user (uid 65534) in the sticky world-writable directory";
    for given in [
        planted.display().to_string(),
        pattern,
        through_dir.display().to_string(),
    ] {
        let mut a = vec!["--devices".to_string(), given.clone()];
        a.extend(SHORT_WRITE.iter().map(|s| s.to_string()));
        a.extend(["--allow-write", "--force"].map(String::from));
        let msg = assert_refused(&a, &run_hostmax(&a, None), &[rule, "does not follow"]);
        assert!(msg.contains(tmp.to_str().unwrap()), "{msg}");
        assert!(!msg.contains("use --force"), "{msg}");
    }
    assert_eq!(
        writes(dev),
        before,
        "the device was written through the link"
    );
    // A link of this user (root's, also the directory's owner) there is followed: the rule
    // refuses only links another user controls.
    let own = tmp.join("mine");
    std::os::unix::fs::symlink(dev.path(), &own).unwrap();
    let mut a = vec!["--devices".to_string(), own.display().to_string()];
    a.extend(SHORT_WRITE.iter().map(|s| s.to_string()));
    a.push("--allow-write".into());
    assert_exit(&run_hostmax(&a, None), 0);
    assert!(
        writes(dev) > before,
        "the own link's device was not written"
    );
}

#[test]
fn another_users_link_in_a_sticky_directory_is_not_followed_to_a_root_owned_image() {
    require_root!();
    let dir = ScratchDir::new("safety-link-image");
    let image = dir.join("root.img");
    std::fs::write(&image, data_bytes(4 * MIB as usize)).unwrap();
    let sum = md5(&image);
    let tmp = sticky_dir(&dir);
    let planted = tmp.join("vm.img");
    link_owned_by(&image, &planted, NOBODY);
    for extra in [&[][..], &["--size", "4m"][..]] {
        let a = file_args(
            &planted,
            &[&["--allow-write", "--force"][..], extra].concat(),
        );
        assert_refused(
            &a,
            &run_hostmax(&a, None),
            &[
                &planted.display().to_string(),
                "symbolic link of another user",
            ],
        );
    }
    // `--size` makes no file through another user's link to a directory either.
    link_owned_by(&dir.join("."), &tmp.join("into"), NOBODY);
    let made = tmp.join("into/made.img");
    let a = file_args(&made, &["--size", "4m"]);
    assert_refused(
        &a,
        &run_hostmax(&a, None),
        &["symbolic link of another user"],
    );
    assert!(
        !dir.join("made.img").exists(),
        "a file was made through the link"
    );
    assert_eq!(md5(&image), sum, "the image was written through the link");
    // A link owned by root in a directory root owns (no sticky bit) is followed as ever.
    let trusted = dir.join("by-name.img");
    std::os::unix::fs::symlink(&image, &trusted).unwrap();
    let a = file_args(&trusted, &["--allow-write"]);
    assert_exit(&run_hostmax(&a, None), 0);
    assert_ne!(md5(&image), sum, "the trusted link's file was not written");
}
