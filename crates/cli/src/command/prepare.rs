//! `hostmax prepare`: every block of each device read once, start to end, before volumes
//! restored from snapshots are measured (until each block has been read once, its first read
//! fetches it from the snapshot's object store, and a benchmark would measure that). The
//! reading is the engine's [`hostmax_engine::read_pass`], through the seam every command's
//! I/O goes through ([`crate::engine::Engine`]); this room resolves the devices,
//! keeps the `--state` file, shows progress and rate on stderr, and stops on a signal with
//! the state saved. It never writes to a device.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use hostmax_device::identity::identify;
use hostmax_engine::{EngineError, PassProgress, ReadPass, TargetInfo};

use crate::error::Stalled;
use serde::{Deserialize, Serialize};

use crate::args::prepare::PrepareArgs;
use crate::devices::{expand_device_args, resolve_targets};
use crate::engine::Engine;
use crate::error::BadInput;
use crate::exit_code;
use crate::output::atomic::write_atomically;
use crate::output::destination::OutputFile;
use crate::plan::identity::{changed_devices, DeviceRecord};
use crate::units::{format_duration, format_mib_per_sec, human_size};

/// The `--state` file: how far each device got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PrepareState {
    devices: Vec<DeviceState>,
}

/// One device of the state: what it is (the record every resumable command keeps, so a
/// continued pass reads the device it started on) and how far it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DeviceState {
    #[serde(flatten)]
    device: DeviceRecord,
    done: u64,
}

/// `--state`, an output too.
const STATE: OutputFile = OutputFile::new("--state", "prepare.state.json", false, "the state");

/// Runs `hostmax prepare` and returns its exit code.
pub fn run(engine: &dyn Engine, args: &PrepareArgs) -> anyhow::Result<i32> {
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
    // What each device is (from sysfs and the probe: no I/O), kept in the state.
    let records: Vec<DeviceRecord> = targets
        .iter()
        .map(|t| DeviceRecord::of(t, None, identify(t)))
        .collect();
    let from = match &args.state {
        Some(file) => {
            // Written while the devices are read: proved writable now, as every output is
            // (no link another user controls, room, a regular file or a free name), and
            // only then read.
            STATE.check(file)?;
            resume_from(file, &targets)?
        }
        None => vec![0; paths.len()],
    };
    let total: u64 = sizes.iter().sum();
    let already: u64 = from.iter().sum();
    if already == total {
        crate::errln!(
            "prepare: every block of {} was read before (--state says so); nothing to do",
            human_size(total)
        );
        return Ok(exit_code::OK);
    }
    if already > 0 {
        crate::errln!(
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
    let outcome = engine.read_pass(&pass, &mut |p| {
        crate::errln!(
            "{}",
            progress_line(p, already, started.elapsed().as_secs_f64())
        );
        if let Some(file) = &args.state {
            if let Err(e) = save(file, &records, p) {
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
                crate::errln!("prepare: stopped: {e}");
                return Ok(exit_code::interrupted(sig));
            }
            return Err(Stalled(format!("prepare stopped: {e}")).into());
        }
        Err(e) => return Err(anyhow::Error::from(e).context("prepare stopped")),
    };
    let read = outcome.done.iter().sum::<u64>() - already;
    let secs = started.elapsed().as_secs_f64();
    if outcome.complete() {
        crate::errln!(
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
    crate::errln!(
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
/// not list, and for a missing file). A device that is not the one the state recorded
/// ([`changed_devices`]: another size or block size, another backing file behind the same loop
/// device, another file by the same name) is refused: the state was made for another volume,
/// and half of this one would never be read.
fn resume_from(file: &Path, targets: &[TargetInfo]) -> anyhow::Result<Vec<u64>> {
    let text = match crate::input::read_text(file) {
        Ok(text) => text,
        Err(e) if e.not_found() => return Ok(vec![0; targets.len()]),
        Err(e) => return Err(BadInput(format!("--state {e}")).into()),
    };
    let state: PrepareState = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!(
            "--state {} is not a prepare state file of this hostmax ({e}); give another path or remove it",
            file.display()
        ))
    })?;
    let recorded: Vec<Option<&DeviceState>> = targets
        .iter()
        .map(|t| state.devices.iter().find(|d| d.device.path == t.path))
        .collect();
    let pairs = recorded
        .iter()
        .zip(targets)
        .filter_map(|(d, t)| Some((&d.as_ref()?.device, t)));
    if let Some(changed) = changed_devices(pairs) {
        return Err(BadInput(format!(
            "--state {} was made for other devices: {changed}; remove the file to start over",
            file.display()
        ))
        .into());
    }
    Ok(recorded
        .iter()
        .zip(targets)
        .map(|(d, t)| d.map_or(0, |d| d.done.min(t.size)))
        .collect())
}

fn save(file: &Path, records: &[DeviceRecord], p: &PassProgress) -> anyhow::Result<()> {
    let state = PrepareState {
        devices: records
            .iter()
            .zip(&p.done)
            .map(|(device, &done)| DeviceState {
                device: device.clone(),
                done,
            })
            .collect(),
    };
    let json = serde_json::to_vec_pretty(&state)?;
    write_atomically(file, &json).with_context(|| format!("write --state {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parsed as cli;
    use crate::engine::fake::{FakeCall, FakeEngine};
    use crate::test_support::{target_files, ScratchDir};

    fn prepare_args(argv: &[&str]) -> PrepareArgs {
        match cli(&[&["prepare"], argv].concat()).command {
            Some(crate::args::Command::Prepare(args)) => args,
            other => panic!("not a prepare: {other:?}"),
        }
    }

    /// Where each read pass the engine was asked for started.
    fn passes_from(engine: &FakeEngine) -> Vec<Vec<u64>> {
        engine
            .calls()
            .into_iter()
            .filter_map(|c| match c {
                FakeCall::ReadPass { from, .. } => Some(from),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_stopped_pass_continues_from_its_state_file_and_a_done_one_reads_nothing() {
        let dir = ScratchDir::new("prepare-state");
        let devices = target_files(&dir, 2, 8 << 20);
        let state = dir.0.join("prepare.state").display().to_string();
        let args = prepare_args(&["--devices", &devices[0], &devices[1], "--state", &state]);

        let stopped = FakeEngine::new().with_pass_stopping_after(2 << 20);
        assert_ne!(run(&stopped, &args).unwrap(), exit_code::OK);
        assert_eq!(passes_from(&stopped), [vec![0, 0]]);
        let read: Vec<Vec<PathBuf>> = stopped
            .calls()
            .into_iter()
            .filter_map(|c| match c {
                FakeCall::ReadPass { targets, .. } => Some(targets),
                _ => None,
            })
            .collect();
        assert_eq!(
            read,
            [devices.iter().map(PathBuf::from).collect::<Vec<_>>()]
        );

        let resumed = FakeEngine::new();
        assert_eq!(run(&resumed, &args).unwrap(), exit_code::OK);
        assert_eq!(passes_from(&resumed), [vec![2 << 20, 2 << 20]]);

        let again = FakeEngine::new();
        assert_eq!(run(&again, &args).unwrap(), exit_code::OK);
        assert!(
            passes_from(&again).is_empty(),
            "every block was read before"
        );
    }

    #[test]
    fn a_device_the_state_file_does_not_name_starts_from_its_start_and_a_resized_one_is_refused() {
        let dir = ScratchDir::new("prepare-other");
        let devices = target_files(&dir, 2, 8 << 20);
        let state = dir.0.join("prepare.state").display().to_string();
        let first = prepare_args(&["--devices", &devices[0], "--state", &state]);
        run(&FakeEngine::new().with_pass_stopping_after(1 << 20), &first).unwrap();
        // Both now: the first from where it stopped, the second (not in the file) from 0.
        let both = prepare_args(&["--devices", &devices[0], &devices[1], "--state", &state]);
        let engine = FakeEngine::new().with_pass_stopping_after(1 << 20);
        run(&engine, &both).unwrap();
        assert_eq!(passes_from(&engine), [vec![1 << 20, 0]]);
        // A device that grew since is not the one the file describes: refused, nothing read.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&devices[1])
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let engine = FakeEngine::new();
        let err = run(&engine, &both).unwrap_err();
        let refusal = err.downcast_ref::<BadInput>().expect("a refusal");
        assert!(
            refusal.0.contains("remove the file to start over"),
            "{}",
            refusal.0
        );
        assert!(passes_from(&engine).is_empty());
    }

    #[test]
    fn another_file_of_the_same_size_under_the_same_name_is_refused_naming_both() {
        let dir = ScratchDir::new("prepare-swapped");
        let devices = target_files(&dir, 2, 8 << 20);
        let state = dir.0.join("prepare.state").display().to_string();
        let args = prepare_args(&["--devices", &devices[0], "--state", &state]);
        run(&FakeEngine::new().with_pass_stopping_after(1 << 20), &args).unwrap();
        // The second file takes the first one's name: same path, same size, another file.
        std::fs::rename(&devices[1], &devices[0]).unwrap();
        let engine = FakeEngine::new();
        let err = run(&engine, &args).unwrap_err();
        let refusal = &err.downcast_ref::<BadInput>().expect("a refusal").0;
        assert!(
            refusal.contains(&format!("{} was file ", devices[0]))
                && refusal.contains(", now file ")
                && refusal.contains("remove the file to start over"),
            "{refusal}"
        );
        assert!(passes_from(&engine).is_empty(), "nothing read");
    }
}
