//! What each volume and the host promise in a suite (the spec options of the main run,
//! [`crate::args::spec::SpecArgs`]), and the shape of the report's judgement of them
//! ([`SpecComparison`]); the judging is the report's ([`super::report::compare`]).

use hostmax_aggregate::spec::{Expectation, HostSpec};
use hostmax_aggregate::verdict::FigureCheck;
use hostmax_engine::TargetInfo;
use serde::{Deserialize, Serialize};

use crate::args::spec::SpecArgs;
use crate::error::BadInput;

/// What the volumes and the host promise, resolved for the suite's devices (kept in
/// `suite.json`, so a resumed suite judges against the same figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promises {
    /// How far below a promise a figure may fall and still pass (a fraction).
    pub tolerance: f64,
    /// The host's promise.
    pub host: HostSpec,
    /// Each volume's, in device order (a device without one is left out).
    pub volumes: Vec<VolumePromise>,
    /// The share of seconds the promises must hold in (`--consistency`), if judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<hostmax_aggregate::consistency::Consistency>,
}

/// One volume's promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumePromise {
    /// The device.
    pub path: String,
    /// Where the figures came from (a profile, a spec string, a flat option).
    pub label: String,
    /// The figures expected at its provisioned size.
    pub expected: Expectation,
}

/// Resolves the spec options for the targets; `None` when none was given.
pub fn promises(args: &SpecArgs, targets: &[TargetInfo]) -> Result<Option<Promises>, BadInput> {
    let Some(set) = args.spec_set(targets)? else {
        args.consistency()?;
        return Ok(None);
    };
    Ok(Some(Promises {
        consistency: args.consistency()?,
        tolerance: set.tolerance.fraction(),
        host: set.host,
        volumes: set
            .devices
            .iter()
            .map(|d| VolumePromise {
                path: d.path.clone(),
                label: d.label.clone(),
                expected: d.expected(),
            })
            .collect(),
    }))
}

/// A volume's (or the host's) checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromiseCheck {
    /// The device, or `host`.
    pub path: String,
    /// Where the promise came from.
    pub label: String,
    /// Each promised figure; its `runs` are the cells that judge it.
    pub checks: Vec<FigureCheck>,
}

/// The suite against the promises: the report's `spec` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecComparison {
    /// The tolerance used.
    pub tolerance: f64,
    /// Every promising volume.
    pub volumes: Vec<PromiseCheck>,
    /// The host, when it promises anything.
    pub host: Option<PromiseCheck>,
    /// With `--consistency`: how often each volume and the host kept its IOPS (else
    /// throughput) promise, over every second of the cells that judge it, in the rounds the
    /// figures are averaged over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<hostmax_aggregate::consistency::ConsistencyVerdict>,
}
