//! `hostmax merge a.json b.json ... [--json fleet.json] [--fio-json fio.json]`: one exact
//! fleet report from the reports of hosts that ran the same workload together.

use std::path::Path;

use hostmax_aggregate::{
    measured_windows, merge_reports_with, overlap, HostReport, MergeError, SCHEMA_VERSION,
};

use crate::args::fleet::MergeArgs;
use crate::error::{option_for, BadInput};
use crate::output::export::Outputs;
use crate::output::fio_json::FioJson;
use crate::output::json::JsonReport;
use crate::output::stdio::escape_text;
use crate::provenance;

/// Reads one report file, refusing (as [`BadInput`]) anything that is not a hostmax report of
/// this schema version.
pub fn load_report(path: &Path) -> Result<HostReport, BadInput> {
    let shown = path.display();
    let not_a_report = |why: String| {
        BadInput(format!(
            "{shown}: not a hostmax report ({why}); give files written by 'hostmax --json'"
        ))
    };
    let text = crate::input::read_text(path).map_err(|e| {
        BadInput(format!(
            "{e} (merge takes files written by 'hostmax --json')"
        ))
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| not_a_report(format!("not JSON: {e}")))?;
    let version = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| not_a_report("no schema_version".into()))?;
    if version != u64::from(SCHEMA_VERSION) {
        // Schema 1 (before per-second device entries were named, with floats) is not
        // converted: its per-second figures of each device are unnamed integers.
        let age = if version < u64::from(SCHEMA_VERSION) {
            "an older"
        } else {
            "a newer"
        };
        return Err(BadInput(format!(
            "{shown}: schema_version {version} (written by {age} hostmax), this hostmax reads {SCHEMA_VERSION}; merge reports written by the same hostmax version"
        )));
    }
    serde_json::from_value(value).map_err(|e| not_a_report(e.to_string()))
}

/// Runs `hostmax merge`: loads every report, merges them, prints the table and writes the
/// JSON. Every refusal (unreadable file, not a report, other schema, differing workloads,
/// missing or hostile histograms, counts that overflow, figures no run can have, the same
/// run twice) is a [`BadInput`] (exit 2, one line) naming the file and the field.
pub fn run_merge(args: &MergeArgs) -> anyhow::Result<i32> {
    let outputs = Outputs::<HostReport>::new()
        .declare(args.json.as_deref(), JsonReport)?
        .declare(args.fio_json.as_deref(), FioJson)?;
    let inputs: Vec<(&str, &Path)> = args
        .reports
        .iter()
        .map(|p| ("a report being merged", p.as_path()))
        .collect();
    outputs.check_apart_from(&inputs)?;
    let reports = args
        .reports
        .iter()
        .map(|p| Ok((p.display().to_string(), load_report(p)?)))
        .collect::<Result<Vec<_>, BadInput>>()?;
    // The overlap and duplicate rules are the merge's own; the windows are read again here
    // for the merged report's window and the overlap note.
    let min_overlap = f64::from(args.min_overlap) / 100.0;
    let mut merged = merge_reports_with(&reports, min_overlap).map_err(|e| match e {
        MergeError::WorkloadDiffers(d) => {
            BadInput(d.describe(option_for(d.setting).unwrap_or(d.field)))
        }
        // The library's fixes name its own knobs; this tool's are options.
        MergeError::NotMeasuredTogether(problem) => BadInput(format!(
            "{}; run the hosts together (--start-at), or accept less with --min-overlap PERCENT",
            escape_text(&problem)
        )),
        MergeError::NoWindow { label } => BadInput(format!(
            "{}: no started_at/ended_at (written by an older hostmax), so whether it ran together with the others cannot be checked; merge reports of this version, or add --min-overlap 0 to merge without the check",
            escape_text(&label)
        )),
        MergeError::BadWindow { label, why } => BadInput(format!(
            "{}: {}; give reports written by 'hostmax --json'",
            escape_text(&label),
            escape_text(&why)
        )),
        e => BadInput(escape_text(&e.to_string()).into_owned()),
    })?;
    // With --min-overlap 0 a report without a window is let through, and the merged report
    // then has no window either.
    let mut windows = Vec::new();
    let mut all_windows = true;
    for (label, report) in &reports {
        match measured_windows(label, report) {
            Ok(w) => windows.extend(w),
            Err(_) => all_windows = false,
        }
    }
    if let Some((share, _, _)) = overlap(&windows).filter(|o| o.0 < 0.99) {
        crate::errln!(
            "note: the runs' measured windows overlap {:.1}% of their span; rates add as if they ran together",
            share * 100.0
        );
    }
    let now = std::time::SystemTime::now();
    let first_start = windows.iter().map(|w| w.start).min().unwrap_or(now);
    let last_end = windows.iter().map(|w| w.end).max().unwrap_or(now);
    merged.provenance = provenance::for_window(first_start, last_end);
    if !all_windows || windows.is_empty() {
        merged.provenance.started_at = None;
        merged.provenance.ended_at = None;
    }
    if let Some(note) = seeds_note(&merged) {
        crate::errln!("{note}");
    }
    if let Some(note) = interrupted_note(&merged) {
        crate::errln!("{note}");
    }
    crate::measure::emit(&merged, outputs)?;
    Ok(0)
}

/// A note naming the hosts whose runs a signal cut short (the merged report's `interrupted`,
/// each in `fleet.hosts[].interrupted`): the fleet's figures cover less than their runtime.
fn interrupted_note(merged: &HostReport) -> Option<String> {
    let hosts = &merged.fleet.as_ref()?.hosts;
    let cut: Vec<std::borrow::Cow<'_, str>> = hosts
        .iter()
        .filter(|h| h.interrupted)
        .map(|h| escape_text(&h.hostname))
        .collect();
    (!cut.is_empty()).then(|| {
        format!(
            "note: interrupted: the runs of {} were cut short, so the merged figures cover less than the runtime there (\"interrupted\": true); run those hosts again for a whole fleet measurement",
            cut.join(", ")
        )
    })
}

/// A note listing the hosts' seeds when they differ (the merged workload shows the first).
fn seeds_note(merged: &HostReport) -> Option<String> {
    let hosts = &merged.fleet.as_ref()?.hosts;
    let first = hosts.first()?.seed;
    if hosts.iter().all(|h| h.seed == first) {
        return None;
    }
    let list: Vec<String> = hosts
        .iter()
        .map(|h| match h.seed {
            Some(seed) => format!("{} {seed}", escape_text(&h.hostname)),
            None => format!("{} unknown", escape_text(&h.hostname)),
        })
        .collect();
    Some(format!(
        "note: the hosts ran with different --seed values ({}); each is in fleet.hosts[].seed",
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::tests_support::sample_report;
    use crate::test_support::ScratchDir;

    #[test]
    fn non_reports_are_refused_naming_the_file() {
        let s = ScratchDir::new("refuse");
        for (name, text, expected) in [
            ("junk.json", "hello", "not JSON"),
            ("other.json", r#"{"name":"x"}"#, "no schema_version"),
            (
                "v9.json",
                r#"{"schema_version":9}"#,
                "schema_version 9 (written by a newer hostmax), this hostmax reads 2",
            ),
            (
                "v1.json",
                r#"{"schema_version":1,"time_series":[{"devices":[700]}]}"#,
                "schema_version 1 (written by an older hostmax), this hostmax reads 2; merge reports written by the same hostmax version",
            ),
            (
                "partial.json",
                r#"{"schema_version":2,"host":{}}"#,
                "not a hostmax report (missing field",
            ),
        ] {
            let err = load_report(&s.write(name, text)).unwrap_err().0;
            assert!(
                err.starts_with(&s.0.join(name).display().to_string()),
                "{err}"
            );
            assert!(err.contains(expected), "{name}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
        let err = load_report(&s.0.join("absent.json")).unwrap_err().0;
        assert!(err.contains("cannot read it"), "{err}");
    }

    /// A report of a 2 s run of `bs`-byte reads on two 8 MiB files through the fake
    /// engine at `iops` a volume, written to `name` in `s`.
    fn fake_report(s: &ScratchDir, name: &str, iops: f64, bs: u64) -> std::path::PathBuf {
        // Its own folder: the tests beside this one make hosts of the same names at once.
        static HOSTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = HOSTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let host = ScratchDir::new(&format!("merge-host-{n}"));
        let devices = crate::test_support::target_files(&host, 2, 8 << 20);
        use crate::engine::Engine as _;
        let engine = crate::engine::fake::FakeEngine::new().with_iops(move |_, _, _| iops);
        let plan = crate::plan::plan_run(
            &crate::plan::PlanRequest {
                devices: devices.iter().map(Into::into).collect(),
                block_size: bs,
                working_set: Some(8 << 20),
                runtime: std::time::Duration::from_secs(2),
                ramp: std::time::Duration::ZERO,
                ..crate::plan::PlanRequest::default()
            },
            engine.safety_sources(),
        )
        .unwrap();
        let (report, _) = crate::measure::measure(
            &engine,
            &plan,
            None,
            &mut crate::output::export::Recorders::none(),
        )
        .unwrap();
        s.write(name, &serde_json::to_string(&report).unwrap())
    }

    fn merge_args(argv: &[&str]) -> MergeArgs {
        match crate::args::parsed(&[&["merge"], argv].concat()).command {
            Some(crate::args::Command::Merge(args)) => args,
            other => panic!("not a merge: {other:?}"),
        }
    }

    #[test]
    fn reports_measured_together_merge_into_their_sum() {
        let s = ScratchDir::new("merge-sum");
        let a = fake_report(&s, "a.json", 1000.0, 4096);
        let b = fake_report(&s, "b.json", 2000.0, 4096);
        let out = s.0.join("fleet.json");
        let args = merge_args(&[
            &a.display().to_string(),
            &b.display().to_string(),
            "--json",
            &out.display().to_string(),
        ]);
        assert_eq!(run_merge(&args).unwrap(), 0);
        let merged = crate::test_support::read_json(&out);
        // Two volumes at 1000 and two at 2000: added, not averaged.
        assert_eq!(
            merged["host"]["iops"].as_f64(),
            Some(6000.0),
            "{}",
            merged["host"]
        );
        assert_eq!(merged["fleet"]["hosts"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn the_same_run_twice_is_refused() {
        let s = ScratchDir::new("merge-twice");
        let a = fake_report(&s, "a.json", 1000.0, 4096);
        let copy = s.write("copy.json", &std::fs::read_to_string(&a).unwrap());
        let args = merge_args(&[&a.display().to_string(), &copy.display().to_string()]);
        let err = run_merge(&args).unwrap_err();
        let refusal = err.downcast_ref::<BadInput>().expect("a refusal");
        assert!(refusal.0.contains("copy.json"), "{}", refusal.0);
    }

    #[test]
    fn reports_of_other_block_sizes_are_refused_naming_the_option() {
        let s = ScratchDir::new("merge-bs");
        let a = fake_report(&s, "a.json", 1000.0, 4096);
        let b = fake_report(&s, "b.json", 1000.0, 8192);
        let args = merge_args(&[&a.display().to_string(), &b.display().to_string()]);
        let err = run_merge(&args).unwrap_err();
        let refusal = err.downcast_ref::<BadInput>().expect("a refusal");
        assert!(refusal.0.contains("--bs"), "{}", refusal.0);
    }

    #[test]
    fn runs_not_measured_together_are_refused_with_the_fix() {
        let s = ScratchDir::new("merge-apart");
        let a = fake_report(&s, "a.json", 1000.0, 4096);
        let b = fake_report(&s, "b.json", 1000.0, 4096);
        // b's run an hour before a's.
        let mut earlier = load_report(&b).unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        earlier.provenance =
            provenance::for_window(hour_ago - std::time::Duration::from_secs(2), hour_ago);
        let b = s.write("b.json", &serde_json::to_string(&earlier).unwrap());
        let args = merge_args(&[&a.display().to_string(), &b.display().to_string()]);
        let err = run_merge(&args).unwrap_err();
        let refusal = err.downcast_ref::<BadInput>().expect("a refusal");
        assert!(
            refusal.0.contains("--start-at") && refusal.0.contains("--min-overlap"),
            "{}",
            refusal.0
        );
        // Accepting no overlap merges them.
        let mut argv = vec![a.display().to_string(), b.display().to_string()];
        argv.extend(["--min-overlap".into(), "0%".into()]);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        assert_eq!(run_merge(&merge_args(&argv)).unwrap(), 0);
    }

    #[test]
    fn a_written_report_loads_back() {
        let s = ScratchDir::new("load");
        let report = sample_report();
        let path = s.write("r.json", &serde_json::to_string(&report).unwrap());
        assert_eq!(load_report(&path).unwrap(), report);
    }
}
