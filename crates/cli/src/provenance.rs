//! Where a report came from: a fresh run id, the measured window's wall-clock start and end,
//! hostmax's version and the commit it was built from ([`COMMIT`], also in `--version`:
//! [`VERSION`]), the command line and the kernel ([`hostmax_aggregate::Provenance`]), and
//! the check `hostmax merge` makes with them: the runs it adds up were measured together;
//! and [`hostname`], the name each report records. Every command that makes a report stamps it
//! from here.

use std::io::Read;
use std::time::{Duration, SystemTime};

use hostmax_aggregate::{HostReport, Provenance};

use crate::rfc3339::format_rfc3339;

/// The commit this hostmax was built from, as reports record it (`hostmax_commit`): the sha
/// (40 hex digits from git or a crates.io package; what a packager gave in
/// `HOSTMAX_BUILD_COMMIT`), with `-dirty` appended when the tracked files had uncommitted
/// changes; `None` when the build could not tell (no git, no repository). Found by the build
/// script, `crates/cli/build.rs`.
pub const COMMIT: Option<&str> = {
    let commit = env!("HOSTMAX_BUILT_FROM_COMMIT");
    if commit.is_empty() {
        None
    } else {
        Some(commit)
    }
};

/// What `hostmax --version` prints after the name: the version and the commit's first 12 hex
/// digits, `0.1.0 (commit 2ab5ef6c1d2e)`, `0.1.0 (commit 2ab5ef6c1d2e, dirty)` or
/// `0.1.0 (commit unknown)`.
pub const VERSION: &str = env!("HOSTMAX_VERSION_TEXT");

/// The whole version line, as `hostmax --version` prints it: `hostmax 0.1.0 (commit
/// 2ab5ef6c1d2e, dirty)`.
pub fn version_line() -> String {
    format!("hostmax {VERSION}")
}

/// This host's name (`gethostname`), lossy if it is not UTF-8; `None` if it cannot be read.
pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !name.is_empty())
}

/// A random 128-bit id as 32 lowercase hex digits (from the kernel's random pool).
pub fn new_run_id() -> String {
    let mut bytes = [0u8; 16];
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if filled.is_err() {
        // No /dev/urandom (an odd container): time and pid still make ids that do not repeat.
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (now ^ (u128::from(std::process::id()) << 96)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The running kernel's release, as `uname -r` prints it.
pub fn kernel_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A new run's provenance for a measured window from `started` to `ended`.
pub fn for_window(started: SystemTime, ended: SystemTime) -> Provenance {
    Provenance::default()
        .with_run_id(Some(new_run_id()))
        .with_started_at(Some(format_rfc3339(started)))
        .with_ended_at(Some(format_rfc3339(ended)))
        .with_hostmax_version(Some(env!("CARGO_PKG_VERSION").to_string()))
        .with_hostmax_commit(COMMIT.map(String::from))
        .with_command_line(Some(redacted_command_line(
            std::env::args_os().map(|a| a.to_string_lossy().into_owned()),
        )))
        .with_kernel(kernel_release())
}

/// The options whose values are secrets: never in a report, a page or a state file.
pub const SECRET_OPTIONS: [&str; 1] = ["--secure-erase-password"];

/// What a report records of the command line: `args` with the value of every
/// [`SECRET_OPTIONS`] option (`--opt VALUE` or `--opt=VALUE`) replaced by `<redacted>`.
pub fn redacted_command_line(args: impl IntoIterator<Item = String>) -> Vec<String> {
    const REDACTED: &str = "<redacted>";
    let mut out = Vec::new();
    let mut secret_next = false;
    for arg in args {
        if std::mem::take(&mut secret_next) {
            out.push(REDACTED.to_string());
            continue;
        }
        if SECRET_OPTIONS.contains(&arg.as_str()) {
            secret_next = true;
            out.push(arg);
        } else if let Some(option) = SECRET_OPTIONS
            .iter()
            .find(|o| arg.strip_prefix(**o).is_some_and(|v| v.starts_with('=')))
        {
            out.push(format!("{option}={REDACTED}"));
        } else {
            out.push(arg);
        }
    }
    out
}

/// The provenance of a command made of several runs (verify's phases, sweep's steps): a new
/// run id and the window from the first run's start to the last run's end. The runs' times are
/// this version's fixed-width UTC text, so text order is time order.
pub fn spanning(runs: &[HostReport]) -> Provenance {
    let now = SystemTime::now();
    let mut provenance = for_window(now, now);
    provenance.started_at = runs
        .iter()
        .filter_map(|r| r.provenance.started_at.clone())
        .min();
    provenance.ended_at = runs
        .iter()
        .filter_map(|r| r.provenance.ended_at.clone())
        .max();
    provenance
}

/// Sets a finished run's provenance: the measured window ended now and lasted `measured`.
pub fn stamp_run(report: &mut HostReport, measured: Duration) {
    let ended = SystemTime::now();
    report.provenance = for_window(ended - measured, ended);
}

/// The build script's parsing and wording, tested here (`build.rs` includes the same file).
#[cfg(test)]
#[path = "../build/commit.rs"]
mod build_commit;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_names_the_version_and_the_commit() {
        let line = version_line();
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            line,
            format!("hostmax {}", build_commit::version_text(version, COMMIT))
        );
        if let Some(commit) = COMMIT {
            let sha = commit.strip_suffix("-dirty").unwrap_or(commit);
            assert!(
                sha.len() >= 7 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{commit}"
            );
            assert_eq!(
                for_window(SystemTime::now(), SystemTime::now())
                    .hostmax_commit
                    .as_deref(),
                Some(commit)
            );
        } else {
            assert_eq!(line, format!("hostmax {version} (commit unknown)"));
        }
    }

    #[test]
    fn secrets_are_redacted_from_the_command_line() {
        let line = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            redacted_command_line(line(
                "hostmax suite --secure-erase-password hunter2 --json a"
            )),
            line("hostmax suite --secure-erase-password <redacted> --json a")
        );
        assert_eq!(
            redacted_command_line(line("hostmax suite --secure-erase-password=hunter2")),
            line("hostmax suite --secure-erase-password=<redacted>")
        );
        assert_eq!(
            redacted_command_line(line("hostmax --devices x")),
            line("hostmax --devices x")
        );
    }

    #[test]
    fn run_ids_are_128_bit_hex_and_differ() {
        let (a, b) = (new_run_id(), new_run_id());
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
