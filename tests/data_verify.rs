//! `--verify`: a clean run finds nothing; blocks corrupted, reverted to an older version and
//! misdirected behind hostmax's back while it runs are each found, with their offsets.

mod support;

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;
const BLOCK: usize = 4096;

/// A 4 KiB-aligned buffer of `len` bytes inside `storage` (for O_DIRECT).
fn aligned(storage: &mut Vec<u8>, len: usize) -> &mut [u8] {
    storage.resize(len + BLOCK, 0);
    let skip = storage.as_ptr().align_offset(BLOCK);
    &mut storage[skip..skip + len]
}

fn open_direct(dev: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap()
}

fn read_image(dev: &str, size: u64) -> Vec<u8> {
    let mut storage = Vec::new();
    let buf = aligned(&mut storage, size as usize);
    open_direct(dev).read_exact_at(buf, 0).unwrap();
    buf.to_vec()
}

fn write_block(dev: &str, block: usize, content: &[u8]) {
    let mut storage = Vec::new();
    let buf = aligned(&mut storage, BLOCK);
    buf.copy_from_slice(content);
    open_direct(dev)
        .write_all_at(buf, (block * BLOCK) as u64)
        .unwrap();
}

/// (offset, run id) from a block's verify header.
fn header(block: &[u8]) -> (u64, u64) {
    let word = |i: usize| u64::from_le_bytes(block[i..i + 8].try_into().unwrap());
    (word(0), word(8))
}

#[test]
fn a_clean_mixed_run_checks_reads_and_reads_back_every_written_block() {
    require_root!();
    let host = volumes(2, 16 * MIB);
    let paths = volume_paths(&host);
    let mut args = vec!["--devices"];
    args.extend(paths.iter().map(String::as_str));
    args.extend([
        "--rw",
        "randrw",
        "--size",
        "2m",
        "--allow-write",
        "--verify",
        "--iodepth",
        "8",
        "--runtime",
        "2s",
        "--ramp",
        "0s",
    ]);
    let report = run_json_stdout(&args, None);
    let host_verify = &report["verify"];
    eprintln!("{host_verify}");
    assert!(host_verify["checked_during_run"].as_u64().unwrap() > 100);
    // 512 blocks per device in the working set, nearly all written in 2 s. A block two writes
    // were in flight to at once is unknown only until a later write has it to itself: few
    // are left unknown at the end (when overlaps made a block unknown for good, a quarter of
    // them were).
    let (after, unknown) = (
        host_verify["checked_after_run"].as_u64().unwrap(),
        host_verify["unknown"].as_u64().unwrap(),
    );
    assert!(
        after > 800 && unknown < 100,
        "{after} checked, {unknown} unknown"
    );
    assert_eq!(host_verify["mismatches"], 0);
    assert!(
        report["devices"][0]["verify"]["checked_after_run"]
            .as_u64()
            .unwrap()
            > 400
    );
}

#[test]
fn corrupted_reverted_and_misdirected_blocks_are_each_found() {
    require_root!();
    let size = 64 * MIB;
    let host = volumes(1, size);
    let dev = volume_paths(&host)[0].clone();
    // An earlier run leaves its blocks everywhere: the "older version" to revert to.
    run_json_stdout(
        &[
            "--devices",
            &dev,
            "--rw",
            "write",
            "--allow-write",
            "--verify",
            "--runtime",
            "3s",
            "--ramp",
            "0s",
        ],
        None,
    );
    let before = read_image(&dev, size);
    let old_run = header(&before[..BLOCK]).1;
    assert_ne!(old_run, 0, "the first run wrote block 0");

    // A slow run: few rewrites, so the tampered blocks stay tampered until the read-back.
    let child = Command::new(hostmax_bin())
        .args([
            "--devices",
            &dev,
            "--rw",
            "randwrite",
            "--allow-write",
            "--verify",
            "--rate-iops",
            "100",
            "--iodepth",
            "4",
            "--runtime",
            "5s",
            "--ramp",
            "0s",
            "--json",
            "-",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until this run has written some blocks (sound headers of a new run id, in place).
    let started = Instant::now();
    let (now, written) = loop {
        let now = read_image(&dev, size);
        let written: Vec<usize> = now
            .chunks(BLOCK)
            .enumerate()
            .filter(|(i, b)| {
                let (offset, run) = header(b);
                run != 0 && run != old_run && offset == (*i * BLOCK) as u64
            })
            .map(|(i, _)| i)
            .collect();
        if written.len() >= 40 {
            break (now, written);
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the run wrote nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let block = |i: usize| &now[i * BLOCK..(i + 1) * BLOCK];
    let reverted = *written
        .iter()
        .find(|&&i| header(&before[i * BLOCK..(i + 1) * BLOCK]) == ((i * BLOCK) as u64, old_run))
        .expect("a block both runs wrote");
    let others: Vec<usize> = written.iter().copied().filter(|&i| i != reverted).collect();
    let (corrupted, misdirected, source) = (others[0], others[1], others[2]);
    let mut bad = block(corrupted).to_vec();
    bad[2000] ^= 0x40;
    write_block(&dev, corrupted, &bad);
    write_block(
        &dev,
        reverted,
        &before[reverted * BLOCK..(reverted + 1) * BLOCK],
    );
    write_block(&dev, misdirected, block(source));
    let tampered_with = [
        (corrupted, bad.clone(), "corruption"),
        (
            reverted,
            before[reverted * BLOCK..(reverted + 1) * BLOCK].to_vec(),
            "lost_write",
        ),
        (misdirected, block(source).to_vec(), "misdirected"),
    ];

    let out = child.wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    let found = report["devices"][0]["verify"]["first"]
        .as_array()
        .unwrap()
        .clone();
    let after = read_image(&dev, size);
    let mut expected = 0;
    for (i, content, kind) in &tampered_with {
        // hostmax may have rewritten the block after we did (rarely, at 100 writes a second
        // over 16384 blocks): then there is nothing to find.
        if after[i * BLOCK..(i + 1) * BLOCK] != content[..] {
            eprintln!("block {i} was rewritten by the run after it was tampered with");
            continue;
        }
        expected += 1;
        let offset = (i * BLOCK) as u64;
        assert!(
            found
                .iter()
                .any(|m| m["offset"] == offset && m["kind"] == *kind),
            "{kind} at offset {offset} not found: {found:?}"
        );
        assert!(stderr.contains(&format!("at offset {offset}")), "{stderr}");
    }
    assert!(expected >= 2, "too many tampered blocks were rewritten");
    assert_eq!(
        report["verify"]["mismatches"].as_u64(),
        Some(expected),
        "{found:?}"
    );
    assert_eq!(out.status.code(), Some(5), "{stderr}");
}
