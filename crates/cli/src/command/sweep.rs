//! `hostmax sweep`: the same workload on the first 1, 2, 4, ... and all volumes; finds the
//! host's ceiling and knee (`hostmax_aggregate::knee`), prints a table, writes
//! `"sweep"` in the JSON and, with `--svg`, draws IOPS against volumes beside the ideal line.

use hostmax_aggregate::knee::{default_steps, IdealSource, Sweep, SweepPoint};
use hostmax_aggregate::{HostReport, SweepReport};

use crate::args::verify::{Step, SweepArgs};
use crate::chart::{Band, LegendCorner, LineChart, Series, SeriesStyle, TickFormat};
use crate::engine::Engine;
use crate::error::BadInput;
use crate::measure;
use crate::output::destination::print_beside_json;
use crate::output::svg::SvgChart;
use crate::plan::plan_run;
use crate::units::format_mib_per_sec;

/// The sorted, de-duplicated counts `steps` gives for `total` devices.
pub fn resolve_steps(steps: Option<&[Step]>, total: usize) -> Result<Vec<usize>, BadInput> {
    let Some(steps) = steps else {
        return Ok(default_steps(total));
    };
    let mut counts = Vec::new();
    for step in steps {
        let n = match *step {
            Step::All => total,
            Step::Count(n) if n > total => {
                return Err(BadInput(format!(
                    "--steps {n}: only {total} device{} given; use counts up to {total}, or 'all'",
                    if total == 1 { "" } else { "s" }
                )))
            }
            Step::Count(n) => n,
        };
        counts.push(n);
    }
    counts.sort_unstable();
    counts.dedup();
    Ok(counts)
}

/// The sweep's table for people.
pub fn render_sweep(sweep: &Sweep, reports: &[HostReport]) -> String {
    render(sweep, reports, false)
}

/// The table of a sweep a signal cut short: its steps and highest figure, no knee, and no
/// word on saturation (the steps not run decide it).
pub fn render_interrupted_sweep(sweep: &Sweep, reports: &[HostReport]) -> String {
    render(sweep, reports, true)
}

fn render(sweep: &Sweep, reports: &[HostReport], interrupted: bool) -> String {
    let mut out = String::new();
    if let Some(first) = reports.first() {
        let w = &first.workload;
        out += &format!(
            "sweep: {} {}, depth {}, tolerance {}%\n",
            crate::units::format_size(w.block_size.into()),
            w.pattern,
            w.iodepth,
            (sweep.tolerance * 100.0 * 1e6).round() / 1e6
        );
    }
    let ideal_name = match sweep.ideal_source {
        IdealSource::VolumeCaps => "ideal (caps)",
        IdealSource::LinearFromFirst => "ideal (linear)",
        IdealSource::RateCapped => "ideal (capped)",
        // A source newer than this table.
        _ => "ideal",
    };
    out += &format!(
        "{:>7}  {:>10}  {:>9}  {:>14}  {:>8}\n",
        "volumes", "IOPS", "MiB/s", ideal_name, "of ideal"
    );
    for (p, i) in sweep.points.iter().zip(&sweep.ideal) {
        let share = if i.iops > 0.0 {
            format!("{:.3}", p.iops / i.iops)
        } else {
            "-".into()
        };
        out += &format!(
            "{:>7}  {:>10.0}  {:>9}  {:>14.0}  {:>8}{}\n",
            p.volumes,
            p.iops,
            format_mib_per_sec(p.bytes_per_sec),
            i.iops,
            share,
            if p.interrupted { "  interrupted" } else { "" }
        );
    }
    if sweep.saturated {
        out += &format!(
            "ceiling {:.0} IOPS; knee at {} volume{} (the fewest reaching the ceiling within {}%)\n",
            sweep.ceiling_iops,
            sweep.knee_volumes,
            if sweep.knee_volumes == 1 { "" } else { "s" },
            (sweep.tolerance * 100.0 * 1e6).round() / 1e6
        );
    } else {
        // No knee without saturation: the highest figure only bounds the ceiling from below.
        // A step cut short is not read while another ran to its end (knee.rs).
        let cut = sweep.points.iter().any(|p| p.interrupted);
        let all_cut = sweep.points.iter().all(|p| p.interrupted);
        out += &format!(
            "highest {:.0} IOPS, at {} volume{}{}\n",
            sweep.ceiling_iops,
            sweep.knee_volumes,
            if sweep.knee_volumes == 1 { "" } else { "s" },
            match (cut, all_cut) {
                (true, false) => " (of the steps that ran to their end)",
                (true, true) => " (a step cut short: part of a step only)",
                _ => "",
            }
        );
    }
    match (sweep.saturated || interrupted, sweep.rate_cap_iops) {
        (false, Some(cap)) => out += &format!(
            "not saturated: every step gave what --rate-iops {cap:.0} allows per volume; the host's ceiling is above this (run without --rate-iops to find it)\n"
        ),
        (false, None) => out += "not saturated: IOPS still grew as the volumes promise; the host's ceiling is higher than this (add volumes or depth)\n",
        (true, _) => {}
    }
    out
}

/// The chart of IOPS against volumes with the ideal line and the ceiling band.
/// The `--svg` chart of a sweep's report: an interrupted sweep's band says it gives no knee.
fn report_chart(report: &SweepReport) -> LineChart {
    let mut chart = sweep_chart(&report.sweep);
    if report.interrupted {
        for band in &mut chart.bands {
            band.name = format!(
                "highest {:.0} IOPS: interrupted, no knee",
                report.sweep.ceiling_iops
            );
        }
    }
    chart
}

pub fn sweep_chart(sweep: &Sweep) -> LineChart {
    let t = sweep.tolerance;
    LineChart {
        title: "Host IOPS against volumes driven".into(),
        x_label: "volumes".into(),
        y_label: "IOPS".into(),
        x_ticks: TickFormat::Count,
        series: vec![
            Series {
                name: "measured".into(),
                points: sweep
                    .points
                    .iter()
                    .map(|p| (p.volumes as f64, p.iops))
                    .collect(),
                style: SeriesStyle::Solid,
            },
            Series {
                name: match sweep.ideal_source {
                    IdealSource::VolumeCaps => "ideal: sum of the volumes' promised IOPS".into(),
                    IdealSource::LinearFromFirst => "ideal: first step scaled linearly".into(),
                    IdealSource::RateCapped => {
                        "ideal: the volumes' promises held to --rate-iops".into()
                    }
                    _ => "ideal".into(),
                },
                points: sweep
                    .ideal
                    .iter()
                    .map(|i| (i.volumes as f64, i.iops))
                    .collect(),
                style: SeriesStyle::Dashed,
            },
        ],
        // The knee is a property of a saturated host; an unsaturated sweep has only its
        // highest figure, a lower bound of the ceiling.
        bands: vec![Band {
            name: if sweep.saturated {
                format!(
                    "ceiling {:.0} IOPS, knee at {} volume{}",
                    sweep.ceiling_iops,
                    sweep.knee_volumes,
                    if sweep.knee_volumes == 1 { "" } else { "s" }
                )
            } else {
                format!(
                    "highest {:.0} IOPS: not saturated, no knee",
                    sweep.ceiling_iops
                )
            },
            lower: sweep.ceiling_iops * (1.0 - t),
            upper: sweep.ceiling_iops,
        }],
        legend: LegendCorner::LowerRight,
        ..LineChart::default()
    }
}

/// Runs `hostmax sweep`; returns the exit code.
pub fn sweep(engine: &dyn Engine, args: &SweepArgs) -> anyhow::Result<i32> {
    // Declared before any I/O, written once at the end: the JSON, the chart and one
    // `--hdr-log` holding every step.
    let mut outputs = args
        .run
        .outputs::<SweepReport>()?
        .declare(args.svg.as_deref(), SvgChart(report_chart))?;
    let base = plan_run(&args.run.request_beside(&outputs), engine.safety_sources())?;
    let steps = resolve_steps(
        args.steps.as_ref().map(|s| s.0.as_slice()),
        base.targets.len(),
    )?;
    let json = outputs.json().cloned();
    let specs = args.run.spec.spec_set(&base.targets)?;
    let tolerance = specs
        .as_ref()
        .map(|s| s.tolerance)
        .or(args.run.spec.tolerance)
        .unwrap_or_default();
    // The volumes' promised IOPS in device order, when every device has one.
    let caps: Option<Vec<f64>> = specs.as_ref().and_then(|set| {
        base.targets
            .iter()
            .map(|t| {
                let path = t.path.to_string_lossy();
                set.devices
                    .iter()
                    .find(|d| d.path == path)
                    .and_then(|d| d.expected().iops)
            })
            .collect()
    });

    let mut reports: Vec<HostReport> = Vec::new();
    let mut signal = 0;
    // The step a signal called off before it began (its volumes), if one did.
    let mut called_off = None;
    for (i, &n) in steps.iter().enumerate() {
        let mut plan = base.clone();
        plan.targets.truncate(n);
        crate::errln!(
            "hostmax sweep: step {}/{}: {n} volume{}",
            i + 1,
            steps.len(),
            if n == 1 { "" } else { "s" }
        );
        let label = format!("step{}", i + 1);
        let (report, sig) = measure::measure_step(
            engine,
            &plan,
            &label,
            &mut outputs.recorders(),
            !reports.is_empty(),
        )?;
        let Some(report) = report else {
            (signal, called_off) = (sig, Some(n));
            break;
        };
        crate::errln!(
            "hostmax sweep: {n} volume{}: {:.0} IOPS",
            if n == 1 { "" } else { "s" },
            report.host.iops
        );
        reports.push(report);
        if sig != 0 {
            signal = sig;
            break;
        }
    }
    let points: Vec<SweepPoint> = reports.iter().map(SweepPoint::from_report).collect();
    let rate_cap = base.workload.rate_iops.map(|c| c as f64);
    let Some(mut found) = Sweep::with_rate_cap(points, caps.as_deref(), rate_cap, tolerance) else {
        anyhow::bail!("the sweep measured nothing (stopped before its first step ended)");
    };
    let interrupted = signal != 0;
    let not_measured = steps[reports.len()..].to_vec();
    let mut table = if interrupted {
        found.withhold_conclusions();
        render_interrupted_sweep(&found, &reports)
    } else {
        render_sweep(&found, &reports)
    };
    if interrupted {
        table += &crate::output::interrupted_line(
            &crate::signals::signal_name(signal),
            &format!(
                "the step of {} volumes",
                called_off.unwrap_or(steps[reports.len() - 1])
            ),
            (!not_measured.is_empty())
                .then(|| format!("steps not measured: {not_measured:?} volumes")),
            "no knee is given",
        );
    }
    print_beside_json(&format!("\n{table}"), json.as_ref());
    let code = crate::exit_code::Outcome {
        signal,
        io_errors: reports.iter().any(|r| r.host.errors > 0),
        stalled: reports.iter().any(|r| r.stalled()),
        ..Default::default()
    }
    .code();
    let provenance = crate::provenance::spanning(&reports);
    let root = SweepReport::new(found, reports)
        .with_hostname(crate::provenance::hostname())
        .with_provenance(provenance)
        .with_interrupted(interrupted)
        .with_steps_not_measured(not_measured);
    outputs.write(&root)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::verify::steps_arg;
    use hostmax_aggregate::Tolerance;

    #[test]
    fn steps_parse_resolve_and_refuse() {
        let steps = steps_arg("4, 1,all,2,2").unwrap();
        assert_eq!(resolve_steps(Some(&steps.0), 6).unwrap(), vec![1, 2, 4, 6]);
        assert_eq!(resolve_steps(None, 20).unwrap(), vec![1, 2, 4, 8, 16, 20]);
        let err = resolve_steps(Some(&[Step::Count(8)]), 4).unwrap_err().0;
        assert!(
            err.contains("--steps 8") && err.contains("only 4 devices"),
            "{err}"
        );
        for bad in ["0", "x", "1,,2", "-1"] {
            let err = steps_arg(bad).unwrap_err();
            assert!(err.contains("e.g. 1,2,4,8,all"), "{bad}: {err}");
        }
    }

    #[test]
    fn table_and_chart_name_the_ceiling_and_knee() {
        let pts = [(1, 1998.0), (2, 3995.0), (4, 5004.0)]
            .map(|(volumes, iops)| SweepPoint::new(volumes, iops, iops * 4096.0))
            .to_vec();
        let s = Sweep::new(pts, Some(&[2000.0; 4]), Tolerance::DEFAULT).unwrap();
        let text = render_sweep(&s, &[]);
        assert!(
            text.contains("ceiling 5004 IOPS; knee at 4 volumes"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("4 "))
            .unwrap();
        assert!(row.contains("8000") && row.contains("0.625"), "{row}");
        assert!(!text.contains("not saturated"));
        let svg = sweep_chart(&s).to_svg().unwrap();
        assert!(svg.contains("measured") && svg.contains("sum of the volumes"));
        assert!(
            svg.contains("knee at 4 volumes"),
            "a saturated host has its knee drawn"
        );
        // Still growing with the volumes: no knee drawn, the highest figure named as such.
        let growing = [(1, 2000.0), (2, 3998.0), (4, 7990.0)]
            .map(|(volumes, iops)| SweepPoint::new(volumes, iops, iops * 4096.0))
            .to_vec();
        let s = Sweep::new(growing, Some(&[2000.0; 4]), Tolerance::DEFAULT).unwrap();
        assert!(!s.saturated);
        let svg = sweep_chart(&s).to_svg().unwrap();
        assert!(!svg.contains("knee at") && svg.contains("not saturated, no knee"));
        let text = render_sweep(&s, &[]);
        assert!(
            !text.contains("knee") && text.contains("highest 7990 IOPS"),
            "{text}"
        );
    }
}

#[cfg(test)]
mod fake_engine_tests {
    use super::*;
    use crate::args::parsed as cli;
    use crate::engine::fake::FakeEngine;
    use crate::test_support::{read_json, short_run_argv, ScratchDir};

    /// `hostmax sweep` over `volumes` 8 MiB files, 1 s steps, the JSON in the scratch
    /// directory; `more` after them.
    fn sweep_args(dir: &ScratchDir, volumes: usize, more: &[&str]) -> SweepArgs {
        let argv = short_run_argv(dir, Some("sweep"), volumes, more);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        match cli(&argv).command {
            Some(crate::args::Command::Sweep(args)) => args,
            other => panic!("not a sweep: {other:?}"),
        }
    }

    #[test]
    fn a_host_that_caps_out_has_its_knee_found_at_the_step_that_reached_it() {
        let dir = ScratchDir::new("sweep-knee");
        // The host gives 2400 IOPS at most, 1000 a volume below that.
        let engine =
            FakeEngine::new().with_iops(|_, volumes, _| 1000f64.min(2400.0 / volumes as f64));
        let code = sweep(&engine, &sweep_args(&dir, 8, &[])).unwrap();
        assert_eq!(code, 0);
        let runs = engine.runs();
        let counts: Vec<usize> = runs.iter().map(|r| r.targets.len()).collect();
        assert_eq!(counts, [1, 2, 4, 8]);
        // Each step drives the first volumes given.
        assert!(runs
            .windows(2)
            .all(|w| w[1].targets.starts_with(&w[0].targets)));
        let report = read_json(&dir.0.join("sweep.json"));
        let found = &report["sweep"];
        assert_eq!(found["saturated"], true, "{found}");
        assert_eq!(found["knee_volumes"], 4, "{found}");
        assert_eq!(found["ceiling_iops"].as_f64(), Some(2400.0), "{found}");
        assert_eq!(report["runs"].as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn a_host_still_growing_is_not_saturated_and_the_steps_given_run() {
        let dir = ScratchDir::new("sweep-growing");
        let engine = FakeEngine::new();
        let code = sweep(&engine, &sweep_args(&dir, 3, &["--steps", "all,1"])).unwrap();
        assert_eq!(code, 0);
        let counts: Vec<usize> = engine.runs().iter().map(|r| r.targets.len()).collect();
        assert_eq!(counts, [1, 3]);
        let found = &read_json(&dir.0.join("sweep.json"))["sweep"];
        assert_eq!(found["saturated"], false, "{found}");
    }

    #[test]
    fn io_errors_in_a_step_exit_3_after_every_step() {
        let dir = ScratchDir::new("sweep-errors");
        let engine = FakeEngine::new().with_errors_in(0);
        let code = sweep(&engine, &sweep_args(&dir, 2, &[])).unwrap();
        assert_eq!(code, 3);
        assert_eq!(engine.runs().len(), 2);
    }

    #[test]
    fn a_signal_ends_the_sweep_after_its_step_with_no_knee() {
        let dir = ScratchDir::new("sweep-signal");
        let watch = crate::signals::SignalWatch::detached();
        crate::signals::hear_on_this_thread(watch);
        let engine = FakeEngine::new().with_signal_during(1, watch, libc::SIGINT);
        let code = sweep(&engine, &sweep_args(&dir, 8, &[])).unwrap();
        assert_eq!(code, crate::exit_code::interrupted(libc::SIGINT));
        assert_eq!(engine.runs().len(), 2, "no step after the signal");
        let report = read_json(&dir.0.join("sweep.json"));
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["steps_not_measured"], serde_json::json!([4, 8]));
        assert_eq!(report["runs"].as_array().map(Vec::len), Some(2));
        let found = &report["sweep"];
        assert_eq!(found["saturated"], false, "{found}");
        // The step cut short is marked and is not the ceiling: the step that ran to its end is.
        assert_eq!(found["points"][1]["interrupted"], true, "{found}");
        assert!(found["points"][0].get("interrupted").is_none(), "{found}");
        assert_eq!(found["ceiling_iops"], found["points"][0]["iops"], "{found}");
        assert_eq!(found["knee_volumes"], 1, "{found}");
    }

    #[test]
    fn a_hangup_ends_the_sweep_as_sigterm_does_and_the_report_names_it() {
        let dir = ScratchDir::new("sweep-hangup");
        let watch = crate::signals::SignalWatch::detached();
        crate::signals::hear_on_this_thread(watch);
        let engine = FakeEngine::new().with_signal_during(1, watch, libc::SIGHUP);
        let code = sweep(&engine, &sweep_args(&dir, 8, &[])).unwrap();
        assert_eq!(code, 129);
        assert_eq!(engine.runs().len(), 2, "no step after the signal");
        let report = read_json(&dir.0.join("sweep.json"));
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["runs"][1]["interrupted_by"], "SIGHUP");
        assert!(report["runs"][0].get("interrupted_by").is_none());
    }

    #[test]
    fn a_write_step_a_signal_came_before_is_called_off_and_the_earlier_steps_reported() {
        let dir = ScratchDir::new("sweep-called-off");
        let watch = crate::signals::SignalWatch::detached();
        crate::signals::hear_on_this_thread(watch);
        // The signal comes while step 2 is readied: step 2, which writes, must not start.
        let engine = FakeEngine::new().with_signal_before(1, watch, libc::SIGTERM);
        let args = sweep_args(&dir, 4, &["--rw", "randwrite", "--allow-write"]);
        let code = sweep(&engine, &args).unwrap();
        assert_eq!(code, crate::exit_code::interrupted(libc::SIGTERM));
        assert_eq!(engine.runs().len(), 2, "step 2 readied, step 3 never");
        let report = read_json(&dir.0.join("sweep.json"));
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["runs"].as_array().map(Vec::len), Some(1));
        assert_eq!(report["steps_not_measured"], serde_json::json!([2, 4]));
    }
}
