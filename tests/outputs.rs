//! Outputs that cannot be lost: every output path that the write would fail on is refused
//! before any I/O (exit 2, one line naming the path and a fix); a path is resolved once and
//! written through the directory found then, never replacing a node put there later; and an
//! output that still cannot be written after the run is kept elsewhere, the error saying where
//! (exit non-zero). Runs of a second or two on regular files; root where a mount, a device node
//! or another user is needed.

mod support;

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::*;

const MIB: u64 = 1 << 20;

/// A read run of `runtime` on `target` with `extra` options.
fn read_run(target: &Path, runtime: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--devices",
        target.to_str().unwrap(),
        "--rw",
        "randread",
        "--runtime",
        runtime,
        "--ramp",
        "0s",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// A regular-file target of 16 MiB in `dir`, readable by every user.
fn target_in(dir: &ScratchDir) -> PathBuf {
    let target = dir.join("t.img");
    File::create(&target).unwrap().set_len(16 * MIB).unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
    target
}

/// Runs hostmax with `args`, calls `during` once its stderr has said its first line (the
/// run's first second, long after every check), and returns its output.
fn run_and_meanwhile(args: &[String], during: impl FnOnce()) -> Output {
    let mut child = Command::new(hostmax_bin())
        .args(args)
        .env("COLUMNS", "200")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hostmax");
    let mut stdout = child.stdout.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    during();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    Output {
        status,
        stdout: reading.join().unwrap(),
        stderr: (first + &rest).into_bytes(),
    }
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The path after `marker` in a message, up to the end of its line.
fn kept_path(stderr: &str, marker: &str) -> PathBuf {
    let at = stderr
        .find(marker)
        .unwrap_or_else(|| panic!("no '{marker}' in: {stderr}"));
    let rest = stderr[at + marker.len()..].lines().next().unwrap();
    PathBuf::from(rest.split("; also ").next().unwrap().trim())
}

#[test]
fn a_link_to_nothing_is_refused_before_the_run() {
    let dir = ScratchDir::new("out-dangling");
    let target = target_in(&dir);
    let link = dir.join("r.json");
    std::os::unix::fs::symlink(dir.join("missing.json"), &link).unwrap();
    let args = read_run(&target, "1s", &["--json", link.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[
            &format!("--json {}", link.display()),
            "missing.json, which does not exist",
            "remove the link",
        ],
    );
    // A link into a directory that does not exist, for the interval log.
    let log = dir.join("r.hlog");
    std::os::unix::fs::symlink(dir.join("gone/r.hlog"), &log).unwrap();
    let args = read_run(&target, "1s", &["--hdr-log", log.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[
            &format!("--hdr-log {}", log.display()),
            "does not exist; create it",
        ],
    );
    assert!(!dir.join("missing.json").exists() && !dir.join("gone").exists());
}

#[test]
fn an_immutable_output_file_is_refused_before_the_run() {
    require_root!();
    let chattr = match require_tool("chattr", "e2fsprogs") {
        Ok(path) => path,
        Err(why) => skip!("{why}"),
    };
    let dir = ScratchDir::new("out-immutable");
    let target = target_in(&dir);
    let report = dir.write("r.json", "{}");
    let set = Command::new(&chattr)
        .arg("+i")
        .arg(&report)
        .output()
        .unwrap();
    if !set.status.success() {
        skip!(
            "chattr +i fails on {} ({}): no immutable files there",
            dir.join("").display(),
            String::from_utf8_lossy(&set.stderr).trim()
        );
    }
    let args = read_run(&target, "1s", &["--json", report.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    let _ = Command::new(&chattr).arg("-i").arg(&report).status();
    assert_refused(
        &args,
        &out,
        &[
            &format!("--json {}", report.display()),
            "immutable or append-only",
            "chattr -i -a",
        ],
    );
    assert_eq!(fs::read_to_string(&report).unwrap(), "{}");
}

/// As root (CAP_FOWNER) another user's file in a sticky directory is replaced like any
/// other; a user without it cannot rename over it (whatever `fs.protected_regular` says: that
/// setting governs opening such a file, and the write renames), so that user is refused
/// before the run.
#[test]
fn another_users_file_in_a_sticky_directory_is_refused_before_the_run() {
    require_root!();
    let setpriv = match require_tool("setpriv", "util-linux") {
        Ok(path) => path,
        Err(why) => skip!("{why}"),
    };
    let dir = ScratchDir::new("out-sticky");
    fs::set_permissions(dir.join(""), fs::Permissions::from_mode(0o755)).unwrap();
    let target = target_in(&dir);
    let sticky = dir.join("tmp");
    fs::create_dir(&sticky).unwrap();
    fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
    // root's file, where nobody may make files of its own.
    let report = sticky.join("r.json");
    fs::write(&report, "{}").unwrap();
    let args = read_run(&target, "1s", &["--json", report.to_str().unwrap()]);
    let out = Command::new(&setpriv)
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(hostmax_bin())
        .args(&args)
        .output()
        .unwrap();
    assert_refused(
        &args,
        &out,
        &[
            &format!("--json {}", report.display()),
            "belongs to another user (uid 0) in the sticky directory",
            "choose another path",
        ],
    );
    assert_eq!(fs::read_to_string(&report).unwrap(), "{}");
    // nobody's own file there is fine, and so is root replacing nobody's.
    let own = sticky.join("own.json");
    let args = read_run(&target, "1s", &["--json", own.to_str().unwrap()]);
    let out = Command::new(&setpriv)
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(hostmax_bin())
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(fs::metadata(&own).unwrap().uid(), 65534);
    let out = run_hostmax(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(fs::metadata(&own).unwrap().uid(), 0);
}

/// Fills the filesystem `dir` is on (a small tmpfs) with one file.
fn fill(dir: &Path) {
    let mut filler = File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 64 << 10];
    while filler.write_all(&block).is_ok() {}
    let _ = filler.sync_all();
}

#[test]
fn a_full_filesystem_is_refused_before_the_run() {
    require_root!();
    let dir = ScratchDir::new("out-full");
    let target = target_in(&dir);
    let mount = Mount::tmpfs(&dir.join("small"), "2m");
    fill(&mount.0);
    let report = mount.0.join("r.json");
    let args = read_run(&target, "1s", &["--json", report.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[
            &format!("--json {}", report.display()),
            "0 B free, less than the 1 MiB an output needs",
            "free some space there or choose another path",
        ],
    );
    // The suite's page, and its checkpoint (a file per cell as it runs), alike.
    let html = mount.0.join("s.html");
    let state = mount.0.join("s.state");
    for (option, path) in [("--html", &html), ("--state-dir", &state)] {
        let args: Vec<String> = [
            "suite",
            "iops",
            "--devices",
            target.to_str().unwrap(),
            "--no-purge",
            "--no-precondition",
            option,
            path.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        let out = run_hostmax(&args, None);
        assert_refused(
            &args,
            &out,
            &[&format!("{option} {}", path.display()), "0 B free"],
        );
    }
    assert!(!state.exists());
}

/// The filesystem fills during the run: the report and the interval log are kept elsewhere,
/// whole, the error names where, and the exit code is not 0.
#[test]
fn outputs_that_a_full_filesystem_cannot_take_after_the_run_are_kept() {
    require_root!();
    let dir = ScratchDir::new("out-fills");
    let target = target_in(&dir);
    let mount = Mount::tmpfs(&dir.join("small"), "4m");
    let report = mount.0.join("r.json");
    let log = mount.0.join("r.hlog");
    let args = read_run(
        &target,
        "2s",
        &[
            "--json",
            report.to_str().unwrap(),
            "--hdr-log",
            log.to_str().unwrap(),
        ],
    );
    let out = run_and_meanwhile(&args, || fill(&mount.0));
    let stderr = stderr_of(&out);
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "exit code {:?}: {stderr}",
        out.status.code()
    );
    assert!(
        stderr.contains(&format!("--json {}", report.display())),
        "{stderr}"
    );
    let kept_report = kept_path(&stderr, "the report is kept in ");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&kept_report).unwrap()).unwrap();
    assert!(json["host"].is_object(), "{json}");
    // The log's own error says where the log went.
    let kept_log = kept_path(&stderr, "the log is kept in ");
    let (counts, _) = read_interval_log(kept_log.to_str().unwrap());
    assert!(logged_ios(&counts, "host-read") > 0, "{counts:?}");
    for kept in [kept_report, kept_log] {
        fs::remove_file(kept).unwrap();
    }
    assert!(!report.exists() && !log.exists());
}

/// A sweep's chart whose filesystem fills during the run: the old file stays as it was, no
/// temporary file is left, and the chart is kept elsewhere, whole.
#[test]
fn a_chart_that_a_filling_filesystem_cannot_take_is_kept() {
    require_root!();
    let dir = ScratchDir::new("out-svg-fills");
    let target = target_in(&dir);
    let mount = Mount::tmpfs(&dir.join("small"), "2m");
    let svg = mount.0.join("sweep.svg");
    fs::write(&svg, "old").unwrap();
    let args: Vec<String> = [
        "sweep",
        "--devices",
        target.to_str().unwrap(),
        "--runtime",
        "2s",
        "--ramp",
        "0s",
        "--steps",
        "1",
        "--svg",
        svg.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let out = run_and_meanwhile(&args, || fill(&mount.0));
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("--svg {}", svg.display())),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(&svg).unwrap(), "old");
    let mut left: Vec<String> = fs::read_dir(&mount.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["filler", "sweep.svg"], "a temporary file was left");
    let kept = kept_path(&stderr, "the chart is kept in ");
    assert!(fs::read_to_string(&kept).unwrap().contains("<svg"));
    fs::remove_file(kept).unwrap();
}

/// An output link re-pointed mid-run at a block device: the report goes where the link led
/// when checked, and the device node stays as it was. A device node put at the resolved name
/// itself mid-run is not replaced either: the report is kept elsewhere and the run says so.
#[test]
fn a_block_device_put_in_an_outputs_way_mid_run_is_never_replaced() {
    require_root!();
    let host = loop_volumes(1, 8 * MIB);
    let device = PathBuf::from(&volume_paths(&host)[0]);
    let rdev = fs::metadata(&device).unwrap().rdev();
    let dir = ScratchDir::new("out-node");
    let target = target_in(&dir);
    let real = dir.write("real.json", "{}");
    let link = dir.join("r.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let args = read_run(&target, "2s", &["--json", link.to_str().unwrap()]);
    let out = run_and_meanwhile(&args, || {
        let new = dir.join("r.json.new");
        std::os::unix::fs::symlink(&device, &new).unwrap();
        fs::rename(&new, &link).unwrap();
    });
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let node = fs::metadata(&device).unwrap();
    assert!(node.file_type().is_block_device() && node.rdev() == rdev);
    assert_eq!(fs::read_link(&link).unwrap(), device);
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&real).unwrap()).unwrap();
    assert!(json["host"].is_object(), "{json}");

    // The resolved name itself becomes the device's node.
    let args = read_run(&target, "2s", &["--json", real.to_str().unwrap()]);
    let out = run_and_meanwhile(&args, || {
        fs::remove_file(&real).unwrap();
        let made = Command::new("mknod")
            .arg(&real)
            .arg("b")
            .arg(nix::sys::stat::major(rdev).to_string())
            .arg(nix::sys::stat::minor(rdev).to_string())
            .status()
            .unwrap();
        assert!(made.success());
    });
    let stderr = stderr_of(&out);
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "exit code {:?}: {stderr}",
        out.status.code()
    );
    assert!(
        stderr.contains("is now a block device") && stderr.contains("not replaced"),
        "{stderr}"
    );
    let node = fs::symlink_metadata(&real).unwrap();
    assert!(node.file_type().is_block_device() && node.rdev() == rdev);
    let kept = kept_path(&stderr, "the report is kept in ");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&kept).unwrap()).unwrap();
    assert!(json["host"].is_object(), "{json}");
    fs::remove_file(&kept).unwrap();
    fs::remove_file(&real).unwrap();
}

/// A suite whose report could not go where it was first meant to is resumed with new
/// `--json`, `--html` and `--fio-json`: they are written, and kept for the next resume.
#[test]
fn a_resumed_suite_takes_new_outputs() {
    let _lock = rate_test_lock();
    let dir = ScratchDir::new("out-resume");
    let target = target_in(&dir);
    let first = dir.join("first");
    fs::create_dir(&first).unwrap();
    let state = dir.join("s.state");
    let mut suite = one_cell_suite(&[target.to_str().unwrap()], "200ms");
    suite.extend(
        [
            "--json",
            first.join("s.json").to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let out = run_hostmax(&suite, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    fs::remove_dir_all(&first).unwrap();
    let json = dir.join("again.json");
    let html = dir.join("again.html");
    let fio = dir.join("again-fio");
    let resume = [
        "suite",
        "--resume",
        state.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--fio-json",
        fio.to_str().unwrap(),
    ];
    let out = run_hostmax(&resume, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["cells"].is_object(), "{report}");
    assert!(fs::read_to_string(&html).unwrap().contains("<html"));
    let config: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(state.join("suite.json")).unwrap()).unwrap();
    assert_eq!(config["json"], json.to_str().unwrap());
    assert_eq!(config["html"], html.to_str().unwrap());
    assert_eq!(config["fio_json"], fio.to_str().unwrap());
    let fio_files = fs::read_dir(&fio).map(|d| d.count()).unwrap_or(0);
    assert!(fio_files > 0, "--fio-json {} holds nothing", fio.display());
    // The next resume writes them again with no option given.
    fs::remove_file(&json).unwrap();
    let out = run_hostmax(&["suite", "--resume", state.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(json.exists());
}

/// Runs hostmax with `args`, its stdout a pipe whose reader goes away at once (before anything
/// is written to it: `hostmax ... | head -1` once head has its line), and returns its output.
fn run_with_stdout_closed(args: &[String]) -> Output {
    let mut child = Command::new(hostmax_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// `--json -` into a pipe nobody reads any more: the report is kept elsewhere and the error
/// says where.
#[test]
fn a_report_standard_output_cannot_take_is_kept() {
    let dir = ScratchDir::new("out-stdout");
    let target = target_in(&dir);
    let args = read_run(&target, "1s", &["--json", "-"]);
    let out = run_with_stdout_closed(&args);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("--json -: writing to standard output failed"),
        "{stderr}"
    );
    let kept = kept_path(&stderr, "the report is kept in ");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&kept).unwrap()).unwrap();
    assert!(json["host"].is_object(), "{json}");
    fs::remove_file(kept).unwrap();
}

/// A table standard output cannot take (`hostmax ... | head -1`, the reader gone before the
/// table comes): no panic; the note says the rest is dropped, the `--json` file is written
/// whole and the exit code is the run's own. The doctor's findings the same.
#[test]
fn a_table_standard_output_cannot_take_is_dropped_and_the_report_still_written() {
    let dir = ScratchDir::new("out-closed-stdout");
    let target = target_in(&dir);
    let json = dir.join("r.json");
    let run = read_run(&target, "1s", &["--json", json.to_str().unwrap()]);
    let doctor_json = dir.join("doctor.json");
    let doctor = ["doctor", "--ceiling-runtime", "0s", "--json"]
        .map(String::from)
        .into_iter()
        .chain([doctor_json.display().to_string()])
        .collect::<Vec<_>>();
    for (args, report) in [(run, &json), (doctor, &doctor_json)] {
        let out = run_with_stdout_closed(&args);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("internal error"), "{stderr}");
        assert_eq!(
            stderr.matches("hostmax: standard output is closed").count(),
            1,
            "{stderr}"
        );
        let written: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(report).unwrap()).unwrap();
        assert_eq!(written["schema_version"], 2, "{written}");
    }
}

/// A one-step sweep of `target` writing `--fio-json folder`, for `runtime`.
fn sweep_to_fio_folder(target: &Path, folder: &Path, runtime: &str) -> Vec<String> {
    [
        "sweep",
        "--devices",
        target.to_str().unwrap(),
        "--runtime",
        runtime,
        "--ramp",
        "0s",
        "--steps",
        "1",
        "--fio-json",
        folder.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                todo.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// A `--fio-json` folder follows the rules of a file: on a full filesystem it is refused
/// before the run, and when its filesystem fills during the run every file of the folder is
/// kept elsewhere in the same layout, the error saying where.
#[test]
fn a_fio_json_folder_on_a_full_or_filling_filesystem_is_refused_or_kept() {
    require_root!();
    let dir = ScratchDir::new("out-fio-folder");
    let target = target_in(&dir);
    let mount = Mount::tmpfs(&dir.join("small"), "2m");
    let folder = mount.0.join("fio");
    fill(&mount.0);
    let args = sweep_to_fio_folder(&target, &folder, "1s");
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[&format!("--fio-json {}", folder.display()), "0 B free"],
    );
    assert!(!folder.exists());
    fs::remove_file(mount.0.join("filler")).unwrap();

    let args = sweep_to_fio_folder(&target, &folder, "2s");
    let out = run_and_meanwhile(&args, || fill(&mount.0));
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("--fio-json {}: ", folder.display())),
        "{stderr}"
    );
    let kept = kept_path(&stderr, "the fio reports are kept in ");
    let files = files_under(&kept);
    assert_eq!(files.len(), 2, "the host's file and t.img's: {files:?}");
    assert!(
        files.contains(&"t.img/4k/randread-32-1.json".to_string()),
        "{files:?}"
    );
    for file in &files {
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(kept.join(file)).unwrap()).unwrap();
        assert!(
            v["jobs"].as_array().is_some_and(|j| !j.is_empty()),
            "{file}"
        );
    }
    fs::remove_dir_all(kept).unwrap();
    // No temporary file is left in the folder.
    if folder.exists() {
        assert!(
            files_under(&folder).iter().all(|f| !f.contains(".tmp-")),
            "{:?}",
            files_under(&folder)
        );
    }
}

/// A link planted in a `--fio-json` folder during the run, where a device's subfolder goes,
/// is not followed: nothing is written where it leads, the link stays, and the folder's
/// files are kept elsewhere.
#[test]
fn a_link_planted_in_a_fio_json_folder_mid_run_is_not_followed() {
    let dir = ScratchDir::new("out-fio-link");
    let target = target_in(&dir);
    let folder = dir.join("fio");
    fs::create_dir(&folder).unwrap();
    let elsewhere = dir.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let planted = folder.join("t.img");
    let args = sweep_to_fio_folder(&target, &folder, "2s");
    let out = run_and_meanwhile(&args, || {
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap()
    });
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("--fio-json {}: t.img/4k/", folder.display())),
        "{stderr}"
    );
    assert!(
        files_under(&elsewhere).is_empty(),
        "written through the link"
    );
    assert!(fs::symlink_metadata(&planted)
        .unwrap()
        .file_type()
        .is_symlink());
    let kept = kept_path(&stderr, "the fio reports are kept in ");
    assert_eq!(files_under(&kept).len(), 2, "{:?}", files_under(&kept));
    fs::remove_dir_all(kept).unwrap();
}

/// A sticky, world-writable directory (a `/tmp` of its own) in `dir`, and in it a link
/// named `name` to `to`, owned by nobody (uid 65534), as another user of a shared host would
/// plant it.
fn planted_link(dir: &ScratchDir, name: &str, to: &Path) -> PathBuf {
    fs::set_permissions(dir.join(""), fs::Permissions::from_mode(0o755)).unwrap();
    let sticky = dir.join("tmp");
    fs::create_dir_all(&sticky).unwrap();
    fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
    let link = sticky.join(name);
    std::os::unix::fs::symlink(to, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    link
}

/// Root on a shared host does not follow another user's link in a sticky world-writable
/// directory (the kernel's `protected_symlinks` rule, whatever the host's setting), for any
/// output and at any place in the path: refused before the run, the file it leads to kept.
/// root's own link there is followed as before.
#[test]
fn another_users_link_in_a_sticky_directory_is_not_followed() {
    require_root!();
    let dir = ScratchDir::new("out-planted");
    let target = target_in(&dir);
    let victim = dir.join("victim.json");
    fs::write(&victim, "precious").unwrap();
    let link = planted_link(&dir, "hostmax.json", &victim);
    let shown = link.display().to_string();
    for option in ["--json", "--hdr-log"] {
        let args = read_run(&target, "1s", &[option, &shown]);
        let out = run_hostmax(&args, None);
        assert_refused(
            &args,
            &out,
            &[
                &format!("{option} {shown}: {shown} is a symbolic link of another user (uid 65534) in the sticky world-writable directory"),
                "have the link removed",
            ],
        );
    }
    // A link to a directory, earlier in the path, and a folder output through one.
    let victims = dir.join("victims");
    fs::create_dir(&victims).unwrap();
    let dir_link = planted_link(&dir, "x", &victims);
    let through = dir_link.join("hostmax.json");
    let args = read_run(&target, "1s", &["--json", through.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["symbolic link of another user (uid 65534)"]);
    let args = sweep_to_fio_folder(&target, &dir_link, "1s");
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &["--fio-json", "symbolic link of another user"],
    );
    // A suite's state directory through the linked directory, and its --html at the link.
    let mut args = one_cell_suite(&[target.to_str().unwrap()], "200ms");
    args.extend([
        "--state-dir".into(),
        dir_link.join("s.state").display().to_string(),
    ]);
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &["--state-dir", "symbolic link of another user"],
    );
    let mut args = one_cell_suite(&[target.to_str().unwrap()], "200ms");
    args.extend([
        "--html".into(),
        shown.clone(),
        "--state-dir".into(),
        dir.join("s.state").display().to_string(),
    ]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["--html", "symbolic link of another user"]);
    assert!(!dir.join("s.state").exists());
    // prepare's --state, written while it reads: refused before it reads anything.
    let args: Vec<String> = [
        "prepare",
        "--devices",
        target.to_str().unwrap(),
        "--state",
        &shown,
    ]
    .map(String::from)
    .to_vec();
    let out = run_hostmax(&args, None);
    assert_refused(
        &args,
        &out,
        &[&format!(
            "--state {shown}: {shown} is a symbolic link of another user"
        )],
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(fs::read_dir(&victims).unwrap().next().is_none());
    // root's own link in the same directory is followed.
    let own = dir.join("tmp/own.json");
    std::os::unix::fs::symlink(&victim, &own).unwrap();
    let args = read_run(&target, "1s", &["--json", own.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(fs::read_to_string(&victim).unwrap().starts_with('{'));
}

/// An output never replaces a loop device's backing file, by its path or a link to it: the
/// image behind a loop (mounted or measured) would be gone once the loop lets go of it.
#[test]
fn an_output_at_a_loop_devices_backing_file_is_refused() {
    require_root!();
    let dir = ScratchDir::new("out-backing");
    let target = target_in(&dir);
    let image = dir.join("fs.img");
    File::create(&image).unwrap().set_len(16 * MIB).unwrap();
    let backing = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&image)
        .unwrap();
    let dev = hostmax_simhost::LoopDevice::attach(&backing, &Default::default()).unwrap();
    let link = dir.join("r.json");
    std::os::unix::fs::symlink(&image, &link).unwrap();
    for out_path in [&image, &link] {
        let args = read_run(&target, "1s", &["--json", out_path.to_str().unwrap()]);
        let out = run_hostmax(&args, None);
        assert_refused(
            &args,
            &out,
            &[&format!(
                "is the backing file of {}, which the output would replace",
                dev.path().display()
            )],
        );
    }
    // The measured loop's own backing file.
    let node = dev.path().display().to_string();
    let args = read_run(Path::new(&node), "1s", &["--json", image.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    assert_refused(&args, &out, &["is the backing file of"]);
    assert_eq!(fs::metadata(&image).unwrap().len(), 16 * MIB);
    assert_eq!(
        fs::metadata(&image).unwrap().ino(),
        backing.metadata().unwrap().ino()
    );
}

/// Nor an active swap file: an output there would take the swap area's file from under it.
#[test]
fn an_output_at_an_active_swap_file_is_refused() {
    require_root!();
    for (tool, package) in [
        ("mkfs.ext4", "e2fsprogs"),
        ("mkswap", "util-linux"),
        ("swapon", "util-linux"),
    ] {
        if let Err(why) = require_tool(tool, package) {
            skip!("{why}");
        }
    }
    let dir = ScratchDir::new("out-swap");
    let target = target_in(&dir);
    let image = dir.join("fs.img");
    File::create(&image).unwrap().set_len(64 * MIB).unwrap();
    let backing = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&image)
        .unwrap();
    let dev = hostmax_simhost::LoopDevice::attach(&backing, &Default::default()).unwrap();
    let node = dev.path().display().to_string();
    run_tool("mkfs.ext4", "e2fsprogs", &["-q", &node]);
    let _mount = Mount::new(&node, &dir.join("mnt"), &[]);
    let swapfile = dir.join("mnt/swap");
    fs::write(&swapfile, vec![0u8; 16 * MIB as usize]).unwrap();
    fs::set_permissions(&swapfile, fs::Permissions::from_mode(0o600)).unwrap();
    let swap = SwapOn::new(swapfile.to_str().unwrap());
    let args = read_run(&target, "1s", &["--json", swapfile.to_str().unwrap()]);
    let out = run_hostmax(&args, None);
    let inode = fs::metadata(&swapfile).unwrap().ino();
    drop(swap);
    assert_refused(
        &args,
        &out,
        &[&format!(
            "{} is an active swap file, which the output would replace",
            swapfile.display()
        )],
    );
    assert_eq!(inode, fs::metadata(&swapfile).unwrap().ino());
}
