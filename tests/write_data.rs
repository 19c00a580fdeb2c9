//! What hostmax writes: read the devices back after a run. By default every written block is
//! unique and incompressible and no write carries back what a read brought;
//! `--buffer-compress-percentage` and `--dedupe-percentage` make the shares asked for.

mod support;

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};

use support::*;

const MIB: u64 = 1 << 20;
const BLOCK: usize = 4096;
/// The first 8 bytes of every block before the run: this tag plus the block's index.
const PREFILL_TAG: u64 = 0xfeed_f111_0000_0000;

/// Writes every block of `dev` with its prefill tag (then zeros), so a block the run did not
/// write, and a block that got another block's old contents, can both be told.
fn prefill(dev: &str, size: u64) {
    let mut f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    let mut image = vec![0u8; size as usize];
    for (i, block) in image.chunks_mut(BLOCK).enumerate() {
        block[..8].copy_from_slice(&(PREFILL_TAG | i as u64).to_le_bytes());
    }
    f.write_all(&image).unwrap();
    f.sync_all().unwrap();
}

fn read_back(dev: &str, size: u64) -> Vec<u8> {
    let mut f = std::fs::File::open(dev).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    let mut image = vec![0u8; size as usize];
    f.read_exact(&mut image).unwrap();
    image
}

/// What the device holds after a run: blocks the run wrote, how many of them are distinct,
/// and how much deflate (default level) saves on them compressed one by one, as storage does.
struct Contents {
    written: usize,
    distinct: usize,
    /// 4 KiB stretches that start inside a written block, at a 512-byte offset other than
    /// 0, and end in the written block after it: what storage deduplicating 4 KiB units at
    /// 512-byte alignment compares.
    shifted: usize,
    shifted_distinct: usize,
    compressed_share_saved: f64,
    image_share_saved: f64,
}

fn deflated_len(data: &[u8]) -> usize {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap().len()
}

fn contents(image: &[u8]) -> Contents {
    let mut seen = HashSet::new();
    let (mut written, mut raw, mut packed) = (0usize, 0usize, 0usize);
    let mut written_image = Vec::new();
    for (i, block) in image.chunks(BLOCK).enumerate() {
        let head = u64::from_le_bytes(block[..8].try_into().unwrap());
        if head & 0xffff_ffff_0000_0000 == PREFILL_TAG {
            assert_eq!(
                head,
                PREFILL_TAG | i as u64,
                "block {i} holds block {}'s old contents: a write carried back what a read brought",
                head & 0xffff_ffff
            );
            continue;
        }
        written += 1;
        seen.insert(block.to_vec());
        raw += block.len();
        packed += deflated_len(block);
        written_image.extend_from_slice(block);
    }
    assert!(written > 0, "the run wrote nothing");
    let was_written = |i: usize| {
        let head = u64::from_le_bytes(image[i * BLOCK..i * BLOCK + 8].try_into().unwrap());
        head & 0xffff_ffff_0000_0000 != PREFILL_TAG
    };
    let mut shifted_seen = HashSet::new();
    let mut shifted = 0;
    for i in 0..image.len() / BLOCK - 1 {
        if !(was_written(i) && was_written(i + 1)) {
            continue;
        }
        for at in (512..BLOCK).step_by(512) {
            let start = i * BLOCK + at;
            // A 64-bit hash stands for the stretch: a collision among a few thousand is
            // out of reach.
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&image[start..start + BLOCK], &mut h);
            shifted_seen.insert(std::hash::Hasher::finish(&h));
            shifted += 1;
        }
    }
    Contents {
        written,
        distinct: seen.len(),
        shifted,
        shifted_distinct: shifted_seen.len(),
        compressed_share_saved: 1.0 - packed as f64 / raw as f64,
        image_share_saved: 1.0 - deflated_len(&written_image) as f64 / raw as f64,
    }
}

fn run_writes(dev: &str, size: u64, extra: &[&str]) -> Contents {
    prefill(dev, size);
    let mut args = vec![
        "--devices",
        dev,
        "--allow-write",
        "--iodepth",
        "16",
        "--runtime",
        "3s",
        "--ramp",
        "0s",
    ];
    args.extend_from_slice(extra);
    run_json_stdout(&args, None);
    contents(&read_back(dev, size))
}

#[test]
fn written_blocks_are_unique_and_incompressible_and_never_what_was_read() {
    require_root!();
    let size = 16 * MIB;
    let host = volumes(1, size);
    let dev = volume_paths(&host)[0].clone();
    // A mixed run: reads of prefilled blocks must never come back as writes elsewhere.
    let c = run_writes(&dev, size, &["--rw", "randrw"]);
    let distinct = c.distinct as f64 / c.written as f64;
    eprintln!(
        "{} blocks written, {:.3}% distinct, deflate saves {:.3}% per block and {:.3}% over the image",
        c.written,
        100.0 * distinct,
        100.0 * c.compressed_share_saved,
        100.0 * c.image_share_saved
    );
    assert!(c.written > 300, "only {} blocks written", c.written);
    assert!(distinct >= 0.99, "{:.3}% distinct", 100.0 * distinct);
    // Every 4 KiB at 512-byte alignment holds a fresh stamp, so those stretches are unique
    // too (a block side by side with itself on the device cannot happen: different pool blocks).
    let shifted = c.shifted_distinct as f64 / c.shifted as f64;
    eprintln!(
        "{} 4 KiB stretches at 512-byte offsets across written neighbours, {:.3}% distinct",
        c.shifted,
        100.0 * shifted
    );
    assert!(c.shifted > 300, "only {} shifted stretches", c.shifted);
    assert!(shifted >= 0.99, "{:.3}% distinct", 100.0 * shifted);
    assert!(c.compressed_share_saved < 0.01);
    // Blocks side by side come from different pool blocks: nothing for deflate's window.
    assert!(
        c.image_share_saved < 0.002,
        "{:.3}% saved over the image",
        100.0 * c.image_share_saved
    );
}

#[test]
fn compress_and_dedupe_percentages_give_those_shares() {
    require_root!();
    let size = 16 * MIB;
    let host = volumes(1, size);
    let dev = volume_paths(&host)[0].clone();
    let c = run_writes(
        &dev,
        size,
        &[
            "--rw",
            "randwrite",
            "--buffer-compress-percentage",
            "50",
            "--dedupe-percentage",
            "50",
        ],
    );
    let duplicated = 1.0 - c.distinct as f64 / c.written as f64;
    eprintln!(
        "{} blocks written, {:.2}% duplicates, deflate saves {:.2}% per block",
        c.written,
        100.0 * duplicated,
        100.0 * c.compressed_share_saved
    );
    // Each block's last write was a duplicate or not, 50/50: 1000 blocks put 5 points at
    // more than 3 standard deviations.
    assert!(c.written > 1000, "only {} blocks written", c.written);
    assert!((0.45..=0.55).contains(&duplicated), "{duplicated}");
    assert!(
        (0.45..=0.55).contains(&c.compressed_share_saved),
        "{}",
        c.compressed_share_saved
    );
}

/// A read run over blocks never written is said to measure nothing real; once the blocks
/// were written it is not. The report also names each worker's io_uring features and CPU use.
#[test]
fn reads_of_never_written_blocks_are_called_out() {
    require_root!();
    let size = 16 * MIB;
    let host = volumes(1, size);
    let dev = volume_paths(&host)[0].clone();
    let read = |dev: &str| {
        let all = [
            "--devices",
            dev,
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--json",
            "-",
        ];
        let out = run_hostmax(&all, None);
        assert_eq!(out.status.code(), Some(0));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (report, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (fresh, stderr) = read(&dev);
    let samples = &fresh["devices"][0]["read_samples"];
    assert!(samples["sampled"].as_u64().unwrap() > 10, "{samples}");
    assert_eq!(samples["zero"], samples["sampled"]);
    assert!(
        stderr.contains("returned zeros") && stderr.contains("--rw write"),
        "{stderr}"
    );
    let workers = fresh["load_generator"]["workers"].as_array().unwrap();
    assert!(!workers.is_empty());
    for w in workers {
        assert!(w["ring"]["fixed_buffers"].is_boolean(), "{w}");
        assert!(w["busy_share"].as_f64().unwrap() > 0.0, "{w}");
        assert!(w["system_secs"].as_f64().unwrap() > 0.0, "{w}");
    }
    assert!(stderr.contains("io_uring: "), "{stderr}");
    assert!(stderr.contains("worker CPU  devices"), "{stderr}");

    prefill(&dev, size);
    let (written, stderr) = read(&dev);
    assert_eq!(written["devices"][0]["read_samples"]["zero"], 0);
    assert!(!stderr.contains("returned zeros"), "{stderr}");
}
