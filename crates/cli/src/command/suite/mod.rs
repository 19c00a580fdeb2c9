//! `hostmax suite`: the CloudHarmony block-storage tests (iops, throughput, latency) done
//! natively, resumably, with SNIA PTS steady state.
//!
//! - [`crate::args::suite::SuiteArgs`]: the command line; [`run`] checks it (device resolution and write safety
//!   are the main run's: [`crate::plan::plan_run`], [`hostmax_device::check_write_safety`]),
//!   sets the suite up ([`SuiteConfig`]) and runs it.
//! - [`matrix`]: the tests ([`SuiteTest`]), their cells ([`matrix::CellSpec`], keys like `4k_65_35`)
//!   and each cell's engine [`hostmax_engine::Workload`].
//! - [`runner`]: purge (ATA secure erase when asked, else discard, else zero fill), preconditioning (2 passes of sequential 128k
//!   writes), then rounds of every cell until steady state
//!   ([`hostmax_aggregate::SteadyStateRule`]) or `--max-rounds`, with a progress bar and
//!   signal handling.
//! - [`state`]: the checkpoint directory ([`StateDir`]): every finished cell of every round is
//!   a file written atomically, so `--resume DIR` repeats no finished cell.
//! - [`report`]: the JSON report ([`report::SuiteReport`]) built from the checkpoint alone, and the
//!   text table; [`charts`] draws its pictures with [`crate::chart`] and [`html`] puts it all
//!   on one self-contained page.
//!
//! The state directory: `--state-dir DIR`, else beside `--json PATH` (or else `--html PATH`)
//! as `PATH` without its extension plus `.state` (`iops.json` -> `iops.state/`), else
//! `./hostmax-suite-TEST.state/`.
//! A fresh suite refuses a directory that already holds a suite's state.

pub mod charts;
pub mod html;
pub mod matrix;
pub mod report;
pub mod runner;
pub mod spec;
pub mod state;
mod table;

use std::path::{Path, PathBuf};

use hostmax_engine::{Misfit, SettingError, TargetKind, Workload};

use crate::args::suite::{SuiteArgs, SuiteSize};
pub use matrix::{Mix, SuiteTest};
pub use report::SuiteResult;
pub use state::{StateDir, SuiteConfig};

use crate::engine::Engine;
use crate::error::BadInput;
use crate::output::destination::{self, Destination};
use crate::output::export::Outputs;
use crate::output::fio_json::FioJson;
use crate::output::json::JsonReport;
use crate::plan::{plan_run, PlanRequest};
use crate::units::{format_size, human_size};
use hostmax_device::{check_write_safety, SystemSources, WriteSafety};
use runner::SuiteRunner;
use state::{DeviceRecord, STATE_FORMAT};

/// The tested range is whole MiB, so every block size up to 1m divides it.
const RANGE_ALIGN: u64 = 1 << 20;

/// Runs `hostmax suite` (fresh or resumed) and writes its reports. Returns the exit code: 0,
/// 1 when a promised figure (spec options) was not met, 3 when I/O errors happened, 128+N
/// when signal N stopped it.
pub fn run(engine: &dyn Engine, args: &SuiteArgs) -> anyhow::Result<i32> {
    run_hearing(engine, args, crate::signals::watch())
}

/// [`run`], with the signals `signals` hears (the process's, but in unit tests).
fn run_hearing(
    engine: &dyn Engine,
    args: &SuiteArgs,
    signals: &'static crate::signals::SignalWatch,
) -> anyhow::Result<i32> {
    let args = &take_test_from_devices(args)?;
    let (config, state, targets, outputs) = match &args.resume {
        Some(dir) => resume(engine, dir, args)?,
        None => start(engine, args)?,
    };
    for note in &config.notes {
        crate::errln!("hostmax suite: {note}");
    }
    crate::errln!(
        "hostmax suite {}: {} cell(s) x up to {} rounds on {} device(s); checkpoint in {}",
        config.test,
        config.cells.len(),
        config.max_rounds,
        targets.len(),
        state.path().display()
    );
    let runner = SuiteRunner::new(engine, config, state, targets, args.allow_write, signals);
    let outcome = runner.run()?;
    let interrupted = outcome.signal != 0;
    let report = report::build(
        &runner.config,
        &outcome.records,
        outcome.purge,
        outcome.precondition,
        outcome.signal,
    )?;
    let rounds = outcome.records.values().map(|r| r.report.clone()).collect();
    let result = SuiteResult { report, rounds };
    emit(&result, outputs)?;
    let report = &result.report;
    if interrupted {
        // The password is not in the checkpoint: the resume needs it while the purge is to do.
        let config = &runner.config;
        let password_needed =
            config.secure_erase && config.purge && report.preparation.purge.record.is_none();
        crate::errln!(
            "hostmax suite: interrupted by {}; continue with: hostmax suite --resume {}{}{}",
            crate::signals::signal_name(outcome.signal),
            runner.state.path().display(),
            if config.writes_block_devices {
                " --allow-write"
            } else {
                ""
            },
            if password_needed {
                " --secure-erase-password-file PATH (or HOSTMAX_SECURE_ERASE_PASSWORD set)"
            } else {
                ""
            }
        );
        return Ok(crate::exit_code::interrupted(outcome.signal));
    }
    let errors: u64 = report.cells.values().map(|c| c.errors).sum();
    let promise_failed = report.spec.as_ref().is_some_and(|s| {
        s.volumes
            .iter()
            .chain(&s.host)
            .flat_map(|v| &v.checks)
            .any(|c| c.pass == Some(false))
            || s.consistency.as_ref().is_some_and(|c| !c.pass)
    });
    // Promises of which no cell showed one: not a pass.
    let nothing_judged = report.spec.as_ref().is_some_and(|s| {
        s.consistency.is_none()
            && s.volumes
                .iter()
                .chain(&s.host)
                .flat_map(|v| &v.checks)
                .all(|c| c.pass.is_none())
    });
    Ok(crate::exit_code::Outcome {
        io_errors: errors > 0,
        verdict_failed: promise_failed,
        not_concluded: nothing_judged,
        ..Default::default()
    }
    .code())
}

/// Prints the table (stdout, or stderr when the JSON goes there) and writes JSON and HTML.
fn emit(result: &SuiteResult, outputs: Outputs<SuiteResult>) -> anyhow::Result<()> {
    let table = table::render(&result.report);
    destination::print_beside_json(&table, outputs.json());
    outputs.write(result)
}

/// The suite's outputs, checked now, before any I/O: `--json`, then the `--html` page (with
/// the `--curve` report in it), then the `--fio-json` folder.
fn declare_outputs(
    json: Option<&Path>,
    html: Option<&Path>,
    curve: Option<&Path>,
    fio_json: Option<&Path>,
) -> Result<Outputs<SuiteResult>, BadInput> {
    Outputs::new()
        .declare(json, JsonReport)?
        .declare(
            html,
            html::SuitePage {
                curve: curve.map(Path::to_path_buf),
            },
        )?
        .declare(fio_json, FioJson)
}

/// `hostmax suite --devices /dev/sdb iops` gives `iops` to `--devices` (it takes several
/// values): a last device that names a test and is no file is the test. Without a test (and
/// without `--resume`) the error names the three.
pub fn take_test_from_devices(args: &SuiteArgs) -> Result<SuiteArgs, BadInput> {
    use clap::ValueEnum;
    let mut args = args.clone();
    if args.test.is_some() || args.resume.is_some() {
        return Ok(args);
    }
    let named = args
        .devices
        .last()
        .and_then(|d| d.to_str())
        .filter(|d| !std::path::Path::new(d).exists())
        .and_then(|d| SuiteTest::from_str(d, true).ok());
    match named {
        Some(test) => {
            args.devices.pop();
            args.test = Some(test);
            Ok(args)
        }
        None => Err(BadInput(
            "which test? give iops, throughput or latency before --devices (hostmax suite iops --devices ...), or --resume DIR; see 'hostmax suite --help'"
                .into(),
        )),
    }
}

/// A suite set up to run: its settings, checkpoint, targets and declared outputs.
type Setup = (
    SuiteConfig,
    StateDir,
    Vec<hostmax_engine::TargetInfo>,
    Outputs<SuiteResult>,
);

/// Checks a fresh suite's options, resolves its devices and makes its checkpoint directory:
/// each step below in turn, every refusal before anything is written.
fn start(engine: &dyn Engine, args: &SuiteArgs) -> anyhow::Result<Setup> {
    let password = secure_erase_password(args, args.secure_erase)?;
    if args.secure_erase && password.is_none() {
        return Err(BadInput(format!(
            "--secure-erase: no password given; give the temporary password by {PASSWORD_WAYS}"
        ))
        .into());
    }
    let test = take_test_from_devices(args)?
        .test
        .expect("take_test_from_devices gives a test unless --resume");
    let block_sizes = choose_block_sizes(test, args)?;
    let mut mixes = choose_mixes(test, args)?;
    let (size, active_range) = tested_size(args)?;
    let outputs = declare_outputs(
        args.json.as_deref(),
        args.html.as_deref(),
        args.curve.as_deref(),
        args.fio_json.as_deref(),
    )?;
    // Device resolution and the checks every run gets are the main run's.
    let plan = plan_run(
        &PlanRequest {
            devices: args.devices.clone(),
            block_size: u64::from(*block_sizes.iter().max().expect("at least one block size")),
            working_set: size,
            allow_write: args.allow_write,
            force: args.force,
            cpus: args.cpus.as_ref().map(|list| list.0.clone()),
            ..PlanRequest::default()
        },
        engine.safety_sources(),
    )?;
    let targets = plan.targets;
    check_outputs_apart(&outputs, args.curve.as_deref(), &targets)?;
    check_block_sizes_fit(&block_sizes, &plan.workload, &targets)?;
    let mut notes = Vec::new();
    let range = tested_range(&targets, size, active_range, &mut notes)?;
    let writing = choose_writes(test, args, &block_sizes, &mut mixes, &targets, &mut notes)?;
    check_suite_writes(
        &targets,
        writing.writes,
        WriteSafety::new(args.allow_write, args.force),
        &engine.safety_sources(),
    )?;
    let cells = matrix::cells(&block_sizes, &mixes);
    let tracked = test.tracked_cell(&cells).expect("cells are not empty");
    if !writing.read_only {
        notes.extend(tracked_elsewhere(test, tracked));
    }
    let state_dir = new_state_dir(test, args, &mut notes)?;
    let mut config = SuiteConfig {
        format: STATE_FORMAT,
        test,
        devices: device_records(&args.devices, &targets),
        cells,
        tracked,
        metric: test.metric(),
        random: test.random(),
        iodepth: args.iodepth.unwrap_or(test.default_iodepth()),
        numjobs: args.numjobs,
        range,
        cell_time_ms: args.cell_time.as_millis() as u64,
        ramp_ms: args.ramp.as_millis() as u64,
        max_rounds: args.max_rounds,
        seed: args
            .seed
            .unwrap_or(hostmax_engine::Workload::default().seed),
        cpus: plan.cpus,
        purge: writing.purge,
        precondition: writing.precondition,
        writes_block_devices: writing.writes && writing.block_devices,
        read_only: writing.read_only,
        // The checkpoint keeps them absolute (`-` stays `-`).
        json: kept_path(&outputs, &destination::JSON),
        html: kept_path(&outputs, &destination::HTML),
        fio_json: kept_path(&outputs, &destination::FIO_JSON_FOLDER),
        notes,
        promises: None,
        sleep_between_ms: args.sleep_between.as_millis() as u64,
        precondition_time_ms: args.precondition_time.map(|d| d.as_millis() as u64),
        secure_erase: password.is_some(),
        secure_erase_password: password,
        curve: match &args.curve {
            Some(path) => {
                html::load_curve(path)?;
                Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
            }
            None => None,
        },
        run_id: Some(crate::provenance::new_run_id()),
    };
    // The depth and the jobs against the engine's ranges, before any cell.
    let depth = hostmax_engine::Workload::default()
        .with_iodepth(config.iodepth)
        .with_numjobs(config.numjobs);
    depth.check().map_err(|e| BadInput::from(&e))?;
    if config.cell_time_ms == 0 {
        return Err(BadInput(
            "--cell-time 0: each cell needs a measured time; give e.g. --cell-time 60s".into(),
        )
        .into());
    }
    config.promises = spec::promises(&args.spec, &targets)?;
    // The checkpoint takes a file per cell while the suite runs: proved writable now.
    destination::check_directory("--state-dir", &state_dir)?;
    let state = StateDir::create(&state_dir, &config)?;
    Ok((config, state, targets, outputs))
}

/// A note when the cell steady state tracks is not the test's standard one (which is not in
/// the matrix asked for).
fn tracked_elsewhere(test: SuiteTest, tracked: matrix::CellSpec) -> Option<String> {
    let standard = test.tracked_cell(&matrix::cells(
        &test.default_block_sizes(),
        &test.default_mixes(),
    ))?;
    (standard != tracked).then(|| {
        format!(
            "steady state tracks {} ({} is not in the matrix)",
            tracked.key(),
            standard.key()
        )
    })
}

/// What the checkpoint keeps of each device, to know it again on `--resume`.
fn device_records(
    given: &[std::ffi::OsString],
    targets: &[hostmax_engine::TargetInfo],
) -> Vec<DeviceRecord> {
    targets
        .iter()
        .map(|t| {
            DeviceRecord::of(
                t,
                crate::devices::given_name(given, &t.path),
                hostmax_device::identity::identify_with_signatures(t),
            )
        })
        .collect()
}

/// The mixes a fresh suite runs: `--mixes` (repeats dropped) or the test's own; a sequential
/// test has only 100/0 and 0/100.
fn choose_mixes(test: SuiteTest, args: &SuiteArgs) -> Result<Vec<Mix>, BadInput> {
    let mixes = if args.mixes.is_empty() {
        test.default_mixes()
    } else {
        dedupe(args.mixes.clone())
    };
    if !test.random() {
        if let Some(m) = mixes.iter().find(|m| m.read != 0 && m.read != 100) {
            return Err(BadInput(format!(
                "--mixes {m}: the {test} test is sequential, which has only 100/0 and 0/100; drop {m}"
            )));
        }
    }
    Ok(mixes)
}

/// `--size` as the tested bytes (whole MiB) or, as fio's `--size 50%`, an active-range share,
/// with `--active-range`: (bytes, percent).
fn tested_size(args: &SuiteArgs) -> Result<(Option<u64>, Option<u8>), BadInput> {
    let (size, active_range) = match args.size {
        Some(SuiteSize::Bytes(bytes)) => (Some(bytes), args.active_range),
        Some(SuiteSize::Share(percent)) => (None, Some(percent)),
        None => (None, args.active_range),
    };
    if let Some(size) = size {
        if size == 0 || !size.is_multiple_of(RANGE_ALIGN) {
            return Err(BadInput(format!(
                "--size {}: the tested range must be whole MiB (at least 1m); use e.g. {}",
                format_size(size),
                format_size((size / RANGE_ALIGN).max(1) * RANGE_ALIGN)
            )));
        }
    }
    Ok((size, active_range))
}

/// Each block size of the matrix against every target (the plan checked only the largest).
fn check_block_sizes_fit(
    block_sizes: &[u32],
    planned: &Workload,
    targets: &[hostmax_engine::TargetInfo],
) -> Result<(), BadInput> {
    for &bs in block_sizes {
        let workload = planned.clone().with_block_size(bs);
        for t in targets {
            match hostmax_engine::check_fits(&workload, t) {
                Ok(()) => {}
                Err(Misfit::BlockSize {
                    logical_block_size, ..
                }) => {
                    let label = matrix::size_label(bs);
                    return Err(BadInput(format!(
                        "block size {label} does not fit {} (logical block size {logical_block_size}): leave it out with --skip-bs {label}",
                        t.path.display(),
                    )));
                }
                Err(misfit) => {
                    let refused = SettingError::new(
                        format!("{}: {misfit}", t.path.display()),
                        misfit.settings(),
                    );
                    return Err(BadInput::from(&refused));
                }
            }
        }
    }
    Ok(())
}

/// The bytes of each device the suite tests: `--size`, the active range's share of the
/// smallest device, or the smallest device whole (in MiB); what it chose goes to `notes`.
fn tested_range(
    targets: &[hostmax_engine::TargetInfo],
    size: Option<u64>,
    active_range: Option<u8>,
    notes: &mut Vec<String>,
) -> Result<u64, BadInput> {
    let smallest = targets
        .iter()
        .map(|t| t.size)
        .min()
        .expect("plan_run gives targets");
    let range = match (size, active_range) {
        (Some(size), _) => size,
        (None, Some(percent)) => {
            let share = (u128::from(smallest) * u128::from(percent) / 100) as u64 / RANGE_ALIGN
                * RANGE_ALIGN;
            notes.push(format!(
                "active range {percent}%: each device is tested over its first {}",
                human_size(share)
            ));
            share
        }
        (None, None) => {
            if targets
                .iter()
                .any(|t| t.size / RANGE_ALIGN != smallest / RANGE_ALIGN)
            {
                notes.push(format!(
                    "the devices differ in size: each is tested over its first {} (the smallest one's size)",
                    human_size(smallest / RANGE_ALIGN * RANGE_ALIGN)
                ));
            }
            smallest / RANGE_ALIGN * RANGE_ALIGN
        }
    };
    if range < RANGE_ALIGN {
        return Err(BadInput(format!(
            "{} is smaller than 1 MiB, too small for the suite; give larger devices",
            targets
                .iter()
                .find(|t| t.size < RANGE_ALIGN)
                .map_or_else(|| "a device".into(), |t| t.path.display().to_string())
        )));
    }
    Ok(range)
}

/// What a fresh suite writes ([`choose_writes`]).
struct SuiteWrites {
    /// Block devices without `--allow-write`: reads only.
    read_only: bool,
    purge: bool,
    precondition: bool,
    /// Anything at all is written (purge, precondition or a writing mix).
    writes: bool,
    block_devices: bool,
}

/// Whether the suite writes: without `--allow-write` on block devices it keeps to reads (the
/// writing mixes dropped, no purge, no preconditioning: said in `notes`; an explicit writing
/// `--mixes` is refused); `mixes` keeps what runs.
fn choose_writes(
    test: SuiteTest,
    args: &SuiteArgs,
    block_sizes: &[u32],
    mixes: &mut Vec<Mix>,
    targets: &[hostmax_engine::TargetInfo],
    notes: &mut Vec<String>,
) -> Result<SuiteWrites, BadInput> {
    let block_devices = targets.iter().any(|t| t.kind == TargetKind::BlockDevice);
    let read_only = block_devices && !args.allow_write;
    let (purge, precondition) = if read_only {
        let explicit_mixes = !args.mixes.is_empty();
        if let Some(m) = mixes.iter().find(|m| m.writes()).filter(|_| explicit_mixes) {
            return Err(BadInput(format!(
                "--mixes {m} writes, and writing to block devices needs --allow-write (destroys their data); add it, or use --mixes 100/0"
            )));
        }
        mixes.retain(|m| !m.writes());
        let default_tracked = test.tracked_cell(&matrix::cells(block_sizes, &test.default_mixes()));
        notes.push(format!(
            "read-only suite (no --allow-write): only the 100/0 mix runs, without purge or preconditioning{}; add --allow-write for the full suite (destroys the devices' data)",
            default_tracked
                .map(|c| format!(", and steady state tracks {} instead of {}", matrix::CellSpec { mix: Mix { read: 100 }, ..c }.key(), c.key()))
                .unwrap_or_default()
        ));
        (false, false)
    } else {
        (!args.no_purge, !args.no_precondition)
    };
    if mixes.is_empty() {
        return Err(BadInput(
            "no mix left to run: give --mixes with at least one mix".into(),
        ));
    }
    Ok(SuiteWrites {
        read_only,
        purge,
        precondition,
        writes: purge || precondition || mixes.iter().any(|m| m.writes()),
        block_devices,
    })
}

/// The checkpoint directory of a fresh suite: `--state-dir`, or the default beside its
/// outputs; one that holds a suite already is refused, or with `--fresh` a new one beside it
/// (said in `notes`).
fn new_state_dir(
    test: SuiteTest,
    args: &SuiteArgs,
    notes: &mut Vec<String>,
) -> Result<PathBuf, BadInput> {
    let state_dir = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => default_state_dir(test, args.json.as_deref(), args.html.as_deref()),
    };
    if !state_dir.join("suite.json").exists() {
        return Ok(state_dir);
    }
    if !args.fresh {
        return Err(BadInput(format!(
            "{} already holds a suite's state: continue it (or show a finished one again) with --resume {}, run afresh beside it with --fresh, or choose --state-dir",
            state_dir.display(),
            state_dir.display()
        )));
    }
    let fresh = fresh_state_dir(&state_dir);
    notes.push(format!(
        "{} holds an earlier suite (kept); running afresh in {} (--fresh)",
        state_dir.display(),
        fresh.display()
    ));
    Ok(fresh)
}

/// Reopens a checkpoint, checks that its devices are the same ones, and rechecks write safety.
fn resume(engine: &dyn Engine, dir: &Path, args: &SuiteArgs) -> anyhow::Result<Setup> {
    let (state, mut config) = StateDir::open(dir)?;
    destination::check_directory("--resume", dir).map_err(|e| {
        BadInput(format!(
            "{}; the checkpoint takes a file per cell: make room there, then resume",
            problem_of(&e)
        ))
    })?;
    resume_secure_erase(dir, &state, &mut config, args)?;
    if config.writes_block_devices && !args.allow_write {
        return Err(BadInput(format!(
            "the suite in {} writes to block devices: resume it with --resume {} --allow-write",
            dir.display(),
            dir.display()
        ))
        .into());
    }
    let targets = resumed_targets(dir, &mut config, args, engine.safety_sources())?;
    check_suite_writes(
        &targets,
        config.purge || config.precondition || config.cells.iter().any(|c| c.mix.writes()),
        WriteSafety::new(args.allow_write, args.force),
        &engine.safety_sources(),
    )?;
    let outputs = resumed_outputs(dir, &state, &mut config, args, &targets)?;
    // The checkpoint fixed the CPUs: a refusal's fix must not be to change them, which
    // --resume cannot.
    if let Some(cpus) = &config.cpus {
        check_resumed_cpus(cpus, &crate::plan::HostLimits::read(engine.safety_sources())?).map_err(|e| {
            BadInput(format!(
                "{}; the suite in {} keeps its CPUs (--cpus) in its checkpoint and --resume cannot change it: make it usable again, or start a new suite (--fresh)",
                problem_of(&e),
                dir.display()
            ))
        })?;
    }
    let done = state.rounds()?.len();
    crate::errln!(
        "hostmax suite: resuming from {} ({done} cell run(s) already done)",
        dir.display()
    );
    Ok((config, state, targets, outputs))
}

/// A resumed suite's devices, planned again and each proved the one the suite started on (by
/// path or followed name, size, block size, kind and what the kernel says it is); a name that
/// now leads elsewhere to the same device is followed and recorded in `config`.
fn resumed_targets(
    dir: &Path,
    config: &mut SuiteConfig,
    args: &SuiteArgs,
    sources: SystemSources,
) -> anyhow::Result<Vec<hostmax_engine::TargetInfo>> {
    check_devices_there(dir, config)?;
    let targets = plan_run(
        &PlanRequest {
            devices: config
                .devices
                .iter()
                .map(|d| d.name().into_os_string())
                .collect(),
            block_size: u64::from(
                config
                    .cells
                    .iter()
                    .map(|c| c.block_size)
                    .max()
                    .unwrap_or(4096),
            ),
            working_set: Some(config.range),
            allow_write: args.allow_write,
            force: args.force,
            ..PlanRequest::default()
        },
        sources,
    )?
    .targets;
    check_same_devices(dir, config, &targets)?;
    // Followed names: the devices are where their given names lead now.
    for (t, d) in targets.iter().zip(config.devices.iter_mut()) {
        if d.path != t.path {
            crate::errln!(
                "hostmax suite: {} now leads to {} (was {}); the same device, resuming on it",
                d.name().display(),
                t.path.display(),
                d.path.display()
            );
            d.path = t.path.clone();
        }
    }
    Ok(targets)
}

/// Before a resumed suite plans its devices: each is still there (a device or file that is
/// gone is not made anew, as planning with --size would make a missing file) and of the
/// size it had (said now, since planning's refusal would offer --size, which --resume
/// cannot change).
fn check_devices_there(dir: &Path, config: &SuiteConfig) -> anyhow::Result<()> {
    let name_of = DeviceRecord::name;
    if let Some(gone) = config.devices.iter().find(|d| !name_of(d).exists()) {
        return Err(BadInput(format!(
            "{} of the suite in {} is gone; put it back, or start a new suite",
            name_of(gone).display(),
            dir.display()
        ))
        .into());
    }
    // A device of another size is not the suite's: said before planning, whose refusal
    // would offer --size, which --resume cannot change.
    for d in &config.devices {
        if let Ok(now) = hostmax_device::probe(&name_of(d)) {
            if now.size != d.size {
                return Err(BadInput(format!(
                    "{} is not the device the suite started on (now {}, then {}); give the suite its own device back, or start a new suite (--fresh)",
                    name_of(d).display(),
                    human_size(now.size),
                    human_size(d.size)
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// A resumed suite's planned devices are the ones it started on: all there, each the device
/// recorded (the check every resumable command makes,
/// [`crate::plan::identity::changed_devices`]: path unless followed by a given name, size,
/// block size, kind, and what the kernel says it is: two same-size volumes that swapped names
/// after a reboot differ there).
fn check_same_devices(
    dir: &Path,
    config: &SuiteConfig,
    targets: &[hostmax_engine::TargetInfo],
) -> anyhow::Result<()> {
    if targets.len() != config.devices.len() {
        return Err(BadInput(format!(
            "the devices of the suite in {} are not all there any more; it cannot be resumed",
            dir.display()
        ))
        .into());
    }
    if let Some(changed) =
        crate::plan::identity::changed_devices(config.devices.iter().zip(targets))
    {
        return Err(BadInput(format!(
            "the suite in {} started on other devices: {changed}; give the suite its own devices back, or start a new suite",
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// A resumed suite's outputs: the checkpoint's, or those given again with `--resume` (kept in
/// the checkpoint for the next resume), declared and checked as a fresh suite's.
fn resumed_outputs(
    dir: &Path,
    state: &StateDir,
    config: &mut SuiteConfig,
    args: &SuiteArgs,
    targets: &[hostmax_engine::TargetInfo],
) -> anyhow::Result<Outputs<SuiteResult>> {
    let given_json = args.json.is_some();
    let given_html = args.html.is_some();
    let given_fio_json = args.fio_json.is_some();
    if given_fio_json {
        config.fio_json.clone_from(&args.fio_json);
    }
    if given_json {
        config.json.clone_from(&args.json);
    }
    if given_html {
        config.html.clone_from(&args.html);
    }
    let output_fix = |e: BadInput| {
        let option = e.0.split([' ', ':']).next().unwrap_or_default().to_string();
        let given = (option == destination::JSON.option && given_json)
            || (option == destination::HTML.option && given_html)
            || (option == destination::FIO_JSON_FOLDER.option && given_fio_json);
        if given || !option.starts_with("--") {
            return e;
        }
        BadInput(format!(
            "{}; the suite in {} keeps this path in its checkpoint: give another with --resume {} {option} PATH, or make it usable again",
            problem_of(&e),
            dir.display(),
            dir.display()
        ))
    };
    let outputs = declare_outputs(
        config.json.as_deref(),
        config.html.as_deref(),
        config.curve.as_deref(),
        config.fio_json.as_deref(),
    )
    .map_err(output_fix)?;
    check_outputs_apart(&outputs, config.curve.as_deref(), targets).map_err(output_fix)?;
    if given_json || given_html || given_fio_json {
        // Kept for the next --resume too, absolute (`-` stays `-`).
        config.json = kept_path(&outputs, &destination::JSON);
        config.html = kept_path(&outputs, &destination::HTML);
        config.fio_json = kept_path(&outputs, &destination::FIO_JSON_FOLDER);
        state.save_config(config)?;
    }
    Ok(outputs)
}

/// A refusal's problem without its fix (the text before its last `; `).
fn problem_of(e: &BadInput) -> &str {
    e.0.rsplit_once("; ").map_or(e.0.as_str(), |(p, _)| p)
}

/// Checks the CPUs a resumed suite runs on: each still online and in this process's affinity
/// mask.
fn check_resumed_cpus(cpus: &[usize], limits: &crate::plan::HostLimits) -> Result<(), BadInput> {
    let gone: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !limits.online_cpus.contains(c) || !limits.allowed_cpus.contains(c))
        .collect();
    if gone.is_empty() {
        return Ok(());
    }
    Err(BadInput(format!(
        "CPU {} of its --cpus {} is not online or not in this process's affinity mask now (allowed: {}); bring it back",
        hostmax_device::format_cpu_list(&gone),
        hostmax_device::format_cpu_list(cpus),
        hostmax_device::format_cpu_list(&limits.allowed_cpus)
    )))
}

pub use crate::engine::PASSWORD_ENV;

/// The ways to give the ATA secure erase password, as messages name them.
const PASSWORD_WAYS: &str =
    "--secure-erase-password-file PATH (its first line) or the environment variable HOSTMAX_SECURE_ERASE_PASSWORD";

/// The most bytes a password file may hold: a password is a line, not a file of data.
const PASSWORD_FILE_LIMIT: u64 = 4096;

/// The ATA secure erase password given: from `--secure-erase-password-file`, else (when
/// `from_env`) from [`PASSWORD_ENV`]. `--secure-erase-password` on the command line, where
/// every user can read it, is refused.
fn secure_erase_password(args: &SuiteArgs, from_env: bool) -> Result<Option<String>, BadInput> {
    if args.secure_erase_password.is_some() {
        return Err(BadInput(format!(
            "--secure-erase-password: a password on the command line is readable by every user of this host (/proc/PID/cmdline), so it is not taken; give it by {PASSWORD_WAYS}"
        )));
    }
    if let Some(path) = &args.secure_erase_password_file {
        return read_password_file(path).map(Some);
    }
    if !from_env {
        return Ok(None);
    }
    Ok(std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()))
}

/// The first line of the password file `path` (a regular file of at most
/// [`PASSWORD_FILE_LIMIT`] bytes).
fn read_password_file(path: &Path) -> Result<String, BadInput> {
    let shown = path.display();
    let bytes = crate::input::read_bounded(path, PASSWORD_FILE_LIMIT)
        .map_err(|e| BadInput(format!("--secure-erase-password-file {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        BadInput(format!(
            "--secure-erase-password-file {shown}: is not UTF-8 text; write the password on its first line"
        ))
    })?;
    let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
    if line.is_empty() {
        return Err(BadInput(format!(
            "--secure-erase-password-file {shown}: its first line is empty; write the password on it"
        )));
    }
    Ok(line.to_string())
}

/// The ATA secure erase password on `--resume`: the checkpoint does not keep it, so a suite
/// whose purge (by secure erase) is not done yet needs it given again; one that never used it
/// refuses it.
fn resume_secure_erase(
    dir: &Path,
    state: &StateDir,
    config: &mut SuiteConfig,
    args: &SuiteArgs,
) -> anyhow::Result<()> {
    let uses_it = config.secure_erase || config.secure_erase_password.is_some();
    let given = secure_erase_password(args, uses_it)?;
    match given {
        _ if !uses_it && (args.secure_erase || args.secure_erase_password_file.is_some()) => {
            Err(BadInput(format!(
                "--secure-erase: the suite in {} was started without it and its purge cannot change now; drop --secure-erase and --secure-erase-password-file",
                dir.display()
            ))
            .into())
        }
        Some(password) => {
            config.secure_erase_password = Some(password);
            Ok(())
        }
        None if uses_it
            && config.purge
            && config.secure_erase_password.is_none()
            && state.prep("purge")?.is_none() =>
        {
            Err(BadInput(format!(
                "the suite in {} purges by ATA secure erase first, and its password is not kept in the checkpoint (a secret): resume it with --resume {} and the password (the one it started with) by {PASSWORD_WAYS}",
                dir.display(),
                dir.display()
            ))
            .into())
        }
        None => Ok(()),
    }
}

/// Where a declared output goes, as the checkpoint keeps it: absolute, `-` for standard
/// output.
fn kept_path(outputs: &Outputs<SuiteResult>, output: &destination::OutputFile) -> Option<PathBuf> {
    outputs.destination(output.option).map(|dest| match dest {
        Destination::Stdout => PathBuf::from("-"),
        Destination::File(out) => out.path().to_path_buf(),
        Destination::Folder(out) => out.path().to_path_buf(),
    })
}

/// Refuses a `--json` or `--html` that is a device or the `--curve` report (the outputs were
/// kept apart from each other when declared).
fn check_outputs_apart(
    outputs: &Outputs<SuiteResult>,
    curve: Option<&Path>,
    targets: &[hostmax_engine::TargetInfo],
) -> Result<(), BadInput> {
    let mut inputs: Vec<(&str, &Path)> = targets
        .iter()
        .map(|t| ("--devices", t.path.as_path()))
        .collect();
    inputs.extend(curve.map(|c| ("--curve", c)));
    outputs.check_apart_from(&inputs)
}

/// `iops.json` -> `iops.state`; else `iops.html` -> `iops.state`; with `--json -` alone a new
/// directory in the temporary directory (the report goes to stdout, so nothing should appear
/// in the working directory); else `./hostmax-suite-TEST.state`.
fn default_state_dir(test: SuiteTest, json: Option<&Path>, html: Option<&Path>) -> PathBuf {
    match (json, html) {
        (Some(p), _) if p.as_os_str() != "-" => p.with_extension("state"),
        (_, Some(p)) => p.with_extension("state"),
        (Some(_), None) => fresh_state_dir(
            &std::env::temp_dir()
                .join(format!("hostmax-suite-{test}-{}.state", std::process::id())),
        ),
        (None, None) => PathBuf::from(format!("hostmax-suite-{test}.state")),
    }
}

/// `dir` if nothing is there yet, else the first of `dir.2`, `dir.3`, ... that is free.
fn fresh_state_dir(dir: &Path) -> PathBuf {
    if !dir.exists() {
        return dir.to_path_buf();
    }
    (2u32..)
        .map(|n| {
            let mut name = dir.as_os_str().to_owned();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        })
        .find(|candidate| !candidate.exists())
        .expect("some number is free")
}

fn dedupe<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The block sizes: `--block-sizes` or the test's, minus `--skip-bs`, each checked.
fn choose_block_sizes(test: SuiteTest, args: &SuiteArgs) -> Result<Vec<u32>, BadInput> {
    let mut sizes: Vec<u32> = if args.block_sizes.is_empty() {
        test.default_block_sizes()
    } else {
        let mut out = Vec::new();
        for &bs in &args.block_sizes {
            let ok = (u64::from(hostmax_engine::MIN_BLOCK_SIZE)..=u64::from(RANGE_ALIGN as u32))
                .contains(&bs)
                && bs.is_multiple_of(512);
            if !ok {
                return Err(BadInput(format!(
                    "--block-sizes {}: each block size must be a multiple of 512 from 512b to 1m",
                    format_size(bs)
                )));
            }
            out.push(bs as u32);
        }
        dedupe(out)
    };
    for &skip in &args.skip_bs {
        let Some(pos) = sizes.iter().position(|&b| u64::from(b) == skip) else {
            return Err(BadInput(format!(
                "--skip-bs {}: not among the block sizes ({}); drop it",
                format_size(skip),
                sizes
                    .iter()
                    .map(|&b| matrix::size_label(b))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        sizes.remove(pos);
    }
    if sizes.is_empty() {
        return Err(BadInput(
            "no block size left to run: --skip-bs removed them all".into(),
        ));
    }
    Ok(sizes)
}

/// A suite that writes (purge, preconditioning or a mix with writes) passes the same write
/// safety checks as any write run, before anything is opened for writing.
fn check_suite_writes(
    targets: &[hostmax_engine::TargetInfo],
    writes: bool,
    consent: WriteSafety,
    sources: &SystemSources,
) -> anyhow::Result<()> {
    if writes {
        check_write_safety(targets, consent, sources).map_err(crate::error::refused_write)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite_args(argv: &[&str]) -> SuiteArgs {
        let argv = ["hostmax", "suite"].iter().chain(argv).copied();
        match <crate::args::Cli as clap::Parser>::try_parse_from(argv)
            .unwrap()
            .command
        {
            Some(crate::args::Command::Suite(args)) => *args,
            other => panic!("not a suite: {other:?}"),
        }
    }

    #[test]
    fn a_test_given_after_the_devices_is_the_test() {
        let got = take_test_from_devices(&suite_args(&[
            "--devices",
            "/nonexistent/a",
            "/nonexistent/b",
            "throughput",
        ]))
        .unwrap();
        assert_eq!(got.test, Some(SuiteTest::Throughput));
        assert_eq!(got.devices.len(), 2);
        // Before the devices, as documented, nothing changes.
        let got = take_test_from_devices(&suite_args(&["iops", "--devices", "/x"])).unwrap();
        assert_eq!((got.test, got.devices.len()), (Some(SuiteTest::Iops), 1));
        let err = take_test_from_devices(&suite_args(&["--devices", "/x"])).unwrap_err();
        assert!(err.0.contains("which test?"), "{}", err.0);
    }

    #[test]
    fn size_takes_bytes_or_fios_share_of_the_device() {
        let size = |v: &str| suite_args(&["iops", "--devices", "/x", "--size", v]).size;
        assert_eq!(size("8m"), Some(SuiteSize::Bytes(8 << 20)));
        assert_eq!(size("50%"), Some(SuiteSize::Share(50)));
        let argv = [
            "hostmax",
            "suite",
            "iops",
            "--devices",
            "/x",
            "--size",
            "0%",
        ];
        let err = <crate::args::Cli as clap::Parser>::try_parse_from(argv).unwrap_err();
        assert!(err.to_string().contains("e.g. 50%"), "{err}");
    }
}

#[cfg(test)]
mod fake_engine_tests;
