//! What a long command holds on to while it runs: its suite state directory (one process at a
//! time: a second `--resume` is refused at once, measuring nothing) and the identity of each
//! target path (a file renamed onto a target's path between two runs is refused, not written).
//! Regular files only: no root needed, and runs of a second or two.

mod support;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use support::*;

const MIB: u64 = 1 << 20;

/// The cell and round files a suite's state directory holds.
fn round_files(state: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(state.join("rounds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_second_process_on_a_locked_state_directory_is_refused_at_once() {
    let dir = ScratchDir::new("state-lock");
    let target = dir.join("t.img");
    File::create(&target).unwrap().set_len(16 * MIB).unwrap();
    let state = dir.join("suite.state");
    let mut suite = one_cell_suite(&[target.to_str().unwrap()], "1s");
    suite.extend(["--state-dir", state.to_str().unwrap()].map(String::from));
    // A checkpoint with one finished cell: the suite stopped after it.
    let out = interrupt_after(&suite, "[round 1] cell 1/", Duration::ZERO);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rounds_before = round_files(&state);
    assert_eq!(rounds_before.len(), 1, "{rounds_before:?}");

    // Another process holds the directory: take its lock as a running suite does.
    let mut lock = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(state.join("lock"))
        .unwrap();
    // SAFETY: flock takes the descriptor of `lock`, open for the rest of this test.
    let taken = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(taken, 0, "flock: {}", std::io::Error::last_os_error());
    writeln!(lock, "4242").unwrap();

    let started = Instant::now();
    let out = run_hostmax(&["suite", "--resume", state.to_str().unwrap()], None);
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(state.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("pid 4242"), "{stderr}");
    assert!(elapsed < Duration::from_secs(5), "not at once: {elapsed:?}");
    assert!(out.stdout.is_empty(), "no report shown");
    assert_eq!(round_files(&state), rounds_before, "nothing measured");
    drop(lock);
}

#[test]
fn a_file_renamed_onto_a_target_between_cells_is_not_written() {
    let dir = ScratchDir::new("target-renamed");
    let target = dir.join("f1.img");
    File::create(&target).unwrap().set_len(16 * MIB).unwrap();
    // What must never be written: a file full of data of its own, the target's size.
    let precious = dir.join("precious.img");
    let bytes: Vec<u8> = (0..16 * MIB).map(|i| (i % 251) as u8).collect();
    fs::write(&precious, &bytes).unwrap();
    let state = dir.join("suite.state");
    let args: Vec<String> = [
        "suite",
        "iops",
        "--devices",
        target.to_str().unwrap(),
        "--block-sizes",
        "4k,8k",
        "--mixes",
        "0/100",
        "--cell-time",
        "1s",
        "--ramp",
        "0s",
        "--sleep-between",
        "1s",
        "--max-rounds",
        "5",
        "--no-purge",
        "--no-precondition",
        "--state-dir",
        state.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    // The first cell is done when its line shows; the suite idles a second before the next.
    let (status, seen) = rename_during(&args, "[round 1] cell 1/", &precious, &target);
    assert_eq!(status, Some(2), "{seen}");
    let refusal = the_refusal(&seen);
    assert!(refusal.contains(target.to_str().unwrap()), "{refusal}");
    assert_eq!(refusal.matches("device:inode").count(), 2, "{refusal}");
    assert!(refusal.contains("round 1 cell"), "{refusal}");
    assert!(
        fs::read(&target).unwrap() == bytes,
        "the moved file was written"
    );
}

#[test]
fn a_sweep_step_refuses_a_target_renamed_onto_since_the_plan() {
    let dir = ScratchDir::new("sweep-renamed");
    let first = dir.join("v1.img");
    let second = dir.join("v2.img");
    for path in [&first, &second] {
        File::create(path).unwrap().set_len(16 * MIB).unwrap();
    }
    let precious = dir.join("precious.img");
    let bytes: Vec<u8> = (0..16 * MIB).map(|i| (i % 241) as u8).collect();
    fs::write(&precious, &bytes).unwrap();
    let args: Vec<String> = [
        "sweep",
        "--devices",
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "--steps",
        "1,2",
        "--rw",
        "randwrite",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
    ]
    .map(String::from)
    .to_vec();
    // Step 1 drives v1 alone; v2 is next used by step 2.
    let (status, seen) = rename_during(&args, "step 1/2", &precious, &second);
    assert_eq!(status, Some(2), "{seen}");
    let refusal = the_refusal(&seen);
    assert!(refusal.contains(second.to_str().unwrap()), "{refusal}");
    assert_eq!(refusal.matches("device:inode").count(), 2, "{refusal}");
    assert!(refusal.contains("before step2"), "{refusal}");
    assert!(
        fs::read(&second).unwrap() == bytes,
        "the moved file was written"
    );
}

/// Runs hostmax with `args`, renames `from` onto `onto` once a stderr line holds `marker`,
/// and gives back the exit code and everything the run printed on stderr.
fn rename_during(
    args: &[String],
    marker: &str,
    from: &std::path::Path,
    onto: &std::path::Path,
) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(hostmax_bin())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hostmax");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        seen += &line;
        assert!(n > 0, "the run ended before '{marker}': {seen}");
        if line.contains(marker) {
            break;
        }
    }
    fs::rename(from, onto).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    seen += &rest;
    (child.wait().unwrap().code(), seen)
}

/// The line of `seen` that refuses a target for leading elsewhere than planned.
fn the_refusal(seen: &str) -> &str {
    seen.lines()
        .find(|l| l.contains("planned on"))
        .unwrap_or_else(|| panic!("no refusal naming the change: {seen}"))
}
