//! `hostmax verify`: runs the phases a spec needs and prints one verdict over all of them.
//!
//! Phases, each with the run's usual options (`--runtime`, `--ramp`, `--iodepth`, `--size`,
//! `--cpus`, ...): 4k for IOPS rules, 1m (`--throughput-bs`) for throughput rules, 4k at depth 1 for latency
//! rules. Random reads, or with `--allow-write` the seeds' 50/50 random read/write mix. Each
//! phase goes through [`crate::measure::measure`] like any run.

use hostmax_aggregate::verdict::{BlockSizes, RuleKind};
use hostmax_aggregate::{judge, HostReport, VerifyReport};
use hostmax_engine::IoPattern;

use crate::args::verify::VerifyArgs;
use crate::engine::Engine;
use crate::error::BadInput;
use crate::measure;
use crate::output::destination::print_beside_json;
use crate::output::export::Outputs;
use crate::plan::{plan_run, PlanRequest, RunPlan};
use crate::verdict::{judged_exit_code, table};

/// One phase: what it judges and the options it runs with.
#[derive(Debug, Clone)]
pub struct Phase {
    /// The kind of rule it judges.
    pub kind: RuleKind,
    /// Its checked plan.
    pub plan: RunPlan,
}

impl Phase {
    /// "IOPS: 4k randread, depth 32".
    pub fn describe(&self) -> String {
        let w = &self.plan.workload;
        let what = self.kind.promise().phase;
        let mix = if w.pattern == IoPattern::RandRw {
            format!(" {}/{}", w.rwmixread, 100 - w.rwmixread)
        } else {
            String::new()
        };
        let depth = match w.numjobs {
            Some(jobs) => format!("{jobs} jobs x depth {}", w.iodepth),
            None => format!("depth {}", w.iodepth),
        };
        format!(
            "{what}: {} {}{mix}, {depth}",
            crate::units::format_size(w.block_size.into()),
            w.pattern,
        )
    }
}

/// The request of the phase judging `kind`, from its row of the promise table: its block
/// size (`throughput_bs` for the kind that needs large blocks) and, when it needs one, its
/// depth.
pub fn phase_request(base: &PlanRequest, kind: RuleKind, throughput_bs: u64) -> PlanRequest {
    let mut request = base.clone();
    if base.allow_write {
        request.pattern = IoPattern::RandRw;
        request.rwmixread = Some(50);
    } else {
        request.pattern = IoPattern::RandRead;
        request.rwmixread = None;
    }
    let needs = kind.promise().needs;
    request.block_size = match needs.blocks {
        BlockSizes::AtLeast(_) => throughput_bs,
        // At most a size, or a kind newer than this match: the block size its rule names.
        _ => needs.block_size.into(),
    };
    if let Some(depth) = needs.depth.fixed() {
        // The depth a promise needs is what a device keeps in flight: one job keeps it
        // (--numjobs 4 at depth 1 would keep 4).
        request.iodepth = depth;
        request.numjobs = None;
    }
    request
}

/// Checks every phase (and the spec) before any I/O, each apart from the files `outputs`
/// write.
pub fn plan_phases(
    engine: &dyn Engine,
    args: &VerifyArgs,
    outputs: &Outputs<VerifyReport>,
) -> anyhow::Result<(Vec<Phase>, hostmax_aggregate::SpecSet)> {
    let request = args.run.request_beside(outputs);
    let base = plan_run(&request, engine.safety_sources())?;
    let Some(set) = args.run.spec.spec_set(&base.targets)? else {
        return Err(BadInput(
            "verify needs a spec: give --profile, --volume-spec, --expect-volume-iops, --expect-volume-mbps, --expect-host-iops, --expect-host-mbps or --spec-file"
                .into(),
        )
        .into());
    };
    let mut phases = Vec::new();
    for kind in crate::verdict::phases_for(&set) {
        let phase = phase_request(&request, kind, args.throughput_bs);
        let mut plan = plan_run(&phase, engine.safety_sources()).map_err(|e| {
            // The phase's block size is not --bs (verify sets it): name what does set it, so
            // the fix offered is one that works.
            let size = crate::units::format_size(phase.block_size);
            let (sets_it, named) = match kind.promise().needs.blocks {
                BlockSizes::AtLeast(_) => (
                    format!("--throughput-bs {size}"),
                    "--throughput-bs ".to_string(),
                ),
                // At most a size, or a kind newer than this match: the rule fixed it.
                _ => (
                    format!("{size} blocks, fixed for this phase"),
                    "the phase's block size ".to_string(),
                ),
            };
            let why = format!("{e:#}").replace("--bs ", &named);
            anyhow::Error::new(BadInput(format!(
                "the {} phase ({sets_it}): {why}",
                kind.promise().phase
            )))
        })?;
        // Every phase checks its targets against the one probe the base plan made.
        plan.identities = base.identities.clone();
        phases.push(Phase { kind, plan });
    }
    Ok((phases, set))
}

/// Runs `hostmax verify`; returns the exit code.
pub fn verify(engine: &dyn Engine, args: &VerifyArgs) -> anyhow::Result<i32> {
    // Declared before any I/O, written once at the end: the JSON and one `--hdr-log` holding
    // every phase.
    let mut outputs = args.run.outputs::<VerifyReport>()?;
    let (phases, set) = plan_phases(engine, args, &outputs)?;
    let json = outputs.json().cloned();
    let required = args.run.spec.consistency()?;
    let mut reports: Vec<HostReport> = Vec::new();
    let mut signal = 0;
    for (i, phase) in phases.iter().enumerate() {
        crate::errln!(
            "hostmax verify: phase {}/{}: {}",
            i + 1,
            phases.len(),
            phase.describe()
        );
        let label = format!("phase{}", i + 1);
        let (report, sig) = measure::measure_step(
            engine,
            &phase.plan,
            &label,
            &mut outputs.recorders(),
            !reports.is_empty(),
        )?;
        let Some(report) = report else {
            signal = sig;
            break;
        };
        print_beside_json(
            &crate::output::table::render_table_fitting(
                &report,
                crate::output::table::terminal_width(),
            ),
            json.as_ref(),
        );
        reports.push(report);
        if sig != 0 {
            signal = sig;
            break;
        }
    }
    let refs: Vec<&HostReport> = reports.iter().collect();
    let mut verdict = judge(&set, &refs);
    crate::verdict::consistency::apply(&mut verdict, &set, &refs, required);
    // A phase cut short, and those never run, judge nothing: no PASS from part of the work.
    let interrupted = signal != 0;
    let not_measured: Vec<String> = phases[reports.len()..]
        .iter()
        .map(Phase::describe)
        .collect();
    if interrupted {
        verdict.withhold();
    }
    let judgement = verdict.judgement;
    let rendered = if interrupted {
        let cut = phases[reports.len() - 1].describe();
        table::render_unconcluded(&verdict, &cut, &not_measured)
    } else {
        table::render_verdict(&verdict)
    };
    print_beside_json(&format!("\n{rendered}"), json.as_ref());
    let code = judged_exit_code(&refs, signal, judgement);
    let provenance = crate::provenance::spanning(&reports);
    let root = VerifyReport::new(verdict, reports)
        .with_hostname(crate::provenance::hostname())
        .with_provenance(provenance)
        .with_interrupted(interrupted)
        .with_phases_not_measured(not_measured);
    outputs.write(&root)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_that_needs_one_io_in_flight_runs_one_job() {
        let base = PlanRequest {
            iodepth: 8,
            numjobs: Some(4),
            ..PlanRequest::default()
        };
        let latency = phase_request(&base, RuleKind::Latency, 1 << 20);
        assert_eq!((latency.iodepth, latency.numjobs), (1, None));
        // A rate phase keeps the jobs and their depth: any depth above 1 shows a rate.
        let iops = phase_request(&base, RuleKind::Iops, 1 << 20);
        assert_eq!((iops.iodepth, iops.numjobs), (8, Some(4)));
    }
}

#[cfg(test)]
mod fake_engine_tests {
    use super::*;
    use crate::args::parsed as cli;
    use crate::engine::fake::FakeEngine;
    use crate::test_support::{read_json, short_run_argv, ScratchDir};

    /// `hostmax verify` over two 8 MiB files, 1 s phases, the JSON in the scratch
    /// directory; `more` after them.
    fn verify_args(dir: &ScratchDir, more: &[&str]) -> VerifyArgs {
        let argv = short_run_argv(dir, Some("verify"), 2, more);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        match cli(&argv).command {
            Some(crate::args::Command::Verify(args)) => args,
            other => panic!("not a verify: {other:?}"),
        }
    }

    #[test]
    fn each_promised_kind_gets_its_phase_and_one_verdict_judges_them_all() {
        let dir = ScratchDir::new("verify-phases");
        // 4000 IOPS a volume at any depth: 0.25 ms at depth 1, 4 GB/s of 1m blocks.
        let engine = FakeEngine::new().with_iops(|_, _, _| 4000.0);
        let args = verify_args(&dir, &["--volume-spec", "iops=3000,mbps=100,p95_ms=1"]);
        let code = verify(&engine, &args).unwrap();
        assert_eq!(code, 0);
        let runs = engine.runs();
        assert_eq!(runs.len(), 3, "{runs:?}");
        assert!(runs
            .iter()
            .all(|r| r.targets.len() == 2 && r.workload.pattern == IoPattern::RandRead));
        let mut shapes: Vec<(u32, u32)> = runs
            .iter()
            .map(|r| (r.workload.block_size, r.workload.iodepth))
            .collect();
        shapes.sort_unstable();
        let depth = runs[0].workload.iodepth.max(runs[1].workload.iodepth);
        // IOPS at 4k, latency at 4k and depth 1, throughput at --throughput-bs (1m).
        assert_eq!(shapes, [(4096, 1), (4096, depth), (1 << 20, depth)]);
        let report = read_json(&dir.0.join("verify.json"));
        assert_eq!(report["verdict"]["pass"], true, "{}", report["verdict"]);
        assert_eq!(report["phases"].as_array().map(Vec::len), Some(3));
        assert_eq!(report["interrupted"], false);
    }

    #[test]
    fn a_volume_short_of_its_promise_fails_the_verdict() {
        let dir = ScratchDir::new("verify-short");
        let engine = FakeEngine::new().with_iops(|_, _, _| 400.0);
        let code = verify(
            &engine,
            &verify_args(&dir, &["--expect-volume-iops", "500"]),
        )
        .unwrap();
        assert_eq!(code, 1);
        assert_eq!(engine.runs().len(), 1, "one phase: IOPS");
        let report = read_json(&dir.0.join("verify.json"));
        assert_eq!(report["verdict"]["pass"], false, "{}", report["verdict"]);
    }

    #[test]
    fn with_allow_write_the_phases_run_the_half_and_half_mix() {
        let dir = ScratchDir::new("verify-write");
        let engine = FakeEngine::new();
        let args = verify_args(&dir, &["--expect-volume-iops", "500", "--allow-write"]);
        assert_eq!(verify(&engine, &args).unwrap(), 0);
        let runs = engine.runs();
        assert_eq!(
            (runs[0].workload.pattern, runs[0].workload.rwmixread),
            (IoPattern::RandRw, 50)
        );
    }

    #[test]
    fn a_signal_withholds_the_verdict_and_names_the_phases_not_measured() {
        let dir = ScratchDir::new("verify-signal");
        let watch = crate::signals::SignalWatch::detached();
        crate::signals::hear_on_this_thread(watch);
        let engine = FakeEngine::new()
            .with_iops(|_, _, _| 4000.0)
            .with_signal_during(1, watch, libc::SIGINT);
        let args = verify_args(&dir, &["--volume-spec", "iops=3000,mbps=100,p95_ms=1"]);
        let code = verify(&engine, &args).unwrap();
        assert_eq!(code, crate::exit_code::interrupted(libc::SIGINT));
        assert_eq!(engine.runs().len(), 2, "no phase after the signal");
        let report = read_json(&dir.0.join("verify.json"));
        assert_eq!(report["interrupted"], true);
        assert_eq!(
            report["phases_not_measured"].as_array().map(Vec::len),
            Some(1)
        );
        // Part of the work passes nothing, even where every figure measured held.
        assert!(report["verdict"]["pass"].is_null(), "{}", report["verdict"]);
    }
}
