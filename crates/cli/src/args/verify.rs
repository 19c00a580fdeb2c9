//! The options of `hostmax verify`, `hostmax sweep` and `hostmax curve`: each flattens the
//! main run's [`RunArgs`] and adds its own.

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use hostmax_aggregate::verdict::THROUGHPUT_BLOCK_MIN;

use super::run::RunArgs;

/// `hostmax verify`'s options: the run's, whose `--rw`, `--bs` (and `--iodepth` for the
/// latency phase) each phase sets itself.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// Devices, times, spec options: as for the main run.
    #[command(flatten)]
    pub run: RunArgs,

    /// Block size of the throughput phase, 256k or larger.
    #[arg(long, value_name = "SIZE", default_value = "1m", value_parser = throughput_bs_arg)]
    pub throughput_bs: u64,
}

fn throughput_bs_arg(s: &str) -> Result<u64, String> {
    let bs = crate::units::parse_size(s).map_err(|e| e.to_string())?;
    if bs < u64::from(THROUGHPUT_BLOCK_MIN) {
        return Err(format!(
            "{s} is below 256k: throughput promises are judged on blocks of 256k and up; give e.g. 1m"
        ));
    }
    Ok(bs)
}

/// One entry of `--steps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The first N volumes.
    Count(usize),
    /// Every volume.
    All,
}

/// The volume counts `--steps` gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepList(pub Vec<Step>);

pub(crate) fn steps_arg(s: &str) -> Result<StepList, String> {
    let mut steps = Vec::new();
    for part in s.split(',').map(str::trim) {
        if part.eq_ignore_ascii_case("all") {
            steps.push(Step::All);
            continue;
        }
        match part.parse::<usize>() {
            Ok(n) if n >= 1 => steps.push(Step::Count(n)),
            _ => {
                return Err(format!(
                    "'{part}' is not a volume count; give counts of 1 or more and 'all', e.g. 1,2,4,8,all"
                ))
            }
        }
    }
    Ok(StepList(steps))
}

/// `hostmax sweep`'s options.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Devices, workload, times, and optionally a spec (its volumes' IOPS make the ideal
    /// line; `--tolerance` sets how close to the ceiling the knee must be).
    #[command(flatten)]
    pub run: RunArgs,

    /// Volume counts to run, e.g. 1,2,4,8,all [default: powers of two below the device
    /// count, then all]. Each step drives the first N devices as given.
    #[arg(long, value_name = "LIST", value_parser = steps_arg)]
    pub steps: Option<StepList>,

    /// Draw IOPS against volumes, with the ideal line, as an SVG file.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,
}

/// Parses a latency such as `1ms`, `500us`, `0.8ms` or `2s` into nanoseconds.
pub fn parse_latency(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && scale.is_finite() && v * scale >= 1.0 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "'{s}' is not a latency; give a positive number with ns, us, ms or s, e.g. 1ms or 500us"
        )),
    }
}

/// The queue depths `--depths` gives, sorted, without repeats. Their range is the engine's
/// (`Workload::check`, which the curve asks of every depth before its first step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepthList(pub Vec<u32>);

pub(crate) fn depths_arg(s: &str) -> Result<DepthList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part.parse::<u32>() {
            Ok(d) => out.push(d),
            Err(_) => {
                return Err(format!(
                    "'{part}' is not a queue depth; give whole numbers, e.g. 1,2,4,8,16,32,64"
                ))
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(DepthList(out))
}

/// `hostmax curve`'s options.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("promise").multiple(false)))]
pub struct CurveArgs {
    /// Devices, workload, times (each depth runs `--runtime` after `--ramp`); `--iodepth` is
    /// replaced by each step's depth; `--tolerance` is how close to the most IOPS counts as
    /// reaching it.
    #[command(flatten)]
    pub run: RunArgs,

    /// Queue depths per volume, one run each [default: 1,2,4,8,16,32,64,128].
    #[arg(long, value_name = "LIST", value_parser = depths_arg)]
    pub depths: Option<DepthList>,

    /// The promise: mean latency at most this (e.g. 2ms).
    #[arg(long, value_name = "LATENCY", value_parser = parse_latency, group = "promise")]
    pub mean_max: Option<u64>,

    /// The promise: p50 latency at most this (e.g. 1ms, 500us).
    #[arg(long, value_name = "LATENCY", value_parser = parse_latency, group = "promise")]
    pub p50_max: Option<u64>,

    /// The promise: p95 latency at most this (OCI: 1ms).
    #[arg(long, value_name = "LATENCY", value_parser = parse_latency, group = "promise")]
    pub p95_max: Option<u64>,

    /// The promise: p99 latency at most this.
    #[arg(long, value_name = "LATENCY", value_parser = parse_latency, group = "promise")]
    pub p99_max: Option<u64>,

    /// The promise: p99.9 latency at most this.
    #[arg(long = "p99.9-max", value_name = "LATENCY", value_parser = parse_latency, group = "promise")]
    pub p99_9_max: Option<u64>,

    /// Draw latency against IOPS (host and each volume), the promise and the knee, as SVG.
    #[arg(long, value_name = "PATH")]
    pub svg: Option<PathBuf>,

    /// Offered rates instead of depths, one run each at --iodepth, judged by response time:
    /// IOPS per volume (50k) or fractions of the ceiling measured first, uncapped (0.8x),
    /// e.g. 0.5x,0.8x,1.0x,1.2x.
    #[arg(long, value_name = "LIST", value_parser = rates_arg, conflicts_with_all = ["depths", "rate_iops"])]
    pub rates: Option<RateList>,
}

/// One offered rate of `--rates`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OfferedRate {
    /// IOPS per volume.
    Iops(u64),
    /// A fraction of each volume's ceiling, measured uncapped first.
    OfCeiling(f64),
}

impl OfferedRate {
    /// IOPS per volume, given each volume's measured ceiling.
    pub fn per_volume(self, ceiling: f64) -> u64 {
        match self {
            OfferedRate::Iops(n) => n,
            OfferedRate::OfCeiling(f) => ((f * ceiling).round() as u64).max(1),
        }
    }
}

/// The offered rates `--rates` gives, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct RateList(pub Vec<OfferedRate>);

impl RateList {
    /// Whether some rate is a fraction of the ceiling.
    pub fn needs_ceiling(&self) -> bool {
        self.0
            .iter()
            .any(|r| matches!(r, OfferedRate::OfCeiling(_)))
    }
}

pub(crate) fn rates_arg(s: &str) -> Result<RateList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let rate = match part.strip_suffix('x') {
            Some(f) => f
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0 && *f <= 100.0)
                .map(OfferedRate::OfCeiling),
            None => crate::units::parse_count(part)
                .ok()
                .filter(|&n| n > 0 && n <= hostmax_engine::MAX_RATE_IOPS)
                .map(OfferedRate::Iops),
        };
        match rate {
            Some(r) => out.push(r),
            None => {
                return Err(format!(
                    "'{part}' is not an offered rate; give IOPS per volume or a fraction of the measured ceiling, e.g. 0.5x,0.8x,1.0x or 10k,20k"
                ))
            }
        }
    }
    Ok(RateList(out))
}
