//! What written blocks carry: by default every block is unique (across blocks, devices, hosts
//! and runs) and incompressible, so storage that compresses or deduplicates cannot flatter a
//! write figure; [`WriteData::compress_percent`] and [`WriteData::dedupe_percent`] (fio's
//! `buffer_compress_percentage` and `dedupe_percentage`) make a chosen share compressible or
//! repeated.
//!
//! Rewriting every byte of every write costs as much CPU as a loop volume's I/O itself, so
//! each device gets a pool of random blocks (made once, at setup, seeded by the run's random
//! id: [`WRITE_POOL_BYTES`]), a write takes the pool block its device block number selects
//! (modulo the pool; the next free one when a write in flight holds it), and
//! [`BlockMaker::stamp_unique`] puts a fresh word at the start of each 4 KiB of it
//! ([`STAMP_SPACING`]): every block written is unique and random, every 4 KiB of the device
//! at any 512-byte alignment (the smallest unit storage deduplicates) holds a fresh word, and
//! blocks side by side on the device (a compressor's window, a storage chunk) come from
//! different pool blocks.
//!
//! One stamp per 4 KiB, not fio's one per 512 bytes: each stamp costs a cache line that the
//! device's copy (a loop volume's memcpy on another core) last read: eight a block cost about
//! 5% of the IOPS of 4k randwrite on 20 loop volumes against one (the repository's
//! benches/README.md, "What unique data, `--verify` and the engine cost").

use serde::{Deserialize, Serialize};

use crate::mismatch::{MismatchKind, VerifyMismatch};

/// One step of SplitMix64: a fast, well-mixed 64-bit generator (the write data's, and the
/// seeds of the worker's streams).
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One step of wyrand (Wang Yi's generator, as the fastrand crate uses it): as well mixed
/// for offsets as [`splitmix64`] with one wide multiply instead of two, which counts on a
/// path that draws an offset for every I/O (the worker's offsets).
#[inline]
pub(crate) fn wyrand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = u128::from(*state) * u128::from(*state ^ 0xe703_7ed1_a0b4_28db);
    (t >> 64) as u64 ^ t as u64
}

/// Granule of [`WriteData::compress_percent`] (fio's default `buffer_compress_chunk`): in each
/// chunk of this many bytes the first part is random and the rest zeros.
pub const COMPRESS_CHUNK: usize = 512;

/// What written blocks contain. The default is what storage cannot flatter: every block
/// unique and incompressible (0% compressible, 0% repeated), without verification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteData {
    /// Verify written data: every written block carries a header and a checksum, reads of
    /// blocks this run wrote are checked, and every written block is read back and checked
    /// after the run.
    #[serde(default)]
    pub verify: bool,
    /// Percent of every block a compressor can remove (fio's `buffer_compress_percentage`):
    /// each 512-byte chunk ends in that share of zeros. 0 is incompressible.
    pub compress_percent: u8,
    /// Percent of written blocks that repeat an earlier block of the same device byte for
    /// byte (fio's `dedupe_percentage`). 0 makes every block unique.
    pub dedupe_percent: u8,
}

with_setters!(WriteData {
    with_verify => verify: bool,
    with_compress_percent => compress_percent: u8,
    with_dedupe_percent => dedupe_percent: u8,
});

impl WriteData {
    /// Random bytes at the start of each [`COMPRESS_CHUNK`]; the rest of the chunk is zeros.
    pub fn random_bytes_per_chunk(&self) -> usize {
        let random = COMPRESS_CHUNK * (100 - usize::from(self.compress_percent.min(100))) / 100;
        random / 8 * 8
    }
}

/// Bytes between two stamps of unique data (a smaller block gets one, at its start): every
/// 4 KiB stretch of the device, at any 512-byte alignment, holds a stamp, so deduplication in
/// units of 4 KiB or more (what arrays use; Pure's at 512-byte alignment too) finds nothing.
pub const STAMP_SPACING: usize = 4096;

/// Bytes of the verify header ([`WriteData::verify`]) at the start of every written block:
/// offset, run id, generation, device index, checksum.
pub(crate) const VERIFY_HEADER: usize = 32;

/// Generation tags a block's verify state cycles through (1..=253); 0 is "not written in this
/// run", [`STATE_UNKNOWN`] and [`STATE_WRITING`] the other two states of its one byte.
const TAGS: u64 = 253;
/// A block whose content cannot be predicted (a write failed, or two overlapped): not checked.
pub(crate) const STATE_UNKNOWN: u8 = 254;
/// A block with a write in flight: reads of it are not checked.
pub(crate) const STATE_WRITING: u8 = 255;

/// The one-byte tag of write generation `generation` (1-based).
#[inline]
pub(crate) fn generation_tag(generation: u64) -> u8 {
    (generation % TAGS + 1) as u8
}

/// Who wrote a block: what its verify header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockIdentity {
    pub offset: u64,
    pub run_id: u64,
    pub generation: u64,
    pub device: u32,
}

/// CRC-32C (Castagnoli, the checksum storage stacks use: iSCSI, ext4, btrfs; SSE 4.2 has an
/// instruction for it) of the whole block but its own 4 bytes.
fn checksum(block: &[u8]) -> u32 {
    let head = crc32c::crc32c(&block[..VERIFY_HEADER - 4]);
    crc32c::crc32c_append(head, &block[VERIFY_HEADER..])
}

/// Writes the verify header of `id` into `block` and its checksum over the whole block.
pub(crate) fn stamp(block: &mut [u8], id: BlockIdentity) {
    block[0..8].copy_from_slice(&id.offset.to_le_bytes());
    block[8..16].copy_from_slice(&id.run_id.to_le_bytes());
    block[16..24].copy_from_slice(&id.generation.to_le_bytes());
    block[24..28].copy_from_slice(&id.device.to_le_bytes());
    let sum = checksum(block);
    block[28..32].copy_from_slice(&sum.to_le_bytes());
}

/// Checks a block read back at `expected.offset` against what this run last wrote there
/// (generation tag `tag`); `None` when it is right.
pub(crate) fn check(block: &[u8], expected: BlockIdentity, tag: u8) -> Option<VerifyMismatch> {
    let word = |r: std::ops::Range<usize>| {
        let mut b = [0u8; 8];
        b[..r.len()].copy_from_slice(&block[r]);
        u64::from_le_bytes(b)
    };
    let found = BlockIdentity {
        offset: word(0..8),
        run_id: word(8..16),
        generation: word(16..24),
        device: word(24..28) as u32,
    };
    let sound = word(28..32) as u32 == checksum(block);
    let kind = if !sound {
        if block.iter().all(|&b| b == 0) {
            MismatchKind::LostWrite
        } else {
            MismatchKind::Corruption
        }
    } else if found.run_id == expected.run_id
        && (found.offset != expected.offset || found.device != expected.device)
    {
        MismatchKind::Misdirected
    } else if found.run_id != expected.run_id || generation_tag(found.generation) != tag {
        MismatchKind::LostWrite
    } else {
        return None;
    };
    Some(VerifyMismatch {
        offset: expected.offset,
        kind,
        during_run: false,
        expected_tag: tag,
        found_offset: found.offset,
        found_tag: if sound {
            generation_tag(found.generation)
        } else {
            0
        },
        found_this_run: sound && found.run_id == expected.run_id,
    })
}

/// Bytes of write pool each device gets (at least 1.5 x `iodepth` blocks): more than a compressor's
/// window (deflate: 32 KiB) or an array's compression chunk (4-128 KiB), so that blocks side by
/// side never share a pool block, and small enough to stay in cache (benches/README.md has the
/// measurement: 4 MiB a device cost 4-5% of IOPS more).
pub const WRITE_POOL_BYTES: usize = 256 << 10;

/// Makes one device's write data; see the module overview. Public for the benches.
#[derive(Debug, Clone)]
pub struct BlockMaker {
    random_per_chunk: usize,
    key_state: u64,
    dedupe_state: u64,
    dedupe_percent: u8,
    pool_seed: u64,
}

impl BlockMaker {
    /// The maker of device number `device` in the run with random id `run_id`.
    pub fn new(data: WriteData, run_id: u64, device: usize) -> BlockMaker {
        let mut base = run_id ^ (device as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93);
        let key_state = splitmix64(&mut base);
        let dedupe_state = splitmix64(&mut base);
        BlockMaker {
            random_per_chunk: data.random_bytes_per_chunk(),
            key_state,
            dedupe_state,
            dedupe_percent: data.dedupe_percent.min(100),
            pool_seed: splitmix64(&mut base),
        }
    }

    /// Blocks in a device's write pool for this block size and depth; the region holds one
    /// more, the block every duplicate write carries. At least half again the depth, so that
    /// at most two in three are ever in flight and a busy block's neighbours are soon free.
    pub fn pool_blocks(block_size: usize, iodepth: usize) -> usize {
        (WRITE_POOL_BYTES / block_size.max(1)).max(iodepth + iodepth.div_ceil(2))
    }

    /// Fills a device's pool region (`pool_blocks + 1` blocks): random bytes at the start of
    /// every [`COMPRESS_CHUNK`], zeros in the rest.
    pub fn fill_pool(&self, pool: &mut [u8]) {
        let mut state = self.pool_seed;
        for chunk in pool.chunks_mut(COMPRESS_CHUNK) {
            let (random, zeros) = chunk.split_at_mut(self.random_per_chunk.min(chunk.len()));
            for word in random.chunks_mut(8) {
                let v = splitmix64(&mut state).to_le_bytes();
                word.copy_from_slice(&v[..word.len()]);
            }
            zeros.fill(0);
        }
    }

    /// The next write's key: `Some` for a unique block, `None` for one of the share of
    /// writes `dedupe_percent` asks to repeat the device's duplicate block.
    #[inline]
    pub fn next_key(&mut self) -> Option<u64> {
        let key = splitmix64(&mut self.key_state);
        if self.dedupe_percent > 0
            && splitmix64(&mut self.dedupe_state) % 100 < u64::from(self.dedupe_percent)
        {
            return None;
        }
        Some(key)
    }

    /// Makes a pool block unique for one write: a word derived from `key` at the start of
    /// every [`STAMP_SPACING`] bytes, distinct per stamp so the block holds no repeated word
    /// a compressor could use. A few stores instead of a pass over the block: rewriting every
    /// byte of each write cost 20% of the IOPS on loop volumes (benches/data_cost.sh). With no
    /// random part ([`WriteData::compress_percent`] 100) the block stays zeros, as fio's does.
    #[inline]
    pub fn stamp_unique(&self, block: &mut [u8], key: u64) {
        if self.random_per_chunk < 8 {
            return;
        }
        let mut state = key;
        for start in (0..block.len()).step_by(STAMP_SPACING) {
            block[start..start + 8].copy_from_slice(&splitmix64(&mut state).to_le_bytes());
        }
    }
}

/// A random 64-bit id for one run, from the standard library's OS-seeded hasher keys mixed
/// with the time and the process id: distinct across runs and hosts.
pub(crate) fn random_run_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pool block 0 of `maker`'s device, made unique with `key`.
    fn block(maker: &BlockMaker, key: u64) -> Vec<u8> {
        let mut pool = vec![0u8; 2 * 4096];
        maker.fill_pool(&mut pool);
        pool.truncate(4096);
        maker.stamp_unique(&mut pool, key);
        pool
    }

    #[test]
    fn stamping_changes_the_first_word_of_every_4_kib_only() {
        let m = BlockMaker::new(WriteData::default(), 7, 0);
        let mut pool = vec![0u8; 3 * 8192];
        m.fill_pool(&mut pool);
        let (mut a, mut b) = (pool[..8192].to_vec(), pool[..8192].to_vec());
        m.stamp_unique(&mut a, 0x1234);
        m.stamp_unique(&mut b, 0xabcd_ef01);
        for (sa, sb) in a.chunks(STAMP_SPACING).zip(b.chunks(STAMP_SPACING)) {
            assert_ne!(sa[..8], sb[..8]);
            assert_eq!(sa[8..], sb[8..]);
        }
        // Distinct words in one block: nothing repeated for a compressor.
        assert_ne!(a[..8], a[STAMP_SPACING..STAMP_SPACING + 8]);
        // A block smaller than the spacing gets its stamp too.
        let mut small = pool[..512].to_vec();
        m.stamp_unique(&mut small, 0x1234);
        assert_ne!(small[..8], pool[..8]);
        assert_eq!(small[8..], pool[8..512]);
    }

    #[test]
    fn pools_hold_enough_blocks_for_every_write_in_flight() {
        assert_eq!(BlockMaker::pool_blocks(4096, 32), 64);
        assert_eq!(BlockMaker::pool_blocks(4096, 128), 192);
        assert_eq!(BlockMaker::pool_blocks(1 << 20, 32), 48);
        assert_eq!(BlockMaker::pool_blocks(1 << 20, 1), 2);
    }

    #[test]
    fn devices_and_runs_start_from_different_blocks() {
        let a = block(&BlockMaker::new(WriteData::default(), 1, 0), 0);
        let b = block(&BlockMaker::new(WriteData::default(), 1, 1), 0);
        let c = block(&BlockMaker::new(WriteData::default(), 2, 0), 0);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn compress_percentage_leaves_that_share_of_each_chunk_zero() {
        let data = WriteData {
            compress_percent: 50,
            dedupe_percent: 0,
            verify: false,
        };
        assert_eq!(data.random_bytes_per_chunk(), 256);
        let m = BlockMaker::new(data, 3, 0);
        let b = block(&m, 0x55aa);
        for chunk in b.chunks(COMPRESS_CHUNK) {
            assert!(chunk[256..].iter().all(|&x| x == 0));
            assert!(chunk[..256].iter().filter(|&&x| x == 0).count() < 16);
        }
        assert_eq!(
            WriteData {
                compress_percent: 100,
                dedupe_percent: 0,
                verify: false,
            }
            .random_bytes_per_chunk(),
            0
        );
    }

    #[test]
    fn dedupe_percentage_repeats_that_share_of_keys() {
        let mut m = BlockMaker::new(
            WriteData {
                compress_percent: 0,
                dedupe_percent: 30,
                verify: false,
            },
            9,
            2,
        );
        let keys: Vec<Option<u64>> = (0..100_000).map(|_| m.next_key()).collect();
        let dup = keys.iter().filter(|k| k.is_none()).count();
        assert!((29_000..31_000).contains(&dup), "{dup}");
        let mut unique = BlockMaker::new(WriteData::default(), 9, 2);
        let mut seen: Vec<u64> = (0..100_000).filter_map(|_| unique.next_key()).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 100_000);
    }

    #[test]
    fn run_ids_differ() {
        assert_ne!(random_run_id(), random_run_id());
    }

    #[test]
    fn verify_finds_and_classifies_what_went_wrong() {
        let id = |offset, generation| BlockIdentity {
            offset,
            run_id: 77,
            generation,
            device: 3,
        };
        let m = BlockMaker::new(WriteData::default(), 77, 3);
        let mut good = block(&m, 5);
        stamp(&mut good, id(8192, 10));
        let tag = generation_tag(10);
        assert_eq!(check(&good, id(8192, 10), tag), None);

        let mut corrupt = good.clone();
        corrupt[1000] ^= 1;
        assert_eq!(
            check(&corrupt, id(8192, 10), tag).map(|m| m.kind),
            Some(MismatchKind::Corruption)
        );
        let mut elsewhere = block(&m, 6);
        stamp(&mut elsewhere, id(4096, 11));
        let found = check(&elsewhere, id(8192, 10), tag).unwrap();
        assert_eq!(found.kind, MismatchKind::Misdirected);
        assert_eq!(found.found_offset, 4096);
        let mut older = block(&m, 7);
        stamp(&mut older, id(8192, 9));
        assert_eq!(
            check(&older, id(8192, 10), tag).map(|m| m.kind),
            Some(MismatchKind::LostWrite)
        );
        let mut other_run = good.clone();
        stamp(
            &mut other_run,
            BlockIdentity {
                run_id: 1,
                ..id(8192, 10)
            },
        );
        assert_eq!(
            check(&other_run, id(8192, 10), tag).map(|m| m.kind),
            Some(MismatchKind::LostWrite)
        );
        assert_eq!(
            check(&vec![0u8; 4096], id(8192, 10), tag).map(|m| m.kind),
            Some(MismatchKind::LostWrite)
        );
    }
}
