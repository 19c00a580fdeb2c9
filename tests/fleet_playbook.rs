//! README's fleet path, run: `examples/fleet/playbook.yml` through a real ansible-core against
//! an inventory of two "hosts" on this machine (each with its own loop volumes and, in its own
//! UTS namespace, its own hostname), and `examples/fleet/hostmax-job.yaml` validated against
//! Kubernetes' own schema. Both tools come from PyPI into a virtualenv under `target/`
//! ([`python_tools`]), made once and reused.

mod support;

use std::collections::BTreeSet;
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

#[test]
fn playbook_runs_every_host_at_one_start_and_merges_their_reports() {
    require_root!();
    let bin = match python_tools(&[ANSIBLE_CORE]) {
        Ok(bin) => bin,
        Err(why) => skip!("ansible-core cannot be had: {why}"),
    };
    let scratch = ScratchDir::new("fleet-playbook");
    let hosts = [
        ("host-a", volumes(2, 32 * MIB)),
        ("host-b", volumes(2, 32 * MIB)),
    ];
    let real = hostmax_bin().display().to_string();
    let mut inventory = serde_json::Map::new();
    for (name, volumes) in &hosts {
        // A host of its own: its hostname in its own UTS namespace, so the report names it.
        let command = format!("unshare --uts sh -c 'hostname {name} && exec \"$0\" \"$@\"' {real}");
        inventory.insert(
            name.to_string(),
            json!({
                "ansible_connection": "local",
                "ansible_python_interpreter": bin.join("python"),
                "hostmax_devices": volume_paths(volumes),
                "hostmax_bin": command,
                "hostmax_report": scratch.join(&format!("{name}-report.json")),
            }),
        );
    }
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
        "hostmax_args": args,
        "hostmax_lead": "+20 sec",
        "hostmax_results": results,
        "hostmax_fleet_json": fleet,
        "hostmax_merge_bin": real,
    });
    let ansible_home = scratch.join("ansible");
    let started = std::time::Instant::now();
    // One fork: the hosts must still start together (they are started in the background and
    // wait for the start time), or the second's --start-at would be past and refused.
    let out = Command::new(bin.join("ansible-playbook"))
        .arg("-i")
        .arg(&inventory_path)
        .args(["-f", "1", "-e"])
        .arg(extra.to_string())
        .arg(example("playbook.yml"))
        .current_dir(&scratch.0)
        .env("LC_ALL", "C.UTF-8")
        .env("ANSIBLE_HOME", &ansible_home)
        .env("ANSIBLE_LOCAL_TEMP", ansible_home.join("local"))
        .env("ANSIBLE_REMOTE_TEMP", ansible_home.join("remote"))
        .env("ANSIBLE_ASYNC_DIR", ansible_home.join("async"))
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("run ansible-playbook");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ansible-playbook failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("the playbook took {:.1?}", started.elapsed());

    // Each host ran the command README's pdsh line runs, with the one start time.
    let mut start_ats = BTreeSet::new();
    let mut windows = Vec::new();
    let mut host_ios = 0;
    for (name, volumes) in &hosts {
        let fetched = read_json(&results.join(format!("{name}.json")));
        let written = read_json(&scratch.join(&format!("{name}-report.json")));
        assert_eq!(fetched, written, "{name}: the fetched report is the host's");
        assert_eq!(fetched["hostname"], *name);
        let argv = strings(&fetched["command_line"]);
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
            scratch
                .join(&format!("{name}-report.json"))
                .display()
                .to_string(),
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
    assert_eq!(
        merged_hosts,
        BTreeSet::from(["host-a".to_string(), "host-b".to_string()])
    );
    assert_eq!(merged["devices"].as_array().unwrap().len(), 4);
    assert_eq!(merged["host"]["read"]["ios"].as_u64().unwrap(), host_ios);
    assert!(host_ios > 0);
    assert!(
        stdout.contains("fleet"),
        "the merged table is shown: {stdout}"
    );
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
    let out = kubernetes_validate(&bin, &manifest);
    assert!(
        out.status.success(),
        "{}: {}{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The validator catches a misspelt field (so its pass above means something).
    let scratch = ScratchDir::new("fleet-k8s");
    let broken = scratch.join("broken.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("volumeDevices:"));
    std::fs::write(&broken, text.replace("volumeDevices:", "volumeDevice:")).unwrap();
    assert!(!kubernetes_validate(&bin, &broken).status.success());

    // Raw block volumes, and privileges no wider than the comment at its top says.
    let job = yaml_to_json(&bin, &manifest);
    let pod = &job["spec"]["template"]["spec"];
    assert!(
        pod.get("hostNetwork").is_none() && pod.get("hostPID").is_none(),
        "{pod}"
    );
    let volumes = pod["volumes"].as_array().unwrap();
    for volume in volumes {
        assert!(volume.get("hostPath").is_none(), "{volume}");
        let claim = &volume["ephemeral"]["volumeClaimTemplate"]["spec"];
        assert_eq!(claim["volumeMode"], "Block", "{volume}");
    }
    let container = &pod["containers"][0];
    let devices = container["volumeDevices"].as_array().unwrap();
    assert_eq!(devices.len(), volumes.len());
    assert!(container.get("volumeMounts").is_none(), "{container}");
    let security = &container["securityContext"];
    assert_eq!(security["privileged"], false);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["capabilities"]["add"], json!(["IPC_LOCK"]));
    let command = container["command"][2].as_str().unwrap();
    assert!(
        command.contains("--devices '/dev/hostmax/vol*'")
            && command.contains("--start-at ${START_AT}"),
        "{command}"
    );
}
