//! The planner driven from the command line: each option reaches the plan, each refusal
//! names the option and the fix. (A file of its own: the planner is below the command line.)

use super::*;
use crate::output::destination::Destination;
use crate::output::export::Outputs;
use crate::test_support::ScratchDir;
use hostmax_aggregate::HostReport;

fn limits() -> HostLimits {
    HostLimits {
        online_cpus: vec![0, 1, 2, 3],
        allowed_cpus: vec![0, 1, 2],
        nofile: (1024, 4096),
        sources: SystemSources::default(),
    }
}

fn cli(argv: &[&str]) -> Result<crate::args::Cli, clap::Error> {
    use clap::Parser;
    crate::args::Cli::try_parse_from(std::iter::once("hostmax").chain(argv.iter().copied()))
}

fn parse(argv: &[&str]) -> Result<PlanRequest, clap::Error> {
    cli(argv).map(|c| c.run.request())
}

/// The main run's outputs, declared beside its plan as the command does.
fn outputs(argv: &[&str]) -> Result<Outputs<HostReport>, BadInput> {
    cli(argv).expect("parses").run.outputs()
}

/// Where the main run's JSON goes.
fn json_of(argv: &[&str]) -> Option<Destination> {
    outputs(argv).expect("checked").json().cloned()
}

/// The plan the main run makes: its outputs declared first, then kept apart from its targets.
fn plan(argv: &[&str]) -> Result<RunPlan, BadInput> {
    let outputs = outputs(argv)?;
    let args = cli(argv).expect("parses").run;
    plan_run_with(&args.request_beside(&outputs), &limits())
        .map_err(|e| e.downcast::<BadInput>().expect("a refusal is bad input"))
}

fn plan_err(argv: &[&str]) -> String {
    let err = plan(argv).expect_err("should be refused").0;
    assert!(!err.contains('\n'), "{err}");
    err
}

#[test]
fn defaults_match_the_issue() {
    let dir = ScratchDir::new("defaults");
    let f = dir.file("a", 1 << 20).display().to_string();
    let plan = plan(&["--devices", &f]).unwrap();
    let w = &plan.workload;
    assert_eq!(w.pattern, IoPattern::RandRead);
    assert_eq!(w.block_size, 4096);
    assert_eq!(w.iodepth, 32);
    assert_eq!(w.working_set, None);
    assert_eq!(w.runtime, Duration::from_secs(30));
    assert_eq!(w.ramp, Duration::from_secs(5));
    assert_eq!(w.rwmixread, 50);
    assert!(w.record_latency);
    assert_eq!(plan.cpus, None);
    assert_eq!(json_of(&["--devices", &f]), None);
    assert_eq!(plan.targets.len(), 1);
}

#[test]
fn every_option_reaches_the_plan() {
    let dir = ScratchDir::new("options");
    let a = dir.file("a", 8 << 20).display().to_string();
    let b = dir.file("b", 8 << 20).display().to_string();
    let json = dir.0.join("r.json");
    let argv = [
        "--devices",
        &a,
        "--devices",
        &b,
        &a,
        "--rw",
        "randrw",
        "--rwmixread",
        "70%",
        "--bs",
        "64KiB",
        "--iodepth",
        "8",
        "--size",
        "4m",
        "--runtime",
        "1500ms",
        "--ramp",
        "0",
        "--cpus",
        "1-2,0",
        "--seed",
        "0x10",
        "--rate-iops",
        "5k",
        "--json",
        json.to_str().unwrap(),
        "--allow-write",
        "--no-latency",
    ];
    let got = plan(&argv).unwrap();
    let w = &got.workload;
    assert_eq!(got.targets.len(), 2);
    assert_eq!((w.pattern, w.rwmixread), (IoPattern::RandRw, 70));
    assert_eq!((w.block_size, w.iodepth), (64 << 10, 8));
    assert_eq!(w.working_set, Some(4 << 20));
    assert_eq!(
        (w.runtime, w.ramp),
        (Duration::from_millis(1500), Duration::ZERO)
    );
    assert_eq!((w.seed, w.rate_iops), (16, Some(5000)));
    assert!(!w.record_latency && got.allow_write);
    assert_eq!(got.cpus, Some(vec![0, 1, 2]));
    assert_eq!(
        json_of(&argv).as_ref().and_then(Destination::file_path),
        Some(Path::new(&json))
    );
    assert_eq!(
        json_of(&["--devices", &a, "--json", "-"]),
        Some(Destination::Stdout)
    );
}

#[test]
fn workload_rules_name_the_option_and_the_fix() {
    let dir = ScratchDir::new("rules");
    let f = dir.file("f", 1 << 20).display().to_string();
    let cases: &[(&[&str], &str)] = &[
        // The engine's ranges (Workload::check), naming the option.
        (
            &["--bs", "0"],
            "block size 0 is out of range: use 512 B to 8 MiB (--bs)",
        ),
        (&["--bs", "256"], "out of range"),
        (&["--bs", "16m"], "out of range"),
        (&["--bs", "3000"], "2560 or 3072"),
        (&["--bs", "2m"], "larger than"),
        (&["--rwmixread", "30"], "conflicts with --rw randread"),
        (
            &["--rw", "write", "--rwmixread", "30"],
            "conflicts with --rw write",
        ),
        (
            &["--runtime", "0"],
            "runtime is zero: give a positive runtime (--runtime)",
        ),
        (&["--size", "0"], "--size 0"),
        (&["--size", "2m"], "larger than"),
        (&["--size", "6k"], "use 4k or 8k"),
        (&["--size", "2k"], "larger than --size 2k"),
        (&["--cpus", "9"], "CPU 9 not online"),
        (&["--cpus", "2-3"], "CPU 3 online but outside"),
        (
            &["--json", "/nonexistent-dir/x.json"],
            "/nonexistent-dir does not exist",
        ),
        (&["--json", "/dev/shm"], "is a directory"),
        (&["--json", "/dev/null"], "not a regular file"),
    ];
    for (extra, expected) in cases {
        let mut argv = vec!["--devices", f.as_str()];
        argv.extend_from_slice(extra);
        let err = plan_err(&argv);
        assert!(err.contains(expected), "{argv:?}: {err}");
    }
    assert!(plan_err(&[]).contains("no devices"));
    // Callers that build RunArgs themselves get the same bounds.
    let mut args = parse(&["--devices", &f]).unwrap();
    args.iodepth = 0;
    let err = plan_run_with(&args, &limits())
        .unwrap_err()
        .downcast::<BadInput>()
        .unwrap()
        .0;
    assert!(
        err.contains("queue depth 0 is out of range: use 1 to 4096 (--iodepth)"),
        "{err}"
    );
    let sized = plan(&["--devices", &f, "--size", "512k", "--bs", "512k"]).unwrap();
    assert_eq!(sized.workload.working_set, Some(512 << 10));
}

#[test]
fn too_many_devices_for_the_open_file_limit() {
    let dir = ScratchDir::new("nofile");
    let files: Vec<String> = (0..4)
        .map(|i| dir.file(&format!("f{i}"), 1 << 20).display().to_string())
        .collect();
    let mut argv = vec!["--devices"];
    argv.extend(files.iter().map(String::as_str));
    let args = parse(&argv).unwrap();
    let tight = HostLimits {
        nofile: (RESERVED_FDS + 3, RESERVED_FDS + 100),
        ..limits()
    };
    let err = plan_run_with(&args, &tight)
        .unwrap_err()
        .downcast::<BadInput>()
        .unwrap()
        .0;
    assert!(
        err.contains("4 devices") && err.contains("ulimit -n 36"),
        "{err}"
    );
    let hard = HostLimits {
        nofile: (RESERVED_FDS, RESERVED_FDS),
        ..limits()
    };
    let err = plan_run_with(&args, &hard)
        .unwrap_err()
        .downcast::<BadInput>()
        .unwrap()
        .0;
    assert!(err.contains("hard limit"), "{err}");
    let roomy = HostLimits {
        nofile: (RESERVED_FDS + 4, RESERVED_FDS + 4),
        ..limits()
    };
    assert_eq!(plan_run_with(&args, &roomy).unwrap().targets.len(), 4);
}

#[test]
fn per_second_histograms_are_kept_for_runs_of_up_to_an_hour_unless_refused() {
    let keep = |args: &PlanRequest, runtime: u64| {
        fleet::plan_fleet(
            args.start_at,
            args.series_histograms,
            Duration::from_secs(runtime),
        )
        .unwrap()
        .series_histograms
    };
    let default = PlanRequest::default();
    assert!(keep(&default, 30));
    assert!(keep(&default, 3600));
    assert!(
        !keep(&default, 3601),
        "a longer run would hold ~40 MB more an hour"
    );
    let refused = PlanRequest {
        series_histograms: false,
        ..PlanRequest::default()
    };
    assert!(!keep(&refused, 30));
}

#[test]
fn requests_built_in_code_are_held_to_the_parsers_bounds() {
    let dir = ScratchDir::new("bounds");
    let f = dir.file("a", 1 << 20).display().to_string();
    let request = |change: fn(&mut PlanRequest)| {
        let mut r = parse(&["--devices", &f]).expect("parses");
        change(&mut r);
        plan_run_with(&r, &limits())
            .unwrap_err()
            .downcast::<BadInput>()
            .unwrap()
            .0
    };
    let err = request(|r| r.runtime = Duration::from_secs(u64::MAX));
    assert!(
        err.starts_with("runtime of ") && err.ends_with("(365 days) (--runtime)"),
        "{err}"
    );
    let err = request(|r| r.ramp = Duration::MAX);
    assert!(
        err.starts_with("ramp of ") && err.ends_with("(365 days) (--ramp)"),
        "{err}"
    );
    let err = request(|r| r.rate_iops = Some(u64::MAX));
    assert!(err.contains("at most 1000000000"), "{err}");
}
