//! The suite's tests and their cells: block size x read/write mix, named as CloudHarmony
//! names them (`4k_65_35`), and the workload each cell runs.

use std::fmt;
use std::time::Duration;

use hostmax_engine::{IoPattern, Workload};
use serde::{Deserialize, Serialize};

pub use crate::args::suite::{Mix, SuiteTest};

/// The figure steady state is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrackedMetric {
    /// Read plus write I/Os per second of all devices.
    Iops,
    /// Read plus write bytes per second of all devices.
    BytesPerSec,
    /// Mean latency of every I/O, nanoseconds.
    MeanLatencyNs,
}

impl TrackedMetric {
    /// How the figure is named in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            TrackedMetric::Iops => "IOPS",
            TrackedMetric::BytesPerSec => "MiB/s",
            TrackedMetric::MeanLatencyNs => "mean latency (µs)",
        }
    }

    /// A value of this metric in the unit of [`TrackedMetric::label`].
    pub fn display_value(self, value: f64) -> f64 {
        match self {
            TrackedMetric::Iops => value,
            TrackedMetric::BytesPerSec => value / f64::from(1u32 << 20),
            TrackedMetric::MeanLatencyNs => value / 1000.0,
        }
    }
}

/// Which cell's block size stands in for the tracked one when the matrix lacks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandIn {
    /// The smallest block size tested.
    Smallest,
    /// The largest.
    Largest,
}

/// One suite test: a row of [`TESTS`]. Adding a test is a row here and its variant (with its
/// help) in [`SuiteTest`]; the runner, state, report, table and page take any test's cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestSpec {
    /// The test.
    pub test: SuiteTest,
    /// Its name on the command line.
    pub name: &'static str,
    /// CloudHarmony's block sizes for it, largest first.
    pub block_sizes: &'static [u32],
    /// CloudHarmony's mixes for it, as read shares, most reads first.
    pub read_shares: &'static [u8],
    /// Random offsets, or sequential (which has only 100/0 and 0/100).
    pub random: bool,
    /// Queue depth per device.
    pub iodepth: u32,
    /// Whether each cell runs the devices one at a time rather than all at once.
    pub one_device_at_a_time: bool,
    /// The figure steady state is judged on (SNIA PTS: IOPS, throughput, latency).
    pub metric: TrackedMetric,
    /// The block size of the cell steady state tracks.
    pub tracked_block_size: u32,
    /// What stands in when the matrix lacks that block size.
    pub stand_in: StandIn,
}

/// Every suite test, in [`SuiteTest`]'s order.
pub const TESTS: [TestSpec; 3] = [
    TestSpec {
        test: SuiteTest::Iops,
        name: "iops",
        block_sizes: &[
            1 << 20,
            128 << 10,
            64 << 10,
            32 << 10,
            16 << 10,
            8 << 10,
            4 << 10,
            512,
        ],
        read_shares: &[100, 95, 65, 50, 35, 5, 0],
        random: true,
        iodepth: 64,
        one_device_at_a_time: false,
        metric: TrackedMetric::Iops,
        tracked_block_size: 4096,
        stand_in: StandIn::Smallest,
    },
    TestSpec {
        test: SuiteTest::Throughput,
        name: "throughput",
        block_sizes: &[1 << 20, 128 << 10],
        read_shares: &[100, 0],
        random: false,
        iodepth: 64,
        one_device_at_a_time: false,
        metric: TrackedMetric::BytesPerSec,
        tracked_block_size: 1 << 20,
        stand_in: StandIn::Largest,
    },
    TestSpec {
        test: SuiteTest::Latency,
        name: "latency",
        block_sizes: &[16 << 10, 8 << 10, 4 << 10, 512],
        read_shares: &[100, 65, 0],
        random: true,
        iodepth: 1,
        one_device_at_a_time: true,
        metric: TrackedMetric::MeanLatencyNs,
        tracked_block_size: 4096,
        stand_in: StandIn::Smallest,
    },
];

impl SuiteTest {
    /// Its row of the suite's table of tests (`suite::matrix::TESTS`).
    pub fn spec(self) -> &'static TestSpec {
        &TESTS[self as usize]
    }

    /// The test's name on the command line.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// CloudHarmony's block sizes for the test, largest first.
    pub fn default_block_sizes(self) -> Vec<u32> {
        self.spec().block_sizes.to_vec()
    }

    /// CloudHarmony's mixes for the test, most reads first.
    pub fn default_mixes(self) -> Vec<Mix> {
        let reads = self.spec().read_shares;
        reads.iter().map(|&read| Mix { read }).collect()
    }

    /// Random offsets (iops, latency) or sequential (throughput).
    pub fn random(self) -> bool {
        self.spec().random
    }

    /// Queue depth per device.
    pub fn default_iodepth(self) -> u32 {
        self.spec().iodepth
    }

    /// Whether each cell runs the devices one at a time rather than all at once.
    pub fn one_device_at_a_time(self) -> bool {
        self.spec().one_device_at_a_time
    }

    /// The figure steady state is judged on (SNIA PTS: IOPS, throughput, latency).
    pub fn metric(self) -> TrackedMetric {
        self.spec().metric
    }

    /// The cell steady state tracks: 4k (1m for throughput) at the mix with the fewest reads
    /// (0/100 when writes run; 100/0 in a read-only suite). When the matrix lacks that block
    /// size, the smallest (largest for throughput) block size stands in.
    pub fn tracked_cell(self, cells: &[CellSpec]) -> Option<CellSpec> {
        let mix = cells.iter().map(|c| c.mix).min_by_key(|m| m.read)?;
        let preferred = self.spec().tracked_block_size;
        let sizes = cells.iter().filter(|c| c.mix == mix).map(|c| c.block_size);
        let block_size = if cells
            .iter()
            .any(|c| c.mix == mix && c.block_size == preferred)
        {
            preferred
        } else {
            match self.spec().stand_in {
                StandIn::Largest => sizes.max()?,
                StandIn::Smallest => sizes.min()?,
            }
        };
        Some(CellSpec { block_size, mix })
    }
}

impl fmt::Display for SuiteTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A block size as CloudHarmony writes it in cell names: `1m`, `128k`, `512b`.
pub fn size_label(bytes: u32) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}m", bytes >> 20)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}k", bytes >> 10)
    } else {
        format!("{bytes}b")
    }
}

/// One cell of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CellSpec {
    /// Bytes per I/O.
    pub block_size: u32,
    /// Read/write mix.
    pub mix: Mix,
}

impl CellSpec {
    /// CloudHarmony's key: `4k_100_0`.
    pub fn key(&self) -> String {
        format!(
            "{}_{}_{}",
            size_label(self.block_size),
            self.mix.read,
            self.mix.write()
        )
    }

    /// The engine's pattern for this cell: reads, writes or a mix, random or sequential.
    pub fn pattern(&self, random: bool) -> IoPattern {
        match (self.mix.read, random) {
            (100, true) => IoPattern::RandRead,
            (0, true) => IoPattern::RandWrite,
            (_, true) => IoPattern::RandRw,
            (100, false) => IoPattern::Read,
            (_, false) => IoPattern::Write,
        }
    }
}

/// The matrix in CloudHarmony's order: mix outer, block size inner.
pub fn cells(block_sizes: &[u32], mixes: &[Mix]) -> Vec<CellSpec> {
    mixes
        .iter()
        .flat_map(|&mix| {
            block_sizes
                .iter()
                .map(move |&block_size| CellSpec { block_size, mix })
        })
        .collect()
}

/// What every cell's workload shares.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSettings {
    /// Random or sequential.
    pub random: bool,
    /// Queue depth per device, or per job with `numjobs`.
    pub iodepth: u32,
    /// Jobs per device (fio's numjobs), each at `iodepth`; `None`: placed by queue.
    pub numjobs: Option<u32>,
    /// The tested range per device, from its start.
    pub range: u64,
    /// Measured time per cell.
    pub cell_time: Duration,
    /// Unmeasured time before it.
    pub ramp: Duration,
    /// Base seed; each round and cell derives its own (fio's `randrepeat=0`).
    pub seed: u64,
}

impl CellSettings {
    /// The workload of `cell` in round `round`.
    pub fn workload(&self, cell: &CellSpec, round: u32) -> Workload {
        let mut state = self.seed
            ^ (u64::from(round) << 32)
            ^ u64::from(cell.block_size)
            ^ (u64::from(cell.mix.read) << 48);
        Workload::default()
            .with_pattern(cell.pattern(self.random))
            .with_rwmixread(cell.mix.read)
            .with_block_size(cell.block_size)
            .with_iodepth(self.iodepth)
            .with_numjobs(self.numjobs)
            .with_working_set(Some(self.range))
            .with_runtime(self.cell_time)
            .with_ramp(self.ramp)
            .with_seed(splitmix64(&mut state))
            .with_rate_iops(None)
            .with_arrival(Default::default())
            .with_record_latency(true)
            .with_io_limit(None)
            .with_write_data(Default::default())
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_suite_test_order() {
        for (i, row) in TESTS.iter().enumerate() {
            assert_eq!(row.test as usize, i, "{}", row.name);
            assert_eq!(row.test.spec().name, row.name);
        }
    }

    #[test]
    fn keys_and_order_follow_cloudharmony() {
        let t = SuiteTest::Iops;
        let all = cells(&t.default_block_sizes(), &t.default_mixes());
        assert_eq!(all.len(), 56);
        let keys: Vec<String> = all.iter().map(CellSpec::key).collect();
        assert_eq!(&keys[..3], ["1m_100_0", "128k_100_0", "64k_100_0"]);
        assert_eq!(keys[7], "512b_100_0");
        assert_eq!(keys[8], "1m_95_5");
        assert_eq!(keys[55], "512b_0_100");
        assert_eq!(t.tracked_cell(&all).unwrap().key(), "4k_0_100");
        let read_only = cells(&t.default_block_sizes(), &[Mix { read: 100 }]);
        assert_eq!(t.tracked_cell(&read_only).unwrap().key(), "4k_100_0");
        let tp = SuiteTest::Throughput;
        let tp_cells = cells(&tp.default_block_sizes(), &tp.default_mixes());
        assert_eq!(tp.tracked_cell(&tp_cells).unwrap().key(), "1m_0_100");
        // Without 4k, the smallest block size stands in.
        let no_4k = cells(&[65536, 8192], &[Mix { read: 0 }]);
        assert_eq!(t.tracked_cell(&no_4k).unwrap().key(), "8k_0_100");
    }

    #[test]
    fn patterns_and_seeds() {
        let c = |read| CellSpec {
            block_size: 4096,
            mix: Mix { read },
        };
        assert_eq!(c(100).pattern(true), IoPattern::RandRead);
        assert_eq!(c(0).pattern(true), IoPattern::RandWrite);
        assert_eq!(c(65).pattern(true), IoPattern::RandRw);
        assert_eq!(c(100).pattern(false), IoPattern::Read);
        assert_eq!(c(0).pattern(false), IoPattern::Write);
        assert_eq!(size_label(512), "512b");
        assert_eq!(size_label(1536), "1536b");
        assert_eq!(size_label(128 << 10), "128k");
        assert_eq!(size_label(2 << 20), "2m");
        let s = CellSettings {
            random: true,
            iodepth: 64,
            numjobs: None,
            range: 1 << 30,
            cell_time: Duration::from_secs(60),
            ramp: Duration::ZERO,
            seed: 7,
        };
        let a = s.workload(&c(0), 1);
        assert_eq!(a.seed, s.workload(&c(0), 1).seed);
        assert_ne!(a.seed, s.workload(&c(0), 2).seed);
        assert_ne!(a.seed, s.workload(&c(100), 1).seed);
        assert_eq!(
            (a.working_set, a.iodepth, a.rwmixread),
            (Some(1 << 30), 64, 0)
        );
    }
}
