//! `hostmax demo`'s options ([`DemoArgs`]).

use std::time::Duration;

/// Most volumes a demo builds (loop devices are a shared, finite resource).
pub const DEMO_MAX_VOLUMES: usize = 32;

/// Options of `hostmax demo`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DemoArgs {
    /// Volumes of the simulated host, 1 to 32 [default: 8, capped at 1,000 to 4,500 IOPS
    /// behind a 15,000 IOPS host].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=DEMO_MAX_VOLUMES as i64))]
    pub volumes: Option<u32>,
    /// Measured time [default: 10s, 5s without caps]; the ramp before it is 2 s, or the
    /// runtime when that is shorter.
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub runtime: Option<Duration>,
    /// Live metrics while the demo runs (`--metrics-listen`).
    #[command(flatten)]
    pub metrics: super::metrics::MetricsArgs,
}
