//! [`TraceStats`]: what a whole trace holds, device by device, from one pass over it.

use crate::hash::FastMap;
use crate::io::{DeviceKey, TraceIo, TraceOp};

/// What a trace holds for one of its devices.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceStats {
    /// The device.
    pub key: DeviceKey,
    /// Its I/Os.
    pub ios: u64,
    /// Its I/Os of each kind, indexed by [`TraceOp::index`] (see [`DeviceStats::count`]).
    pub ops: [u64; 4],
    /// The bytes of each kind, indexed the same way.
    pub bytes: [u64; 4],
    /// The end of its furthest I/O (offset plus length): the least size a target must have
    /// for no offset to be wrapped.
    pub max_end: u64,
    /// When its first and last I/Os are due, nanoseconds after the trace's first I/O.
    pub first_ns: u64,
    /// See [`DeviceStats::first_ns`].
    pub last_ns: u64,
    /// The trailing zero bits every offset and length shares (64 while it has none).
    align_bits: u32,
}

impl DeviceStats {
    fn new(key: DeviceKey, time_ns: u64) -> DeviceStats {
        DeviceStats {
            key,
            ios: 0,
            ops: [0; 4],
            bytes: [0; 4],
            max_end: 0,
            first_ns: time_ns,
            last_ns: time_ns,
            align_bits: 64,
        }
    }

    /// Its I/Os of kind `op`.
    pub fn count(&self, op: TraceOp) -> u64 {
        self.ops[op.index()]
    }

    /// The largest power of two every offset and length of its reads, writes and trims is a
    /// multiple of (`None` when it has none): below a target's logical block size, its
    /// direct I/O cannot be replayed as it is.
    pub fn alignment(&self) -> Option<u64> {
        (self.align_bits < 64).then(|| 1u64 << self.align_bits)
    }

    fn record(&mut self, io: &TraceIo) {
        self.ios += 1;
        self.ops[io.op.index()] += 1;
        self.bytes[io.op.index()] = self.bytes[io.op.index()].saturating_add(io.len);
        if io.op.has_range() {
            self.max_end = self.max_end.max(io.end());
            self.align_bits = self.align_bits.min((io.offset | io.len).trailing_zeros());
        }
        self.first_ns = self.first_ns.min(io.time_ns);
        self.last_ns = self.last_ns.max(io.time_ns);
    }
}

/// What a whole trace holds: its I/Os by device, and how in order its times were.
/// [`TraceReader::check`](crate::TraceReader::check) makes one; [`TraceStats::record`]
/// adds I/Os from any other source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceStats {
    /// I/Os in all.
    pub ios: u64,
    /// Lines read (records, headers, file actions and blank lines), where a reader made it.
    pub lines: u64,
    /// Records earlier than one before them, made due with the latest before them.
    pub late: u64,
    /// The largest step back in time of those, in nanoseconds.
    pub max_step_back_ns: u64,
    /// When the last I/O is due, nanoseconds after the first: the trace's span.
    pub last_ns: u64,
    devices: Vec<DeviceStats>,
    index: FastMap<DeviceKey, usize>,
}

impl TraceStats {
    /// No I/Os yet.
    pub fn new() -> TraceStats {
        TraceStats::default()
    }

    /// The stats of every I/O of `ios`.
    pub fn of<'i>(ios: impl IntoIterator<Item = &'i TraceIo>) -> TraceStats {
        let mut stats = TraceStats::new();
        ios.into_iter().for_each(|io| stats.record(io));
        stats
    }

    /// Adds one I/O.
    pub fn record(&mut self, io: &TraceIo) {
        self.ios += 1;
        self.last_ns = self.last_ns.max(io.time_ns);
        // Consecutive I/Os are often on one device: look the last one up first.
        let at = match self.devices.last() {
            Some(last) if last.key == io.device => self.devices.len() - 1,
            _ => match self.index.get(&io.device) {
                Some(&at) => at,
                None => {
                    self.index.insert(io.device.clone(), self.devices.len());
                    self.devices
                        .push(DeviceStats::new(io.device.clone(), io.time_ns));
                    self.devices.len() - 1
                }
            },
        };
        self.devices[at].record(io);
    }

    /// Its I/Os of kind `op`, over every device.
    pub fn count(&self, op: TraceOp) -> u64 {
        self.devices.iter().map(|d| d.count(op)).sum()
    }

    /// Every device, by key.
    pub fn devices(&self) -> Vec<&DeviceStats> {
        let mut all: Vec<&DeviceStats> = self.devices.iter().collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// One device's stats.
    pub fn device(&self, key: &DeviceKey) -> Option<&DeviceStats> {
        self.index.get(key).map(|&at| &self.devices[at])
    }

    /// The `n` devices with the most I/Os, busiest first (ties by key): every device when
    /// the trace has `n` or fewer.
    pub fn busiest(&self, n: usize) -> Vec<&DeviceStats> {
        let mut all: Vec<&DeviceStats> = self.devices.iter().collect();
        all.sort_by(|a, b| b.ios.cmp(&a.ios).then_with(|| a.key.cmp(&b.key)));
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(t: u64, dev: u64, op: TraceOp, offset: u64, len: u64) -> TraceIo {
        TraceIo::new(t, DeviceKey::Id(dev), op, offset, len)
    }

    #[test]
    fn devices_are_counted_by_kind_with_their_furthest_end_and_times() {
        let ios = [
            io(0, 7, TraceOp::Read, 4096, 4096),
            io(5, 3, TraceOp::Write, 0, 512),
            io(9, 7, TraceOp::Write, 1 << 20, 8192),
            io(12, 7, TraceOp::Flush, 0, 0),
        ];
        let stats = TraceStats::of(&ios);
        assert_eq!(stats.ios, 4);
        assert_eq!(stats.last_ns, 12);
        assert_eq!(stats.count(TraceOp::Write), 2);
        let seven = stats.device(&DeviceKey::Id(7)).unwrap();
        assert_eq!(
            (
                seven.ios,
                seven.count(TraceOp::Read),
                seven.count(TraceOp::Flush)
            ),
            (3, 1, 1)
        );
        assert_eq!(seven.max_end, (1 << 20) + 8192);
        assert_eq!((seven.first_ns, seven.last_ns), (0, 12));
        assert_eq!(seven.alignment(), Some(4096));
        assert_eq!(
            stats.device(&DeviceKey::Id(3)).unwrap().alignment(),
            Some(512)
        );
        let keys: Vec<_> = stats.devices().iter().map(|d| d.key.clone()).collect();
        assert_eq!(keys, [DeviceKey::Id(3), DeviceKey::Id(7)]);
    }

    #[test]
    fn the_busiest_come_first_ties_by_key() {
        let mut ios = Vec::new();
        for (dev, n) in [(1, 2), (2, 5), (3, 2), (4, 1)] {
            ios.extend((0..n).map(|i| io(i, dev, TraceOp::Read, 0, 512)));
        }
        let stats = TraceStats::of(&ios);
        let busiest: Vec<_> = stats.busiest(3).iter().map(|d| d.key.clone()).collect();
        assert_eq!(
            busiest,
            [DeviceKey::Id(2), DeviceKey::Id(1), DeviceKey::Id(3)]
        );
        assert_eq!(stats.busiest(10).len(), 4);
    }

    #[test]
    fn a_device_with_only_flushes_has_no_alignment() {
        let stats = TraceStats::of(&[io(0, 1, TraceOp::Flush, 0, 0)]);
        assert_eq!(stats.device(&DeviceKey::Id(1)).unwrap().alignment(), None);
    }
}
