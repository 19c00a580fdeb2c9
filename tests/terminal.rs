//! What a person sees in an 80-column terminal: the live view, the Ctrl-C "stopping" line and
//! the table, in a real terminal (tmux, where indicatif draws its bar in place) and with
//! `COLUMNS=80` when the output goes to a pipe. No line may be wider than the terminal (a
//! wrapped line breaks the table and lets the bar's redraw erase what was printed above it).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

const MIB: u64 = 1 << 20;
const WIDTH: usize = 80;

/// Every line of `text` wider than `width` characters.
fn too_wide(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > width)
        .map(|l| format!("{} wide: {l:?}", l.chars().count()))
        .collect()
}

/// A mixed run (the widest table and live line) of `seconds` on `devices`.
fn mixed_run_args(devices: &[String], seconds: u32) -> Vec<String> {
    let mut args = vec!["--devices".to_string()];
    args.extend(devices.iter().cloned());
    args.extend(
        [
            "--rw",
            "randrw",
            "--rwmixread",
            "70",
            "--allow-write",
            "--ramp",
            "0s",
            "--runtime",
        ]
        .map(String::from),
    );
    args.push(format!("{seconds}s"));
    args
}

#[test]
fn with_columns_80_every_line_of_the_live_lines_and_the_table_fits() {
    require_root!();
    let host = loop_volumes(2, 32 * MIB);
    let out = Command::new(hostmax_bin())
        .args(mixed_run_args(&volume_paths(&host), 2))
        .env("COLUMNS", WIDTH.to_string())
        .output()
        .expect("run hostmax");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Not a terminal: one plain line per second on stderr, the table on stdout.
    assert!(stderr.contains("/2 s] "), "{stderr}");
    assert!(stdout.contains("read IOPS"), "{stdout}");
    // The workers' table and the sentences below the table are there, wrapped to fit.
    assert!(stdout.contains("worker CPU  devices"), "{stdout}");
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        let wide = too_wide(text, WIDTH);
        assert!(wide.is_empty(), "{name}: {wide:#?}\n{text}");
    }
}

/// A tmux server of its own (its own socket), killed on drop with everything in it.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `command` in a detached `width` x 40 terminal.
    fn start(command: &str, width: usize) -> Result<Tmux, String> {
        require_tool("tmux", "tmux")?;
        // A server of its own per test: tests run side by side, each killing its own.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmux = Tmux {
            socket: format!("hostmax-test-{}-{n}", std::process::id()),
        };
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &width.to_string(),
            "-y",
            "40",
            command,
        ]);
        Ok(tmux)
    }

    fn run(&self, args: &[&str]) -> String {
        let out = tool_command("tmux", "tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The whole pane, history included, wrapped lines joined (so a line that wrapped shows
    /// whole, wider than the terminal).
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "t"])
    }

    /// Waits (up to `limit`) until the pane shows `text`; returns the pane.
    fn wait_for(&self, text: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {text:?} within {limit:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

#[test]
fn in_an_80_column_terminal_ctrl_c_says_stopping_and_nothing_wraps() {
    require_root!();
    let host = loop_volumes(2, 32 * MIB);
    let mut command = format!("env -u COLUMNS {}", hostmax_bin().display());
    for arg in mixed_run_args(&volume_paths(&host), 30) {
        command.push(' ');
        command.push_str(&arg);
    }
    command.push_str("; echo EXIT=$?; sleep 600");
    // The shell gets the terminal's SIGINT too: a trap keeps it going to say hostmax's exit
    // code (hostmax itself starts with the default disposition, as a trap is not inherited).
    let command = format!("trap true INT; {command}");
    let tmux = match Tmux::start(&command, WIDTH) {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    // The bar, once it shows measured seconds (an emulated CPU takes seconds to start).
    tmux.wait_for("/30 s", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    let live = tmux.screen();
    let wide = too_wide(&live, WIDTH);
    assert!(wide.is_empty(), "the live view wrapped: {wide:#?}\n{live}");
    tmux.run(&["send-keys", "-t", "t", "C-c"]);
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(60));
    assert!(screen.contains("EXIT=130"), "{screen}");
    // The line is not erased by the bar's redraw.
    assert!(
        screen
            .lines()
            .any(|l| l
                == "hostmax: SIGINT: stopping (draining in-flight I/O); signal again to abort"),
        "{screen}"
    );
    assert!(screen.contains("(interrupted by"), "{screen}");
    assert!(screen.contains("worker CPU  devices"), "{screen}");
    let wide = too_wide(&screen, WIDTH);
    assert!(wide.is_empty(), "{wide:#?}\n{screen}");
}

/// A terminal that hangs up mid-run (an ssh session that dropped: the shell gets SIGHUP and
/// passes it on to its jobs, as bash does) stops the run as SIGTERM would: it drains, writes
/// its `--json` report naming SIGHUP and exits 129, though every write to the terminal fails
/// by then (the table too).
#[test]
fn a_terminal_that_hangs_up_mid_run_still_gets_its_report_written() {
    require_root!();
    let host = loop_volumes(2, 32 * MIB);
    let dir = ScratchDir::new("hangup");
    let json = dir.join("r.json");
    let code = dir.join("code");
    let mut command = hostmax_bin().display().to_string();
    for arg in mixed_run_args(&volume_paths(&host), 30) {
        command.push(' ');
        command.push_str(&arg);
    }
    command.push_str(&format!(" --json {}", json.display()));
    // The shell outlives the hangup (a trap) to pass it on and record hostmax's exit code.
    let command = format!(
        "trap 'kill -HUP $pid' HUP; {command} & pid=$!; wait $pid; wait $pid; echo $? > {}",
        code.display()
    );
    let tmux = match Tmux::start(&command, WIDTH) {
        Ok(t) => t,
        Err(why) => skip!("{why}"),
    };
    tmux.wait_for("/30 s", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    // The terminal goes away: its pane's pty is closed and hung up.
    tmux.run(&["kill-session", "-t", "t"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let exit = loop {
        if let Some(text) = std::fs::read_to_string(&code)
            .ok()
            .filter(|t| t.ends_with('\n'))
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "hostmax did not end after the hangup"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(exit.trim(), "129");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the report")).unwrap();
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["interrupted_by"], "SIGHUP");
    assert!(report["measured_secs"].as_f64().unwrap() < 30.0);
}
