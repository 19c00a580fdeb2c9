//! fio's `trim` and `randtrim` (issue 10, item 4), proved against the kernel: every discard
//! hostmax counts equals the kernel's own discard counters (`/sys/block/DEV/stat` fields 12-14)
//! with no slack; the trimmed data is gone afterwards (loop devices on tmpfs and null_blk free
//! what is discarded, so it reads back as zeros) and nothing outside the working set is
//! touched; a file gets holes punched; and a trim is a write to the safety rules: it needs
//! `--allow-write`, devices in use are refused, and so is a device that takes no discards,
//! each before any I/O.

mod support;

use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::process::Output;

use nix::unistd::Whence;
use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;
const BLOCK: u64 = 4096;

/// The first 8 bytes of every block written before a trim run: this tag plus the block's
/// index, then a byte pattern: nothing a signature probe takes for a filesystem, never zero.
const PREFILL_TAG: u64 = 0x7e1a_0000_0000_0000;

fn prefilled_block(index: u64) -> Vec<u8> {
    let mut block = vec![0xa5u8; BLOCK as usize];
    block[..8].copy_from_slice(&(PREFILL_TAG | index).to_le_bytes());
    block
}

/// A 4 KiB-aligned buffer of `len` bytes inside `storage` (for O_DIRECT).
fn aligned(storage: &mut Vec<u8>, len: usize) -> &mut [u8] {
    storage.resize(len + BLOCK as usize, 0);
    let skip = storage.as_ptr().align_offset(BLOCK as usize);
    &mut storage[skip..skip + len]
}

/// Writes every block of the first `size` bytes of `dev` with [`prefilled_block`], with
/// `O_DIRECT`: the data is on the device, not in a page cache a read could be served from.
fn prefill(dev: &str, size: u64) {
    let mut storage = Vec::new();
    let image = aligned(&mut storage, size as usize);
    for (i, block) in image.chunks_mut(BLOCK as usize).enumerate() {
        block.copy_from_slice(&prefilled_block(i as u64));
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap_or_else(|e| panic!("open {dev}: {e}"));
    file.write_all_at(image, 0)
        .unwrap_or_else(|e| panic!("prefill {dev}: {e}"));
}

/// The first `size` bytes of `dev`, read with `O_DIRECT` (from the device itself).
fn read_back(dev: &str, size: u64) -> Vec<u8> {
    let mut storage = Vec::new();
    let image = aligned(&mut storage, size as usize);
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .and_then(|f| f.read_exact_at(image, 0))
        .unwrap_or_else(|e| panic!("read back {dev}: {e}"));
    image.to_vec()
}

/// How many blocks of `image` below `working_set` read as zeros, after asserting that every
/// other block still holds exactly what [`prefill`] wrote (a trim never strays outside the
/// working set, and a block it did not trim is untouched).
fn zeroed_blocks_checking_the_rest(image: &[u8], working_set: u64) -> u64 {
    let mut zeroed = 0;
    for (i, block) in image.chunks(BLOCK as usize).enumerate() {
        let inside = (i as u64) < working_set / BLOCK;
        if inside && block.iter().all(|&b| b == 0) {
            zeroed += 1;
            continue;
        }
        assert!(
            block == prefilled_block(i as u64).as_slice(),
            "block {i} ({} the working set) is neither trimmed nor as written",
            if inside { "inside" } else { "outside" }
        );
    }
    zeroed
}

/// The method a block device's trims must use on the running kernel: io_uring's
/// `BLOCK_URING_CMD_DISCARD` from Linux 6.12 on, the synchronous `BLKDISCARD` ioctl before.
fn expected_block_method() -> &'static str {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    if version >= (6, 12) {
        "uring-cmd"
    } else {
        "ioctl"
    }
}

fn count(value: &Value, what: &str) -> u64 {
    value[what]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {what} in {value}"))
}

/// Trims hostmax completed on a device or the host in all: ramp, window and drain.
fn all_trims(scope: &Value) -> u64 {
    count(&scope["ramp"], "trims")
        + count(&scope["trim"], "ios")
        + count(&scope["drained"], "trims")
}

/// `--devices PATHS...` and then the words of `options` (paths in them have no spaces).
fn run_args<P: AsRef<str>>(paths: &[P], options: &str) -> Vec<String> {
    let mut args = vec!["--devices".to_string()];
    args.extend(paths.iter().map(|p| p.as_ref().to_string()));
    args.extend(options.split_whitespace().map(String::from));
    args
}

fn assert_ok(args: &[String], out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "hostmax {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Skips the calling test unless every volume takes discards (null_blk without its `discard`
/// attribute, on an old kernel, does not).
macro_rules! require_discard {
    ($names:expr) => {
        if let Some(name) = $names.iter().find(|n| !discard_supported(n)) {
            skip!("{name} takes no discards (queue/discard_max_bytes is 0)");
        }
    };
}

/// Every discard hostmax counted, ramp, window and drain, against the kernel's own count
/// (merges included) and the sectors it discarded: equal, with no slack, for `trim` and
/// `randtrim`. The run neither reads nor writes beyond the safety probe's look at each device's
/// head and tail, reports trim latency and histograms, says its method, its `--hdr-log` holds
/// the trim intervals, and `hostmax merge` adds its trims up.
#[test]
fn trim_and_randtrim_counts_equal_the_kernels_discards() {
    require_root!();
    let host = volumes(2, 32 * MIB);
    let names = volume_kernel_names(&host);
    let paths = volume_paths(&host);
    require_discard!(names);
    let scratch = ScratchDir::new("trim-counts");
    // The kernel's own method for both patterns, then the ioctl forced on a kernel that has
    // io_uring's discard (`HOSTMAX_TRIM_METHOD=ioctl`), so both paths are counted here.
    let native = expected_block_method();
    let mut cases = vec![("randtrim", native), ("trim", native)];
    if native != "ioctl" {
        cases.push(("randtrim", "ioctl"));
    }
    let mut host_trims = Vec::new();
    for (rw, method) in cases {
        let (json, log) = (
            scratch.path(&format!("{rw}-{method}.json")),
            scratch.path(&format!("{rw}-{method}.hlog")),
        );
        let before = baseline_completions(&paths, &names);
        let discards_before: Vec<(u64, u64)> = names.iter().map(|n| kernel_discards(n)).collect();
        let args = run_args(
            &paths,
            &format!(
                "--rw {rw} --bs 4k --iodepth 16 --runtime 2s --ramp 1s --allow-write \
                 --json {json} --hdr-log {log}"
            ),
        );
        let mut command = std::process::Command::new(hostmax_bin());
        command.args(&args);
        if method != native {
            command.env("HOSTMAX_TRIM_METHOD", method);
        }
        let out = {
            let _rate = rate_test_lock();
            command.output().expect("run hostmax")
        };
        assert_ok(&args, &out);
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        for (i, name) in names.iter().enumerate() {
            let device = &report["devices"][i];
            let (discards, sectors) = kernel_discards(name);
            let (discards, sectors) = (
                discards - discards_before[i].0,
                sectors - discards_before[i].1,
            );
            let errors = count(device, "errors");
            let trims = all_trims(device);
            let (reads, writes) = kernel_completions(name);
            eprintln!(
                "{rw} ({method}) {name}: hostmax ramp {} + measured {} + drained {} + errors {errors}, kernel {discards} discards of {sectors} sectors; {} reads by the safety probe",
                device["ramp"]["trims"], device["trim"]["ios"], device["drained"]["trims"], reads - before[i].0
            );
            assert_eq!(errors, 0, "{name}: {}", device["error_detail"]);
            assert!(
                count(&device["trim"], "ios") > 100,
                "{rw} {name}: too few trims"
            );
            assert_eq!(discards, trims + errors, "{rw} {name}: discards");
            assert_eq!(sectors * 512, trims * BLOCK, "{rw} {name}: bytes discarded");
            assert_eq!(
                count(&device["trim"], "bytes"),
                count(&device["trim"], "ios") * BLOCK,
                "{name}"
            );
            // No reads or writes of its own: reads and writes counted zero, the kernel wrote
            // nothing, and read only what the write-safety probe reads before the run (a few
            // windows of each device's head and tail, by this probe and by libblkid).
            for op in ["read", "write"] {
                assert_eq!(device[op]["ios"].as_u64(), Some(0), "{rw} {name}: {op}s");
            }
            assert_eq!(
                writes, before[i].1,
                "{rw} {name}: the kernel completed writes"
            );
            assert!(
                reads - before[i].0 < 200,
                "{rw} {name}: {} reads, more than the safety probe's",
                reads - before[i].0
            );
            let latency = &device["trim"]["latency_ns"];
            assert!(
                latency["p50"].as_u64().unwrap_or(0) > 0,
                "{name}: {latency}"
            );
            assert!(
                latency["p99"].as_u64() >= latency["p50"].as_u64(),
                "{latency}"
            );
            assert_eq!(device["trim_method"], method, "{rw} {name}");
        }
        let host_scope = &report["host"];
        let device_sum: u64 = (0..names.len())
            .map(|i| count(&report["devices"][i]["trim"], "ios"))
            .sum();
        assert_eq!(count(&host_scope["trim"], "ios"), device_sum);
        assert_eq!(
            all_trims(host_scope),
            (0..names.len())
                .map(|i| all_trims(&report["devices"][i]))
                .sum::<u64>()
        );
        assert!(host_scope["trim"]["iops"].as_f64().unwrap() > 0.0);
        assert!(
            !host_scope["histograms"]["trim"]
                .as_str()
                .unwrap_or("")
                .is_empty(),
            "no host histograms.trim: {host_scope}"
        );
        // Each second has its trim figures.
        let series = report["time_series"].as_array().expect("a time series");
        assert!(!series.is_empty());
        for second in series {
            assert!(second["trim_iops"].as_f64().is_some(), "{second}");
            assert!(second["trim_p50_ns"].as_u64().is_some(), "{second}");
            assert!(second["trim_p99_ns"].as_u64().is_some(), "{second}");
            assert!(
                !second["histograms"]["trim"]
                    .as_str()
                    .unwrap_or("")
                    .is_empty(),
                "{second}"
            );
            for d in second["devices"].as_array().unwrap() {
                assert!(d["trim_iops"].as_f64().is_some(), "{d}");
            }
        }
        // The interval log: the trim intervals of each device and the host add up to the report.
        let (intervals, _) = read_interval_log(&log);
        let logged = |tag: &str| logged_ios(&intervals, tag);
        for (i, path) in paths.iter().enumerate() {
            // A device's intervals are tagged with its node's name.
            let node = Path::new(path).file_name().unwrap().to_string_lossy();
            let ios = count(&report["devices"][i]["trim"], "ios");
            assert_eq!(logged(&format!("{node}-trim")), ios, "{rw} {path}: hdr-log");
        }
        assert_eq!(logged("host-trim"), device_sum, "{rw}: hdr-log host");
        // The table shows trims, and says when they are synchronous ioctls.
        assert!(
            table.to_lowercase().contains("trim"),
            "the table shows no trims:\n{table}"
        );
        let ioctl_line = "synchronous BLKDISCARD ioctls";
        assert_eq!(table.contains(ioctl_line), method == "ioctl", "{table}");
        if rw == "randtrim" {
            host_trims.push((json, count(&host_scope["trim"], "ios")));
        }
    }
    // `hostmax merge` adds the trims of the randtrim runs (one after the other here, so the
    // overlap check is off) and keeps each device's method; a kernel without io_uring's
    // discard has one randtrim run only, nothing to merge.
    if host_trims.len() < 2 {
        return;
    }
    let merged = scratch.path("merged.json");
    let mut merge = vec!["merge".to_string()];
    merge.extend(host_trims.iter().map(|(json, _)| json.clone()));
    merge.extend(["--min-overlap", "0", "--json", &merged].map(String::from));
    assert_ok(&merge, &run_hostmax(&merge, None));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let sum: u64 = host_trims.iter().map(|(_, ios)| ios).sum();
    assert_eq!(count(&report["host"]["trim"], "ios"), sum, "merged trims");
    assert!(
        report["host"]["histograms"]["trim"].is_string(),
        "{}",
        report["host"]
    );
    for device in report["devices"].as_array().unwrap() {
        assert!(device["trim_method"].is_string(), "{device}");
    }
}

/// What was trimmed reads back as zeros, every block of the working set once `trim` has passed
/// over it; the blocks beyond the working set (and any `randtrim` did not reach) keep their
/// data to the byte.
#[test]
fn trimmed_blocks_read_back_as_zeros_and_nothing_beyond_the_working_set_changes() {
    require_root!();
    let size = 16 * MIB;
    let host = volumes(1, size);
    let names = volume_kernel_names(&host);
    require_discard!(names);
    let path = volume_paths(&host)[0].clone();
    for (rw, working_set) in [("trim", 4 * MIB), ("randtrim", 256 << 10)] {
        prefill(&path, size);
        assert_eq!(
            zeroed_blocks_checking_the_rest(&read_back(&path, size), 0),
            0
        );
        let ws = format!("{}k", working_set >> 10);
        let args = run_args(
            &[&path],
            &format!(
                "--rw {rw} --size {ws} --bs 4k --iodepth 8 --runtime 2s --ramp 0s --allow-write"
            ),
        );
        let report = {
            let _rate = rate_test_lock();
            run_json_stdout(&args, None)
        };
        let trims = all_trims(&report["devices"][0]);
        let blocks = working_set / BLOCK;
        let zeroed = zeroed_blocks_checking_the_rest(&read_back(&path, size), working_set);
        eprintln!("{rw} over {ws}: {trims} trims, {zeroed} of {blocks} blocks zeroed");
        assert!(zeroed > 0, "{rw}: {trims} trims zeroed nothing");
        // Sequential trims wrap at the end of the working set: one pass covers it. Random ones
        // cover it when there are 20 times as many as blocks (each block then missed with a
        // chance of e^-20).
        let covering = if rw == "trim" { blocks } else { 20 * blocks };
        assert!(
            trims >= covering,
            "{rw}: only {trims} trims over {blocks} blocks"
        );
        assert_eq!(
            zeroed, blocks,
            "{rw}: not every block of the working set reads as zeros"
        );
    }
}

/// A regular file: trims punch holes (`fallocate(PUNCH_HOLE | KEEP_SIZE)`): the file keeps its
/// length, gives back its blocks, reads as zeros there and has a hole where the working set
/// was; past the working set the data stays. Without `--allow-write` a file of data is refused
/// and left as it was.
#[test]
fn trim_punches_holes_in_a_file_and_needs_allow_write_for_its_data() {
    let scratch = ScratchDir::new("trim-file");
    let path = scratch.join("data.img");
    let size = 8 * MIB;
    let image: Vec<u8> = (0..size / BLOCK).flat_map(prefilled_block).collect();
    std::fs::write(&path, &image).unwrap();
    let blocks_before = std::fs::metadata(&path).unwrap().blocks();
    assert!(
        blocks_before * 512 >= size,
        "the file is sparse from the start"
    );
    let file_arg = path.display().to_string();

    let refused = run_args(&[&file_arg], "--rw trim --size 4m --runtime 1s --ramp 0s");
    assert_refused(
        &refused,
        &run_hostmax(&refused, None),
        &[&format!("{file_arg} needs --allow-write")],
    );
    assert!(
        std::fs::read(&path).unwrap() == image,
        "a refused run changed the file"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().blocks(), blocks_before);

    let mut args = refused.clone();
    args.push("--allow-write".into());
    let report = run_json_stdout(&args, None);
    let device = &report["devices"][0];
    assert_eq!(device["trim_method"], "punch-hole", "{device}");
    let trims = all_trims(device);
    assert!(trims >= 4 * MIB / BLOCK, "only {trims} trims over 4 MiB");
    assert_eq!(count(device, "errors"), 0, "{}", device["error_detail"]);
    assert!(
        device["trim"]["latency_ns"]["p50"].as_u64().unwrap_or(0) > 0,
        "{device}"
    );

    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.len(), size, "the file's length changed");
    assert!(
        (blocks_before - meta.blocks()) * 512 >= 4 * MIB,
        "{} of {blocks_before} blocks are left: no holes punched",
        meta.blocks()
    );
    let file = std::fs::File::open(&path).unwrap();
    let seek = |whence| nix::unistd::lseek(&file, 0, whence).unwrap();
    assert_eq!(seek(Whence::SeekHole), 0, "no hole at the start");
    assert_eq!(
        seek(Whence::SeekData),
        (4 * MIB) as i64,
        "data before the working set's end"
    );
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        zeroed_blocks_checking_the_rest(&after, 4 * MIB),
        4 * MIB / BLOCK,
        "the working set does not read as zeros"
    );
}

/// `mkfs.ext4 -q -F -E nodiscard DEV` (nodiscard: the test counts discards after it anyway).
fn mkfs_ext4(dev: &str) {
    let status = tool_command("mkfs.ext4", "e2fsprogs")
        .args(["-q", "-F", "-E", "nodiscard", dev])
        .status()
        .expect("run mkfs.ext4");
    assert!(status.success(), "mkfs.ext4 {dev}");
}

/// A trim is a write to the safety rules: without `--allow-write` refused; a device that
/// carries a filesystem refused (naming `--force`), one held `O_EXCL` by another program or
/// mounted refused whatever the flags; each in one line with exit 2 and not one discard.
#[test]
fn trims_follow_the_write_safety_rules() {
    require_root!();
    let host = loop_volumes(3, 32 * MIB);
    let names = volume_kernel_names(&host);
    let paths = volume_paths(&host);
    let (free, ext4, held) = (&paths[0], &paths[1], &paths[2]);
    mkfs_ext4(ext4);
    let discards_before: Vec<(u64, u64)> = names.iter().map(|n| kernel_discards(n)).collect();
    let short = "--runtime 1s --ramp 0s";

    for rw in ["trim", "randtrim"] {
        let a = run_args(&[free], &format!("--rw {rw} {short}"));
        assert_refused(
            &a,
            &run_hostmax(&a, None),
            &[&format!("{free} needs --allow-write")],
        );

        let a = run_args(&[free, ext4], &format!("--rw {rw} --allow-write {short}"));
        let msg = assert_refused(
            &a,
            &run_hostmax(&a, None),
            &[&format!(
                "{ext4} carries an ext4 filesystem (use --force to overwrite it)"
            )],
        );
        assert!(!msg.contains(free.as_str()), "{msg}");
    }

    let claim = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(held)
        .expect("claim the device");
    let a = run_args(
        &[held],
        &format!("--rw randtrim --allow-write --force {short}"),
    );
    let msg = assert_refused(&a, &run_hostmax(&a, None), &[held.as_str(), "in use"]);
    assert!(!msg.contains("use --force"), "{msg}");
    drop(claim);

    let scratch = ScratchDir::new("trim-mounted");
    let mount = Mount::new(ext4, &scratch.join("mnt"), &[]);
    let a = run_args(&[ext4], &format!("--rw trim --allow-write --force {short}"));
    assert_refused(
        &a,
        &run_hostmax(&a, None),
        &[&format!("{ext4} is mounted at")],
    );
    drop(mount);
    // Mounting and unmounting ext4 may discard nothing but may write: compare discards only.
    for (i, name) in names.iter().enumerate() {
        assert_eq!(
            kernel_discards(name),
            discards_before[i],
            "{name}: a refused run discarded"
        );
    }
}

/// A loop device over a file on ramfs takes no discards (ramfs cannot punch holes: the loop
/// driver offers discard only where its backing file can): trims on it are refused before any
/// I/O, naming it, and the device beside it that could be trimmed is not touched either.
#[test]
fn a_device_without_discard_is_refused_before_any_io() {
    require_root!();
    use hostmax_simhost::{LoopDevice, LoopOptions};
    let scratch = ScratchDir::new("trim-nodiscard");
    let ramfs = Mount::new("ramfs", &scratch.join("ramfs"), &["-t", "ramfs"]);
    let backing = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(ramfs.0.join("backing.img"))
        .unwrap();
    backing.set_len(16 * MIB).unwrap();
    // ramfs takes no O_DIRECT either: the loop device does buffered I/O to it.
    let options = LoopOptions::default().with_direct_io(false);
    // Declared after the mount: detached before it is unmounted.
    let plain = LoopDevice::attach(&backing, &options).expect("attach a loop device over ramfs");
    // The loop device holds the file now; this process must not (it would be a writer of it,
    // which refuses writing the device for that reason, not for its discard).
    drop(backing);
    let no_discard = plain.path().display().to_string();
    if discard_supported(plain.kernel_name()) {
        skip!("a loop device over ramfs takes discards on this kernel: no device without discard to test");
    }
    let host = volumes(1, 16 * MIB);
    let good = volume_paths(&host)[0].clone();
    let good_name = volume_kernel_names(&host)[0].clone();
    let before = [
        kernel_discards(plain.kernel_name()),
        kernel_discards(&good_name),
    ];
    let writes_before = kernel_completions(plain.kernel_name()).1;
    for rw in ["trim", "randtrim"] {
        let a = run_args(
            &[&good, &no_discard],
            &format!("--rw {rw} --allow-write --runtime 1s --ramp 0s"),
        );
        let msg = assert_refused(&a, &run_hostmax(&a, None), &[&no_discard, "discard"]);
        assert!(!msg.contains(good.as_str()), "{msg}");
    }
    let after = [
        kernel_discards(plain.kernel_name()),
        kernel_discards(&good_name),
    ];
    assert_eq!(after, before, "a refused run discarded");
    assert_eq!(kernel_completions(plain.kernel_name()).1, writes_before);
    // Reading it needs no discard.
    let a = run_args(&[&no_discard], "--rw randread --runtime 1s --ramp 0s");
    assert_ok(&a, &run_hostmax(&a, None));
}
