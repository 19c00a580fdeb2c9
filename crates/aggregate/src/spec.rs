//! What volumes and hosts promise: [`VolumeSpec`] (flat figures, or size-scaled rules with
//! caps), the built-in [`PROFILES`], [`HostSpec`], [`Tolerance`], [`Consistency`] (the share of
//! seconds a promise must hold in), and the spec file ([`SpecFileText`]) that gives each device
//! its own provisioned size or class.
//!
//! Sizes and rates count as providers count them: GB = 10^9 bytes, MB/s = 10^6 bytes per
//! second. A rule "60 IOPS per GB up to 25,000" gives a 50 GB volume 3,000 IOPS and a 1 TB
//! volume 25,000.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bytes in a provider's GB.
pub const GB: f64 = 1e9;
/// Bytes per second in a provider's MB/s.
pub const MB_PER_SEC: f64 = 1e6;

/// A figure that is flat or scales with the volume's provisioned size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Scaled {
    /// The same for every size.
    Flat(f64),
    /// So much per GB (10^9 bytes) of provisioned size.
    PerGb(f64),
}

impl Scaled {
    /// The figure for a volume of `size_bytes`.
    pub fn at(self, size_bytes: u64) -> f64 {
        match self {
            Scaled::Flat(v) => v,
            Scaled::PerGb(v) => v * size_bytes as f64 / GB,
        }
    }
}

impl fmt::Display for Scaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scaled::Flat(v) => write!(f, "{v}"),
            Scaled::PerGb(v) => write!(f, "{v}/GB"),
        }
    }
}

/// What one volume promises. Every part is optional; a part that is absent is not judged (the
/// default promises nothing).
///
/// Written as `iops=60/GB,max_iops=25000,mbps=0.48/GB,max_mbps=320,p95_ms=1` (see
/// [`VolumeSpec::from_str`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VolumeSpec {
    /// IOPS, flat or per GB (judged on 4 KiB runs).
    pub iops: Option<Scaled>,
    /// Cap on the scaled IOPS figure.
    pub max_iops: Option<f64>,
    /// Throughput in MB/s (10^6 bytes), flat or per GB (judged on runs of 256 KiB blocks and up).
    pub mbps: Option<Scaled>,
    /// Cap on the scaled MB/s figure.
    pub max_mbps: Option<f64>,
    /// 95th percentile latency in milliseconds, at most (judged on 4 KiB runs at queue depth 1).
    pub p95_ms: Option<f64>,
}

/// What a [`VolumeSpec`] expects of one volume of a given size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Expectation {
    /// IOPS at least.
    pub iops: Option<f64>,
    /// Bytes per second at least.
    pub bytes_per_sec: Option<f64>,
    /// 95th percentile latency at most, ns.
    pub p95_ns: Option<u64>,
}

impl VolumeSpec {
    /// The keys of the written form, in order.
    pub const KEYS: [&'static str; 5] = ["iops", "max_iops", "mbps", "max_mbps", "p95_ms"];

    /// Whether the spec promises nothing.
    pub fn is_empty(&self) -> bool {
        self.iops.is_none() && self.mbps.is_none() && self.p95_ms.is_none()
    }

    /// Whether any figure depends on the volume's size (a per-GB rule).
    pub fn scales_with_size(&self) -> bool {
        matches!(self.iops, Some(Scaled::PerGb(_))) || matches!(self.mbps, Some(Scaled::PerGb(_)))
    }

    /// What a volume of `size_bytes` (its provisioned size) is expected to deliver.
    pub fn expected(&self, size_bytes: u64) -> Expectation {
        let capped = |rule: Option<Scaled>, cap: Option<f64>| {
            rule.map(|r| {
                let v = r.at(size_bytes);
                cap.map_or(v, |c| v.min(c))
            })
        };
        Expectation {
            iops: capped(self.iops, self.max_iops),
            bytes_per_sec: capped(self.mbps, self.max_mbps).map(|m| m * MB_PER_SEC),
            p95_ns: self.p95_ms.map(|ms| (ms * 1e6).round() as u64),
        }
    }

    /// `self` with every part `over` has replacing its own (flat options over a profile).
    pub fn overridden_by(&self, over: &VolumeSpec) -> VolumeSpec {
        let iops_replaced = over.iops.is_some();
        let mbps_replaced = over.mbps.is_some();
        VolumeSpec {
            iops: over.iops.or(self.iops),
            // A new IOPS figure drops the old rule's cap unless a new cap comes with it.
            max_iops: over
                .max_iops
                .or(if iops_replaced { None } else { self.max_iops }),
            mbps: over.mbps.or(self.mbps),
            max_mbps: over
                .max_mbps
                .or(if mbps_replaced { None } else { self.max_mbps }),
            p95_ms: over.p95_ms.or(self.p95_ms),
        }
    }
}

impl fmt::Display for VolumeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(v) = self.iops {
            parts.push(format!("iops={v}"));
        }
        if let Some(v) = self.max_iops {
            parts.push(format!("max_iops={v}"));
        }
        if let Some(v) = self.mbps {
            parts.push(format!("mbps={v}"));
        }
        if let Some(v) = self.max_mbps {
            parts.push(format!("max_mbps={v}"));
        }
        if let Some(v) = self.p95_ms {
            parts.push(format!("p95_ms={v}"));
        }
        f.write_str(&parts.join(","))
    }
}

/// Why a spec, a profile name, a size or a tolerance was refused. Each message names the
/// thing and how to write it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The spec is empty.
    #[error("the volume spec is empty: give e.g. \"iops=60/GB,max_iops=25000,mbps=0.48/GB,max_mbps=320\"")]
    Empty,
    /// A key that is not one of [`VolumeSpec::KEYS`].
    #[error("unknown key '{0}' in the volume spec: use iops, max_iops, mbps, max_mbps or p95_ms (e.g. \"iops=60/GB,max_iops=25000\")")]
    UnknownKey(String),
    /// A part without `=`.
    #[error("'{0}' in the volume spec has no value: write key=value, e.g. iops=60/GB")]
    MissingValue(String),
    /// The same key twice.
    #[error("'{0}' is given twice in the volume spec: give each key once")]
    DuplicateKey(String),
    /// A value that is not a positive number.
    #[error("{key}={value}: {why}; write e.g. {example}")]
    BadValue {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        why: String,
        /// A correct example for this key.
        example: &'static str,
    },
    /// A cap without the rule it caps.
    #[error("{cap} without {rule}: a cap limits a per-GB rule; add {rule}=N/GB, or give a flat {rule}=N instead")]
    CapWithoutRule {
        /// The cap's key.
        cap: &'static str,
        /// The rule's key.
        rule: &'static str,
    },
    /// A profile name that is not built in.
    #[error("unknown profile '{name}': use one of {known}")]
    UnknownProfile {
        /// The name given.
        name: String,
        /// The built-in names, comma-separated.
        known: String,
    },
    /// A size that is not a size.
    #[error("size \"{value}\": {why}")]
    BadSize {
        /// The size as given.
        value: String,
        /// What is wrong and how to write it.
        why: String,
    },
    /// A tolerance that is not a percentage below 100.
    #[error("tolerance \"{0}\": give a percentage from 0% to 99%, e.g. 5%")]
    BadTolerance(String),
    /// Something wrong in a spec file beyond one value.
    #[error("{0}")]
    File(String),
    /// A spec with a per-GB rule (written here) given without the volume's size.
    #[error("\"{0}\" scales with the volume's size: give its provisioned size too (DeviceExpectation::new)")]
    NeedsSize(String),
}

impl FromStr for VolumeSpec {
    type Err = SpecError;

    /// Parses `key=value,...` with keys `iops`, `max_iops`, `mbps`, `max_mbps`, `p95_ms`.
    /// `iops` and `mbps` take a flat number or `N/GB`; the others a number. Numbers may end
    /// in `k` (thousands). Spaces around parts are ignored.
    fn from_str(text: &str) -> Result<VolumeSpec, SpecError> {
        let mut spec = VolumeSpec::default();
        let mut seen: Vec<String> = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| SpecError::MissingValue(part.to_string()))?;
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim();
            if seen.contains(&key) {
                return Err(SpecError::DuplicateKey(key));
            }
            if value.is_empty() {
                return Err(SpecError::MissingValue(key));
            }
            match key.as_str() {
                "iops" => spec.iops = Some(parse_scaled(&key, value, "iops=60/GB or iops=3000")?),
                "mbps" => spec.mbps = Some(parse_scaled(&key, value, "mbps=0.48/GB or mbps=320")?),
                "max_iops" => spec.max_iops = Some(parse_plain(&key, value, "max_iops=25000")?),
                "max_mbps" => spec.max_mbps = Some(parse_plain(&key, value, "max_mbps=320")?),
                "p95_ms" => spec.p95_ms = Some(parse_plain(&key, value, "p95_ms=1")?),
                _ => return Err(SpecError::UnknownKey(key)),
            }
            seen.push(key);
        }
        if seen.is_empty() {
            return Err(SpecError::Empty);
        }
        if spec.max_iops.is_some() && spec.iops.is_none() {
            return Err(SpecError::CapWithoutRule {
                cap: "max_iops",
                rule: "iops",
            });
        }
        if spec.max_mbps.is_some() && spec.mbps.is_none() {
            return Err(SpecError::CapWithoutRule {
                cap: "max_mbps",
                rule: "mbps",
            });
        }
        Ok(spec)
    }
}

fn bad_value(key: &str, value: &str, why: &str, example: &'static str) -> SpecError {
    SpecError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        why: why.to_string(),
        example,
    }
}

/// A positive number, optionally ending in `k` (thousands).
fn parse_plain(key: &str, value: &str, example: &'static str) -> Result<f64, SpecError> {
    let (digits, scale) = match value.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1000.0),
        None => (value, 1.0),
    };
    let number: f64 = digits
        .trim()
        .parse()
        .map_err(|_| bad_value(key, value, "not a number", example))?;
    if !number.is_finite() || number <= 0.0 {
        return Err(bad_value(key, value, "must be a positive number", example));
    }
    Ok(number * scale)
}

/// `N` or `N/GB`.
fn parse_scaled(key: &str, value: &str, example: &'static str) -> Result<Scaled, SpecError> {
    match value.split_once('/') {
        Some((number, unit)) => {
            if !unit.trim().eq_ignore_ascii_case("gb") {
                return Err(bad_value(
                    key,
                    value,
                    "per-size figures are per GB (10^9 bytes, as providers count)",
                    example,
                ));
            }
            Ok(Scaled::PerGb(parse_plain(key, number, example)?))
        }
        None => Ok(Scaled::Flat(parse_plain(key, value, example)?)),
    }
}

/// A built-in volume class with the figures its provider publishes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Profile {
    /// The profile's name, as a volume spec or a spec file names it.
    pub name: &'static str,
    /// Where the figures come from.
    pub source: &'static str,
    /// The figures, written as a volume spec.
    pub spec: &'static str,
}

/// The built-in profiles.
///
/// Only classes whose per-GB figures the providers publish are here. OCI's Higher and Ultra
/// High Performance levels and Alibaba's ESSD levels have no per-GB figures in the documents
/// this tool was built from (they give host totals only), so they are not guessed at: give
/// their figures as a volume spec ([`VolumeSpec`]).
pub const PROFILES: [Profile; 1] = [Profile {
    name: "oci-balanced",
    source: "OCI Block Volume, Balanced: 60 IOPS/GB up to 25,000 IOPS (4 KiB); 480 KB/s per GB up to 320 MB/s (256 KiB+); sub-millisecond latency",
    spec: "iops=60/GB,max_iops=25000,mbps=0.48/GB,max_mbps=320,p95_ms=1",
}];

/// The spec of the built-in profile `name`.
pub fn profile(name: &str) -> Result<VolumeSpec, SpecError> {
    PROFILES
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
        .map(|p| p.spec.parse().expect("built-in profiles parse"))
        .ok_or_else(|| SpecError::UnknownProfile {
            name: name.to_string(),
            known: PROFILES
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// What the host as a whole promises (judged on the host's totals); the default promises
/// nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostSpec {
    /// IOPS at least (4 KiB runs).
    pub iops: Option<f64>,
    /// Bytes per second at least (runs of 256 KiB blocks and up).
    pub bytes_per_sec: Option<f64>,
}

impl HostSpec {
    /// Whether the host promises nothing.
    pub fn is_empty(&self) -> bool {
        self.iops.is_none() && self.bytes_per_sec.is_none()
    }

    /// `self` with every part `over` has replacing its own (options over a spec file).
    pub fn overridden_by(&self, over: &HostSpec) -> HostSpec {
        HostSpec {
            iops: over.iops.or(self.iops),
            bytes_per_sec: over.bytes_per_sec.or(self.bytes_per_sec),
        }
    }

    /// What the host is expected to deliver (a host promises no latency).
    pub fn expected(&self) -> Expectation {
        Expectation {
            iops: self.iops,
            bytes_per_sec: self.bytes_per_sec,
            p95_ns: None,
        }
    }
}

/// How far below its figure a measurement may be and still pass: a fraction in [0, 1); 5% by
/// default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance(f64);

impl Tolerance {
    /// 5%, the default.
    pub const DEFAULT: Tolerance = Tolerance(0.05);

    /// A tolerance of `fraction` (0.05 is 5%); `None` unless 0 <= fraction < 1.
    pub fn new(fraction: f64) -> Option<Tolerance> {
        (fraction.is_finite() && (0.0..1.0).contains(&fraction)).then_some(Tolerance(fraction))
    }

    /// The fraction (0.05 for 5%).
    pub fn fraction(self) -> f64 {
        self.0
    }

    /// Whether `measured` reaches `expected` within the tolerance (a floor: more is fine).
    pub fn reaches(self, measured: f64, expected: f64) -> bool {
        measured >= expected * (1.0 - self.0)
    }

    /// Whether `measured` stays under `limit` within the tolerance (a ceiling: less is fine).
    pub fn stays_under(self, measured: f64, limit: f64) -> bool {
        measured <= limit * (1.0 + self.0)
    }
}

impl Default for Tolerance {
    /// 5% ([`Tolerance::DEFAULT`]).
    fn default() -> Self {
        Tolerance::DEFAULT
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rounded so that 0.07 shows as 7%, not 7.000000000000001%.
        write!(f, "{}%", (self.0 * 100.0 * 1e6).round() / 1e6)
    }
}

impl FromStr for Tolerance {
    type Err = SpecError;

    /// `5%` or `5` (percent).
    fn from_str(text: &str) -> Result<Tolerance, SpecError> {
        let digits = text.trim().trim_end_matches('%').trim();
        let percent: f64 = digits
            .parse()
            .map_err(|_| SpecError::BadTolerance(text.to_string()))?;
        Tolerance::new(percent / 100.0).ok_or_else(|| SpecError::BadTolerance(text.to_string()))
    }
}

/// Parses a provisioned size as providers write it: `50GB`, `1TB`, `1.5TB` (10^9, 10^12
/// bytes), `512GiB`, `1TiB` (2^30, 2^40), or a bare number of bytes. `G` and `T` alone are
/// refused: they are ambiguous between the two.
pub fn parse_provisioned_size(text: &str) -> Result<u64, SpecError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (t[..split].trim(), t[split..].trim());
    let bad = |why: &str| SpecError::BadSize {
        value: text.to_string(),
        why: why.to_string(),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| bad("not a size; write e.g. 50GB or 1TB (10^9, 10^12 bytes)"))?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "pb" => 1e15,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        "pib" => 1024f64.powi(5),
        "k" | "m" | "g" | "t" | "p" => {
            return Err(bad(&format!(
                "'{unit}' is ambiguous; write {number}{}B (decimal, as providers count) or {number}{}iB",
                unit.to_ascii_uppercase(),
                unit.to_ascii_uppercase()
            )))
        }
        _ => return Err(bad("unknown unit; write e.g. 50GB, 1TB or 512GiB")),
    };
    let bytes = value * scale;
    if bytes < 1.0 || !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(bad("must be at least one byte; write e.g. 50GB"));
    }
    Ok(bytes.round() as u64)
}

/// A spec file as written (TOML or JSON), before its values are checked:
///
/// ```toml
/// tolerance = "5%"
/// [host]
/// iops = 400000
/// mbps = 2100
/// [volume]                 # every device not listed below
/// profile = "oci-balanced"
/// [[device]]
/// path = "/dev/sdb"
/// size = "1TB"             # provisioned size, when the device's own size differs
/// spec = "iops=60/GB,max_iops=25000"   # or profile = "..."
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SpecFileText {
    /// Tolerance, e.g. "5%".
    pub tolerance: Option<String>,
    /// Share of seconds the promise must hold in, e.g. "99%".
    pub consistency: Option<String>,
    /// The host's promise.
    pub host: Option<HostSpecText>,
    /// The default for devices not listed.
    pub volume: Option<VolumeClassText>,
    /// Per-device entries.
    #[serde(default)]
    pub device: Vec<DeviceSpecText>,
}

/// `[host]` of a spec file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HostSpecText {
    /// IOPS at least.
    pub iops: Option<f64>,
    /// MB/s (10^6 bytes) at least.
    pub mbps: Option<f64>,
}

/// `[volume]` of a spec file: a class for every device not listed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct VolumeClassText {
    /// A built-in profile name.
    pub profile: Option<String>,
    /// A volume spec string.
    pub spec: Option<String>,
    /// Provisioned size for all of them.
    pub size: Option<SizeText>,
}

/// `[[device]]` of a spec file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DeviceSpecText {
    /// The device, as the run names its targets (resolved the same way).
    pub path: String,
    /// A built-in profile name.
    pub profile: Option<String>,
    /// A volume spec string.
    pub spec: Option<String>,
    /// Provisioned size.
    pub size: Option<SizeText>,
}

/// A size in a spec file: a string ("1TB") or a number of bytes. Exhaustive: a TOML value
/// that can be a size is one of the two.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SizeText {
    /// Bytes.
    Bytes(u64),
    /// "50GB", "1TB", "512GiB".
    Text(String),
}

impl SizeText {
    /// The size in bytes.
    pub fn bytes(&self) -> Result<u64, SpecError> {
        match self {
            SizeText::Bytes(0) => parse_provisioned_size("0"),
            SizeText::Bytes(b) => Ok(*b),
            SizeText::Text(t) => parse_provisioned_size(t),
        }
    }
}

/// A volume class: what it promises and, if not the device's own size, its provisioned size.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct VolumeClass {
    /// The promise.
    pub spec: VolumeSpec,
    /// Where it came from, for people ("oci-balanced", or the spec string).
    pub label: String,
    /// Provisioned size, when it differs from the device's size.
    pub size: Option<u64>,
}

impl VolumeClassText {
    fn resolve(&self, what: &str) -> Result<VolumeClass, SpecError> {
        resolve_class(
            what,
            self.profile.as_deref(),
            self.spec.as_deref(),
            &self.size,
        )
    }
}

fn resolve_class(
    what: &str,
    profile_name: Option<&str>,
    spec: Option<&str>,
    size: &Option<SizeText>,
) -> Result<VolumeClass, SpecError> {
    let size = size.as_ref().map(SizeText::bytes).transpose()?;
    let (spec, label) = match (profile_name, spec) {
        (Some(_), Some(_)) => {
            return Err(SpecError::File(format!(
                "{what} gives both profile and spec: keep one"
            )))
        }
        (Some(name), None) => (profile(name)?, name.to_string()),
        (None, Some(text)) => {
            let spec: VolumeSpec = text.parse()?;
            (spec, text.to_string())
        }
        (None, None) => (VolumeSpec::default(), String::new()),
    };
    Ok(VolumeClass { spec, label, size })
}

/// A spec file with every value checked.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SpecFile {
    /// Tolerance, if given.
    pub tolerance: Option<Tolerance>,
    /// Share of seconds the promise must hold in, if given.
    pub consistency: Option<Consistency>,
    /// The host's promise.
    pub host: HostSpec,
    /// The class of devices not listed, if given.
    pub volume: Option<VolumeClass>,
    /// (path as written, class) per listed device.
    pub devices: Vec<(String, VolumeClass)>,
}

impl SpecFileText {
    /// Checks every value.
    pub fn resolve(&self) -> Result<SpecFile, SpecError> {
        let tolerance = self.tolerance.as_deref().map(str::parse).transpose()?;
        let host = match &self.host {
            Some(h) => HostSpec {
                iops: positive("[host] iops", h.iops)?,
                bytes_per_sec: positive("[host] mbps", h.mbps)?.map(|m| m * MB_PER_SEC),
            },
            None => HostSpec::default(),
        };
        let volume = self
            .volume
            .as_ref()
            .map(|v| v.resolve("[volume]"))
            .transpose()?;
        let mut devices = Vec::new();
        for d in &self.device {
            let what = format!("[[device]] {}", d.path);
            if d.path.trim().is_empty() {
                return Err(SpecError::File(
                    "a [[device]] entry has an empty path: give path = \"/dev/sdb\"".into(),
                ));
            }
            let class = resolve_class(&what, d.profile.as_deref(), d.spec.as_deref(), &d.size)?;
            if devices.iter().any(|(p, _)| p == &d.path) {
                return Err(SpecError::File(format!(
                    "{} is listed twice under [[device]]: keep one entry",
                    d.path
                )));
            }
            devices.push((d.path.clone(), class));
        }
        Ok(SpecFile {
            tolerance,
            consistency: self.consistency.as_deref().map(str::parse).transpose()?,
            host,
            volume,
            devices,
        })
    }
}

fn positive(what: &str, value: Option<f64>) -> Result<Option<f64>, SpecError> {
    match value {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(SpecError::File(format!(
            "{what} = {v}: give a positive number"
        ))),
        other => Ok(other),
    }
}

/// The share of seconds a promise must hold in, as a fraction (0.99 for "99%").
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Consistency(f64);

impl Consistency {
    /// A share above 0 and at most 1.
    pub fn new(fraction: f64) -> Option<Consistency> {
        (fraction.is_finite() && fraction > 0.0 && fraction <= 1.0).then_some(Consistency(fraction))
    }

    /// The share as a fraction.
    pub fn fraction(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", (self.0 * 100.0 * 1e6).round() / 1e6)
    }
}

impl FromStr for Consistency {
    type Err = SpecError;

    /// `99%`, `99.9%` or `99.9` (percent).
    fn from_str(text: &str) -> Result<Consistency, SpecError> {
        let bad = || {
            SpecError::File(format!(
                "consistency \"{text}\": give the share of seconds the promise must hold in, above 0% and up to 100%, e.g. 99% or 99.9%"
            ))
        };
        let percent: f64 = text
            .trim()
            .trim_end_matches('%')
            .trim()
            .parse()
            .map_err(|_| bad())?;
        Consistency::new(percent / 100.0).ok_or_else(bad)
    }
}

with_setters!(VolumeSpec {
    with_iops => iops: Option<Scaled>,
    with_max_iops => max_iops: Option<f64>,
    with_mbps => mbps: Option<Scaled>,
    with_max_mbps => max_mbps: Option<f64>,
    with_p95_ms => p95_ms: Option<f64>,
});

with_setters!(Expectation {
    with_iops => iops: Option<f64>,
    with_bytes_per_sec => bytes_per_sec: Option<f64>,
    with_p95_ns => p95_ns: Option<u64>,
});

with_setters!(HostSpec {
    with_iops => iops: Option<f64>,
    with_bytes_per_sec => bytes_per_sec: Option<f64>,
});

impl VolumeClass {
    /// Volumes that promise `spec`, named `label` in a verdict, at the devices' own size
    /// (give a provisioned size with [`VolumeClass::with_size`]).
    pub fn new(spec: VolumeSpec, label: impl Into<String>) -> VolumeClass {
        VolumeClass {
            spec,
            label: label.into(),
            size: None,
        }
    }
}

with_setters!(VolumeClass {
    with_size => size: Option<u64>,
});

#[cfg(test)]
mod tests {
    use super::*;

    const GB_BYTES: u64 = 1_000_000_000;

    #[test]
    fn parses_the_oci_rule_and_round_trips() {
        let spec: VolumeSpec = "iops=60/GB,max_iops=25000,mbps=0.48/GB,max_mbps=320,p95_ms=1"
            .parse()
            .unwrap();
        assert_eq!(spec.iops, Some(Scaled::PerGb(60.0)));
        assert_eq!(spec.max_iops, Some(25000.0));
        assert_eq!(spec.mbps, Some(Scaled::PerGb(0.48)));
        assert_eq!(spec.max_mbps, Some(320.0));
        assert_eq!(spec.p95_ms, Some(1.0));
        assert_eq!(spec.to_string().parse::<VolumeSpec>().unwrap(), spec);
        // Flat figures, thousands, spaces and case.
        let flat: VolumeSpec = " IOPS = 25k , mbps=320 ".parse().unwrap();
        assert_eq!(flat.iops, Some(Scaled::Flat(25_000.0)));
        assert_eq!(flat.mbps, Some(Scaled::Flat(320.0)));
        assert_eq!(flat.expected(1).iops, Some(25_000.0));
    }

    #[test]
    fn bad_specs_name_the_key_and_the_fix() {
        for (text, needles) in [
            ("", vec!["empty", "iops=60/GB"]),
            ("iopz=5", vec!["'iopz'", "use iops, max_iops"]),
            ("iops", vec!["'iops'", "key=value"]),
            ("iops=", vec!["'iops'", "no value"]),
            ("iops=abc", vec!["iops=abc", "not a number", "iops=60/GB"]),
            ("iops=-5", vec!["iops=-5", "positive"]),
            ("iops=0", vec!["positive"]),
            ("iops=60/TB", vec!["iops=60/TB", "per GB"]),
            ("mbps=0.48/GiB", vec!["per GB", "mbps=0.48/GB"]),
            (
                "max_iops=25000/GB",
                vec!["max_iops", "not a number", "max_iops=25000"],
            ),
            ("max_iops=25000", vec!["max_iops without iops", "iops=N/GB"]),
            ("mbps=1/GB,max_mbps=x", vec!["max_mbps=x"]),
            ("max_mbps=320", vec!["max_mbps without mbps"]),
            ("iops=1,iops=2", vec!["'iops' is given twice"]),
            ("p95_ms=nan", vec!["p95_ms=nan", "positive"]),
        ] {
            let err = text.parse::<VolumeSpec>().unwrap_err().to_string();
            for n in needles {
                assert!(err.contains(n), "{text:?}: {err} lacks {n}");
            }
        }
    }

    #[test]
    fn oci_table_from_the_per_gb_rule_with_caps() {
        let oci = profile("oci-balanced").unwrap();
        // (size GB, IOPS, MB/s) from the OCI performance table (seed 003).
        for (gb, iops, mbps) in [
            (50, 3_000.0, 24.0),
            (100, 6_000.0, 48.0),
            (200, 12_000.0, 96.0),
            (300, 18_000.0, 144.0),
            (400, 24_000.0, 192.0),
            (500, 25_000.0, 240.0),
            (700, 25_000.0, 320.0),
            (1000, 25_000.0, 320.0),
            (32_000, 25_000.0, 320.0),
        ] {
            let e = oci.expected(gb * GB_BYTES);
            let got_iops = e.iops.unwrap();
            let got_mbps = e.bytes_per_sec.unwrap() / MB_PER_SEC;
            assert!((got_iops - iops).abs() < 1e-6, "{gb} GB: {got_iops} IOPS");
            assert!((got_mbps - mbps).abs() < 1e-6, "{gb} GB: {got_mbps} MB/s");
            assert_eq!(e.p95_ns, Some(1_000_000));
        }
        // GB are 10^9 bytes: a 50 GiB device is 53.7 GB and promises more than 3,000.
        let gib50 = oci.expected(50 << 30).iops.unwrap();
        assert!((gib50 - 3221.2).abs() < 0.1, "{gib50}");
    }

    #[test]
    fn profiles_by_name() {
        assert!(profile("OCI-Balanced").is_ok());
        let err = profile("oci-ultra").unwrap_err().to_string();
        assert!(
            err.contains("'oci-ultra'") && err.contains("oci-balanced"),
            "{err}"
        );
        for p in PROFILES {
            assert!(
                !p.spec.parse::<VolumeSpec>().unwrap().is_empty(),
                "{}",
                p.name
            );
        }
    }

    #[test]
    fn flat_options_override_a_profile_rule_and_its_cap() {
        let oci = profile("oci-balanced").unwrap();
        let flat = VolumeSpec {
            iops: Some(Scaled::Flat(40_000.0)),
            ..VolumeSpec::default()
        };
        let merged = oci.overridden_by(&flat);
        let e = merged.expected(1000 * GB_BYTES);
        // The new figure is not held to the old rule's 25,000 cap; MB/s keeps the profile's.
        assert_eq!(e.iops, Some(40_000.0));
        assert_eq!(e.bytes_per_sec, Some(320e6));
    }

    #[test]
    fn tolerance_and_sizes() {
        assert_eq!("5%".parse::<Tolerance>().unwrap().fraction(), 0.05);
        assert_eq!("0".parse::<Tolerance>().unwrap().fraction(), 0.0);
        for bad in ["100%", "-1%", "x", "5%%x"] {
            let err = bad.parse::<Tolerance>().unwrap_err().to_string();
            assert!(err.contains("e.g. 5%"), "{bad}: {err}");
        }
        let t = Tolerance::DEFAULT;
        assert!(t.reaches(2850.0, 3000.0) && !t.reaches(2849.0, 3000.0));
        assert!(t.stays_under(1.05, 1.0) && !t.stays_under(1.06, 1.0));

        assert_eq!(parse_provisioned_size("1TB").unwrap(), 1_000_000_000_000);
        assert_eq!(parse_provisioned_size("50 GB").unwrap(), 50_000_000_000);
        assert_eq!(parse_provisioned_size("1.5tb").unwrap(), 1_500_000_000_000);
        assert_eq!(parse_provisioned_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_provisioned_size("4096").unwrap(), 4096);
        for (bad, needle) in [
            ("1T", "ambiguous"),
            ("50G", "50GB"),
            ("1XB", "unknown unit"),
            ("GB", "not a size"),
            ("0GB", "at least one byte"),
        ] {
            let err = parse_provisioned_size(bad).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn spec_file_values_are_checked() {
        let text = SpecFileText {
            tolerance: Some("10%".into()),
            consistency: Some("99.9%".into()),
            host: Some(HostSpecText {
                iops: Some(400_000.0),
                mbps: Some(2100.0),
            }),
            volume: Some(VolumeClassText {
                profile: Some("oci-balanced".into()),
                ..Default::default()
            }),
            device: vec![DeviceSpecText {
                path: "/dev/sdb".into(),
                size: Some(SizeText::Text("1TB".into())),
                spec: Some("iops=3000".into()),
                profile: None,
            }],
        };
        let file = text.resolve().unwrap();
        assert_eq!(file.tolerance.unwrap().fraction(), 0.1);
        assert!((file.consistency.unwrap().fraction() - 0.999).abs() < 1e-12);
        assert_eq!(file.host.bytes_per_sec, Some(2.1e9));
        assert_eq!(file.volume.as_ref().unwrap().label, "oci-balanced");
        assert_eq!(file.devices[0].1.size, Some(1_000_000_000_000));
        assert_eq!(file.devices[0].1.spec.iops, Some(Scaled::Flat(3000.0)));

        let mut both = text.clone();
        both.device[0].profile = Some("oci-balanced".into());
        let err = both.resolve().unwrap_err().to_string();
        assert!(
            err.contains("/dev/sdb") && err.contains("both profile and spec"),
            "{err}"
        );
        let mut loose = text.clone();
        loose.consistency = Some("120%".into());
        assert!(loose
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("e.g. 99%"));
        let mut twice = text.clone();
        twice.device.push(twice.device[0].clone());
        assert!(twice
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("listed twice"));
        let mut bad_host = text;
        bad_host.host.as_mut().unwrap().iops = Some(-1.0);
        assert!(bad_host
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("[host] iops"));
    }

    #[test]
    fn consistency_parses_and_refuses() {
        assert_eq!("99%".parse::<Consistency>().unwrap().fraction(), 0.99);
        assert!(("99.9".parse::<Consistency>().unwrap().fraction() - 0.999).abs() < 1e-12);
        assert_eq!("100%".parse::<Consistency>().unwrap().to_string(), "100%");
        for bad in ["0%", "101%", "x", "-5%", ""] {
            let err = bad.parse::<Consistency>().unwrap_err().to_string();
            assert!(err.contains("e.g. 99%"), "{bad}: {err}");
        }
    }
}
