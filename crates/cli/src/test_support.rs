//! Helpers shared by this crate's unit tests.

use std::path::PathBuf;

/// The scratch directory of every hostmax test: `/dev/shm/hostmax-test-PID-TAG`, removed on
/// drop (and by the next test run if this one was killed).
pub(crate) use hostmax_simhost::ScratchDir;

/// A regular-file target of `size` bytes at `path` with 512-byte blocks, as a probe would
/// describe it (nothing is read).
pub(crate) fn file_target(path: impl Into<PathBuf>, size: u64) -> hostmax_engine::TargetInfo {
    hostmax_engine::TargetInfo::new(path, hostmax_engine::TargetKind::RegularFile, size, 512)
}

/// `count` empty files of `size` bytes in `dir` (`d0.img`, `d1.img`, ...): targets a fake
/// engine runs on.
pub(crate) fn target_files(dir: &ScratchDir, count: usize, size: u64) -> Vec<String> {
    (0..count)
        .map(|i| {
            let path = dir.0.join(format!("d{i}.img"));
            std::fs::File::create(&path).unwrap().set_len(size).unwrap();
            path.display().to_string()
        })
        .collect()
}

/// The JSON file at `path`, parsed.
pub(crate) fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The arguments of `hostmax SUBCOMMAND` (the main run when `None`) over `volumes` files of
/// 8 MiB in `dir`, 1 s runs with no ramp, the JSON at `dir/SUBCOMMAND.json` (`run.json`),
/// then `more`: what the commands' fake-engine tests parse ([`crate::args::parsed`]).
pub(crate) fn short_run_argv(
    dir: &ScratchDir,
    subcommand: Option<&str>,
    volumes: usize,
    more: &[&str],
) -> Vec<String> {
    let mut argv: Vec<String> = subcommand.map(String::from).into_iter().collect();
    argv.push("--devices".to_string());
    argv.extend(target_files(dir, volumes, 8 << 20));
    argv.extend(["--size", "8m", "--runtime", "1s", "--ramp", "0s", "--json"].map(String::from));
    let json = format!("{}.json", subcommand.unwrap_or("run"));
    argv.push(dir.0.join(json).display().to_string());
    argv.extend(more.iter().map(|m| m.to_string()));
    argv
}
