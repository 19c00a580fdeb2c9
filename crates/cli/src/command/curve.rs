//! `hostmax curve`: the load-latency curve by queue-depth steps. One run per depth through
//! [`crate::measure::measure`], the curve and its answers from `hostmax_aggregate::curve`, a
//! table, `--json` and an `--svg` chart (IOPS on x, latency on a log y, the promise as a line,
//! the knee marked).

use hostmax_aggregate::consistency::judge_consistency;
use hostmax_aggregate::curve::by_rate::{RateCurve, RateStep};
use hostmax_aggregate::curve::{CurvePoint, LatencyPromise, LatencyStat};
use hostmax_aggregate::{Curve, CurveReport, HostReport};
use hostmax_engine::{EngineError, Setting, SettingError};

use crate::args::verify::{CurveArgs, OfferedRate, RateList};
use crate::engine::Engine;
use crate::error::{option_for, BadInput};
use crate::measure;
use crate::output::curve::{curve_chart, render_curve, render_rate_curve};
use crate::output::destination::print_beside_json;
use crate::output::svg::SvgChart;
use crate::plan::plan_run;

/// The depths a curve runs by default: light load to well past where most volumes saturate.
pub const DEFAULT_DEPTHS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

impl CurveArgs {
    /// The latency promise given, if any.
    pub fn promise(&self) -> Option<LatencyPromise> {
        [
            (LatencyStat::Mean, self.mean_max),
            (LatencyStat::P50, self.p50_max),
            (LatencyStat::P95, self.p95_max),
            (LatencyStat::P99, self.p99_max),
            (LatencyStat::P999, self.p99_9_max),
        ]
        .into_iter()
        .find_map(|(percentile, max)| max.map(|max_ns| LatencyPromise::new(percentile, max_ns)))
    }
}

/// Runs `hostmax curve`; returns the exit code.
pub fn curve(engine: &dyn Engine, args: &CurveArgs) -> anyhow::Result<i32> {
    // Declared before any I/O, written once at the end: the JSON, the chart and one
    // `--hdr-log` holding every depth.
    let mut outputs = args.run.outputs::<CurveReport>()?.declare(
        args.svg.as_deref(),
        // By offered rate where the curve was measured by rate, else by depth.
        SvgChart(|r: &CurveReport| match &r.by_rate {
            Some(by_rate) => crate::output::curve::rate_curve_chart(by_rate),
            None => curve_chart(&r.curve),
        }),
    )?;
    let base = plan_run(&args.run.request_beside(&outputs), engine.safety_sources())?;
    let json = outputs.json().cloned();
    let depths = args
        .depths
        .as_ref()
        .map_or_else(|| DEFAULT_DEPTHS.to_vec(), |d| d.0.clone());
    if depths.is_empty() {
        return Err(BadInput("--depths: give at least one depth, e.g. 1,4,16".into()).into());
    }
    check_depths(engine, &base, &depths)?;
    let specs = args.run.spec.spec_set(&base.targets)?;
    let required = args.run.spec.consistency()?;
    let tolerance = specs
        .as_ref()
        .map(|s| s.tolerance)
        .or(args.run.spec.tolerance)
        .unwrap_or_default()
        .fraction();
    let promise = args.promise();
    if let Some(rates) = &args.rates {
        return by_rate(
            engine,
            rates,
            &base,
            promise,
            tolerance,
            outputs,
            json.as_ref(),
        );
    }

    let mut reports: Vec<HostReport> = Vec::new();
    let mut signal = 0;
    // The depth a signal called off before it began, if one did.
    let mut called_off = None;
    for (i, &depth) in depths.iter().enumerate() {
        let mut plan = base.clone();
        plan.workload.iodepth = depth;
        crate::errln!(
            "hostmax curve: step {}/{}: depth {depth} per volume",
            i + 1,
            depths.len()
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
            (signal, called_off) = (sig, Some(depth));
            break;
        };
        reports.push(report);
        if sig != 0 {
            signal = sig;
            break;
        }
    }
    let points = reports
        .iter()
        .map(CurvePoint::from_report)
        .collect::<Result<Vec<_>, _>>()?;
    let Some(mut found) = Curve::new(points, promise, tolerance) else {
        anyhow::bail!("the curve measured nothing (stopped before its first step ended)");
    };
    let interrupted = signal != 0;
    let not_measured = depths[reports.len()..].to_vec();
    if interrupted {
        found.withhold_conclusions();
    }
    let mut table = render_curve(&found, &reports);
    if interrupted {
        table += &crate::output::interrupted_line(
            &crate::signals::signal_name(signal),
            &format!("depth {}", called_off.unwrap_or(depths[reports.len() - 1])),
            (!not_measured.is_empty()).then(|| format!("depths not measured: {not_measured:?}")),
            "no knee and no saturation point are given",
        );
    }
    print_beside_json(&format!("\n{table}"), json.as_ref());
    // Consistency is judged where the host would be run: at its knee, else at saturation
    // (neither when interrupted).
    let at = found.host.knee.as_ref().or(found.host.saturation.as_ref());
    let consistency = match (&specs, required, at) {
        (Some(set), Some(req), Some(at)) => reports
            .iter()
            .find(|r| r.workload.iodepth == at.iodepth)
            .and_then(|r| judge_consistency(set, &[r], req)),
        _ => None,
    };
    if let (Some(c), Some(at)) = (&consistency, at) {
        let at = at.iodepth;
        print_beside_json(
            &format!("at depth {at}: {}", crate::verdict::consistency::render(c)),
            json.as_ref(),
        );
    }
    let code = crate::exit_code::Outcome {
        signal,
        bad_data: false,
        io_errors: reports.iter().any(|r| r.host.errors > 0),
        stalled: reports.iter().any(|r| r.stalled()),
        verdict_failed: consistency.as_ref().is_some_and(|c| !c.pass),
        not_concluded: false,
    }
    .code();
    let root = CurveReport::new(found, reports)
        .with_consistency(consistency)
        .with_interrupted(interrupted)
        .with_depths_not_measured(not_measured);
    outputs.write(&root)?;
    Ok(code)
}

/// Every step's workload checked before step 1 runs, by the engine's own checks (its ranges,
/// [`hostmax_engine::Workload::check`], and the memory the deepest step's buffers take,
/// [`Engine::check_memory`]), so no curve runs its first steps to be refused later. The
/// refusal names `--depths` where the engine names the depth.
fn check_depths(
    engine: &dyn Engine,
    base: &crate::plan::RunPlan,
    depths: &[u32],
) -> Result<(), BadInput> {
    let refusal = |e: &SettingError| {
        BadInput(e.naming(|s| match s {
            Setting::Iodepth => Some("--depths"),
            s => option_for(s),
        }))
    };
    for &depth in depths {
        let step = base.workload.clone().with_iodepth(depth);
        step.check().map_err(|e| refusal(&e))?;
    }
    let Some(&deepest) = depths.iter().max() else {
        return Ok(());
    };
    let step = base.workload.clone().with_iodepth(deepest);
    match engine.check_memory(&step, &base.targets) {
        Err(EngineError::InvalidWorkload(e)) => Err(refusal(&e)),
        _ => Ok(()),
    }
}

/// `curve --rates`: the ceiling at `--iodepth` uncapped first (what fractions are of, and the
/// curve's one depth), then one run per offered rate, each judged by its response times.
fn by_rate(
    engine: &dyn Engine,
    rates: &RateList,
    base: &crate::plan::RunPlan,
    promise: Option<LatencyPromise>,
    tolerance: f64,
    mut outputs: crate::output::export::Outputs<CurveReport>,
    json: Option<&crate::output::destination::Destination>,
) -> anyhow::Result<i32> {
    let steps = rates.0.len() + 1;
    let volumes = base.targets.len().max(1) as f64;
    crate::errln!(
        "hostmax curve: step 1/{steps}: the ceiling, uncapped at depth {}",
        base.workload.iodepth
    );
    let (ceiling_report, mut signal) =
        measure::measure(engine, base, Some("ceiling"), &mut outputs.recorders())?;
    let ceiling = ceiling_report.host.iops / volumes;
    let mut reports = vec![ceiling_report];
    let mut offered_order = Vec::new();
    if signal == 0 {
        for (i, rate) in rates.0.iter().enumerate() {
            let offered = rate.per_volume(ceiling);
            let mut plan = base.clone();
            plan.workload.rate_iops = Some(offered);
            crate::errln!(
                "hostmax curve: step {}/{steps}: {offered} IOPS offered per volume",
                i + 2
            );
            let label = format!("rate{}", i + 1);
            // The ceiling step measured: a rate step a signal calls off ends the curve there.
            let (report, sig) =
                measure::measure_step(engine, &plan, &label, &mut outputs.recorders(), true)?;
            let Some(report) = report else {
                signal = sig;
                break;
            };
            reports.push(report);
            offered_order.push(offered);
            if sig != 0 {
                signal = sig;
                break;
            }
        }
    }
    let mut rate_steps = Vec::new();
    for report in &reports[1..] {
        rate_steps.extend(RateStep::from_report(report)?);
    }
    let mut by_rate = RateCurve::new(rate_steps, promise, Some(ceiling));
    let interrupted = signal != 0;
    let ceiling_point = CurvePoint::from_report(&reports[0])?;
    let Some(mut curve) = Curve::new(vec![ceiling_point], promise, tolerance) else {
        anyhow::bail!("the curve measured nothing (stopped before its first step ended)");
    };
    if interrupted {
        curve.withhold_conclusions();
        by_rate.withhold_conclusions();
    }
    let mut table = render_rate_curve(&by_rate, &reports);
    if interrupted {
        let not_measured: Vec<String> = rates.0[offered_order.len()..]
            .iter()
            .map(|r| match r {
                OfferedRate::Iops(n) => n.to_string(),
                OfferedRate::OfCeiling(f) => format!("{f}x"),
            })
            .collect();
        table += &crate::output::interrupted_line(
            &crate::signals::signal_name(signal),
            "the rate steps",
            (!not_measured.is_empty()).then(|| format!("rates not measured: {not_measured:?}")),
            "no knee and no saturation point are given",
        );
    }
    print_beside_json(&format!("\n{table}"), json);
    let code = crate::exit_code::Outcome {
        signal,
        bad_data: false,
        io_errors: reports.iter().any(|r| r.host.errors > 0),
        stalled: reports.iter().any(|r| r.stalled()),
        verdict_failed: false,
        not_concluded: false,
    }
    .code();
    let root = CurveReport::new(curve, reports)
        .with_interrupted(interrupted)
        .with_by_rate(Some(by_rate));
    outputs.write(&root)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::verify::{depths_arg, parse_latency};
    use hostmax_aggregate::curve::{CurveLatency, PointFigures, VolumePoint};

    #[test]
    fn rates_parse_as_iops_or_fractions_and_refuse_the_rest() {
        use crate::args::verify::rates_arg;
        let rates = rates_arg("0.5x, 1.0x,10k,250").unwrap();
        assert_eq!(
            rates.0,
            [
                OfferedRate::OfCeiling(0.5),
                OfferedRate::OfCeiling(1.0),
                OfferedRate::Iops(10_000),
                OfferedRate::Iops(250)
            ]
        );
        assert!(rates.needs_ceiling());
        assert_eq!(OfferedRate::OfCeiling(0.8).per_volume(2000.0), 1600);
        assert_eq!(OfferedRate::OfCeiling(0.0001).per_volume(2000.0), 1);
        assert_eq!(OfferedRate::Iops(7).per_volume(2000.0), 7);
        for bad in [
            "",
            "0",
            "0x",
            "-1x",
            "x",
            "nanx",
            "1.5",
            "fast",
            "1,,2",
            "2000000000",
        ] {
            let err = rates_arg(bad).unwrap_err();
            assert!(err.contains("e.g. 0.5x,0.8x,1.0x"), "{bad}: {err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn latencies_and_depths_parse_and_refuse() {
        assert_eq!(parse_latency("1ms"), Ok(1_000_000));
        assert_eq!(parse_latency("500us"), Ok(500_000));
        assert_eq!(parse_latency("0.8ms"), Ok(800_000));
        assert_eq!(parse_latency("2s"), Ok(2_000_000_000));
        for bad in ["", "1", "ms", "-1ms", "0ms", "1 hour", "1.2.3ms"] {
            assert!(
                parse_latency(bad).unwrap_err().contains("e.g. 1ms"),
                "{bad}"
            );
        }
        assert_eq!(depths_arg("8, 1,2,2").unwrap().0, vec![1, 2, 8]);
        for bad in ["x", "1,,2", "-1", "1.5"] {
            assert!(depths_arg(bad).unwrap_err().contains("e.g. 1,2,4"), "{bad}");
        }
        // The range is the engine's to judge (Workload::check), before step 1.
        assert_eq!(depths_arg("0,70000").unwrap().0, vec![0, 70000]);
    }

    #[test]
    fn table_and_chart_show_the_knee_and_the_promise() {
        let point = |d: u32| {
            let latency = CurveLatency::default()
                .with_mean(u64::from(d) * 500_000)
                .with_p50(u64::from(d) * 500_000)
                .with_p95(u64::from(d) * 500_000)
                .with_p99(u64::from(d) * 600_000)
                .with_p99_9(u64::from(d) * 700_000);
            let f = PointFigures::new(2000.0, 2000.0 * 4096.0, latency);
            CurvePoint::new(d, f.clone(), vec![VolumePoint::new("/dev/loop9", f)])
        };
        let promise = LatencyPromise::new(LatencyStat::P99, 1_000_000);
        let curve = Curve::new(vec![point(1), point(2), point(4)], Some(promise), 0.05).unwrap();
        let text = render_curve(&curve, &[]);
        assert!(text.contains("promise p99 <= 1"), "{text}");
        assert!(
            text.contains("host: SLO knee 2000 IOPS at depth 1"),
            "{text}"
        );
        assert!(text.contains("/dev/loop9: SLO knee"), "{text}");
        assert_eq!(text.matches("BROKEN").count(), 2, "{text}");
        let svg = curve_chart(&curve).to_svg().unwrap();
        assert!(
            svg.contains("SLO knee") && svg.contains("promise: p99"),
            "{svg}"
        );
    }
}

#[cfg(test)]
mod fake_engine_tests {
    use super::*;
    use crate::args::parsed as cli;
    use crate::engine::fake::FakeEngine;
    use crate::test_support::{read_json, short_run_argv, ScratchDir};

    /// `hostmax curve` over two 8 MiB files, 1 s steps, the JSON in the scratch directory;
    /// `more` after them.
    fn curve_args(dir: &ScratchDir, more: &[&str]) -> CurveArgs {
        let argv = short_run_argv(dir, Some("curve"), 2, more);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        match cli(&argv).command {
            Some(crate::args::Command::Curve(args)) => *args,
            other => panic!("not a curve: {other:?}"),
        }
    }

    /// A volume that gives 1000 IOPS per I/O in flight up to 4000: its latency (depth /
    /// IOPS) is 1 ms up to depth 4, then doubles with each doubling.
    fn saturating_at_depth_4() -> FakeEngine {
        FakeEngine::new().with_iops(|_, _, w| (1000.0 * f64::from(w.iodepth)).min(4000.0))
    }

    #[test]
    fn the_slo_knee_is_the_deepest_step_that_keeps_the_promise() {
        let dir = ScratchDir::new("curve-knee");
        let engine = saturating_at_depth_4();
        let args = curve_args(&dir, &["--depths", "16,1,4,2,8", "--p99-max", "1.5ms"]);
        let code = curve(&engine, &args).unwrap();
        assert_eq!(code, 0);
        let depths: Vec<u32> = engine.runs().iter().map(|r| r.workload.iodepth).collect();
        assert_eq!(depths, [1, 2, 4, 8, 16], "in order, each once");
        let host = &read_json(&dir.0.join("curve.json"))["curve"]["host"];
        assert_eq!(host["knee"]["iodepth"], 4, "{host}");
        assert_eq!(host["saturation"]["iodepth"], 4, "{host}");
        assert_eq!(host["broken_from"], 8, "{host}");
        assert_eq!(host["held_everywhere"], false, "{host}");
    }

    #[test]
    fn every_depth_is_checked_by_the_engine_before_the_first_step_runs() {
        let dir = ScratchDir::new("curve-depths");
        for (depths, more, says) in [
            (
                "1,2,8192",
                &[][..],
                "queue depth 8192 is out of range: use 1 to 4096 (--depths)",
            ),
            ("0,1", &[][..], "queue depth 0 is out of range"),
            // 2 workers x 4096 = 8192 in flight per target.
            ("1,4096", &["--numjobs", "2"][..], "(--numjobs, --depths)"),
            // The deepest step's buffers: 2 targets x 4096 x 8 MiB, twice for the mix (128
            // GiB), beyond this machine's memory; the first step's (64 MiB) fit.
            (
                "1,4096",
                &["--bs", "8m", "--rw", "randrw", "--allow-write"][..],
                "lower the queue depth or the block size (--depths, --bs)",
            ),
        ] {
            let engine = saturating_at_depth_4();
            let args = curve_args(&dir, &[&["--depths", depths][..], more].concat());
            let err = curve(&engine, &args).unwrap_err();
            let refusal = err.downcast_ref::<BadInput>().expect("a refusal");
            assert!(refusal.0.contains(says), "{depths}: {}", refusal.0);
            assert!(
                engine.runs().is_empty(),
                "{depths}: a step ran before the refusal"
            );
        }
    }

    #[test]
    fn offered_rates_are_fractions_of_the_ceiling_measured_first() {
        let dir = ScratchDir::new("curve-rates");
        let engine = saturating_at_depth_4();
        let args = curve_args(&dir, &["--iodepth", "8", "--rates", "0.25x,1000,1.0x"]);
        let code = curve(&engine, &args).unwrap();
        assert_eq!(code, 0);
        let runs = engine.runs();
        let offered: Vec<Option<u64>> = runs.iter().map(|r| r.workload.rate_iops).collect();
        // The ceiling uncapped (4000 a volume), then a quarter of it, 1000, and all of it.
        assert_eq!(offered, [None, Some(1000), Some(1000), Some(4000)]);
        assert!(runs.iter().all(|r| r.workload.iodepth == 8));
        let report = read_json(&dir.0.join("curve.json"));
        assert!(report["by_rate"].is_object(), "{report}");
    }

    #[test]
    fn a_signal_ends_the_curve_with_no_knee_and_no_saturation_point() {
        let dir = ScratchDir::new("curve-signal");
        let watch = crate::signals::SignalWatch::detached();
        crate::signals::hear_on_this_thread(watch);
        let engine = saturating_at_depth_4().with_signal_during(1, watch, libc::SIGINT);
        let args = curve_args(&dir, &["--depths", "1,2,4,8,16", "--p99-max", "1.5ms"]);
        let code = curve(&engine, &args).unwrap();
        assert_eq!(code, crate::exit_code::interrupted(libc::SIGINT));
        assert_eq!(engine.runs().len(), 2);
        let report = read_json(&dir.0.join("curve.json"));
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["depths_not_measured"], serde_json::json!([4, 8, 16]));
        let host = &report["curve"]["host"];
        assert!(
            host["knee"].is_null() && host["saturation"].is_null(),
            "{host}"
        );
        // The step the signal cut short (depth 2, 4000 IOPS over its part, two volumes) is
        // marked and is not the peak: only depth 1 (2000) ran to its end.
        let points = report["curve"]["points"].as_array().unwrap();
        assert_eq!(points[1]["interrupted"], true, "{}", points[1]);
        assert!(points[0].get("interrupted").is_none(), "{}", points[0]);
        assert_eq!(host["peak_iops"], 2000.0, "{host}");
        let curve: Curve = serde_json::from_value(report["curve"].clone()).unwrap();
        let text = render_curve(&curve, &[]);
        let step2 = text
            .lines()
            .find(|l| l.trim_start().starts_with("2 "))
            .unwrap();
        assert!(
            step2.ends_with("interrupted") && !step2.contains("held"),
            "{text}"
        );
        assert!(
            text.contains("peak 2000 IOPS over the depths that ran to their end"),
            "{text}"
        );
    }

    #[test]
    fn a_rate_step_cut_short_is_neither_held_nor_the_saturation_point() {
        let dir = ScratchDir::new("curve-rate-signal");
        let watch = crate::signals::SignalWatch::detached();
        crate::signals::hear_on_this_thread(watch);
        // The ceiling (4000 a volume), then 0.25x; the signal comes during the 1.0x step.
        let engine = saturating_at_depth_4().with_signal_during(2, watch, libc::SIGINT);
        let args = curve_args(
            &dir,
            &[
                "--iodepth",
                "8",
                "--rates",
                "0.25x,1.0x,2.0x",
                "--p99-max",
                "50ms",
            ],
        );
        let code = curve(&engine, &args).unwrap();
        assert_eq!(code, crate::exit_code::interrupted(libc::SIGINT));
        let report = read_json(&dir.0.join("curve.json"));
        let steps = report["by_rate"]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!(steps[1]["interrupted"], true, "{}", steps[1]);
        let by_rate: RateCurve = serde_json::from_value(report["by_rate"].clone()).unwrap();
        let text = render_rate_curve(&by_rate, &[]);
        let cut = text
            .lines()
            .find(|l| l.trim_start().starts_with("4000 "))
            .unwrap();
        assert!(cut.ends_with("-  interrupted"), "{text}");
        // Recomputed from its steps, the curve takes no conclusion from the cut one.
        let again = RateCurve::new(by_rate.steps.clone(), by_rate.promise, by_rate.ceiling_iops);
        assert_eq!(again.knee_offered_iops, Some(1000), "{again:?}");
        assert_eq!(again.saturation_offered_iops, None, "{again:?}");
    }
}
