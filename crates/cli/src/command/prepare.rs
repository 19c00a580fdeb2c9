//! `hostmax prepare`: every block of each device read once, start to end, before volumes
//! restored from snapshots are measured (until each block has been read once, its first read
//! fetches it from the snapshot's object store, and a benchmark would measure that). The
//! reading is the engine's [`hostmax_engine::read_pass`]; this room resolves the devices,
//! keeps the `--state` file, shows progress and rate on stderr, and stops on a signal with
//! the state saved. It never writes to a device.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use hostmax_engine::{read_pass, EngineError, PassProgress, ReadPass};

use crate::error::Stalled;
use serde::{Deserialize, Serialize};

use crate::args::prepare::PrepareArgs;
use crate::devices::{expand_device_args, resolve_targets};
use crate::error::BadInput;
use crate::exit_code;
use crate::output::atomic::write_atomically;
use crate::output::destination::OutputFile;
use crate::units::{format_duration, format_mib_per_sec, human_size};

/// The `--state` file: how far each device got.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct PrepareState {
    devices: Vec<DeviceState>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DeviceState {
    path: PathBuf,
    size: u64,
    done: u64,
}

/// `--state`, an output too.
const STATE: OutputFile = OutputFile::new("--state", "prepare.state.json", false, "the state");

/// Runs `hostmax prepare` and returns its exit code.
pub fn run(args: &PrepareArgs) -> anyhow::Result<i32> {
    if args.bs < 4096 || !args.bs.is_multiple_of(4096) || args.bs > 64 << 20 {
        return Err(BadInput(format!(
            "--bs {} is not a multiple of 4k between 4k and 64m; give e.g. --bs 1m",
            args.bs
        ))
        .into());
    }
    let targets = resolve_targets(&expand_device_args(&args.devices)?)?;
    let paths: Vec<PathBuf> = targets.iter().map(|t| t.path.clone()).collect();
    let sizes: Vec<u64> = targets.iter().map(|t| t.size).collect();
    let from = match &args.state {
        Some(file) => {
            // Written while the devices are read: proved writable now, as every output is
            // (no link another user controls, room, a regular file or a free name), and
            // only then read.
            STATE.check(file)?;
            resume_from(file, &paths, &sizes)?
        }
        None => vec![0; paths.len()],
    };
    let total: u64 = sizes.iter().sum();
    let already: u64 = from.iter().sum();
    if already == total {
        eprintln!(
            "prepare: every block of {} was read before (--state says so); nothing to do",
            human_size(total)
        );
        return Ok(exit_code::OK);
    }
    if already > 0 {
        eprintln!(
            "prepare: continuing: {} of {} read before",
            human_size(already),
            human_size(total)
        );
    }
    let pass = ReadPass::new(paths.clone())
        .with_from(from)
        .with_block_size(args.bs as u32)
        .with_depth(args.iodepth);
    let started = Instant::now();
    let mut saved: Option<anyhow::Error> = None;
    let watch = crate::signals::watch();
    let outcome = read_pass(&pass, |p| {
        eprintln!(
            "{}",
            progress_line(p, already, started.elapsed().as_secs_f64())
        );
        if let Some(file) = &args.state {
            if let Err(e) = save(file, &paths, p) {
                saved.get_or_insert(e);
            }
        }
        saved.is_none() && watch.signal() == 0
    });
    if let Some(e) = saved {
        return Err(e);
    }
    let outcome = match outcome {
        Ok(outcome) => outcome,
        // A device that stopped answering is a device fault (exit 6), like a stall in a run.
        Err(e) if got_no_answer(&e) => {
            let sig = watch.signal();
            if sig != 0 {
                // Stopped by a signal while waiting for a read that never came back: the
                // signal decides the exit code (as in every command), the device is named.
                eprintln!("prepare: stopped: {e}");
                return Ok(exit_code::interrupted(sig));
            }
            return Err(Stalled(format!("prepare stopped: {e}")).into());
        }
        Err(e) => return Err(anyhow::Error::from(e).context("prepare stopped")),
    };
    let read = outcome.done.iter().sum::<u64>() - already;
    let secs = started.elapsed().as_secs_f64();
    if outcome.complete() {
        eprintln!(
            "prepare: every block of {} device{} read once: {} in {} ({} MiB/s)",
            paths.len(),
            if paths.len() == 1 { "" } else { "s" },
            human_size(read),
            format_duration(started.elapsed()),
            format_mib_per_sec(read as f64 / secs.max(1e-9))
        );
        return Ok(exit_code::OK);
    }
    let how = match &args.state {
        Some(file) => format!(
            "run the same command (with --state {}) to continue from there",
            file.display()
        ),
        None => "give --state FILE to be able to continue where a prepare stopped".to_string(),
    };
    eprintln!(
        "prepare: stopped with {} of {} read; {how}",
        human_size(outcome.done.iter().sum()),
        human_size(total)
    );
    Ok(exit_code::interrupted(watch.signal()))
}

/// Whether a read of the pass got no answer within its patience (the device stopped).
fn got_no_answer(e: &EngineError) -> bool {
    matches!(e, EngineError::Read { source, .. } if source.kind() == std::io::ErrorKind::TimedOut)
}

/// "prepare: 1.2 GiB of 4.0 GiB (30%), 850.0 MiB/s, 3 s left".
fn progress_line(p: &PassProgress, already: u64, secs: f64) -> String {
    let total: u64 = p.sizes.iter().sum();
    let done: u64 = p.done.iter().sum();
    let rate = (done - already) as f64 / secs.max(1e-9);
    let left = if rate > 0.0 {
        format!(", {:.0} s left", (total - done) as f64 / rate)
    } else {
        String::new()
    };
    format!(
        "prepare: {} of {} ({:.0}%), {} MiB/s{left}",
        human_size(done),
        human_size(total),
        100.0 * done as f64 / total.max(1) as f64,
        format_mib_per_sec(rate)
    )
}

/// Where each device starts: what the state `file` says it had done (0 for a device it does
/// not list, and for a missing file). A device whose size changed is refused: the state was
/// made for another volume.
fn resume_from(file: &Path, paths: &[PathBuf], sizes: &[u64]) -> anyhow::Result<Vec<u64>> {
    let text = match crate::input::read_text(file) {
        Ok(text) => text,
        Err(e) if e.not_found() => return Ok(vec![0; paths.len()]),
        Err(e) => return Err(BadInput(format!("--state {e}")).into()),
    };
    let state: PrepareState = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!(
            "--state {} is not a prepare state file ({e}); give another path or remove it",
            file.display()
        ))
    })?;
    paths
        .iter()
        .zip(sizes)
        .map(|(path, &size)| match state.devices.iter().find(|d| &d.path == path) {
            None => Ok(0),
            Some(d) if d.size == size && d.done <= size => Ok(d.done),
            Some(d) => Err(BadInput(format!(
                "--state {} is for a {}-byte {}, which has {size} bytes now; remove the file to start over",
                file.display(),
                d.size,
                path.display()
            ))
            .into()),
        })
        .collect()
}

fn save(file: &Path, paths: &[PathBuf], p: &PassProgress) -> anyhow::Result<()> {
    let state = PrepareState {
        devices: paths
            .iter()
            .zip(p.sizes.iter().zip(&p.done))
            .map(|(path, (&size, &done))| DeviceState {
                path: path.clone(),
                size,
                done,
            })
            .collect(),
    };
    let json = serde_json::to_vec_pretty(&state)?;
    write_atomically(file, &json).with_context(|| format!("write --state {}", file.display()))
}
