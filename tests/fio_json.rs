//! `--fio-json`: the run in fio's JSON (json+) layout. Its keys and types against a report real
//! fio writes on the same kind of volume, its figures against hostmax's own report, and
//! fio-plot 1.1.21 drawing a chart from a command's folder.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// Key paths fio writes that hostmax's file leaves out on purpose, and why. (None today: what
/// hostmax does not measure is written as zero with fio's type, so readers find every key.)
const FIO_ONLY: &[(&str, &str)] = &[];

/// Objects whose keys are values, compared as objects only: the options as given (fio echoes
/// its command line, hostmax its workload) and json+'s latency bins (keyed by latency).
const VALUE_KEYED: [&str; 3] = ["job options", "global options", "bins"];

/// The JSON type of a value, ints apart from floats (fio writes `100.000000` for a float).
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key path of `v` (array elements as `[]`) with its type.
fn key_types(v: &Value, path: &str, out: &mut BTreeMap<String, &'static str>) {
    out.insert(path.to_string(), type_of(v));
    match v {
        Value::Object(map) if !VALUE_KEYED.iter().any(|k| path.ends_with(k)) => {
            for (k, x) in map {
                key_types(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for x in items {
                key_types(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// A file's JSON; fio may print warnings before its JSON, so it starts at the first brace.
fn json_after_noise(text: &str) -> Value {
    let start = text
        .find('{')
        .unwrap_or_else(|| panic!("no JSON in {text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("bad JSON ({e}): {text}"))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_key_real_fio_writes_is_there_with_its_type() {
    require_root!();
    let fio = match require_tool("fio", "fio") {
        Ok(fio) => fio,
        Err(why) => skip!("{why}"),
    };
    let host = loop_volumes(2, 64 * MIB);
    let paths = volume_paths(&host);
    let out = Command::new(fio)
        .args([
            "--output-format=json+",
            "--name=volume",
            &format!("--filename={}", paths[0]),
            "--rw=randread",
            "--bs=4k",
            "--iodepth=4",
            "--ioengine=io_uring",
            "--direct=1",
            "--runtime=1",
            "--time_based",
        ])
        .output()
        .expect("fio runs");
    assert!(
        out.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fio_report = json_after_noise(&String::from_utf8_lossy(&out.stdout));

    let dir = ScratchDir::new("fio-json-keys");
    let file = dir.0.join("hostmax-fio.json");
    let mut args = strings(&["--devices", &paths[1]]);
    args.extend(strings(&[
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--iodepth",
        "4",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--fio-json",
        &file.display().to_string(),
    ]));
    run_hostmax_ok(&args);
    let ours = read_json(&file);

    let (mut theirs, mut mine) = (BTreeMap::new(), BTreeMap::new());
    key_types(&fio_report, "", &mut theirs);
    key_types(&ours, "", &mut mine);
    let mut wrong = Vec::new();
    for (path, kind) in &theirs {
        if FIO_ONLY.iter().any(|(only, _)| path.starts_with(only)) {
            continue;
        }
        match mine.get(path) {
            None => wrong.push(format!("{path}: missing (fio: {kind})")),
            Some(k) if k != kind => wrong.push(format!("{path}: {k}, fio writes {kind}")),
            Some(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "against fio's report:\n{}",
        wrong.join("\n")
    );
    // The options fio-plot and other readers take from every job.
    let jobs = ours["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "the device and the host");
    for key in ["rw", "bs", "iodepth", "numjobs", "ioengine"] {
        assert!(jobs[0]["job options"][key].is_string(), "job options.{key}");
    }
    assert_eq!(jobs[0]["job options"]["rw"], "randread");
    assert_eq!(jobs[0]["job options"]["bs"], "4k");
    assert_eq!(jobs[0]["job options"]["filename"], paths[1].as_str());
    assert_eq!(jobs[1]["jobname"], "All clients");
}

/// The percentile keys hostmax's own report has, as fio spells them.
const SAME_PERCENTILES: [(&str, &str); 6] = [
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("95.000000", "p95"),
    ("99.000000", "p99"),
    ("99.900000", "p99_9"),
    ("99.990000", "p99_99"),
];

#[test]
fn figures_are_hostmax_s_own() {
    require_root!();
    let host = loop_volumes(2, 64 * MIB);
    let paths = volume_paths(&host);
    let dir = ScratchDir::new("fio-json-figures");
    let file = dir.0.join("fio.json");
    let own = dir.0.join("own.json");
    let mut args = strings(&["--devices", &paths[0], &paths[1]]);
    args.extend(strings(&[
        "--rw",
        "randrw",
        "--allow-write",
        "--iodepth",
        "8",
        "--numjobs",
        "2",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--fio-json",
        &file.display().to_string(),
        "--json",
        &own.display().to_string(),
    ]));
    run_hostmax_ok(&args);
    let fio = read_json(&file);
    let own = read_json(&own);
    let jobs = fio["jobs"].as_array().unwrap();
    let devices = own["devices"].as_array().unwrap();
    assert_eq!(jobs.len(), devices.len() + 1);
    // As fio would have run it: 2 jobs per volume, each of depth 8.
    assert_eq!(fio["global options"]["numjobs"], "4");
    assert_eq!(fio["global options"]["iodepth"], "8");
    let scopes: Vec<(&Value, &Value)> = devices
        .iter()
        .zip(jobs)
        .chain([(&own["host"], jobs.last().unwrap())])
        .collect();
    assert_eq!(jobs.last().unwrap()["jobname"], "All clients");
    for (mine, job) in scopes {
        let name = &job["jobname"];
        for op in ["read", "write"] {
            let (m, f) = (&mine[op], &job[op]);
            assert!(m["ios"].as_u64().unwrap() > 0, "{name} {op}: no I/O");
            assert_eq!(f["iops"], m["iops"], "{name} {op} iops");
            assert_eq!(f["total_ios"], m["ios"], "{name} {op} ios");
            assert_eq!(f["io_bytes"], m["bytes"], "{name} {op} bytes");
            let clat = &f["clat_ns"];
            let lat = &m["latency_ns"];
            for (key, own_key) in SAME_PERCENTILES {
                assert_eq!(
                    clat["percentile"][key], lat[own_key],
                    "{name} {op} {own_key}"
                );
            }
            for key in ["min", "max", "mean"] {
                assert_eq!(clat[key], lat[key], "{name} {op} {key}");
            }
            assert_eq!(clat["N"], m["ios"], "{name} {op} N");
            let binned: u64 = clat["bins"]
                .as_object()
                .unwrap()
                .values()
                .map(|c| c.as_u64().unwrap())
                .sum();
            assert_eq!(binned, m["ios"].as_u64().unwrap(), "{name} {op} bins");
        }
    }
    // The host's share of every device's bandwidth adds up to the whole.
    let agg: f64 = jobs[..devices.len()]
        .iter()
        .map(|j| number(&j["read"]["bw_agg"]) + number(&j["write"]["bw_agg"]))
        .sum();
    assert!((agg - 100.0).abs() < 1e-6, "bw_agg adds to {agg}");
}

/// fio-plot 1.1.21 in a venv under the target directory, made once and reused; `Err` says
/// why it cannot be had.
fn fio_plot() -> Result<PathBuf, String> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fio-plot-1.1.21-venv");
    let done = venv.join("installed");
    let bin = venv.join("bin/fio-plot");
    if done.exists() && bin.exists() {
        return Ok(bin);
    }
    let python = require_tool("python3", "python3")?;
    let _ = std::fs::remove_dir_all(&venv);
    let make_venv = || {
        Command::new(&python)
            .arg("-m")
            .arg("venv")
            .arg(&venv)
            .output()
    };
    let mut made = make_venv().map_err(|e| format!("python3 -m venv: {e}"))?;
    if !made.status.success() && is_root() {
        // Debian keeps the venv module in its own package.
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-qq", "python3-venv"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
        made = make_venv().map_err(|e| format!("python3 -m venv: {e}"))?;
    }
    if !made.status.success() {
        return Err(format!(
            "python3 -m venv failed (apt-get install -y python3-venv): {}",
            String::from_utf8_lossy(&made.stderr)
        ));
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "fio-plot==1.1.21"])
        .output()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install fio-plot==1.1.21 failed: {}",
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    std::fs::write(&done, "fio-plot==1.1.21\n").map_err(|e| e.to_string())?;
    Ok(bin)
}

/// Runs fio-plot headless and checks it drew a PNG of some substance.
fn draw(fio_plot: &Path, args: &[&str], png: &Path) {
    let out = Command::new(fio_plot)
        .args(args)
        .arg("-o")
        .arg(png)
        .env("MPLBACKEND", "Agg")
        .output()
        .expect("fio-plot runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "fio-plot {args:?}: {said}");
    let bytes = std::fs::read(png).unwrap_or_else(|e| panic!("{}: {e}: {said}", png.display()));
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "not a PNG: {}",
        png.display()
    );
    assert!(
        bytes.len() > 20_000,
        "a {} byte PNG is no chart",
        bytes.len()
    );
}

#[test]
fn fio_plot_draws_a_curve_s_folder() {
    require_root!();
    let fio_plot = match fio_plot() {
        Ok(bin) => bin,
        Err(why) => skip!("{why}"),
    };
    let host = loop_volumes(2, 64 * MIB);
    let paths = volume_paths(&host);
    let dir = ScratchDir::new("fio-json-plot");
    let folder = dir.0.join("results");
    let mut args = strings(&["curve", "--devices", &paths[0], &paths[1]]);
    args.extend(strings(&[
        "--depths",
        "1,2,4",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--fio-json",
        &folder.display().to_string(),
    ]));
    run_hostmax_ok(&args);
    let devices: Vec<String> = volume_kernel_names(&host);
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let host_folder = names
        .iter()
        .find(|n| !devices.contains(n))
        .unwrap_or_else(|| panic!("no host folder among {names:?}"))
        .clone();
    assert_eq!(names.len(), devices.len() + 1, "{names:?}");
    for depth in [1, 2, 4] {
        let file = folder
            .join(&host_folder)
            .join("4k")
            .join(format!("randread-{depth}-2.json"));
        let v = read_json(&file);
        assert_eq!(v["jobs"].as_array().unwrap().len(), 3, "{}", file.display());
    }
    let host_dir = folder.join(&host_folder).join("4k");
    let host_dir = host_dir.display().to_string();
    // IOPS and latency by queue depth, of the host.
    draw(
        &fio_plot,
        &[
            "-i", &host_dir, "-T", "hostmax", "-l", "-r", "randread", "-d", "1", "2", "4", "-n",
            "2",
        ],
        &dir.0.join("depths.png"),
    );
    // The two volumes side by side at depth 4.
    let a = folder.join(&devices[0]).join("4k").display().to_string();
    let b = folder.join(&devices[1]).join("4k").display().to_string();
    draw(
        &fio_plot,
        &[
            "-i", &a, &b, "-T", "volumes", "-C", "-r", "randread", "-d", "4", "-n", "2",
        ],
        &dir.0.join("volumes.png"),
    );
}

/// Every `.json` file under `dir`, relative to it, sorted.
fn json_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_suite_writes_every_round_of_every_cell() {
    require_root!();
    let host = loop_volumes(2, 64 * MIB);
    let paths = volume_paths(&host);
    let dir = ScratchDir::new("fio-json-suite");
    let folder = dir.0.join("fio");
    let own = dir.0.join("suite.json");
    let mut args = one_cell_suite(&[&paths[0], &paths[1]], "1s");
    args.extend(strings(&[
        "--json",
        &own.display().to_string(),
        "--fio-json",
        &folder.display().to_string(),
    ]));
    run_hostmax_ok(&args);
    let own = read_json(&own);
    let rounds = own["cells"]["4k_100_0"]["rounds"].as_array().unwrap();
    let depth = own["settings"]["iodepth"].as_u64().unwrap_or_else(|| {
        panic!("settings.iodepth in {}", own["settings"]);
    });
    let devices = volume_kernel_names(&host);
    let file = format!("randread-{depth}-2.json");
    for name in &devices {
        let mut want: Vec<String> = vec![format!("4k/{file}")];
        want.extend((2..=rounds.len()).map(|r| format!("4k/run-{r}/{file}")));
        want.sort();
        assert_eq!(json_files(&folder.join(name)), want, "{name}");
    }
    // Round 1's host file holds both volumes and the host, whose IOPS is round 1's.
    let host_folder = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| !devices.contains(n))
        .expect("a host folder");
    let first = read_json(&folder.join(&host_folder).join("4k").join(&file));
    let jobs = first["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    let iops = number(&jobs[2]["read"]["iops"]);
    assert!(
        (iops - number(&rounds[0])).abs() <= number(&rounds[0]) * 1e-9,
        "round 1: {iops} against {}",
        rounds[0]
    );
}

#[test]
fn a_file_where_a_folder_goes_and_a_folder_where_a_file_goes_are_refused() {
    let dir = ScratchDir::new("fio-json-refused");
    let file = dir.0.join("taken");
    std::fs::write(&file, "x").unwrap();
    let device = dir.0.join("volume.img").display().to_string();
    let cases = [
        (
            strings(&["curve", "--devices", &device, "--fio-json"]),
            file.display().to_string(),
            "is not a folder",
        ),
        (
            strings(&["--devices", &device, "--fio-json"]),
            dir.0.display().to_string(),
            "is a directory",
        ),
    ];
    for (mut args, path, why) in cases {
        args.push(path.clone());
        let out = run_hostmax(&args, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("--fio-json {path}: ")) && err.contains(why),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

/// Two 16 MiB files in `dir` to run on (sparse: nothing is written), as arguments.
fn two_files(dir: &ScratchDir) -> Vec<String> {
    ["a.img", "b.img"]
        .iter()
        .map(|name| {
            let path = dir.0.join(name);
            std::fs::File::create(&path)
                .unwrap()
                .set_len(16 * MIB)
                .unwrap();
            path.display().to_string()
        })
        .collect()
}

/// fio's spelling of a block size in a folder name (4k, 1m).
fn bs_folder(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        format!("{}m", bytes / MIB)
    } else {
        format!("{}k", bytes / 1024)
    }
}

/// Checks the files of one run (a sweep step, a verify phase) of the JSON report in the
/// `--fio-json` folder: the host's (every device, then `All clients` with the run's host
/// figures) and each device's (that device alone, its own figures); gives their paths,
/// relative to the folder.
fn check_run_files(folder: &Path, run: &Value) -> Vec<String> {
    let w = &run["workload"];
    let devices = run["devices"].as_array().unwrap();
    let file = format!(
        "{}-{}-{}.json",
        w["pattern"].as_str().unwrap(),
        w["iodepth"],
        devices.len()
    );
    let bs = bs_folder(w["block_size"].as_u64().unwrap());
    let same = |fio: &Value, own: &Value, what: &str| {
        let (fio, own) = (&fio["read"], &own["read"]);
        assert_eq!(fio["total_ios"], own["ios"], "{what}");
        assert_eq!(fio["io_bytes"], own["bytes"], "{what}");
        let (got, want) = (number(&fio["iops"]), number(&own["iops"]));
        assert!((got - want).abs() <= want * 1e-9, "{what}: {got} vs {want}");
        for (p, key) in [("50.000000", "p50"), ("99.000000", "p99")] {
            assert_eq!(
                fio["clat_ns"]["percentile"][p], own["latency_ns"][key],
                "{what} {p}"
            );
        }
    };
    let host = run["hostname"].as_str().unwrap();
    let host_file = format!("{host}/{bs}/{file}");
    let v = read_json(&folder.join(&host_file));
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), devices.len() + 1, "{host_file}");
    assert_eq!(jobs[devices.len()]["jobname"], "All clients");
    same(&jobs[devices.len()], &run["host"], &host_file);
    assert_eq!(v["global options"]["bs"], bs.as_str(), "{host_file}");
    let mut files = vec![host_file];
    for device in devices {
        let path = device["path"].as_str().unwrap();
        let name = Path::new(path).file_name().unwrap().to_string_lossy();
        let device_file = format!("{name}/{bs}/{file}");
        let v = read_json(&folder.join(&device_file));
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 1, "{device_file}");
        assert_eq!(jobs[0]["job options"]["filename"], path, "{device_file}");
        same(&jobs[0], device, &device_file);
        files.push(device_file);
    }
    files
}

#[test]
fn a_sweep_writes_each_step_in_fio_plot_s_layout_with_its_figures() {
    let dir = ScratchDir::new("fio-json-sweep");
    let files = two_files(&dir);
    let (own, folder) = (dir.0.join("sweep.json"), dir.0.join("fio"));
    let mut args = strings(&["sweep", "--devices", &files[0], &files[1]]);
    args.extend(strings(&[
        "--steps",
        "1,2",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--json",
        &own.display().to_string(),
        "--fio-json",
        &folder.display().to_string(),
    ]));
    run_hostmax_ok(&args);
    let own = read_json(&own);
    let runs = own["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let mut want: Vec<String> = runs
        .iter()
        .flat_map(|run| check_run_files(&folder, run))
        .collect();
    want.sort();
    // Step 1 ran a.img alone (NUMJOBS 1), step 2 both; nothing else is in the folder.
    assert!(want
        .iter()
        .any(|f| f.starts_with("a.img/") && f.ends_with("-1.json")));
    assert!(!want
        .iter()
        .any(|f| f.starts_with("b.img/") && f.ends_with("-1.json")));
    assert_eq!(json_files(&folder), want);
}

#[test]
fn verify_writes_each_phase_in_fio_plot_s_layout_with_its_figures() {
    let dir = ScratchDir::new("fio-json-verify");
    let files = two_files(&dir);
    let (own, folder) = (dir.0.join("verify.json"), dir.0.join("fio"));
    let mut args = strings(&["verify", "--devices", &files[0], &files[1]]);
    args.extend(strings(&[
        "--expect-volume-iops",
        "10",
        "--expect-volume-mbps",
        "1",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--json",
        &own.display().to_string(),
        "--fio-json",
        &folder.display().to_string(),
    ]));
    run_hostmax_ok(&args);
    let own = read_json(&own);
    let phases = own["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2, "an IOPS and a throughput phase");
    let mut want: Vec<String> = phases
        .iter()
        .flat_map(|phase| check_run_files(&folder, phase))
        .collect();
    want.sort();
    // The phases' block sizes differ: each has its own BS folder.
    assert!(want.iter().any(|f| f.contains("/4k/")), "{want:?}");
    assert!(want.iter().any(|f| f.contains("/1m/")), "{want:?}");
    assert_eq!(json_files(&folder), want);
}
