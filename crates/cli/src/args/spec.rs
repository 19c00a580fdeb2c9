//! The spec options every measuring command shares ([`SpecArgs`]): what the volumes and the
//! host promise. Turning them into a spec set is `crate::verdict`'s.

use std::path::PathBuf;

use clap::Args;
use hostmax_aggregate::consistency::Consistency;
use hostmax_aggregate::spec::Scaled;
use hostmax_aggregate::{spec, HostSpec, Tolerance, VolumeSpec};

use crate::units::parse_count;

/// Parses `--consistency` (`99%`, `99.9%`).
fn consistency_arg(s: &str) -> Result<Consistency, String> {
    s.parse().map_err(|e: spec::SpecError| e.to_string())
}

fn volume_spec_arg(s: &str) -> Result<VolumeSpec, String> {
    s.parse().map_err(|e: spec::SpecError| e.to_string())
}

fn tolerance_arg(s: &str) -> Result<Tolerance, String> {
    s.parse().map_err(|e: spec::SpecError| e.to_string())
}

fn positive_arg(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number; give e.g. 320")),
    }
}

fn count_arg(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}

/// What the volumes and the host promise, as options. With any of them the run ends with a
/// verdict table, the JSON gains `"verdict"`, and a failed verdict exits 1.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Verdict (what volumes and the host promise)")]
pub struct SpecArgs {
    /// Every volume promises N IOPS (judged on 4k runs; 25k is 25,000).
    #[arg(long, value_name = "N", value_parser = count_arg, allow_hyphen_values = true)]
    pub expect_volume_iops: Option<u64>,

    /// Every volume promises N MB/s, 10^6 bytes (judged on runs of 256k blocks and up).
    #[arg(long, value_name = "N", value_parser = positive_arg, allow_hyphen_values = true)]
    pub expect_volume_mbps: Option<f64>,

    /// Size-scaled rules with caps, GB = 10^9 bytes:
    /// "iops=60/GB,max_iops=25000,mbps=0.48/GB,max_mbps=320,p95_ms=1".
    #[arg(long, value_name = "SPEC", value_parser = volume_spec_arg, conflicts_with = "profile")]
    pub volume_spec: Option<VolumeSpec>,

    /// A built-in volume class: oci-balanced (60 IOPS/GB up to 25,000; 0.48 MB/s per GB up
    /// to 320; p95 under 1 ms at depth 1).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// A TOML or JSON file giving each device its own class or provisioned size (see the
    /// book's Verdicts chapter, docs/src/verdicts.md); options given here override its
    /// defaults, its per-device entries override them.
    #[arg(long, value_name = "PATH")]
    pub spec_file: Option<PathBuf>,

    /// The host promises N IOPS in total (4k runs).
    #[arg(long, value_name = "N", value_parser = count_arg, allow_hyphen_values = true)]
    pub expect_host_iops: Option<u64>,

    /// The host promises N MB/s in total, 10^6 bytes (256k+ runs).
    #[arg(long, value_name = "N", value_parser = positive_arg, allow_hyphen_values = true)]
    pub expect_host_mbps: Option<f64>,

    /// How far below a promise a measurement may fall and still pass [default: 5%, or the
    /// spec file's].
    #[arg(long, value_name = "PERCENT", value_parser = tolerance_arg, allow_hyphen_values = true)]
    pub tolerance: Option<Tolerance>,

    /// The share of one-second intervals in which each volume and the host must reach
    /// (1 - tolerance) x its promise, e.g. 99% or 99.9% [default: the spec file's, else not
    /// judged].
    #[arg(long, value_name = "PERCENT", value_parser = consistency_arg)]
    pub consistency: Option<hostmax_aggregate::consistency::Consistency>,
}

impl SpecArgs {
    /// Whether any spec option was given.
    pub fn is_given(&self) -> bool {
        !self.flat_volume_spec().is_empty()
            || self.volume_spec.is_some()
            || self.profile.is_some()
            || self.spec_file.is_some()
            || !self.flat_host_spec().is_empty()
    }

    /// What the flat `--expect-volume-*` options promise of every volume (over a profile's or
    /// a spec's rules of the same kind).
    pub fn flat_volume_spec(&self) -> VolumeSpec {
        VolumeSpec::default()
            .with_iops(self.expect_volume_iops.map(|n| Scaled::Flat(n as f64)))
            .with_mbps(self.expect_volume_mbps.map(Scaled::Flat))
    }

    /// What the `--expect-host-*` options promise of the host (over the spec file's).
    pub fn flat_host_spec(&self) -> HostSpec {
        HostSpec::default()
            .with_iops(self.expect_host_iops.map(|n| n as f64))
            .with_bytes_per_sec(self.expect_host_mbps.map(|m| m * spec::MB_PER_SEC))
    }
}
