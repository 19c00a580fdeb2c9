//! The documentation's examples are tests: every `sh` block of README.md and of the book's
//! chapters (`docs/src/*.md`), and every example line of the `--help` texts, runs on loop
//! volumes, shortened, so the documentation cannot drift from the tool again (issue 13, item 1).
//! A failing block is named by its file and line (`docs/src/safety.md:42`).
//!
//! Each block runs in bash with a `hostmax` wrapper first on `PATH` ([`WRAPPER`]): it maps the
//! documented device names (`/dev/sdb`, `'/dev/sd[b-u]'`) onto the test's volumes, shortens
//! times (`--runtime 1s`, `--cell-time 200ms`, a 2-cell suite of 5 rounds), and treats a failed
//! verdict (exit 1) as an outcome: loop volumes need not keep a cloud provider's promise; so is
//! NOT CONCLUDED (exit 7) when the table says the load generator was saturated (a test machine's
//! few CPUs under the README's 10 jobs). Any other non-zero exit fails the block. The fleet
//! tools run as if the fleet were this host
//! ([`FLEET_STAND_INS`]): ssh, pdsh and rpdcp through stand-ins, ansible-playbook for real.

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

const MIB: u64 = 1 << 20;
/// Volumes the examples run on: as many as the largest sweep step they show.
const VOLUMES: usize = 8;

/// The `hostmax` stand-in the examples call. `HOSTMAX_REAL` is the binary, `DOC_VOLUMES` the
/// volumes (space-separated), `DOC_LOG` where each call's argv and exit code go.
const WRAPPER: &str = r#"#!/bin/bash
vols=($DOC_VOLUMES)
declare -A named
out=()
sub=""
case "$1" in demo|suite|merge|verify|sweep|curve|doctor|prepare) sub="$1";; esac
have_runtime=0; have_ramp=0; have_cell_time=0; have_volumes=0; writes=0; resume=0
while [ $# -gt 0 ]; do
  a="$1"; shift
  case "$a" in
    --runtime) out+=(--runtime 1s); shift; have_runtime=1; continue;;
    --ramp) out+=(--ramp 0s); shift; have_ramp=1; continue;;
    --cell-time) out+=(--cell-time 200ms); shift; have_cell_time=1; continue;;
    --volumes) have_volumes=1;;
    --allow-write) writes=1;;
    --start-at) out+=(--start-at +2s); shift; continue;;
    --size) out+=(--size 16m); shift; continue;;
    # The shortened suite tests 4k only (below).
    --skip-bs) shift; continue;;
    --resume) resume=1;;
  esac
  case "$a" in
    # The test's own files (an inventory's report path) are not documented devices.
    /dev/shm/*) out+=("$a");;
    /dev/*[\[\*\?]*) out+=("${vols[@]}");;
    /dev/*)
      if [ -z "${named[$a]}" ]; then named[$a]=${vols[${#named[@]}]}; fi
      out+=("${named[$a]}");;
    *) out+=("$a");;
  esac
done
case "$sub" in
  demo) [ $have_volumes = 0 ] && out+=(--volumes 2); [ $have_runtime = 0 ] && out+=(--runtime 1s);;
  suite)
    if [ $resume = 0 ]; then
      out+=(--max-rounds 5 --block-sizes 4k)
      if [ $writes = 1 ]; then out+=(--mixes 100/0,0/100); else out+=(--mixes 100/0); fi
      [ $have_cell_time = 0 ] && out+=(--cell-time 200ms)
    fi;;
  merge|doctor|prepare) ;;
  *) [ $have_runtime = 0 ] && out+=(--runtime 1s); [ $have_ramp = 0 ] && out+=(--ramp 0s);;
esac
said=$(mktemp)
"$HOSTMAX_REAL" "${out[@]}" | tee "$said"
code=${PIPESTATUS[0]}
# NOT CONCLUDED is an outcome where the table says why: the test machine's CPUs, not the
# volumes, were the limit (the README's 10 jobs of depth 64 on 2 cores). Logged as "7s".
logged=$code
[ $code = 7 ] && grep -q 'not judged: load generator saturated' "$said" && logged=7s
rm -f "$said"
echo "$logged hostmax ${out[*]}" >> "$DOC_LOG"
# A failed verdict is an outcome on volumes that promised nothing; anything else is not.
case "$logged" in 1|7s) exit 0;; esac
exit $code
"#;

/// A fenced block of a Markdown text.
struct Block {
    /// The info string (`sh`, `text`, ...).
    info: String,
    body: String,
    /// The line of its opening fence, from 1.
    line: usize,
}

/// The fenced blocks of a Markdown text.
fn fenced_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.as_mut() {
            None if trimmed.starts_with("```") => {
                open = Some(Block {
                    info: trimmed[3..].trim().to_string(),
                    body: String::new(),
                    line: n + 1,
                });
            }
            Some(_) if trimmed.starts_with("```") => blocks.extend(open.take()),
            Some(Block { body, .. }) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The example commands of a `--help` text: the lines under "Examples:" that start with
/// `hostmax`, without the description after a run of spaces.
fn help_examples(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Examples:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.trim_start().strip_prefix("hostmax "))
        .map(|rest| {
            let command = rest.split("   ").next().unwrap_or(rest).trim_end();
            format!("hostmax {command}")
        })
        .collect()
}

/// Blocks that need what no test machine has: a Kubernetes cluster (the Job's manifest is
/// validated against Kubernetes' schema by tests/fleet_playbook.rs instead), or an inventory
/// of real hosts for Ansible's ad-hoc commands (the playbook runs here: [`ansible_playbook_env`]).
fn needs_a_fleet(block: &str) -> Option<&'static str> {
    if block.contains("kubectl") {
        return Some("a Kubernetes cluster");
    }
    block
        .lines()
        .any(|l| l.trim_start().starts_with("ansible "))
        .then_some("an Ansible inventory of hosts")
}

/// The documents whose `sh` blocks run, as (path from the repository's root, text): README.md,
/// then every chapter of the book under `docs/src/`, by name.
fn documents() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut paths = vec!["README.md".to_string()];
    let mut chapters: Vec<String> = std::fs::read_dir(root.join("docs/src"))
        .expect("docs/src/ holds the book")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/src/{name}"))
        .collect();
    chapters.sort();
    assert!(chapters.len() >= 10, "the book has only {chapters:?}");
    paths.extend(chapters);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(root.join(&p)).unwrap();
            (p, text)
        })
        .collect()
}

/// The first line of a block that installs software (README's Install section): not run
/// here, where it would change this machine; the release checks (`tests/dist/run.sh`) install
/// each artifact in a root of its own, and `.ci/run` builds from crates.io's packaging.
fn installs_software(block: &str) -> Option<&str> {
    const INSTALLERS: [&str; 6] = [
        "sudo ",
        "apt ",
        "dpkg ",
        "podman ",
        "cargo install ",
        "install ",
    ];
    block
        .lines()
        .map(str::trim_start)
        .find(|l| INSTALLERS.iter().any(|i| l.starts_with(i)) || l.contains("&& sudo "))
}

/// What a block that runs `ansible-playbook` needs: the real one from PyPI (a virtualenv under
/// target/), an inventory of this one host, and the repository's `examples/` (the block names
/// them relative to the repository). None for other blocks.
fn ansible_playbook_env(block: &str, dir: &ScratchDir) -> Vec<(&'static str, String)> {
    if !block.contains("ansible-playbook") {
        return Vec::new();
    }
    let bin = python_tools(&[ANSIBLE_CORE])
        .unwrap_or_else(|why| panic!("ansible-core cannot be had: {why}"));
    let inventory = dir.join("inventory.yml");
    let host = serde_json::json!({"all": {"hosts": {"doc-host": {
        "ansible_connection": "local",
        "ansible_python_interpreter": bin.join("python"),
        "hostmax_report": dir.join("report.json"),
    }}}});
    std::fs::write(&inventory, host.to_string()).unwrap();
    let home = dir.join("ansible");
    vec![
        (
            "DOC_ANSIBLE_PLAYBOOK",
            bin.join("ansible-playbook").display().to_string(),
        ),
        ("DOC_INVENTORY", inventory.display().to_string()),
        (
            "DOC_REPO",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .display()
                .to_string(),
        ),
        ("LC_ALL", "C.UTF-8".to_string()),
        ("ANSIBLE_HOME", home.display().to_string()),
        (
            "ANSIBLE_LOCAL_TEMP",
            home.join("local").display().to_string(),
        ),
        (
            "ANSIBLE_REMOTE_TEMP",
            home.join("remote").display().to_string(),
        ),
        (
            "ANSIBLE_ASYNC_DIR",
            home.join("async").display().to_string(),
        ),
        ("ANSIBLE_NOCOLOR", "1".to_string()),
        // `-b` as root on a machine without sudo.
        ("ANSIBLE_BECOME_METHOD", "su".to_string()),
    ]
}

/// Stand-ins for the fleet tools, as if the fleet were this one host: `ssh HOST CMD` and
/// `pdsh ... CMD` run CMD here, `rpdcp ... FILE DIR` moves FILE to DIR/FILE.HOSTNAME (as
/// rpdcp names its copies), `ansible-playbook` is the real one with `-i` this host's
/// inventory and `examples/...` the repository's.
const FLEET_STAND_INS: &str = r#"
ssh() { shift; bash -c "$1"; }
pdsh() { bash -c "${@: -1}"; }
rpdcp() { mkdir -p "${@: -1}"; mv "${@: -2:1}" "${@: -1}/$(basename "${@: -2:1}").$(hostname)"; }
ansible-playbook() {
  local args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -i) args+=(-i "$DOC_INVENTORY"); shift;;
      examples/*) args+=("$DOC_REPO/$1");;
      *) args+=("$1");;
    esac
    shift
  done
  "$DOC_ANSIBLE_PLAYBOOK" "${args[@]}"
}
"#;

/// A script as documented, made runnable here: `cargo run ... --` is the built binary, and the
/// test suite does not run itself (nor the kernel matrix, which runs it in VMs).
fn runnable(block: &str) -> String {
    block
        .lines()
        .filter(|l| !l.trim_start().starts_with("cargo test"))
        .filter(|l| !l.contains("tests/kernels/run.sh"))
        .map(|l| l.replace("cargo run --release -p hostmax --", "hostmax"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `script` in bash in `dir` with the wrapper on PATH; panics with its output unless every
/// command succeeded, and returns the calls the wrapper logged.
fn run_script(
    dir: &ScratchDir,
    volumes: &[String],
    what: &str,
    script: &str,
    env: &[(&str, String)],
) -> Vec<String> {
    let log = dir.join("calls.log");
    let _ = std::fs::remove_file(&log);
    let prelude = format!("set -e -o pipefail\n{FLEET_STAND_INS}");
    let path = format!(
        "{}:{}",
        dir.0.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .current_dir(&dir.0)
        .env("PATH", path)
        .env("HOSTMAX_REAL", hostmax_bin())
        .env("DOC_VOLUMES", volumes.join(" "))
        .env("DOC_LOG", &log)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("bash runs");
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{script}\ncalls: {calls:#?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !calls.is_empty(),
        "{what} ran no hostmax command:\n{script}"
    );
    for call in &calls {
        eprintln!("{what}: exit {call}");
        // Background jobs (`cmd &` then `wait`) hide their status from bash: check the log.
        assert!(
            call.starts_with("0 ") || call.starts_with("1 ") || call.starts_with("7s "),
            "{what}: a command failed: {call}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    calls
}

fn scratch_with_wrapper(tag: &str) -> ScratchDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = ScratchDir::new(tag);
    let wrapper = dir.join("hostmax");
    std::fs::write(&wrapper, WRAPPER).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn documented_sh_blocks_run_as_written() {
    require_root!();
    let documents = documents();
    // A command shown in a block that is not `sh` would escape this test.
    for (path, text) in &documents {
        for block in fenced_blocks(text) {
            if block.info != "sh" {
                let command = block
                    .body
                    .lines()
                    .find(|l| l.trim_start().starts_with("hostmax "));
                assert!(
                    command.is_none(),
                    "{path}:{} shows {command:?} in a ```{} block: tag it ```sh so it is tested",
                    block.line,
                    block.info
                );
            }
        }
    }
    let host = volumes(VOLUMES, 32 * MIB);
    let paths = volume_paths(&host);
    let mut ran = 0;
    for (path, text) in &documents {
        for block in fenced_blocks(text).into_iter().filter(|b| b.info == "sh") {
            let at = format!("{path}:{}", block.line);
            let body = &block.body;
            if let Some(tool) = needs_a_fleet(body) {
                say_skipped(&format!("sh block at {at} needs {tool}"));
                continue;
            }
            if let Some(line) = installs_software(body) {
                say_skipped(&format!(
                    "sh block at {at} installs software on this machine ({line}); \
                     tests/dist/run.sh installs each artifact where a user would"
                ));
                continue;
            }
            let script = runnable(body);
            // The playbook runs hostmax on the hosts it names.
            if !script.contains("hostmax ") && !script.contains("ansible-playbook") {
                // The test suite's own commands (cargo test, the kernel matrix) are not examples.
                say_skipped(&format!(
                    "sh block at {at} calls no hostmax command: {}",
                    body.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
                ));
                continue;
            }
            let tag = format!("doc-{}-{}", path.replace(['/', '.'], "-"), block.line);
            let dir = scratch_with_wrapper(&tag);
            let env = ansible_playbook_env(body, &dir);
            ran += run_script(&dir, &paths, &format!("sh block at {at}"), &script, &env).len();
        }
    }
    assert!(ran >= 10, "only {ran} documented commands ran");
}

#[test]
fn help_examples_run_as_written() {
    require_root!();
    let host = volumes(VOLUMES, 32 * MIB);
    let paths = volume_paths(&host);
    let mut ran = 0;
    let top = run_hostmax(&["--help"], None);
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    // Every subcommand the top-level help lists, so a new one's examples are tested too.
    let subcommands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|&name| name != "help")
        .collect();
    assert!(subcommands.contains(&"suite"), "{top}");
    let mut commands: Vec<Vec<&str>> = vec![vec![]];
    commands.extend(subcommands.iter().map(|&s| vec![s]));
    for sub in &commands {
        let mut argv: Vec<&str> = sub.clone();
        argv.push("--help");
        let help = run_hostmax(&argv, None);
        assert!(help.status.success(), "hostmax {argv:?} failed");
        let examples = help_examples(&String::from_utf8_lossy(&help.stdout));
        // The suite's --resume example continues the one before it, in the same directory.
        let dir = scratch_with_wrapper(&format!("doc-help-{}", sub.first().unwrap_or(&"main")));
        for example in examples {
            ran += run_script(
                &dir,
                &paths,
                &format!("'hostmax {}' example", argv.join(" ")),
                &example,
                &[],
            )
            .len();
        }
    }
    assert!(ran >= 6, "only {ran} --help examples ran");
}
