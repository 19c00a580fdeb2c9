//! Where each I/O goes and what it is: a share's seeded stream of offsets and kinds.

use crate::data::{self, splitmix64};
use crate::op::{OpKind, PerOp};
use crate::Workload;

/// The offsets and op kinds of one target's I/O: uniform random block-aligned
/// offsets over the working set (or sequential, wrapping), reproducible from the seed.
#[derive(Debug, Clone)]
pub struct OffsetStream {
    /// The first block of the stream's part of the working set ([`crate::DeviceShare::blocks`]).
    first_block: u64,
    offset_state: u64,
    mix_state: u64,
    blocks: u64,
    block_size: u64,
    next_sequential: u64,
    random: bool,
    /// Each kind's share in percent ([`crate::IoPattern::op_share`]).
    share: PerOp<u8>,
    /// The one kind a pattern of a single kind issues: no draw per I/O.
    single: Option<OpKind>,
}

impl OffsetStream {
    /// The stream of target number `target` (its position in the run) under `seed`: the same
    /// seed and position give the same offsets.
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    pub fn new(workload: &Workload, working_set: u64, seed: u64, target: usize) -> OffsetStream {
        OffsetStream::for_share(
            workload,
            working_set,
            seed,
            crate::DeviceShare::new(target, 0, 1),
        )
    }

    /// The stream of one share of a target: offsets within the share's part of the working
    /// set, from a seed that mixes in the part (part 0 of 1 is [`OffsetStream::new`]'s
    /// stream), so the same seed and placement give the same offsets.
    pub fn for_share(
        workload: &Workload,
        working_set: u64,
        seed: u64,
        share: crate::DeviceShare,
    ) -> OffsetStream {
        let target = share.device;
        let part_mix = u64::from(share.part).wrapping_mul(0xe703_7ed1_a0b4_28db);
        let mut base = (seed ^ part_mix) ^ (target as u64).wrapping_mul(0xa076_1d64_78bd_642f);
        let all_blocks = (working_set / workload.block_size as u64).max(1);
        let range = share.blocks(all_blocks);
        let offset_state = splitmix64(&mut base);
        let mix_state = splitmix64(&mut base);
        let share = workload.pattern.op_share(workload.rwmixread);
        let single = share
            .iter()
            .find(|(_, &percent)| percent == 100)
            .map(|(op, _)| op);
        OffsetStream {
            first_block: range.start,
            offset_state,
            mix_state,
            blocks: (range.end - range.start).max(1),
            block_size: workload.block_size as u64,
            next_sequential: 0,
            random: workload.pattern.is_random(),
            share,
            single,
        }
    }

    /// The next byte offset.
    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        let block = if self.random {
            let r = data::wyrand(&mut self.offset_state);
            // Lemire's multiply-shift: uniform over 0..blocks without a division.
            ((r as u128 * self.blocks as u128) >> 64) as u64
        } else {
            let b = self.next_sequential;
            self.next_sequential = if b + 1 >= self.blocks { 0 } else { b + 1 };
            b
        };
        (self.first_block + block) * self.block_size
    }

    /// The kind of the next I/O (from its own stream, so offsets do not depend on the mix).
    #[inline]
    pub fn next_op(&mut self) -> OpKind {
        if let Some(op) = self.single {
            return op;
        }
        let mut draw = (splitmix64(&mut self.mix_state) % 100) as u8;
        for (op, &share) in self.share.iter() {
            if draw < share {
                return op;
            }
            draw -= share;
        }
        OpKind::Read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IoPattern;

    fn workload(pattern: IoPattern) -> Workload {
        Workload {
            pattern,
            block_size: 4096,
            ..Workload::default()
        }
    }

    #[test]
    fn same_seed_same_offsets_and_other_seed_other_offsets() {
        let w = workload(IoPattern::RandRead);
        let a: Vec<u64> = {
            let mut s = OffsetStream::new(&w, 1 << 30, 7, 0);
            (0..1000).map(|_| s.next_offset()).collect()
        };
        let b: Vec<u64> = {
            let mut s = OffsetStream::new(&w, 1 << 30, 7, 0);
            (0..1000).map(|_| s.next_offset()).collect()
        };
        let c: Vec<u64> = {
            let mut s = OffsetStream::new(&w, 1 << 30, 8, 0);
            (0..1000).map(|_| s.next_offset()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|o| o % 4096 == 0 && *o < (1 << 30)));
    }

    #[test]
    fn random_offsets_cover_the_working_set_uniformly() {
        let w = workload(IoPattern::RandRead);
        let blocks = 64u64;
        let mut s = OffsetStream::new(&w, blocks * 4096, 1, 3);
        let mut hits = vec![0u32; blocks as usize];
        for _ in 0..64_000 {
            hits[(s.next_offset() / 4096) as usize] += 1;
        }
        // 1000 expected per block; a fair generator stays well within +-20%.
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
    }

    #[test]
    fn shares_walk_their_own_part_and_reproduce() {
        let w = workload(IoPattern::Write);
        let share = |part| crate::DeviceShare::new(0, part, 2);
        let mut first = OffsetStream::for_share(&w, 5 * 4096, 1, share(0));
        let mut second = OffsetStream::for_share(&w, 5 * 4096, 1, share(1));
        let a: Vec<u64> = (0..3).map(|_| first.next_offset() / 4096).collect();
        let b: Vec<u64> = (0..4).map(|_| second.next_offset() / 4096).collect();
        assert_eq!((a, b), (vec![0, 1, 0], vec![2, 3, 4, 2]));
        let r = workload(IoPattern::RandWrite);
        let draw = |part| -> Vec<u64> {
            let mut s =
                OffsetStream::for_share(&r, 1 << 30, 7, crate::DeviceShare::new(3, part, 4));
            (0..1000).map(|_| s.next_offset()).collect()
        };
        let quarter = (1u64 << 30) / 4;
        assert!(draw(2)
            .iter()
            .all(|&o| (2 * quarter..3 * quarter).contains(&o)));
        assert_eq!(
            draw(2),
            draw(2),
            "the same seed and share give the same offsets"
        );
        // One share of one is the whole target's stream.
        let mut whole = OffsetStream::new(&r, 1 << 30, 7, 3);
        let mut one = OffsetStream::for_share(&r, 1 << 30, 7, crate::DeviceShare::new(3, 0, 1));
        assert!((0..100).all(|_| whole.next_offset() == one.next_offset()));
    }

    #[test]
    fn sequential_offsets_wrap_at_the_working_set() {
        let w = workload(IoPattern::Read);
        let mut s = OffsetStream::new(&w, 3 * 4096, 1, 0);
        let v: Vec<u64> = (0..5).map(|_| s.next_offset()).collect();
        assert_eq!(v, vec![0, 4096, 8192, 0, 4096]);
    }

    #[test]
    fn read_share_follows_rwmixread() {
        let w = Workload {
            rwmixread: 70,
            ..workload(IoPattern::RandRw)
        };
        let mut s = OffsetStream::new(&w, 1 << 20, 42, 0);
        let reads = (0..100_000).filter(|_| s.next_op() == OpKind::Read).count();
        assert!((69_000..71_000).contains(&reads), "{reads}");
        let mut r = OffsetStream::new(&workload(IoPattern::RandRead), 1 << 20, 42, 0);
        assert!((0..100).all(|_| r.next_op() == OpKind::Read));
        let mut t = OffsetStream::new(&workload(IoPattern::RandTrim), 1 << 20, 42, 0);
        assert!((0..100).all(|_| t.next_op() == OpKind::Trim));
    }
}
