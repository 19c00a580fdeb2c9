//! The suite's state machine over the fake engine: purge, preconditioning, rounds until
//! steady state (or not), and a resume from the checkpoint, with no device and no root.

use std::path::PathBuf;

use hostmax_engine::{IoPattern, Workload};

use super::*;
use crate::engine::fake::{FakeCall, FakeEngine};
use crate::test_support::ScratchDir;

/// Two 8 MiB files the suite runs on, and where its JSON and checkpoint go.
struct Bench {
    dir: ScratchDir,
    devices: [PathBuf; 2],
}

impl Bench {
    fn new(tag: &str) -> Bench {
        let dir = ScratchDir::new(tag);
        let devices = ["a.img", "b.img"].map(|name| {
            let path = dir.0.join(name);
            std::fs::File::create(&path)
                .unwrap()
                .set_len(8 << 20)
                .unwrap();
            path
        });
        Bench { dir, devices }
    }

    fn json(&self) -> PathBuf {
        self.dir.0.join("iops.json")
    }

    fn state(&self) -> PathBuf {
        self.dir.0.join("iops.state")
    }

    /// `hostmax suite iops` on both files: one block size, two mixes (the tracked 4k 0/100
    /// and 4k 100/0), 1 s cells.
    fn fresh(&self, more: &[&str]) -> SuiteArgs {
        let mut argv: Vec<String> = ["hostmax", "suite", "iops", "--devices"]
            .map(String::from)
            .to_vec();
        argv.extend(self.devices.iter().map(|d| d.display().to_string()));
        for arg in [
            "--size",
            "8m",
            "--cell-time",
            "1s",
            "--block-sizes",
            "4k",
            "--mixes",
            "0/100,100/0",
            "--json",
            &self.json().display().to_string(),
            "--state-dir",
            &self.state().display().to_string(),
        ]
        .iter()
        .chain(more)
        {
            argv.push(arg.to_string());
        }
        parse(&argv)
    }

    fn resume(&self) -> SuiteArgs {
        parse(&[
            "hostmax".into(),
            "suite".into(),
            "--resume".into(),
            self.state().display().to_string(),
        ])
    }

    fn report(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.json()).unwrap()).unwrap()
    }

    fn rounds_saved(&self) -> usize {
        std::fs::read_dir(self.state().join("rounds"))
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                let name = name.to_string_lossy();
                name.starts_with('r') && name.ends_with(".json")
            })
            .count()
    }
}

fn parse(argv: &[String]) -> SuiteArgs {
    match <crate::args::Cli as clap::Parser>::try_parse_from(argv)
        .unwrap()
        .command
    {
        Some(crate::args::Command::Suite(args)) => *args,
        other => panic!("not a suite: {other:?}"),
    }
}

/// The purge's steps the engine was asked for, in order, before its first run: each
/// `(step, device)`.
fn purge_steps(engine: &FakeEngine) -> Vec<(&'static str, PathBuf)> {
    engine
        .calls()
        .into_iter()
        .map_while(|c| match c {
            FakeCall::SecureErase(p) => Some(("secure erase", p)),
            FakeCall::Discard(p) => Some(("discard", p)),
            FakeCall::ZeroOut(p) => Some(("zero out", p)),
            _ => None,
        })
        .collect()
}

/// `(step, device)` for each device of `bench` in turn, every step of `steps` on it.
fn each_device(bench: &Bench, steps: &[&'static str]) -> Vec<(&'static str, PathBuf)> {
    bench
        .devices
        .iter()
        .flat_map(|d| steps.iter().map(move |&s| (s, d.clone())))
        .collect()
}

/// Whether a fake run was the preconditioning: sequential writes ended by an I/O limit.
fn preconditioning(workload: &Workload) -> bool {
    workload.pattern == IoPattern::Write && workload.io_limit.is_some()
}

#[test]
fn a_steady_suite_purges_preconditions_and_stops_after_five_rounds() {
    let bench = Bench::new("suite-steady");
    let engine = FakeEngine::new();
    let code = run_hearing(
        &engine,
        &bench.fresh(&[]),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert_eq!(code, 0);
    // The purge discards each device, then one preconditioning run covers both.
    assert_eq!(purge_steps(&engine), each_device(&bench, &["discard"]));
    let runs = engine.runs();
    assert!(preconditioning(&runs[0].workload), "{:?}", runs[0]);
    assert_eq!(runs[0].workload.io_limit, Some(2 * (8 << 20)));
    // A constant figure is steady at the first round judged (5): 5 rounds of 2 cells.
    assert_eq!(runs.len(), 1 + 5 * 2);
    assert!(runs[1..].iter().all(|r| r.targets.len() == 2
        && r.workload.block_size == 4096
        && !preconditioning(&r.workload)));
    let report = bench.report();
    let steady = &report["steady_state"];
    assert_eq!(steady["reached"], true, "{steady}");
    assert_eq!(steady["rounds_run"], 5, "{steady}");
    assert_eq!(report["complete"], true);
    assert_eq!(report["preparation"]["purge"]["done"], true);
    assert_eq!(report["preparation"]["precondition"]["done"], true);
    assert_eq!(bench.rounds_saved(), 10);
}

#[test]
fn a_suite_that_never_settles_runs_every_round_and_says_so() {
    let bench = Bench::new("suite-unsteady");
    // Each round's figures three times the last's or a third of them: never within range.
    let engine = FakeEngine::new().with_iops(|run, _, _| {
        let round = run.saturating_sub(1) / 2;
        if round % 2 == 0 {
            1000.0
        } else {
            3000.0
        }
    });
    let code = run_hearing(
        &engine,
        &bench.fresh(&["--max-rounds", "6"]),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert_eq!(code, 0);
    assert_eq!(engine.runs().len(), 1 + 6 * 2);
    let steady = &bench.report()["steady_state"];
    assert_eq!(steady["reached"], false, "{steady}");
    assert_eq!(steady["rounds_run"], 6, "{steady}");
    assert_eq!(steady["range_ok"], false, "{steady}");
}

#[test]
fn an_interrupted_suite_resumes_where_it_stopped_repeating_nothing() {
    let bench = Bench::new("suite-resume");
    let watch = crate::signals::SignalWatch::detached();
    // Runs: 0 preconditioning, 1-2 round 1, 3-4 round 2; SIGINT during the second cell of
    // round 2, which is then not recorded.
    let engine = FakeEngine::new().with_signal_during(4, watch, libc::SIGINT);
    let code = run_hearing(&engine, &bench.fresh(&[]), watch).unwrap();
    assert_eq!(code, crate::exit_code::interrupted(libc::SIGINT));
    assert_eq!(engine.runs().len(), 5);
    assert_eq!(bench.rounds_saved(), 3, "the cut cell is not kept");
    let report = bench.report();
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["complete"], false);

    let resumed = FakeEngine::new();
    let code = run_hearing(
        &resumed,
        &bench.resume(),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert_eq!(code, 0);
    // Purge and preconditioning were done: neither again; only the 7 cells left run.
    assert!(
        resumed
            .calls()
            .iter()
            .all(|c| matches!(c, FakeCall::Measure(_))),
        "{:?}",
        resumed.calls()
    );
    let runs = resumed.runs();
    assert_eq!(runs.len(), 1 + 3 * 2, "{runs:?}");
    assert!(runs.iter().all(|r| !preconditioning(&r.workload)));
    let report = bench.report();
    assert_eq!(report["steady_state"]["reached"], true);
    assert_eq!(report["steady_state"]["rounds_run"], 5);
    assert_eq!(report["interrupted"], false);
    assert_eq!(bench.rounds_saved(), 10);
}

#[test]
fn a_purge_without_discard_zero_fills_and_records_why() {
    let bench = Bench::new("suite-zero");
    let engine = FakeEngine::new().without_discard();
    run_hearing(
        &engine,
        &bench.fresh(&[]),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert_eq!(
        purge_steps(&engine),
        each_device(&bench, &["discard", "zero out"])
    );
    let method = bench.report()["preparation"]["purge"]["record"]["method"].clone();
    let first = method[0].as_str().unwrap();
    assert!(first.contains("zero fill (after discard:"), "{method}");
}

#[test]
fn the_latency_test_measures_one_device_at_a_time() {
    let bench = Bench::new("suite-latency");
    let mut argv: Vec<String> = ["hostmax", "suite", "latency", "--devices"]
        .map(String::from)
        .to_vec();
    argv.extend(bench.devices.iter().map(|d| d.display().to_string()));
    argv.extend(
        [
            "--size",
            "8m",
            "--cell-time",
            "1s",
            "--block-sizes",
            "4k",
            "--mixes",
            "100/0",
            "--no-purge",
            "--no-precondition",
            "--json",
        ]
        .map(String::from),
    );
    argv.push(bench.json().display().to_string());
    argv.extend(["--state-dir".into(), bench.state().display().to_string()]);
    let engine = FakeEngine::new();
    run_hearing(
        &engine,
        &parse(&argv),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    let runs = engine.runs();
    // Steady at round 5, each round's one cell a run per device.
    assert_eq!(runs.len(), 5 * 2);
    for pair in runs.chunks(2) {
        let targets: Vec<_> = pair.iter().map(|r| r.targets.clone()).collect();
        assert_eq!(
            targets,
            vec![
                vec![bench.devices[0].clone()],
                vec![bench.devices[1].clone()]
            ]
        );
    }
    // Each round's record of the cell holds both devices, measured apart.
    let rounds = std::fs::read_dir(bench.state().join("rounds")).unwrap();
    for entry in rounds {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let record: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            record["report"]["devices"].as_array().map(Vec::len),
            Some(2),
            "{text}"
        );
    }
}

#[test]
fn a_writing_cell_a_signal_came_before_is_called_off_and_not_recorded() {
    let bench = Bench::new("suite-called-off");
    let watch = crate::signals::SignalWatch::detached();
    // Run 1 is round 1's first cell, 4k 0/100 (all writes): the signal comes while it is
    // readied.
    let engine = FakeEngine::new().with_signal_before(1, watch, libc::SIGTERM);
    let code = run_hearing(&engine, &bench.fresh(&[]), watch).unwrap();
    assert_eq!(code, crate::exit_code::interrupted(libc::SIGTERM));
    assert_eq!(engine.runs().len(), 2, "nothing after the called-off cell");
    assert_eq!(bench.rounds_saved(), 0);
    let report = bench.report();
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["preparation"]["precondition"]["done"], true);
}

/// `--secure-erase` with the password from a file in the bench.
fn secure_erase_args(bench: &Bench) -> SuiteArgs {
    let file = bench.dir.0.join("password");
    std::fs::write(&file, "s3cret-pw\n").unwrap();
    bench.fresh(&[
        "--secure-erase",
        "--secure-erase-password-file",
        &file.display().to_string(),
    ])
}

#[test]
fn a_purge_by_secure_erase_goes_through_the_engine_and_needs_nothing_more() {
    let bench = Bench::new("suite-erase");
    let engine = FakeEngine::new();
    run_hearing(
        &engine,
        &secure_erase_args(&bench),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert_eq!(purge_steps(&engine), each_device(&bench, &["secure erase"]));
    let report = bench.report();
    let method = &report["preparation"]["purge"]["record"]["method"];
    assert_eq!(
        method[0],
        format!("{}: ATA secure erase", bench.devices[0].display()),
        "{method}"
    );
    assert!(!report.to_string().contains("s3cret-pw"));
}

#[test]
fn a_failed_secure_erase_falls_back_to_discard_and_says_why() {
    let bench = Bench::new("suite-erase-fails");
    let engine = FakeEngine::new().without_secure_erase();
    run_hearing(
        &engine,
        &secure_erase_args(&bench),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert_eq!(
        purge_steps(&engine),
        each_device(&bench, &["secure erase", "discard"])
    );
    let method = bench.report()["preparation"]["purge"]["record"]["method"].clone();
    assert!(
        method[0]
            .as_str()
            .unwrap()
            .ends_with("discard (after ATA secure erase: not an ATA disk)"),
        "{method}"
    );
}

#[test]
fn a_purge_that_fails_every_way_stops_the_suite_before_any_cell() {
    let bench = Bench::new("suite-purge-fails");
    let engine = FakeEngine::new()
        .without_secure_erase()
        .without_discard()
        .without_zero_fill();
    let err = run_hearing(
        &engine,
        &secure_erase_args(&bench),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("purge of")
            && err.contains("failed every way (ATA secure erase: not an ATA disk; discard: "),
        "{err}"
    );
    assert!(engine.runs().is_empty(), "{:?}", engine.calls());
}

#[test]
fn the_suites_checks_and_cells_read_the_system_through_the_engine() {
    let bench = Bench::new("suite-sources");
    // A stand-in /proc/swaps naming the second file: the engine's sources say it is swap.
    let swaps = bench.dir.0.join("swaps");
    std::fs::write(
        &swaps,
        format!(
            "Filename Type Size Used Priority\n{} file 8188 0 -2\n",
            bench.devices[1].display()
        ),
    )
    .unwrap();
    let mut sources = hostmax_device::SystemSources::default();
    sources.swaps = swaps;
    let engine = FakeEngine::new().with_safety_sources(sources);
    let err = run_hearing(
        &engine,
        &bench.fresh(&[]),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&bench.devices[1].display().to_string()),
        "{err}"
    );
    assert!(err.contains("swap"), "{err}");
    assert!(engine.calls().is_empty(), "{:?}", engine.calls());
    // Over the engine's own sources, every run carries them.
    let engine = FakeEngine::new();
    run_hearing(
        &engine,
        &bench.fresh(&[]),
        crate::signals::SignalWatch::detached(),
    )
    .unwrap();
    assert!(engine.runs().iter().all(|r| r.engine_sources));
}
