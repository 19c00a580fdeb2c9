//! Verdicts on the command line, shared by the judged main run, `hostmax verify` and the
//! suite: the spec options ([`SpecArgs`]) and the spec file turned into a [`SpecSet`] for the
//! probed targets, the run shape each promise needs ([`rule_options`]), the judged exit code,
//! and the verdict table ([`table::render_verdict`]) and consistency lines ([`consistency`]).
//!
//! The judging itself is pure and lives in the aggregator (`hostmax_aggregate::verdict`).
//!
//! Exit codes: [`crate::exit_code`]'s table, by its precedence (a verdict that judged nothing
//! is 7, NOT CONCLUDED).

pub mod consistency;
pub mod table;

use std::path::{Path, PathBuf};

use hostmax_aggregate::spec::{self, SpecFile, SpecFileText, VolumeClass};
use hostmax_aggregate::verdict::{DeviceExpectation, Judgement, NotJudged, RuleKind};
use hostmax_aggregate::{HostReport, SpecSet, VolumeSpec};
use hostmax_engine::TargetInfo;

pub use crate::args::spec::SpecArgs;
use crate::error::BadInput;
use crate::exit_code;
use crate::plan::RunPlan;

impl SpecArgs {
    /// The required consistency: `--consistency`, else the spec file's. Refused without a
    /// promise to hold.
    pub fn consistency(
        &self,
    ) -> Result<Option<hostmax_aggregate::consistency::Consistency>, BadInput> {
        if self.consistency.is_some() && !self.is_given() {
            return Err(BadInput(
                "--consistency needs a promise to hold: add --expect-volume-iops, --profile, --volume-spec, --expect-host-iops or --spec-file".into(),
            ));
        }
        if self.consistency.is_some() {
            return Ok(self.consistency);
        }
        match &self.spec_file {
            Some(path) => Ok(read_spec_file(path)?.consistency),
            None => Ok(None),
        }
    }

    /// The class the options give every volume (`None` when they give none).
    fn volume_class(&self) -> Result<Option<VolumeClass>, BadInput> {
        let (base, mut label) = match (&self.profile, &self.volume_spec) {
            (Some(name), _) => (
                spec::profile(name).map_err(|e| BadInput(format!("--profile: {e}")))?,
                name.clone(),
            ),
            (None, Some(spec)) => (spec.clone(), spec.to_string()),
            (None, None) => (VolumeSpec::default(), String::new()),
        };
        let flat = self.flat_volume_spec();
        if !flat.is_empty() {
            let shown = flat.to_string();
            label = if label.is_empty() {
                shown
            } else {
                format!("{label} with {shown}")
            };
        }
        let spec = base.overridden_by(&flat);
        Ok((!spec.is_empty()).then_some(VolumeClass::new(spec, label)))
    }

    /// The spec set for `targets`: the options, the spec file, and each target's size.
    /// `None` when no spec option was given. Every problem is a [`BadInput`].
    pub fn spec_set(&self, targets: &[TargetInfo]) -> Result<Option<SpecSet>, BadInput> {
        if !self.is_given() {
            return Ok(None);
        }
        let file = match &self.spec_file {
            Some(path) => Some(read_spec_file(path)?),
            None => None,
        };
        let cli_class = self.volume_class()?;
        let default_class = cli_class.or_else(|| file.as_ref().and_then(|f| f.volume.clone()));

        // The file's [[device]] paths resolved like --devices, to match the targets.
        let mut listed: Vec<(PathBuf, &VolumeClass)> = Vec::new();
        if let Some(f) = &file {
            for (path, class) in &f.devices {
                let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
                if !targets.iter().any(|t| t.path == resolved) {
                    return Err(BadInput(format!(
                        "--spec-file: [[device]] {path} is not among --devices; add it to --devices or remove its entry"
                    )));
                }
                listed.push((resolved, class));
            }
        }
        let mut devices = Vec::new();
        for target in targets {
            let class = listed
                .iter()
                .find(|(p, _)| *p == target.path)
                .map(|(_, c)| (*c).clone())
                .or_else(|| default_class.clone());
            let Some(class) = class else { continue };
            // A listed device with only a size takes the default class's rules.
            let class = if class.spec.is_empty() {
                match &default_class {
                    Some(d) => d.clone().with_size(class.size.or(d.size)),
                    None => class,
                }
            } else {
                class
            };
            if class.spec.is_empty() {
                continue;
            }
            devices.push(DeviceExpectation::new(
                target.path.to_string_lossy(),
                class.size.unwrap_or(target.size),
                class.spec,
                class.label,
            ));
        }
        let file_host = file.as_ref().map(|f| f.host).unwrap_or_default();
        let host = file_host.overridden_by(&self.flat_host_spec());
        let tolerance = self
            .tolerance
            .or(file.as_ref().and_then(|f| f.tolerance))
            .unwrap_or_default();
        let set = SpecSet::new(devices, host, tolerance);
        if set.is_empty() {
            return Err(BadInput(
                "the spec options promise nothing for these devices: give --expect-volume-iops, --profile, --volume-spec, --expect-host-iops, or [[device]] entries in --spec-file"
                    .into(),
            ));
        }
        Ok(Some(set))
    }
}

/// Reads and checks a spec file: JSON when it ends in `.json`, else TOML.
pub fn read_spec_file(path: &Path) -> Result<SpecFile, BadInput> {
    let shown = path.display();
    let text = crate::input::read_text(path).map_err(|e| BadInput(format!("--spec-file {e}")))?;
    let raw: SpecFileText = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text)
            .map_err(|e| BadInput(format!("--spec-file {shown}: not a valid spec file: {e}")))?
    } else {
        toml::from_str(&text).map_err(|e| {
            BadInput(format!(
                "--spec-file {shown}: not a valid spec file: {}",
                e.message()
            ))
        })?
    };
    raw.resolve()
        .map_err(|e| BadInput(format!("--spec-file {shown}: {e}")))
}

/// Refuses a main run that can judge none of the spec's rules, naming what would.
pub fn check_judgeable(set: &SpecSet, plan: &RunPlan) -> Result<(), BadInput> {
    let summary = hostmax_aggregate::WorkloadSummary::from(&plan.workload);
    let kinds = set.rule_kinds();
    if kinds.iter().any(|k| k.judged_by(&summary)) {
        return Ok(());
    }
    let needs: Vec<String> = kinds
        .iter()
        .map(|&k| format!("{} ({})", k.needs(), rule_options(k)))
        .collect();
    let depth = match plan.workload.numjobs {
        Some(jobs) => format!(
            "--numjobs {jobs} x --iodepth {} = {} I/Os in flight per device",
            plan.workload.iodepth,
            plan.workload.in_flight_per_target()
        ),
        None => format!("--iodepth {}", plan.workload.iodepth),
    };
    Err(BadInput(format!(
        "this run (--bs {}, {depth}) cannot judge the spec: it needs {}; change the options or run 'hostmax verify', which runs each phase the spec needs",
        crate::units::format_size(plan.workload.block_size.into()),
        needs.join(", or ")
    )))
}

/// The options of a run that judges `kind`, from its row of the promise table ("--bs 4k",
/// "--bs 4k --iodepth 1"; a depth above 1 is left to the default of 32).
pub fn rule_options(kind: RuleKind) -> String {
    let needs = kind.promise().needs;
    let mut options = format!(
        "--bs {}",
        crate::units::format_size(needs.block_size.into())
    );
    if let Some(depth) = needs.depth.fixed() {
        options += &format!(" --iodepth {depth}");
    }
    options
}

/// A verdict's "not judged" entry with the options that would judge it added.
pub fn not_judged_line(entry: &NotJudged) -> String {
    match entry.kind() {
        Some(kind) => format!("{entry} ({})", rule_options(kind)),
        None => entry.to_string(),
    }
}

/// The exit code of a judged run (see the module docs for the precedence).
pub fn judged_exit_code(reports: &[&HostReport], signal: i32, judgement: Judgement) -> i32 {
    exit_code::Outcome {
        signal,
        bad_data: reports.iter().any(|r| r.verify_failed()),
        io_errors: reports.iter().any(|r| r.host.errors > 0),
        stalled: reports.iter().any(|r| r.stalled()),
        verdict_failed: judgement.failed(),
        not_concluded: !judgement.judged(),
    }
    .code()
}

/// The phases `hostmax verify` runs for a spec set: 4k for IOPS, 1m for throughput, 4k at
/// depth 1 for latency, in that order; one phase for kinds that need the same run (it judges
/// them all), named by the first of them.
pub fn phases_for(set: &SpecSet) -> Vec<RuleKind> {
    let mut phases: Vec<RuleKind> = Vec::new();
    for kind in set.rule_kinds() {
        if !phases
            .iter()
            .any(|p| p.promise().needs == kind.promise().needs)
        {
            phases.push(kind);
        }
    }
    phases
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        spec: SpecArgs,
    }

    fn parse(args: &[&str]) -> Result<SpecArgs, clap::Error> {
        Wrapper::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|w| w.spec)
    }

    fn target(path: &str, size: u64) -> TargetInfo {
        crate::test_support::file_target(path, size)
    }

    #[test]
    fn options_build_one_class_for_every_volume() {
        let args = parse(&["--profile", "oci-balanced", "--expect-host-iops", "400k"]).unwrap();
        let set = args
            .spec_set(&[
                target("/a", 50_000_000_000),
                target("/b", 1_000_000_000_000),
            ])
            .unwrap()
            .unwrap();
        assert_eq!(set.devices[0].expected().iops, Some(3000.0));
        assert_eq!(set.devices[1].expected().iops, Some(25_000.0));
        assert_eq!(set.devices[1].label, "oci-balanced");
        assert_eq!(set.host.iops, Some(400_000.0));
        assert_eq!(set.tolerance, hostmax_aggregate::Tolerance::DEFAULT);

        let flat = parse(&["--expect-volume-iops", "2000", "--tolerance", "10%"]).unwrap();
        let set = flat.spec_set(&[target("/a", 1 << 30)]).unwrap().unwrap();
        assert_eq!(set.devices[0].expected().iops, Some(2000.0));
        assert_eq!(set.devices[0].expected().bytes_per_sec, None);
        assert_eq!(set.tolerance.fraction(), 0.1);

        assert!(parse(&[])
            .unwrap()
            .spec_set(&[target("/a", 1)])
            .unwrap()
            .is_none());
    }

    #[test]
    fn bad_spec_options_name_the_option() {
        for (argv, needle) in [
            (vec!["--volume-spec", "iopz=3"], "unknown key 'iopz'"),
            (vec!["--tolerance", "150%"], "e.g. 5%"),
            (vec!["--expect-volume-mbps", "-3"], "positive"),
            (
                vec!["--profile", "oci-balanced", "--volume-spec", "iops=1"],
                "cannot be used with",
            ),
        ] {
            let err = parse(&argv).expect_err("refused").to_string();
            assert!(err.contains(needle), "{argv:?}: {err}");
        }
        let err = parse(&["--profile", "gp3"])
            .unwrap()
            .spec_set(&[target("/a", 1)])
            .unwrap_err()
            .0;
        assert!(
            err.contains("--profile") && err.contains("oci-balanced"),
            "{err}"
        );
    }

    #[test]
    fn spec_file_gives_devices_their_own_size_and_class() {
        let dir = std::env::temp_dir().join(format!("hostmax-specfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a");
        let b = dir.join("b");
        std::fs::write(&a, b"").unwrap();
        std::fs::write(&b, b"").unwrap();
        let file = dir.join("spec.toml");
        std::fs::write(
            &file,
            format!(
                "tolerance = \"10%\"\n[host]\niops = 9000\n[volume]\nprofile = \"oci-balanced\"\n\n[[device]]\npath = \"{}\"\nsize = \"100GB\"\n",
                a.display()
            ),
        )
        .unwrap();
        let targets = [
            target(a.to_str().unwrap(), 4096),
            target(b.to_str().unwrap(), 50_000_000_000),
        ];
        let args = parse(&["--spec-file", file.to_str().unwrap()]).unwrap();
        let set = args.spec_set(&targets).unwrap().unwrap();
        // a: listed with a size only, so the [volume] class at 100 GB; b: the class at its size.
        assert_eq!(set.devices[0].expected().iops, Some(6000.0));
        assert_eq!(set.devices[1].expected().iops, Some(3000.0));
        assert_eq!(set.host.iops, Some(9000.0));
        assert_eq!(set.tolerance.fraction(), 0.1);
        // Options override the file's defaults.
        let args = parse(&[
            "--spec-file",
            file.to_str().unwrap(),
            "--expect-host-iops",
            "1000",
            "--tolerance",
            "1%",
        ])
        .unwrap();
        let set = args.spec_set(&targets).unwrap().unwrap();
        assert_eq!(
            (set.host.iops, set.tolerance.fraction()),
            (Some(1000.0), 0.01)
        );

        // A device that is not a target, a typo'd key, a bad value: each named.
        std::fs::write(
            &file,
            "[[device]]\npath = \"/dev/nonexistent-x\"\nprofile = \"oci-balanced\"\n",
        )
        .unwrap();
        let err = args.spec_set(&targets).unwrap_err().0;
        assert!(
            err.contains("/dev/nonexistent-x") && err.contains("not among --devices"),
            "{err}"
        );
        std::fs::write(&file, "[volume]\nprofle = \"oci-balanced\"\n").unwrap();
        let err = args.spec_set(&targets).unwrap_err().0;
        assert!(err.contains("profle"), "{err}");
        std::fs::write(&file, "[volume]\nspec = \"iops=60/TB\"\n").unwrap();
        let err = args.spec_set(&targets).unwrap_err().0;
        assert!(err.contains("per GB") && err.contains("spec.toml"), "{err}");
        let json = dir.join("spec.json");
        std::fs::write(&json, r#"{"volume": {"spec": "iops=1000"}}"#).unwrap();
        let set = parse(&["--spec-file", json.to_str().unwrap()])
            .unwrap()
            .spec_set(&targets)
            .unwrap()
            .unwrap();
        assert_eq!(set.devices[1].expected().iops, Some(1000.0));
        let err = parse(&["--spec-file", "/nonexistent/spec.toml"])
            .unwrap()
            .spec_set(&targets)
            .unwrap_err()
            .0;
        assert!(err.contains("cannot read"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
