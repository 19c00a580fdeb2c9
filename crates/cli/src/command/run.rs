//! The main run, `hostmax` with no subcommand: the host-max test of `--devices`, judged
//! against the spec options when they are given.

use hostmax_aggregate::{judge, HostReport};

use crate::args::spec::SpecArgs;
use crate::args::RunArgs;
use crate::engine::Engine;
use crate::measure::{exit_code, run_and_emit};
use crate::output::export::Outputs;
use crate::plan::{plan_run, RunPlan};
use crate::verdict::{check_judgeable, consistency, judged_exit_code, table};

/// The main run: planned, measured and reported ([`run_unjudged`]), then, when spec options
/// were given, the verdict table and the `"verdict"` in the JSON.
pub fn run(engine: &dyn Engine, args: &RunArgs) -> anyhow::Result<i32> {
    let outputs = args.outputs::<HostReport>()?;
    let plan = plan_run(&args.request_beside(&outputs), engine.safety_sources())?;
    let specs = &args.spec;
    // Read before any I/O, said after the report: a refused run prints its one line only.
    let doctor = crate::diagnosis::warning_line(engine, &plan);
    let code = run_judged(engine, plan, outputs, specs)?;
    if let Some(line) = doctor {
        crate::errln!("{line}");
    }
    Ok(code)
}

fn run_judged(
    engine: &dyn Engine,
    plan: RunPlan,
    outputs: Outputs<HostReport>,
    specs: &SpecArgs,
) -> anyhow::Result<i32> {
    let Some(set) = specs.spec_set(&plan.targets)? else {
        specs.consistency()?;
        return run_unjudged(engine, plan, outputs);
    };
    check_judgeable(&set, &plan)?;
    let required = specs.consistency()?;
    let json = outputs.json().cloned();
    let (report, signal) = run_and_emit(engine, &plan, outputs, |report| {
        let mut verdict = judge(&set, &[report]);
        consistency::apply(&mut verdict, &set, &[report], required);
        // A run cut short judges nothing: no PASS from part of its time (judge withheld
        // its findings; the consistency's are withheld too).
        if report.interrupted {
            verdict.withhold();
        }
        report.verdict = Some(verdict);
    })?;
    let verdict = report.verdict.as_ref().expect("set just above");
    let rendered = if report.interrupted {
        table::render_unconcluded(verdict, "the run", &[])
    } else {
        table::render_verdict(verdict)
    };
    crate::output::destination::print_beside_json(&format!("\n{rendered}"), json.as_ref());
    Ok(judged_exit_code(&[&report], signal, verdict.judgement))
}

/// Runs the host-max test a plan describes and prints/writes its report. Returns the exit code.
fn run_unjudged(
    engine: &dyn Engine,
    plan: RunPlan,
    outputs: Outputs<HostReport>,
) -> anyhow::Result<i32> {
    let json = outputs.json().cloned();
    let (report, interrupted) = run_and_emit(engine, &plan, outputs, |_| {})?;
    let bursts = table::unjudged_burst_lines(&report);
    if !bursts.is_empty() {
        crate::output::destination::print_beside_json(&bursts, json.as_ref());
    }
    Ok(exit_code(&report, interrupted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parsed as cli;
    use crate::engine::fake::FakeEngine;
    use crate::test_support::{read_json, short_run_argv, ScratchDir};

    /// The main run's options on two 8 MiB files, 1 s measured, the JSON in the scratch
    /// directory; `more` after them.
    fn run_args(dir: &ScratchDir, more: &[&str]) -> RunArgs {
        let argv = short_run_argv(dir, None, 2, more);
        cli(&argv.iter().map(String::as_str).collect::<Vec<_>>()).run
    }

    #[test]
    fn the_main_run_reports_what_the_engine_measured() {
        let dir = ScratchDir::new("run-fake");
        let engine = FakeEngine::new().with_iops(|_, _, _| 1500.0);
        let code = run(&engine, &run_args(&dir, &["--bs", "8k"])).unwrap();
        assert_eq!(code, 0);
        let runs = engine.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].targets.len(), 2);
        assert_eq!(runs[0].workload.block_size, 8192);
        let report = read_json(&dir.0.join("run.json"));
        assert_eq!(
            report["host"]["iops"].as_f64(),
            Some(3000.0),
            "{}",
            report["host"]
        );
        assert_eq!(report["devices"].as_array().map(Vec::len), Some(2));
        assert_eq!(report["interrupted"], false);
    }

    #[test]
    fn io_errors_exit_3() {
        let dir = ScratchDir::new("run-errors");
        let engine = FakeEngine::new().with_errors_in(0);
        let code = run(&engine, &run_args(&dir, &[])).unwrap();
        assert_eq!(code, 3);
        let report = read_json(&dir.0.join("run.json"));
        assert_eq!(report["host"]["errors"], 2, "{}", report["host"]);
    }

    #[test]
    fn a_promise_is_judged_on_what_was_measured() {
        let dir = ScratchDir::new("run-judged");
        // 1000 IOPS a volume: a promise of 900 passes, one of 2000 fails (exit 1).
        let engine = FakeEngine::new();
        let kept = run(&engine, &run_args(&dir, &["--expect-volume-iops", "900"])).unwrap();
        assert_eq!(kept, 0);
        let report = read_json(&dir.0.join("run.json"));
        assert_eq!(report["verdict"]["pass"], true, "{}", report["verdict"]);
        let broken = run(&engine, &run_args(&dir, &["--expect-volume-iops", "2000"]));
        // The files are there already: planned again on the same two.
        let broken = broken.unwrap();
        assert_eq!(broken, 1);
        let report = read_json(&dir.0.join("run.json"));
        assert_eq!(report["verdict"]["pass"], false, "{}", report["verdict"]);
    }

    #[test]
    fn a_write_is_checked_against_the_system_the_engine_reads() {
        let dir = ScratchDir::new("run-sources");
        // Plain files hold no data: a write to them needs no consent, on this host.
        let engine = FakeEngine::new();
        assert_eq!(
            run(&engine, &run_args(&dir, &["--rw", "randwrite"])).unwrap(),
            0
        );
        assert!(engine.runs().iter().all(|r| r.engine_sources));
        // The engine's sources say the second file is a swap area: refused before any run.
        let swapped = dir.0.join("d1.img");
        let swaps = dir.0.join("swaps");
        std::fs::write(
            &swaps,
            format!(
                "Filename Type Size Used Priority\n{} file 8188 0 -2\n",
                swapped.display()
            ),
        )
        .unwrap();
        let mut sources = hostmax_device::SystemSources::default();
        sources.swaps = swaps;
        let engine = FakeEngine::new().with_safety_sources(sources);
        let err = run(&engine, &run_args(&dir, &["--rw", "randwrite"])).unwrap_err();
        let said = format!("{err:#}");
        assert!(
            said.contains(&swapped.display().to_string()) && said.contains("swap"),
            "{said}"
        );
        assert!(engine.runs().is_empty());
    }
}
