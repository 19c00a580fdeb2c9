//! Running a plan: engine, live view, signals, aggregation, output.
//!
//! TEMPORARY STUBS (helper/cliargs): the lead replaces this file wholesale.

use crate::plan::RunPlan;

/// Runs a checked plan; returns the exit code. Stub: prints the plan.
pub fn run(plan: RunPlan) -> anyhow::Result<i32> {
    println!("{plan:#?}");
    Ok(0)
}

/// Runs the embedded demo; returns the exit code. Stub.
pub fn demo() -> anyhow::Result<i32> {
    println!("demo: not implemented yet");
    Ok(0)
}
