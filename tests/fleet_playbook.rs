//! The fleet path of the README and the book's "Many hosts" chapter, run:
//! `examples/fleet/playbook.yml` through a real ansible-core against an inventory of two "hosts" on
//! this machine (each with its own loop volumes; one in its own UTS namespace, so with its own
//! hostname) that have no hostmax: the playbook installs it
//! (`hostmax_install: binary`, from a package and its `.sha256` as `cargo xtask dist` makes
//! them), runs it and merges the reports; a second run installs nothing. A package whose
//! SHA-256 is not its `.sha256`'s is refused, in binary and deb mode; deb mode's apt step is
//! never run here (it would change this machine's packages): the dist checks install the .deb
//! in a fresh Debian root. `examples/fleet/hostmax-job.yaml` is validated against Kubernetes'
//! own schema. Both tools come from PyPI into a virtualenv under `target/` ([`python_tools`]),
//! made once and reused.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::*;

const MIB: u64 = 1 << 20;
/// Ships the Kubernetes API's JSON schemas, so validation needs no cluster.
const KUBERNETES_VALIDATE: &str = "kubernetes-validate==1.37.0";

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/fleet")
        .join(name)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

/// The environment ansible-playbook runs in: its state under `ansible_home`, and a PATH
/// without `hostmax` (the hosts get it from the playbook; the controller's merge is given the
/// test's binary by its path).
fn ansible_playbook(bin: &Path, scratch: &ScratchDir) -> Command {
    let path: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|dir| !dir.join("hostmax").exists())
        .collect();
    let path = std::env::join_paths(path).unwrap();
    let ansible_home = scratch.join("ansible");
    let mut command = Command::new(bin.join("ansible-playbook"));
    command
        .current_dir(&scratch.0)
        .env("PATH", &path)
        .env("LC_ALL", "C.UTF-8")
        .env("ANSIBLE_HOME", &ansible_home)
        .env("ANSIBLE_LOCAL_TEMP", ansible_home.join("local"))
        .env("ANSIBLE_REMOTE_TEMP", ansible_home.join("remote"))
        .env("ANSIBLE_ASYNC_DIR", ansible_home.join("async"))
        .env("ANSIBLE_NOCOLOR", "1");
    command
}

/// Whether `program` is found on `command`'s PATH.
fn on_path(command: &Command, program: &str) -> bool {
    let path = command
        .get_envs()
        .find(|(k, _)| *k == "PATH")
        .and_then(|(_, v)| v)
        .expect("PATH is set");
    std::env::split_paths(path).any(|dir| dir.join(program).exists())
}

/// Runs `command`, printing what it took; returns its status's success and its stdout, and
/// panics (with both outputs) unless the success is `expect_success`.
fn run_playbook(command: &mut Command, expect_success: bool) -> String {
    let started = std::time::Instant::now();
    let out = command.output().expect("run ansible-playbook");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.success(),
        expect_success,
        "ansible-playbook ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("ansible-playbook took {:.1?}", started.elapsed());
    stdout
}

/// `NAME` copied into `dist` with `NAME.sha256` beside it, as `cargo xtask dist` makes them
/// (sha256sum's line); returns the copy's path.
fn package_with_sha256(dist: &Path, name: &str, from: &Path) -> PathBuf {
    std::fs::create_dir_all(dist).unwrap();
    let package = dist.join(name);
    std::fs::copy(from, &package).unwrap();
    let out = Command::new("sha256sum")
        .arg(name)
        .current_dir(dist)
        .output()
        .expect("run sha256sum");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(dist.join(format!("{name}.sha256")), &out.stdout).unwrap();
    package
}

/// Each host's counts in the PLAY RECAP: host -> (ok, changed, failed...) -> n.
fn play_recap(stdout: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    let recap = stdout
        .split("PLAY RECAP")
        .nth(1)
        .unwrap_or_else(|| panic!("no PLAY RECAP:\n{stdout}"));
    recap
        .lines()
        .filter_map(|line| line.split_once(" : "))
        .map(|(host, counts)| {
            let counts = counts
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
                .collect();
            (host.trim().to_string(), counts)
        })
        .collect()
}

/// `cargo xtask dist`'s name for the static binary.
fn static_binary_name() -> String {
    format!("hostmax-{}-x86_64-linux", env!("CARGO_PKG_VERSION"))
}

/// Where the playbook's hosts write their reports unless told (`hostmax_report`).
const DEFAULT_REPORT: &str = "/var/lib/hostmax/report.json";

/// A file the test makes this machine write, removed on drop, with its folder if the folder
/// was not there before. A report already there is someone else's: the test refuses to run.
struct RemovedAfter {
    file: PathBuf,
    folder_was_there: bool,
}

impl RemovedAfter {
    fn new(file: &Path) -> RemovedAfter {
        assert!(
            !file.exists(),
            "{} exists: this test writes it (the playbook's default report); move it away first",
            file.display()
        );
        RemovedAfter {
            file: file.to_path_buf(),
            folder_was_there: file.parent().unwrap().exists(),
        }
    }
}

impl Drop for RemovedAfter {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        if !self.folder_was_there {
            let _ = std::fs::remove_dir(self.file.parent().unwrap());
        }
    }
}

#[test]
fn playbook_installs_hostmax_then_runs_every_host_at_one_start_and_merges_their_reports() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    require_root!();
    let bin = match python_tools(&[ANSIBLE_CORE]) {
        Ok(bin) => bin,
        Err(why) => skip!("ansible-core cannot be had: {why}"),
    };
    let scratch = ScratchDir::new("fleet-playbook");
    // The static binary may not be built when the tests run: the test's binary stands in.
    let package = package_with_sha256(&scratch.join("dist"), &static_binary_name(), &hostmax_bin());
    let hosts = [
        ("host-a", volumes(2, 32 * MIB)),
        ("host-b", volumes(2, 32 * MIB)),
    ];
    let real = hostmax_bin().display().to_string();
    let installed = |name: &str| scratch.join(&format!("{name}/bin/hostmax"));
    // host-a writes where it is told; host-b where the playbook writes by default, in a folder
    // the play makes root's alone (removed again after the test if the test made it).
    let default_report = Path::new(DEFAULT_REPORT);
    let _default_folder = RemovedAfter::new(default_report);
    let report_of = |name: &str| match name {
        "host-a" => scratch.join(&format!("{name}-report.json")),
        _ => default_report.to_path_buf(),
    };
    let mut inventory = serde_json::Map::new();
    for (name, volumes) in &hosts {
        // Neither host has hostmax: its install path (and folder) is new.
        assert!(!installed(name).parent().unwrap().exists());
        let mut vars = json!({
            "ansible_connection": "local",
            "ansible_python_interpreter": bin.join("python"),
            "hostmax_devices": volume_paths(volumes),
            "hostmax_install_path": installed(name),
        });
        if *name == "host-a" {
            vars["hostmax_report"] = json!(report_of(name));
            // A host of its own: its hostname in its own UTS namespace, so the report names it;
            // hostmax_bin as a list (the installed binary run through a wrapper). host-b runs
            // the playbook's default, the installed binary, with the machine's hostname.
            vars["hostmax_bin"] = json!([
                "unshare",
                "--uts",
                "sh",
                "-c",
                format!("hostname {name} && exec \"$0\" \"$@\""),
                installed(name),
            ]);
        }
        inventory.insert(name.to_string(), vars);
    }
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let hostnames = BTreeMap::from([("host-a", "host-a".to_string()), ("host-b", machine)]);
    let inventory_path = scratch.join("inventory.yml");
    std::fs::write(
        &inventory_path,
        json!({"storage": {"hosts": inventory}}).to_string(),
    )
    .unwrap();
    let results = scratch.join("results");
    let fleet = scratch.join("fleet.json");
    let args = "--runtime 2s --ramp 0s --iodepth 4";
    let extra = json!({
        "hostmax_install": "binary",
        "hostmax_package": package,
        "hostmax_args": args,
        "hostmax_lead": "+20 sec",
        "hostmax_results": results,
        "hostmax_fleet_json": fleet,
        "hostmax_merge_bin": real,
    });
    // One fork: the hosts must still start together (they are started in the background and
    // wait for the start time), or the second's --start-at would be past and refused.
    let mut playbook = ansible_playbook(&bin, &scratch);
    playbook
        .arg("-i")
        .arg(&inventory_path)
        .args(["-f", "1", "-e"])
        .arg(extra.to_string())
        .arg(example("playbook.yml"));
    assert!(
        !on_path(&playbook, "hostmax"),
        "hostmax is on ansible's PATH"
    );
    let stdout = run_playbook(&mut playbook, true);

    // Each host has the package's bytes at its install path, root's, mode 0755, and nothing
    // else there (the checked copy's temporary name is gone).
    let package_bytes = std::fs::read(&package).unwrap();
    let mut installed_at = Vec::new();
    for (name, _) in &hosts {
        let path = installed(name);
        assert!(
            std::fs::read(&path).unwrap() == package_bytes,
            "{}: not the package's bytes",
            path.display()
        );
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o755,
            "{}",
            path.display()
        );
        assert_eq!(meta.uid(), 0);
        let folder: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(folder, ["hostmax"]);
        installed_at.push((meta.ino(), meta.mtime_nsec(), meta.mtime()));
    }

    // Each host ran the command the book's pdsh line runs, with the installed binary and the one
    // start time.
    let mut start_ats = BTreeSet::new();
    let mut windows = Vec::new();
    let mut host_ios = 0;
    for (name, volumes) in &hosts {
        let fetched = read_json(&results.join(format!("{name}.json")));
        let written = read_json(&report_of(name));
        assert_eq!(fetched, written, "{name}: the fetched report is the host's");
        assert_eq!(fetched["hostname"], hostnames[name]);
        let argv = strings(&fetched["command_line"]);
        assert_eq!(argv[0], installed(name).display().to_string(), "{name} ran");
        let at_index = argv
            .iter()
            .position(|a| a == "--start-at")
            .expect("--start-at");
        start_ats.insert(argv[at_index + 1].clone());
        let mut expected = vec!["--devices".to_string()];
        expected.extend(volume_paths(volumes));
        expected.extend(args.split(' ').map(String::from));
        expected.extend([
            "--start-at".to_string(),
            argv[at_index + 1].clone(),
            "--json".to_string(),
            report_of(name).display().to_string(),
        ]);
        assert_eq!(argv[1..], expected[..], "{name}'s command line");
        windows.push(fetched["started_at"].as_str().unwrap().to_string());
        host_ios += fetched["host"]["read"]["ios"].as_u64().unwrap();
    }
    assert_eq!(
        start_ats.len(),
        1,
        "one start time for every host: {start_ats:?}"
    );
    // The default report's folder is root's alone: no other user can plant a link there.
    let folder = std::fs::symlink_metadata(default_report.parent().unwrap()).unwrap();
    assert!(folder.is_dir());
    assert_eq!(
        (folder.uid(), folder.permissions().mode() & 0o7777),
        (0, 0o700)
    );
    // The measured window starts at --start-at (no ramp) on both.
    let at = start_ats.into_iter().next().unwrap();
    for started_at in &windows {
        assert!(
            started_at.starts_with(at.trim_end_matches('Z')),
            "a window started at {started_at}, not at {at}"
        );
    }

    // The controller merged both: two hosts, four devices, counts the sums.
    let merged = read_json(&fleet);
    let merged_hosts: BTreeSet<String> = merged["fleet"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["hostname"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(merged_hosts, hostnames.values().cloned().collect());
    assert_eq!(merged["devices"].as_array().unwrap().len(), 4);
    assert_eq!(merged["host"]["read"]["ios"].as_u64().unwrap(), host_ios);
    assert!(host_ios > 0);
    assert!(
        stdout.contains("fleet"),
        "the merged table is shown: {stdout}"
    );

    // Installing again with the same file changes nothing (the install alone: --tags install).
    let mut again = ansible_playbook(&bin, &scratch);
    again
        .arg("-i")
        .arg(&inventory_path)
        .args(["--tags", "install", "-e"])
        .arg(extra.to_string())
        .arg(example("playbook.yml"));
    let stdout = run_playbook(&mut again, true);
    let recap = play_recap(&stdout);
    for (name, _) in &hosts {
        assert_eq!(recap[*name]["changed"], 0, "{name} changed:\n{stdout}");
        assert_eq!(recap[*name]["failed"], 0, "{stdout}");
    }
    assert!(!stdout.contains("TASK [Start hostmax"), "{stdout}");
    for ((name, _), before) in hosts.iter().zip(&installed_at) {
        let meta = std::fs::metadata(installed(name)).unwrap();
        assert_eq!(
            (meta.ino(), meta.mtime_nsec(), meta.mtime()),
            *before,
            "{name}: the installed file was replaced"
        );
    }
}

/// A package whose SHA-256 is not its .sha256's is refused on every host, in binary mode
/// (host-a) and in deb mode (host-b): the play fails, nothing is installed, the copies are
/// removed, no host runs hostmax. deb mode's install itself (apt) changes a machine's packages,
/// so it is never run here (--skip-tags dpkg keeps it from running even if the check broke):
/// `cargo xtask dist` installs the .deb in a fresh Debian root.
#[test]
fn playbook_refuses_a_package_whose_sha256_does_not_match() {
    require_root!();
    let bin = match python_tools(&[ANSIBLE_CORE]) {
        Ok(bin) => bin,
        Err(why) => skip!("ansible-core cannot be had: {why}"),
    };
    let scratch = ScratchDir::new("fleet-playbook-refused");
    let dist = scratch.join("dist");
    // Right names, wrong hashes: each .sha256 is another file's, named as the package.
    let other = scratch.write("other", "not the package\n");
    let deb_name = format!("hostmax_{}_amd64.deb", env!("CARGO_PKG_VERSION"));
    let binary = package_with_sha256(&dist, &static_binary_name(), &other);
    let deb = package_with_sha256(&dist, &deb_name, &other);
    std::fs::write(&binary, b"a binary that is not the one hashed\n").unwrap();
    std::fs::write(&deb, b"a .deb that is not the one hashed\n").unwrap();
    let install_path = scratch.join("host-a/bin/hostmax");
    let tmp = scratch.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let report = |name: &str| scratch.join(&format!("{name}-report.json"));
    let host = |install: &str, package: &Path, name: &str| {
        json!({
            "ansible_connection": "local",
            "ansible_python_interpreter": bin.join("python"),
            // Not a device, and never opened: no host gets as far as running hostmax.
            "hostmax_devices": [scratch.join("no-such-device")],
            "hostmax_install": install,
            "hostmax_package": package,
            "hostmax_install_path": install_path,
            "hostmax_report": report(name),
        })
    };
    let inventory_path = scratch.join("inventory.yml");
    std::fs::write(
        &inventory_path,
        json!({"storage": {"hosts": {
            "host-a": host("binary", &binary, "host-a"),
            "host-b": host("deb", &deb, "host-b"),
        }}})
        .to_string(),
    )
    .unwrap();
    let results = scratch.join("results");
    let extra = json!({
        "hostmax_lead": "+5 sec",
        "hostmax_timeout": 30,
        "hostmax_results": results,
        "hostmax_fleet_json": scratch.join("fleet.json"),
        "hostmax_merge_bin": hostmax_bin(),
    });
    let mut playbook = ansible_playbook(&bin, &scratch);
    playbook
        .arg("-i")
        .arg(&inventory_path)
        .args(["--skip-tags", "dpkg", "-e"])
        .arg(extra.to_string())
        .arg(example("playbook.yml"))
        // deb mode's temporary folder on the "host".
        .env("TMPDIR", &tmp);
    let stdout = run_playbook(&mut playbook, false);

    for (name, package) in [("host-a", &binary), ("host-b", &deb)] {
        let refusal = format!(
            "fatal: [{name}]: FAILED! => {{\"changed\": false, \"msg\": \"{} arrived with SHA-256 ",
            package.display()
        );
        assert!(stdout.contains(&refusal), "{name} not refused:\n{stdout}");
    }
    let recap = play_recap(&stdout);
    assert_eq!(recap["host-a"]["failed"], 1, "{stdout}");
    assert_eq!(recap["host-b"]["failed"], 1, "{stdout}");
    // Nothing installed, the copies removed, nothing run.
    assert!(!install_path.exists());
    let left: Vec<_> = std::fs::read_dir(install_path.parent().unwrap())
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "deb mode's copy"
    );
    assert!(!stdout.contains("TASK [Start hostmax"), "{stdout}");
    assert!(!report("host-a").exists() && !report("host-b").exists());
    assert!(!results.exists());
}

/// YAML to JSON with the virtualenv's PyYAML (ansible-core's dependency).
fn yaml_to_json(bin: &Path, yaml: &Path) -> Value {
    let out = Command::new(bin.join("python"))
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(yaml)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn kubernetes_validate(bin: &Path, manifest: &Path) -> std::process::Output {
    Command::new(bin.join("kubernetes-validate"))
        .arg("--strict")
        .arg(manifest)
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("run kubernetes-validate")
}

#[test]
fn kubernetes_job_validates_and_asks_only_for_what_it_needs() {
    let bin = match python_tools(&[ANSIBLE_CORE, KUBERNETES_VALIDATE]) {
        Ok(bin) => bin,
        Err(why) => skip!("kubernetes-validate cannot be had: {why}"),
    };
    let manifest = example("hostmax-job.yaml");
    let validates = |path: &Path| {
        let out = kubernetes_validate(&bin, path);
        assert!(
            out.status.success(),
            "{}: {}{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    validates(&manifest);

    // As the book's envsubst line makes it, too (a bare date-time would be a YAML timestamp).
    let scratch = ScratchDir::new("fleet-k8s");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let substituted = scratch.join("substituted.yaml");
    std::fs::write(
        &substituted,
        text.replace("${START_AT}", "2030-01-02T03:04:05Z")
            .replace("${STORAGE_CLASS}", "gp3")
            .replace("${REGISTRY}", "registry.example.com/storage"),
    )
    .unwrap();
    validates(&substituted);

    // The validator catches a misspelt field (so its pass above means something).
    let broken = scratch.join("broken.yaml");
    assert!(text.contains("volumeDevices:"));
    std::fs::write(&broken, text.replace("volumeDevices:", "volumeDevice:")).unwrap();
    assert!(!kubernetes_validate(&bin, &broken).status.success());

    let job = yaml_to_json(&bin, &substituted);
    let pod = &job["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["name"], "hostmax");

    // The image `cargo xtask dist` builds (FROM scratch), this version, from a registry, and
    // run without a shell: hostmax itself, its options as arguments.
    let image = container["image"].as_str().unwrap();
    let tag = format!("/hostmax:{}", env!("CARGO_PKG_VERSION"));
    assert!(image.ends_with(&tag), "{image} is not REGISTRY{tag}");
    let command = strings(&container["command"]);
    assert!(
        command == ["/usr/bin/hostmax"] || command == ["hostmax"],
        "{command:?}"
    );
    let args = strings(&container["args"]);
    let after = |option: &str| {
        let at = args.iter().position(|a| a == option).expect(option);
        args[at + 1].as_str()
    };
    assert_eq!(after("--devices"), "/dev/hostmax/vol*");
    assert_eq!(after("--start-at"), "2030-01-02T03:04:05Z");
    let report = after("--json");

    // Only the report in the report container's log: the sidecar prints the file hostmax's
    // --json writes, from the one emptyDir both mount (hostmax's stderr stays in its own log,
    // and its end is the termination message of a failed pod).
    assert_eq!(
        container["terminationMessagePolicy"],
        "FallbackToLogsOnError"
    );
    let mounts = container["volumeMounts"].as_array().unwrap();
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    let report_dir = mounts[0]["mountPath"].as_str().unwrap();
    assert_eq!(Path::new(report).parent().unwrap(), Path::new(report_dir));
    let sidecars = pod["initContainers"].as_array().unwrap();
    assert_eq!(sidecars.len(), 1);
    let sidecar = &sidecars[0];
    assert_eq!(sidecar["restartPolicy"], "Always");
    assert!(
        strings(&sidecar["command"])
            .last()
            .unwrap()
            .contains(&format!("cat {report}")),
        "{sidecar}"
    );
    assert_eq!(
        sidecar["volumeMounts"],
        json!([{"name": mounts[0]["name"], "mountPath": report_dir, "readOnly": true}])
    );
    assert_eq!(sidecar["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        sidecar["securityContext"]["capabilities"],
        json!({"drop": ["ALL"]})
    );
    assert!(sidecar["securityContext"].get("privileged") != Some(&json!(true)));
    // One pod per node, whatever the count of nodes (a spread's maxSkew would allow two).
    assert!(pod.get("topologySpreadConstraints").is_none(), "{pod}");
    assert_eq!(
        pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        json!([{
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": job["spec"]["template"]["metadata"]["labels"]}
        }])
    );
    // A failed pod fails its index alone, not retried (it would miss the start time).
    assert_eq!(job["spec"]["backoffLimitPerIndex"], 0);
    assert!(job["spec"].get("backoffLimit").is_none());

    // Raw block volumes (and the report's emptyDir), and privileges no wider than the comment
    // at its top says.
    assert!(
        pod.get("hostNetwork").is_none() && pod.get("hostPID").is_none(),
        "{pod}"
    );
    let volumes = pod["volumes"].as_array().unwrap();
    let mut block_volumes = 0;
    for volume in volumes {
        assert!(volume.get("hostPath").is_none(), "{volume}");
        if volume["name"] == mounts[0]["name"] {
            assert!(volume["emptyDir"].is_object(), "{volume}");
            continue;
        }
        let claim = &volume["ephemeral"]["volumeClaimTemplate"]["spec"];
        assert_eq!(claim["volumeMode"], "Block", "{volume}");
        block_volumes += 1;
    }
    let devices = container["volumeDevices"].as_array().unwrap();
    assert_eq!(devices.len(), block_volumes);
    assert_eq!(volumes.len(), block_volumes + 1);
    let security = &container["securityContext"];
    assert_eq!(security["privileged"], false);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["capabilities"]["add"], json!(["IPC_LOCK"]));
}
