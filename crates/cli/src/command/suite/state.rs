//! The checkpoint directory of a suite: its settings, the preparation steps done, and one file
//! per finished cell and round, each written atomically (a temporary file, fsync, rename), so
//! that after a crash, a reboot or Ctrl-C every file present is whole and `--resume` repeats
//! no finished cell.
//!
//! Layout of the directory:
//! - `suite.json`: [`SuiteConfig`], written once when the suite starts;
//! - `purge.json`, `precondition.json`: a [`PrepRecord`] each, once that step is done;
//! - `rounds/rNNN-KEY.json`: a [`CellRound`] per finished cell of round NNN (`r003-4k_0_100.json`);
//! - `lock`: an exclusive `flock` held by the one process running the suite (fresh or resumed)
//!   for as long as it runs, holding that process's pid: a second process is refused at once
//!   rather than measuring the same cells beside it.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use hostmax_aggregate::HostReport;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::matrix::{CellSettings, CellSpec, SuiteTest, TrackedMetric};

/// Version of the checkpoint layout; a directory of another version is not resumed. 2: the
/// round files hold schema-2 reports (per-second device entries named, float rates), which a
/// format-1 directory's round files are not.
pub const STATE_FORMAT: u32 = 2;

/// A device as the suite first saw it: the record every resumable command keeps
/// ([`crate::plan::identity::DeviceRecord`]).
pub use crate::plan::identity::DeviceRecord;

/// Everything a suite was started with: `suite.json`. A resumed suite runs from this alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteConfig {
    /// [`STATE_FORMAT`].
    pub format: u32,
    /// The test.
    pub test: SuiteTest,
    /// The devices, in the order given.
    pub devices: Vec<DeviceRecord>,
    /// The cells, in the order they run.
    pub cells: Vec<CellSpec>,
    /// The cell steady state tracks.
    pub tracked: CellSpec,
    /// The figure it is judged on.
    pub metric: TrackedMetric,
    /// Random (else sequential) offsets.
    pub random: bool,
    /// Queue depth per device, or per job with `numjobs`.
    pub iodepth: u32,
    /// `--numjobs`: jobs per device, each at `iodepth` (`None`: placed by queue).
    #[serde(default)]
    pub numjobs: Option<u32>,
    /// Tested range per device, bytes from its start.
    pub range: u64,
    /// Measured milliseconds per cell.
    pub cell_time_ms: u64,
    /// Unmeasured milliseconds before each cell.
    pub ramp_ms: u64,
    /// Most rounds.
    pub max_rounds: u32,
    /// Base seed.
    pub seed: u64,
    /// CPUs the workers may use.
    pub cpus: Option<Vec<usize>>,
    /// Whether to purge before testing.
    pub purge: bool,
    /// Whether to precondition before testing.
    pub precondition: bool,
    /// Whether any step writes to a block device (then `--allow-write` is needed, also to resume).
    pub writes_block_devices: bool,
    /// Whether writes were ruled out (no `--allow-write` on block devices).
    pub read_only: bool,
    /// Absolute path of the JSON report, `-` for stdout.
    pub json: Option<PathBuf>,
    /// Absolute path of the HTML report.
    pub html: Option<PathBuf>,
    /// What the user should know about how the suite was set up (read-only, stand-ins).
    pub notes: Vec<String>,
    /// What the volumes and the host promise, if spec options were given.
    #[serde(default)]
    pub promises: Option<super::spec::Promises>,
    /// The suite's run id, made when it starts and kept through `--resume` (absent in
    /// checkpoints of older versions: their report gets a fresh one).
    #[serde(default)]
    pub run_id: Option<String>,
    /// Idle milliseconds after each cell (`--sleep-between`).
    #[serde(default)]
    pub sleep_between_ms: u64,
    /// Most milliseconds preconditioning may take (`--precondition-time`).
    #[serde(default)]
    pub precondition_time_ms: Option<u64>,
    /// Whether the purge starts with ATA secure erase (`--secure-erase`, or its password file, was given):
    /// a resume before the purge is done needs the password again.
    #[serde(default)]
    pub secure_erase: bool,
    /// The temporary ATA security password of `--secure-erase` (the erase clears
    /// it). A secret: never written to the checkpoint (read from older ones that held it);
    /// `--resume` takes it again.
    #[serde(default, skip_serializing)]
    pub secure_erase_password: Option<String>,
    /// Absolute path of a `hostmax curve --json` report to include in the HTML page.
    #[serde(default)]
    pub curve: Option<PathBuf>,
    /// Absolute path of the `--fio-json` folder (absent in checkpoints of older versions).
    #[serde(default)]
    pub fio_json: Option<PathBuf>,
}

impl SuiteConfig {
    /// The settings every cell's workload shares.
    pub fn cell_settings(&self) -> CellSettings {
        CellSettings {
            random: self.random,
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            range: self.range,
            cell_time: Duration::from_millis(self.cell_time_ms),
            ramp: Duration::from_millis(self.ramp_ms),
            seed: self.seed,
        }
    }
}

/// A preparation step that was done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrepRecord {
    /// What was done, per device (`discard`, `zero fill`, `2 x 128k sequential writes`).
    pub method: Vec<String>,
    /// How long it took, seconds.
    pub secs: f64,
}

/// One finished cell of one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRound {
    /// Round number, from 1.
    pub round: u32,
    /// The cell.
    pub cell: CellSpec,
    /// Its report: host and per-device figures with their full histograms (no time series).
    pub report: HostReport,
    /// The process that ran it (lets tests tell which run made which file).
    pub pid: u32,
    /// When it finished, milliseconds since the Unix epoch.
    pub finished_unix_ms: u64,
}

/// The lock file in a checkpoint directory ([`lock`]).
const LOCK_FILE: &str = "lock";

/// Takes the exclusive lock of the checkpoint directory `dir` without waiting, and writes this
/// process's pid into the lock file for a refused one to name. Held until the returned lock is
/// dropped (or the process dies: a `flock` belongs to the open file). Another process holding
/// it is a refusal (exit 2) naming the directory and, when the file says, its pid.
fn lock(dir: &Path) -> anyhow::Result<Flock<File>> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        // Never through a link: one planted there would have root truncate what it leads to.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path);
    let file = match file {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(crate::error::BadInput(format!(
                "{}: the lock file {} is a symbolic link, which is not followed; remove it, then --resume {}",
                dir.display(),
                path.display(),
                dir.display()
            ))
            .into())
        }
        opened => opened.with_context(|| format!("opening the lock file {}", path.display()))?,
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(crate::error::BadInput(format!(
            "{}: the lock file {} is not a regular file; remove it, then --resume {}",
            dir.display(),
            path.display(),
            dir.display()
        ))
        .into());
    }
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(mut held) => {
            // The pid is a courtesy for a refused process: failing to write it stops nothing.
            let _ = held
                .set_len(0)
                .and_then(|()| writeln!(held, "{}", std::process::id()));
            Ok(held)
        }
        Err((_, Errno::EWOULDBLOCK)) => {
            let holder = crate::input::read_bounded(&path, 64)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .and_then(|text| text.trim().parse::<u32>().ok())
                .map_or_else(String::new, |pid| format!(" (pid {pid})"));
            Err(crate::error::BadInput(format!(
                "{}: another hostmax suite{holder} is running on this state directory; wait for it to finish (or stop it), then --resume {}",
                dir.display(),
                dir.display()
            ))
            .into())
        }
        Err((_, errno)) => {
            Err(io::Error::from(errno)).with_context(|| format!("locking {}", path.display()))
        }
    }
}

/// An open checkpoint directory, locked for this process while it lives.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    _lock: Flock<File>,
}

impl StateDir {
    /// Creates a fresh checkpoint directory (it may exist if empty) and locks it.
    pub fn create(dir: &Path, config: &SuiteConfig) -> anyhow::Result<StateDir> {
        fs::create_dir_all(dir.join("rounds"))
            .with_context(|| format!("creating the state directory {}", dir.display()))?;
        let state = StateDir {
            dir: dir.to_path_buf(),
            _lock: lock(dir)?,
        };
        state.write_json("suite.json", config)?;
        Ok(state)
    }

    /// Locks an existing checkpoint directory (a refusal when another process holds it, before
    /// anything is read) and reads its settings.
    pub fn open(dir: &Path) -> anyhow::Result<(StateDir, SuiteConfig)> {
        let path = dir.join("suite.json");
        // Only a checkpoint gets a lock file: any other path gets the refusal below, which
        // names what to give, and no file left in it.
        let held = if path.is_file() {
            Some(lock(dir)?)
        } else {
            None
        };
        let text = crate::input::read_text(&path).map_err(|e| {
            crate::error::BadInput(format!(
                "--resume {}: {e} (give the directory a suite wrote its state to)",
                dir.display()
            ))
        })?;
        let config: SuiteConfig = serde_json::from_str(&text).map_err(|e| {
            crate::error::BadInput(format!(
                "--resume {}: {} is not a suite checkpoint of this version ({e})",
                dir.display(),
                path.display()
            ))
        })?;
        if config.format != STATE_FORMAT {
            return Err(crate::error::BadInput(format!(
                "--resume {}: checkpoint format {} is not {STATE_FORMAT} (another hostmax version wrote it); run the suite again with --fresh",
                dir.display(),
                config.format
            ))
            .into());
        }
        fs::create_dir_all(dir.join("rounds"))?;
        let held = match held {
            Some(held) => held,
            None => lock(dir)?,
        };
        Ok((
            StateDir {
                dir: dir.to_path_buf(),
                _lock: held,
            },
            config,
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// A finished preparation step, if it was done.
    pub fn prep(&self, step: &str) -> anyhow::Result<Option<PrepRecord>> {
        self.read_json(&format!("{step}.json"))
    }

    /// Records the suite's settings again (`--resume` gave it new outputs); the secure-erase
    /// password is never written.
    pub fn save_config(&self, config: &SuiteConfig) -> anyhow::Result<()> {
        self.write_json("suite.json", config)
    }

    /// Records a finished preparation step.
    pub fn save_prep(&self, step: &str, record: &PrepRecord) -> anyhow::Result<()> {
        self.write_json(&format!("{step}.json"), record)
    }

    fn round_file(round: u32, cell: &CellSpec) -> String {
        format!("rounds/r{round:03}-{}.json", cell.key())
    }

    /// Records a finished cell of a round.
    pub fn save_round(&self, record: &CellRound) -> anyhow::Result<()> {
        self.write_json(&Self::round_file(record.round, &record.cell), record)
    }

    /// Every finished cell of every round, by (round, cell key).
    pub fn rounds(&self) -> anyhow::Result<BTreeMap<(u32, String), CellRound>> {
        let mut out = BTreeMap::new();
        let dir = self.dir.join("rounds");
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // Temporary files of an interrupted write start with a dot: never whole, skipped.
            if !name.starts_with('r') || !name.ends_with(".json") {
                continue;
            }
            let record: CellRound = self
                .read_json(&format!("rounds/{name}"))?
                .expect("listed just now");
            out.insert((record.round, record.cell.key()), record);
        }
        Ok(out)
    }

    fn read_json<T: serde::de::DeserializeOwned>(&self, name: &str) -> anyhow::Result<Option<T>> {
        let path = self.dir.join(name);
        match crate::input::read_text(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("{} is damaged", path.display())),
            Err(e) if e.not_found() => Ok(None),
            Err(e) => Err(crate::error::BadInput(format!("the checkpoint's {e}")).into()),
        }
    }

    fn write_json<T: Serialize>(&self, name: &str, value: &T) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(value)?;
        text.push('\n');
        write_atomically(&self.dir.join(name), text.as_bytes())
    }
}

/// Writes `bytes` to `path` whole or not at all ([`crate::output::atomic`]).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    Ok(crate::output::atomic::write_atomically(path, bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temporaries() {
        let dir = std::env::temp_dir().join(format!("hostmax-state-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.json")]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_at_the_lock_file_is_refused_and_what_it_leads_to_kept() {
        let dir = std::env::temp_dir().join(format!("hostmax-lock-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(LOCK_FILE)).unwrap();
        let err = lock(&dir).unwrap_err().to_string();
        assert!(
            err.contains("is a symbolic link, which is not followed; remove it"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        fs::remove_dir_all(&dir).unwrap();
    }
}
