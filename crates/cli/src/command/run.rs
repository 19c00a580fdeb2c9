//! The main run, `hostmax` with no subcommand: the host-max test of `--devices`, judged
//! against the spec options when they are given.

use hostmax_aggregate::{judge, HostReport};

use crate::args::spec::SpecArgs;
use crate::args::RunArgs;
use crate::measure::{exit_code, run_and_emit};
use crate::output::export::Outputs;
use crate::plan::{plan_run, RunPlan};
use crate::verdict::{check_judgeable, consistency, judged_exit_code, table};

/// The main run: planned, measured and reported ([`run_unjudged`]), then, when spec options
/// were given, the verdict table and the `"verdict"` in the JSON.
pub fn run(args: &RunArgs) -> anyhow::Result<i32> {
    let outputs = args.outputs::<HostReport>()?;
    let plan = plan_run(&args.request_beside(&outputs))?;
    let specs = &args.spec;
    // Read before any I/O, said after the report: a refused run prints its one line only.
    let doctor = crate::diagnosis::warning_line(&plan);
    let code = run_judged(plan, outputs, specs)?;
    if let Some(line) = doctor {
        eprintln!("{line}");
    }
    Ok(code)
}

fn run_judged(
    plan: RunPlan,
    outputs: Outputs<HostReport>,
    specs: &SpecArgs,
) -> anyhow::Result<i32> {
    let Some(set) = specs.spec_set(&plan.targets)? else {
        specs.consistency()?;
        return run_unjudged(plan, outputs);
    };
    check_judgeable(&set, &plan)?;
    let required = specs.consistency()?;
    let json = outputs.json().cloned();
    let (report, signal) = run_and_emit(&plan, outputs, |report| {
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
fn run_unjudged(plan: RunPlan, outputs: Outputs<HostReport>) -> anyhow::Result<i32> {
    let json = outputs.json().cloned();
    let (report, interrupted) = run_and_emit(&plan, outputs, |_| {})?;
    let bursts = table::unjudged_burst_lines(&report);
    if !bursts.is_empty() {
        crate::output::destination::print_beside_json(&bursts, json.as_ref());
    }
    Ok(exit_code(&report, interrupted))
}
