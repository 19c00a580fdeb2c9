//! What written blocks carry: by default every block is unique (across blocks, devices, hosts
//! and runs) and incompressible, so storage that compresses or deduplicates cannot flatter a
//! write figure; `--buffer-compress-percentage` and `--dedupe-percentage` (fio's names and
//! meaning) make a chosen share compressible or repeated.
//!
//! Filling 4 KiB from a generator on every write would cost about as much CPU as the I/O
//! itself, so each device's write slots start as one random block `R` (made once, at setup),
//! and a write turns its slot from `R ^ k_old` into `R ^ k_new` by XOR-ing the slot's words
//! with `k_old ^ k_new`, where `k_new` is a fresh 64-bit key from a per-device stream seeded
//! by the run's random id. That is one vectorised pass over the buffer, at memory speed.
//! Two blocks of one device differ by a constant word pattern, which no block-level
//! deduplication and no LZ-family compressor can use.

use serde::{Deserialize, Serialize};

use crate::worker::splitmix64;

/// Granule of `--buffer-compress-percentage` (fio's default `buffer_compress_chunk`): in each
/// chunk of this many bytes the first part is random and the rest zeros.
pub const COMPRESS_CHUNK: usize = 512;

/// What written blocks contain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WriteData {
    /// Percent of every block a compressor can remove (fio's `buffer_compress_percentage`):
    /// each 512-byte chunk ends in that share of zeros. 0 is incompressible.
    pub compress_percent: u8,
    /// Percent of written blocks that repeat an earlier block of the same device byte for
    /// byte (fio's `dedupe_percentage`). 0 makes every block unique.
    pub dedupe_percent: u8,
}

impl WriteData {
    /// Random bytes at the start of each [`COMPRESS_CHUNK`]; the rest of the chunk is zeros.
    pub fn random_bytes_per_chunk(&self) -> usize {
        let random = COMPRESS_CHUNK * (100 - usize::from(self.compress_percent.min(100))) / 100;
        random / 8 * 8
    }
}

/// Makes one device's write buffers; see the module overview. Public for the benches.
#[derive(Debug, Clone)]
pub struct BlockMaker {
    random_per_chunk: usize,
    key_state: u64,
    dedupe_state: u64,
    dedupe_percent: u8,
    /// The key every duplicate block carries: all duplicates of a device are the same bytes.
    duplicate_key: u64,
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
            duplicate_key: splitmix64(&mut base) | 1,
        }
    }

    /// Seed of the device's base block `R` (differs per run and device).
    fn base_seed(&self) -> u64 {
        self.key_state.rotate_left(17) ^ self.duplicate_key
    }

    /// Writes the device's base block `R` into `buf` (one slot, key 0): random bytes at the
    /// start of every chunk, zeros in the rest.
    pub fn fill_base(&self, buf: &mut [u8]) {
        let mut state = self.base_seed();
        for chunk in buf.chunks_mut(COMPRESS_CHUNK) {
            let (random, zeros) = chunk.split_at_mut(self.random_per_chunk.min(chunk.len()));
            for word in random.chunks_mut(8) {
                let v = splitmix64(&mut state).to_le_bytes();
                word.copy_from_slice(&v[..word.len()]);
            }
            zeros.fill(0);
        }
    }

    /// The key of the next block written: fresh, or the duplicate key for the share of
    /// blocks `dedupe_percent` asks to repeat.
    #[inline]
    pub fn next_key(&mut self) -> u64 {
        let key = splitmix64(&mut self.key_state);
        if self.dedupe_percent > 0
            && splitmix64(&mut self.dedupe_state) % 100 < u64::from(self.dedupe_percent)
        {
            return self.duplicate_key;
        }
        key
    }

    /// Turns a slot holding `R ^ *slot_key` into `R ^ key` and remembers `key`.
    #[inline]
    pub fn rekey(&self, buf: &mut [u8], slot_key: &mut u64, key: u64) {
        let delta = *slot_key ^ key;
        *slot_key = key;
        if delta == 0 || self.random_per_chunk == 0 {
            return;
        }
        if self.random_per_chunk == COMPRESS_CHUNK {
            xor_words(buf, delta);
        } else {
            for chunk in buf.chunks_mut(COMPRESS_CHUNK) {
                let end = self.random_per_chunk.min(chunk.len());
                xor_words(&mut chunk[..end], delta);
            }
        }
    }
}

/// XORs every whole 8-byte word of `buf` with `delta` (the compiler vectorises this loop).
#[inline]
fn xor_words(buf: &mut [u8], delta: u64) {
    for word in buf.chunks_exact_mut(8) {
        let v = u64::from_ne_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]) ^ delta;
        word.copy_from_slice(&v.to_ne_bytes());
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

    fn block(maker: &BlockMaker, key: u64) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        maker.fill_base(&mut b);
        let mut k = 0;
        maker.rekey(&mut b, &mut k, key);
        b
    }

    #[test]
    fn rekeying_in_place_equals_making_the_block_afresh() {
        let m = BlockMaker::new(WriteData::default(), 7, 0);
        let mut slot = block(&m, 0);
        let mut key = 0;
        m.rekey(&mut slot, &mut key, 0x1234);
        m.rekey(&mut slot, &mut key, 0xabcd_ef01);
        assert_eq!(slot, block(&m, 0xabcd_ef01));
        assert_ne!(slot, block(&m, 0x1234));
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
                dedupe_percent: 0
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
            },
            9,
            2,
        );
        let keys: Vec<u64> = (0..100_000).map(|_| m.next_key()).collect();
        let dup = keys.iter().filter(|&&k| k == m.duplicate_key).count();
        assert!((29_000..31_000).contains(&dup), "{dup}");
        let mut unique = BlockMaker::new(WriteData::default(), 9, 2);
        let mut seen: Vec<u64> = (0..100_000).map(|_| unique.next_key()).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 100_000);
    }

    #[test]
    fn run_ids_differ() {
        assert_ne!(random_run_id(), random_run_id());
    }
}
