//! One finding of the diagnosis: a setting, what was found, how much it holds a test back
//! ([`Severity`]) and the command that changes it.

use serde::Serialize;

/// How much a setting holds a host-maximum test back. Ordered most harmful first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Caps the test or stops it: fix before measuring.
    Harmful,
    /// Costs IOPS or latency on most hosts.
    Warning,
    /// Matters at the very top (millions of IOPS) or for some workloads; worth knowing.
    Info,
    /// As a host-maximum test wants it.
    Ok,
}

impl Severity {
    /// How the doctor's table names it.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Harmful => "HARMFUL",
            Severity::Warning => "WARNING",
            Severity::Info => "info",
            Severity::Ok => "ok",
        }
    }
}

/// One setting of one device or of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A device's kernel name (`nvme0n1`, `loop3`) or `host`.
    pub scope: String,
    /// The setting (`scheduler`, `rq_affinity`, `kernel.io_uring_disabled`, ...).
    pub setting: String,
    /// What was found.
    pub found: String,
    /// How much it holds the test back.
    pub severity: Severity,
    /// Why it matters.
    pub why: String,
    /// The command that changes it (none when nothing needs to change, or nothing can).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}
