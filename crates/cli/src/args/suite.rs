//! `hostmax suite ...`: the command line of the suite ([`SuiteArgs`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::run::{cpu_list_arg, CpuList};
use crate::units::{parse_duration, parse_seed, parse_size, UnitError};

fn percent_arg(s: &str) -> Result<u8, String> {
    match s.trim().trim_end_matches('%').trim().parse::<u8>() {
        Ok(p) if (1..=100).contains(&p) => Ok(p),
        _ => Err(format!(
            "'{s}' is not a share of the device; give 1% to 100%, e.g. 50%"
        )),
    }
}

/// `--size`: whole bytes (`8g`) or, as fio writes it, a share of each device (`50%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteSize {
    /// This many bytes of each device, from its start.
    Bytes(u64),
    /// This percentage of the smallest device (CloudHarmony's active range).
    Share(u8),
}

fn suite_size_arg(s: &str) -> Result<SuiteSize, String> {
    if s.trim().ends_with('%') {
        percent_arg(s).map(SuiteSize::Share)
    } else {
        parse_size(s)
            .map(SuiteSize::Bytes)
            .map_err(|e| e.to_string())
    }
}

/// Options of `hostmax suite`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  \
    hostmax suite iops --devices '/dev/sd[b-u]' --allow-write --skip-bs 512b --json iops.json --html iops.html\n  \
    hostmax suite throughput --devices /dev/nvme1n1 --allow-write --size 64g\n  \
    hostmax suite latency --devices /dev/sdb --cell-time 30s\n  \
    hostmax suite --resume iops.state --allow-write      continue after a crash, reboot or Ctrl-C\n\n\
    Rounds of every cell repeat until steady state (SNIA PTS: the tracked cell's last 5 rounds within\n\
    20% of their mean, fitted slope x 4 within 10%) or --max-rounds. Without --allow-write, block\n\
    devices get a read-only suite: only the 100/0 mix, no purge, no preconditioning.")]
pub struct SuiteArgs {
    /// The test: iops (random, 1m..512b x 7 mixes), throughput (sequential 1m and 128k),
    /// latency (random, queue depth 1, one device at a time).
    // Not required by clap: `--devices A B iops` gives it to --devices, and
    // `take_test_from_devices` takes it back.
    #[arg(value_enum)]
    pub test: Option<SuiteTest>,

    /// Block devices or regular files; paths or quoted glob patterns. All run at once
    /// (latency: one at a time).
    #[arg(long, value_name = "PATH|PATTERN", num_args = 1.., action = clap::ArgAction::Append,
          required_unless_present = "resume")]
    pub devices: Vec<OsString>,

    /// Block sizes to test, comma-separated [default: the test's, e.g. 1m,128k,64k,32k,16k,8k,4k,512b].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub block_sizes: Vec<u64>,

    /// Block sizes to leave out, comma-separated (e.g. 512b for 4k-sector devices).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub skip_bs: Vec<u64>,

    /// Read/write mixes, comma-separated, as READ/WRITE or the read share
    /// [default: the test's, e.g. 100/0,95/5,65/35,50/50,35/65,5/95,0/100].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_mix)]
    pub mixes: Vec<Mix>,

    /// Measured time of each cell in each round.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub cell_time: Duration,

    /// Unmeasured time before each cell's measured time.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub ramp: Duration,

    /// Most rounds to run when steady state is not reached (5 to 100).
    #[arg(long, value_name = "N", default_value_t = 25,
          value_parser = clap::value_parser!(u32).range(5..=100))]
    pub max_rounds: u32,

    /// I/Os in flight per device, or per job with --numjobs [default: 64; latency: 1].
    #[arg(long, value_name = "N")]
    pub iodepth: Option<u32>,

    /// The tested range of each device, from its start, whole MiB, or a share of it as fio
    /// writes it (`50%`, the same as --active-range 50) [default: the whole of the smallest
    /// device, rounded down to whole MiB].
    #[arg(long, value_name = "SIZE|PERCENT%", value_parser = suite_size_arg)]
    pub size: Option<SuiteSize>,

    /// Test only this share of each device, from its start (CloudHarmony's active range;
    /// fio writes it --size 50%, which hostmax takes too): the smallest device's size x
    /// PERCENT, rounded down to MiB.
    #[arg(long, value_name = "PERCENT", value_parser = percent_arg, conflicts_with = "size")]
    pub active_range: Option<u8>,

    /// Jobs per device, fio's numjobs: N workers each keeping --iodepth in flight over its
    /// own part of the device, on distinct CPUs of its queue map where it has enough
    /// (CloudHarmony runs up to 8 jobs of depth 64 on hosts with many CPUs). Without it each
    /// device is driven from its queue CPUs and --iodepth is the device's total.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub numjobs: Option<u32>,

    /// Idle time after each cell (volumes with burst credits earn them back; the cell after
    /// it then starts from the same state).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub sleep_between: Duration,

    /// Most time preconditioning may take; it stops there (recorded) even if its 2 passes are
    /// not done [default: no limit].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub precondition_time: Option<Duration>,

    /// Allow writing to block devices (destroys their data): purge, preconditioning and every
    /// mix with writes. Mounted, held or swap devices are refused anyway.
    #[arg(long)]
    pub allow_write: bool,

    /// With --allow-write, also write devices that carry data (partition tables, filesystem,
    /// RAID or LVM signatures). The root device is refused anyway.
    #[arg(long)]
    pub force: bool,

    /// Skip preconditioning (2 passes of sequential 128k writes over the tested range).
    #[arg(long)]
    pub no_precondition: bool,

    /// Skip the purge before testing (discard, or zero fill where discard is not supported).
    #[arg(long)]
    pub no_purge: bool,

    /// Purge ATA disks by ATA secure erase first (hdparm sets a temporary security password
    /// and erases the WHOLE disk with it), then discard, then zero fill: the first that works.
    /// The password comes from --secure-erase-password-file, else from the environment
    /// variable HOSTMAX_SECURE_ERASE_PASSWORD (never from the command line, which every user
    /// can read).
    #[arg(long, conflicts_with = "no_purge")]
    pub secure_erase: bool,

    /// --secure-erase with the temporary password read from the file PATH (its first line).
    #[arg(long, value_name = "PATH", conflicts_with = "no_purge")]
    pub secure_erase_password_file: Option<PathBuf>,

    /// Refused: a password on the command line is readable by every user of the host in
    /// /proc/PID/cmdline. Use --secure-erase-password-file or HOSTMAX_SECURE_ERASE_PASSWORD.
    #[arg(long, value_name = "PASSWORD", hide = true)]
    pub secure_erase_password: Option<String>,

    /// Write the suite's JSON report to PATH, or to stdout with '-'.
    #[arg(long, value_name = "PATH|-", allow_hyphen_values = true)]
    pub json: Option<PathBuf>,

    /// Write a self-contained HTML report (tables and SVG charts) to PATH.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,

    /// Write every cell's rounds in fio's JSON (json+) layout into the folder PATH, as
    /// fio-plot reads them (NAME/BS/RW-IODEPTH-NUMJOBS.json; round N in BS/run-N/).
    #[arg(long, value_name = "PATH")]
    pub fio_json: Option<PathBuf>,

    /// Include a load-latency curve (the JSON of `hostmax curve --json`) in the HTML page:
    /// its table and chart, with the SLO knee.
    #[arg(long, value_name = "PATH", requires = "html")]
    pub curve: Option<PathBuf>,

    /// Where the checkpoint goes [default: beside --json (or else --html), named after it
    /// with .state; with --json - and no --html, a new directory in the temporary directory;
    /// else ./hostmax-suite-TEST.state].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Run afresh although the state directory already holds a suite (finished or not): the
    /// old one is kept, and the new run takes the first free DIR.2, DIR.3, ... beside it.
    #[arg(long)]
    pub fresh: bool,

    /// Continue the suite whose checkpoint is in DIR; its settings come from DIR/suite.json
    /// (give --allow-write again if it writes to block devices, and the secure erase password
    /// again, by --secure-erase-password-file or HOSTMAX_SECURE_ERASE_PASSWORD, if its purge
    /// by secure erase is not done: the checkpoint never keeps it). A
    /// --json, --html or --fio-json given with it replaces the one kept, for this and later
    /// resumes.
    #[arg(long, value_name = "DIR", conflicts_with_all = [
        "test", "devices", "block_sizes", "skip_bs", "mixes", "cell_time", "ramp", "max_rounds",
        "iodepth", "size", "no_precondition", "no_purge", "state_dir", "cpus", "seed",
        "expect_volume_iops", "expect_volume_mbps", "volume_spec", "profile", "spec_file",
        "expect_host_iops", "expect_host_mbps", "tolerance", "consistency", "active_range",
        "numjobs", "sleep_between", "precondition_time", "curve",
        "fresh",
    ])]
    pub resume: Option<PathBuf>,

    /// CPUs the workers may use, e.g. 0-3,6 [default: every allowed CPU].
    #[arg(long, value_name = "LIST", value_parser = cpu_list_arg)]
    pub cpus: Option<CpuList>,

    /// Base seed of the random offsets; each round and cell derives its own from it.
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    pub seed: Option<u64>,

    /// Live metrics while the suite runs (`--metrics-listen`).
    #[command(flatten)]
    pub metrics: super::metrics::MetricsArgs,

    /// What the volumes and the host promise: the suite's figures are compared with it
    /// (IOPS on 4k cells, throughput on 256k+ cells, p95 latency on 4k cells at depth 1).
    #[command(flatten)]
    pub spec: super::spec::SpecArgs,
}

/// Which suite test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SuiteTest {
    /// Random I/O, block sizes 1m..512b x mixes 100/0..0/100, queue depth 64, every device at
    /// once; steady state on 4k 0/100 IOPS.
    Iops,
    /// Sequential I/O, 1m and 128k x 100/0 and 0/100, queue depth 64, every device at once;
    /// steady state on 1m 0/100 throughput.
    Throughput,
    /// Random I/O, 16k..512b x 100/0, 65/35, 0/100, queue depth 1, one device at a time;
    /// steady state on 4k 0/100 mean latency.
    Latency,
}

/// A read/write mix: the read share in percent (the rest are writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Mix {
    /// Percent of I/Os that read.
    pub read: u8,
}

impl Mix {
    /// Percent of I/Os that write.
    pub fn write(self) -> u8 {
        100 - self.read
    }

    /// Whether any I/O of the mix writes.
    pub fn writes(self) -> bool {
        self.read < 100
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.read, self.write())
    }
}

/// Parses a mix: `65/35` (read/write, adding up to 100) or just the read share `65`.
pub fn parse_mix(input: &str) -> Result<Mix, UnitError> {
    let invalid = |reason: &str| UnitError::Invalid {
        input: input.to_string(),
        what: "read/write mix",
        reason: reason.to_string(),
    };
    let trimmed = input.trim();
    let (read, write) = match trimmed.split_once('/') {
        Some((r, w)) => (r.trim(), Some(w.trim())),
        None => (trimmed, None),
    };
    let number = |s: &str| -> Result<u8, UnitError> {
        match s.parse::<u8>() {
            Ok(n) if n <= 100 && !s.starts_with('+') => Ok(n),
            _ => Err(invalid(
                "use READ/WRITE percentages adding up to 100, e.g. 65/35, or the read share alone",
            )),
        }
    };
    let read = number(read)?;
    if let Some(write) = write {
        if u16::from(read) + u16::from(number(write)?) != 100 {
            return Err(invalid(
                "the read and write shares must add up to 100, e.g. 65/35",
            ));
        }
    }
    Ok(Mix { read })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_parse_both_ways() {
        assert_eq!(parse_mix("65/35").unwrap(), Mix { read: 65 });
        assert_eq!(parse_mix(" 5 / 95 ").unwrap(), Mix { read: 5 });
        assert_eq!(parse_mix("100").unwrap(), Mix { read: 100 });
        for bad in ["65/30", "101", "-5", "a/b", "", "50/50/0", "+5"] {
            assert!(parse_mix(bad).is_err(), "{bad}");
        }
    }
}
