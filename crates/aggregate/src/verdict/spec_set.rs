//! Everything a run is judged against: a [`SpecSet`] of each device's
//! [`DeviceExpectation`], the host's promise and the tolerance.

use super::promise::RuleKind;
use crate::spec::{Expectation, HostSpec, SpecError, Tolerance, VolumeSpec};

/// One device's promise: its class applied to its provisioned size.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeviceExpectation {
    /// The device's path as the report names it.
    pub path: String,
    /// Provisioned size in bytes (the device's own size unless a spec file says otherwise).
    pub size_bytes: u64,
    /// The class's rules.
    pub spec: VolumeSpec,
    /// Where the rules came from ("oci-balanced", a spec string, or a tool's own name for a promise given directly).
    pub label: String,
}

impl DeviceExpectation {
    /// The figures expected of this device.
    pub fn expected(&self) -> Expectation {
        self.spec.expected(self.size_bytes)
    }
}

/// Everything a run is judged against.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SpecSet {
    /// Per device (devices without an entry are reported but not judged).
    pub devices: Vec<DeviceExpectation>,
    /// The host's promise.
    pub host: HostSpec,
    /// How far below its figure a measurement may fall.
    pub tolerance: Tolerance,
}

impl SpecSet {
    /// Whether anything is promised at all.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty() && self.devices.iter().all(|d| d.spec.is_empty())
    }

    /// The kinds of rule this set holds, in the table's order.
    pub fn rule_kinds(&self) -> Vec<RuleKind> {
        let host = self.host.expected();
        let expected: Vec<Expectation> = self.devices.iter().map(|d| d.expected()).collect();
        RuleKind::ALL
            .into_iter()
            .filter(|k| {
                k.expected(&host).is_some() || expected.iter().any(|e| k.expected(e).is_some())
            })
            .collect()
    }
}

impl DeviceExpectation {
    /// The device at `path`, provisioned at `size_bytes`, promising `spec` (named `label`
    /// in a verdict).
    pub fn new(
        path: impl Into<String>,
        size_bytes: u64,
        spec: VolumeSpec,
        label: impl Into<String>,
    ) -> DeviceExpectation {
        DeviceExpectation {
            path: path.into(),
            size_bytes,
            spec,
            label: label.into(),
        }
    }

    /// The device at `path` promising `spec`, whose figures are flat (`iops=3000`,
    /// `p95_ms=1`): no size is needed (nor recorded: [`DeviceExpectation::size_bytes`] is 0).
    ///
    /// # Errors
    ///
    /// [`SpecError::NeedsSize`] when `spec` has a per-GB rule: give the volume's size with
    /// [`DeviceExpectation::new`].
    pub fn flat(
        path: impl Into<String>,
        spec: VolumeSpec,
        label: impl Into<String>,
    ) -> Result<DeviceExpectation, SpecError> {
        if spec.scales_with_size() {
            return Err(SpecError::NeedsSize(spec.to_string()));
        }
        Ok(DeviceExpectation::new(path, 0, spec, label))
    }
}

impl SpecSet {
    /// Each device's promise in `devices`, the host's `host`, judged within `tolerance`.
    pub fn new(devices: Vec<DeviceExpectation>, host: HostSpec, tolerance: Tolerance) -> SpecSet {
        SpecSet {
            devices,
            host,
            tolerance,
        }
    }
}
