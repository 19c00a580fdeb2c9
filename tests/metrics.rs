//! `--metrics-listen`: live metrics scraped while a run goes on, on real loop volumes. The
//! counters grow during the run and equal the JSON report at the end; Prometheus' text passes
//! `promtool check metrics`; a real Prometheus server (Debian's `prometheus` package,
//! installed by the test if missing) scrapes a run every second and its query API sees the
//! run's I/Os. Bad addresses and ports in use are refused before any I/O. Every server here
//! listens on 127.0.0.1 and every loop is bounded.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// What a scrape says: sample (name and labels, as written) -> value.
type Samples = BTreeMap<String, f64>;

/// One HTTP GET of `path` on `addr` with an `Accept` header; (head, body), or `None` when
/// nothing answers.
fn http_get(addr: SocketAddr, path: &str, accept: &str) -> Option<(String, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    Some((head.to_string(), body.to_string()))
}

/// The samples of an exposition (comment lines left out).
fn samples(body: &str) -> Samples {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').expect("sample VALUE");
            let value = match value {
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("bad value in {l}")),
            };
            (name.to_string(), value)
        })
        .collect()
}

/// The sum of the samples of `name` (exactly that name) whose labels include all of `labels`.
fn sum_of(s: &Samples, name: &str, labels: &[&str]) -> f64 {
    s.iter()
        .filter(|(k, _)| k.split('{').next() == Some(name) && labels.iter().all(|l| k.contains(l)))
        .map(|(_, v)| v)
        .sum()
}

/// A hostmax run with `--metrics-listen 127.0.0.1:0` going on: its stderr read until it says
/// where it serves.
struct ServingRun {
    child: Child,
    addr: SocketAddr,
    stderr: std::thread::JoinHandle<String>,
}

impl ServingRun {
    fn start(args: &[String]) -> ServingRun {
        let mut command = Command::new(hostmax_bin());
        command.args(args);
        ServingRun::start_command(command)
    }

    /// [`ServingRun::start`] of a command made by the caller.
    fn start_command(mut command: Command) -> ServingRun {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run hostmax");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let mut first = String::new();
        stderr.read_line(&mut first).expect("read stderr");
        let addr = first
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .and_then(|w| w.strip_suffix("/metrics"))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("no 'serving live metrics at' line first: {first}")
            });
        let stderr = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            first + &rest
        });
        ServingRun {
            child,
            addr,
            stderr,
        }
    }

    /// Waits (at most `limit`) for the end; the exit code and stderr.
    fn wait(mut self, limit: Duration) -> (Option<i32>, String) {
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (status.code(), self.stderr.join().unwrap_or_default());
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("hostmax did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn run_args(paths: &[String], json: &Path, listen: &str, runtime: &str) -> Vec<String> {
    let mut args = vec!["--devices".to_string()];
    args.extend(paths.iter().cloned());
    args.extend(
        [
            "--runtime",
            runtime,
            "--ramp",
            "1s",
            "--metrics-listen",
            listen,
            "--json",
            &json.display().to_string(),
        ]
        .map(String::from),
    );
    args
}

/// The report's per-device figure `key` of `kind` (`read.ios`, `read.bytes`).
fn report_figure(report: &Value, device: &str, kind: &str, key: &str) -> f64 {
    let d = report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == device)
        .unwrap_or_else(|| panic!("{device} not in the report"));
    number(&d[kind][key])
}

#[test]
fn scrapes_grow_during_a_run_and_equal_the_report_at_the_end() {
    require_root!();
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let scratch = ScratchDir::new("metrics-scrape");
    let json = scratch.0.join("report.json");
    let run = ServingRun::start(&run_args(&paths, &json, "127.0.0.1:0", "4s"));
    let addr = run.addr;
    let mut scrapes: Vec<Samples> = Vec::new();
    let mut phases = Vec::new();
    // Every 200 ms until the server stops (it waits for this scrape of the final figures);
    // bounded: a 5 s run plus checks is well under 300 scrapes.
    for _ in 0..300 {
        let Some((head, body)) = http_get(addr, "/metrics", "application/openmetrics-text") else {
            break;
        };
        assert!(
            head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
            "{head}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
        let s = samples(&body);
        let phase = ["waiting", "ramp", "measured", "drain", "done"]
            .into_iter()
            .find(|p| s.get(&format!("hostmax_phase{{hostmax_phase=\"{p}\"}}")) == Some(&1.0))
            .expect("one phase is on");
        if phases.last() != Some(&phase) {
            phases.push(phase);
        }
        scrapes.push(s);
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, stderr) = run.wait(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(phases.contains(&"measured"), "{phases:?}");
    assert_eq!(
        phases.last(),
        Some(&"done"),
        "{phases:?}: the final figures were scraped"
    );
    let read_ios: Vec<f64> = scrapes
        .iter()
        .map(|s| sum_of(s, "hostmax_ios_total", &["kind=\"read\""]))
        .collect();
    assert!(
        read_ios.windows(2).all(|w| w[0] <= w[1]),
        "counters never go down: {read_ios:?}"
    );
    let last = scrapes.last().unwrap();
    let mut distinct: Vec<f64> = read_ios.iter().copied().filter(|&n| n > 0.0).collect();
    distinct.dedup();
    assert!(
        distinct.len() >= 3,
        "seen growing over several scrapes during the run: {read_ios:?}"
    );

    // The last scrape (after the end) holds exactly what the report says.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for device in &paths {
        let dev = format!("device=\"{device}\"");
        for (kind, figure, metric) in [
            ("read", "ios", "hostmax_ios_total"),
            ("read", "bytes", "hostmax_bytes_total"),
            ("write", "ios", "hostmax_ios_total"),
        ] {
            let scraped = sum_of(last, metric, &[&dev, &format!("kind=\"{kind}\"")]);
            assert_eq!(
                scraped,
                report_figure(&report, device, kind, figure),
                "{metric} {device} {kind}"
            );
        }
        let ios = sum_of(last, "hostmax_ios_total", &[&dev, "kind=\"read\""]);
        assert!(ios > 0.0, "{device} did I/O");
        let read = [dev.as_str(), "kind=\"read\""];
        assert_eq!(sum_of(last, "hostmax_latency_seconds_count", &read), ios);
        let all = sum_of(
            last,
            "hostmax_latency_seconds_bucket",
            &[&dev, "kind=\"read\"", "le=\"+Inf\""],
        );
        assert_eq!(all, ios, "the +Inf bucket holds every I/O");
        // The mean from the histogram's sum is the report's mean, to the bins' resolution.
        let mean_s = sum_of(last, "hostmax_latency_seconds_sum", &read) / ios;
        let d = report["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["path"] == device.as_str())
            .unwrap();
        let mean_ns = number(&d["read"]["latency_ns"]["mean"]);
        assert!(
            (mean_s * 1e9 - mean_ns).abs() <= mean_ns * 0.01,
            "mean {} ns vs the report's {mean_ns}",
            mean_s * 1e9
        );
        assert_eq!(
            sum_of(last, "hostmax_errors_total", &[&dev]),
            number(&d["errors"])
        );
    }
    assert_eq!(sum_of(last, "hostmax_runs_completed_total", &[]), 1.0);
    assert!(
        sum_of(last, "hostmax_worker_cpu_seconds_total", &[]) > 0.0,
        "{last:?}"
    );
    assert_eq!(sum_of(last, "hostmax_run_progress_ratio", &[]), 1.0);
    assert_eq!(
        sum_of(last, "hostmax_run_info", &["command=\"run\"", "step=\"\""]),
        1.0
    );
}

/// A port nothing listens on now (bound and let go; good enough for a test on loopback).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn prometheus_text_passes_promtool() {
    require_root!();
    let promtool = match require_tool("promtool", "prometheus") {
        Ok(p) => p,
        Err(why) => skip!("{why}"),
    };
    let host = volumes(1, 32 * MIB);
    let paths = volume_paths(&host);
    let scratch = ScratchDir::new("metrics-promtool");
    let json = scratch.0.join("report.json");
    let run = ServingRun::start(&run_args(&paths, &json, "127.0.0.1:0", "3s"));
    let mut checked = 0;
    for _ in 0..100 {
        let Some((head, body)) = http_get(run.addr, "/metrics", "text/plain;version=0.0.4") else {
            break;
        };
        assert!(
            head.contains("Content-Type: text/plain; version=0.0.4"),
            "{head}"
        );
        if !body.contains("hostmax_phase{hostmax_phase=\"measured\"} 1") && checked > 0 {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        let mut check = Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run promtool");
        check
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        let out = check.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.trim().is_empty(),
            "promtool: {said}\n{body}"
        );
        checked += 1;
        if checked >= 2 {
            break;
        }
    }
    assert_eq!(
        checked, 2,
        "a body before and one during the measured window checked"
    );
    // The OpenMetrics body differs only where the formats do; promtool reads the older one.
    let (_, open_metrics) = http_get(run.addr, "/metrics", "*/*").expect("still serving");
    assert!(
        open_metrics.contains("# TYPE hostmax_ios counter"),
        "{open_metrics}"
    );
    let (code, stderr) = run.wait(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_bad_address_or_a_port_in_use_is_refused_before_any_io() {
    let scratch = ScratchDir::new("metrics-refused");
    let target = scratch.0.join("volume");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    for (listen, expected) in [
        (
            format!("127.0.0.1:{port}"),
            vec![
                format!("--metrics-listen 127.0.0.1:{port}"),
                "in use".to_string(),
                "pick a free port".to_string(),
            ],
        ),
        (
            "localhost".to_string(),
            vec![
                "--metrics-listen".to_string(),
                "not ADDR:PORT".to_string(),
                "127.0.0.1:9464".to_string(),
            ],
        ),
    ] {
        for command in [&[][..], &["sweep"][..], &["demo"][..]] {
            let mut args: Vec<String> = command.iter().map(|s| s.to_string()).collect();
            if command != ["demo"] {
                args.extend(
                    ["--devices", &target.display().to_string(), "--size", "16M"].map(String::from),
                );
            }
            args.extend(["--metrics-listen".to_string(), listen.clone()]);
            let out = run_hostmax(&args, None);
            let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
            assert_refused(&args, &out, &expected);
            assert!(
                !target.exists(),
                "nothing made before the refusal: {args:?}"
            );
        }
    }
}

/// A Prometheus server of the test's own on 127.0.0.1, killed when dropped.
struct PrometheusServer {
    child: Child,
    addr: SocketAddr,
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PrometheusServer {
    /// Starts `prometheus` scraping `target` every second, with its config and storage in
    /// `dir`; waits (at most 60 s) until it is ready.
    fn start(prometheus: &Path, dir: &Path, target: SocketAddr) -> PrometheusServer {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: hostmax\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let server = PrometheusServer { child, addr };
        for _ in 0..300 {
            if let Some((head, _)) = http_get(addr, "/-/ready", "*/*") {
                if head.starts_with("HTTP/1.1 200") {
                    return server;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
        panic!("prometheus was not ready within 60 s: {log}");
    }

    /// The value of an instant query that gives one number.
    fn query(&self, promql: &str) -> Option<f64> {
        let result = self.query_vector(promql);
        let value = &result.first()?["value"][1];
        value.as_str()?.parse().ok()
    }

    /// The result of an instant query (which must succeed: valid PromQL).
    fn query_vector(&self, promql: &str) -> Vec<Value> {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (_, body) = http_get(self.addr, &format!("/api/v1/query?query={encoded}"), "*/*")
            .expect("Prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["status"], "success", "{promql}: {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

#[test]
fn a_prometheus_server_scraping_every_second_sees_the_runs_ios() {
    require_root!();
    let prometheus = match require_tool("prometheus", "prometheus") {
        Ok(p) => p,
        Err(why) => skip!("{why}"),
    };
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let scratch = ScratchDir::new("metrics-prometheus");
    let json = scratch.0.join("report.json");
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let server = PrometheusServer::start(&prometheus, &scratch.0, listen);
    // Prometheus hands new targets to its scrapers every 5 s: wait for its first (failed)
    // scrape, so that it scrapes the whole run.
    let until = Instant::now() + Duration::from_secs(60);
    while server.query_vector("up{job=\"hostmax\"}").is_empty() {
        assert!(Instant::now() < until, "Prometheus never tried the target");
        std::thread::sleep(Duration::from_millis(200));
    }
    let run = ServingRun::start(&run_args(&paths, &json, &listen.to_string(), "5s"));
    assert_eq!(run.addr, listen);
    // hostmax waits for Prometheus' scrape of the final figures before it ends.
    let (code, stderr) = run.wait(Duration::from_secs(90));
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let reads = number(&report["host"]["read"]["ios"]);
    assert!(reads > 0.0);
    // The target is gone now (its series are marked stale): look over the last minutes.
    let seen = server
        .query("sum(max_over_time(hostmax_ios_total{job=\"hostmax\",kind=\"read\"}[10m]))")
        .unwrap_or_else(|| {
            let log = std::fs::read_to_string(scratch.0.join("prometheus.log")).unwrap_or_default();
            panic!("Prometheus has no hostmax_ios_total: {log}")
        });
    assert_eq!(
        seen, reads,
        "Prometheus' last scrape holds the report's reads"
    );
    let scrapes = server
        .query("count_over_time(hostmax_ios_total{kind=\"read\"}[10m])")
        .unwrap();
    assert!(
        scrapes >= 4.0,
        "scraped during the run, not once: {scrapes}"
    );
    let p99 = server
        .query("histogram_quantile(0.99, sum by (le) (max_over_time(hostmax_latency_seconds_bucket{kind=\"read\"}[10m])))")
        .unwrap();
    assert!(p99 > 0.0 && p99 < 60.0, "p99 {p99} s");
    assert_eq!(
        server.query("max_over_time(hostmax_phase{hostmax_phase=\"done\"}[10m])"),
        Some(1.0)
    );
    // Every query of the example Grafana dashboard is valid PromQL over these metrics, and
    // those over rates find the run (the instant ones see the target gone, stale).
    let dashboard =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grafana-hostmax.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(dashboard).unwrap()).unwrap();
    let mut checked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let promql = expr
                .replace("$__rate_interval", "1m")
                .replace("$instance", ".*");
            let result = server.query_vector(&promql);
            if expr.contains("rate(") {
                assert!(
                    !result.is_empty(),
                    "{} finds nothing: {promql}",
                    panel["title"]
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} dashboard queries");
}

#[test]
fn a_sweep_shows_each_step_and_its_counters_add_its_steps() {
    require_root!();
    let host = volumes(2, 32 * MIB);
    let paths = volume_paths(&host);
    let scratch = ScratchDir::new("metrics-sweep");
    let json = scratch.0.join("sweep.json");
    let mut args = vec!["sweep".to_string(), "--devices".to_string()];
    args.extend(paths.iter().cloned());
    args.extend(
        [
            "--runtime",
            "2s",
            "--ramp",
            "0s",
            "--metrics-listen",
            "127.0.0.1:0",
            "--json",
            &json.display().to_string(),
        ]
        .map(String::from),
    );
    let run = ServingRun::start(&args);
    let mut steps = Vec::new();
    let mut last = Samples::new();
    for _ in 0..300 {
        let Some((_, body)) = http_get(run.addr, "/metrics", "*/*") else {
            break;
        };
        last = samples(&body);
        let step = last
            .keys()
            .find_map(|k| k.strip_prefix("hostmax_run_info{command=\"sweep\",step=\""))
            .and_then(|rest| rest.split('"').next())
            .expect("the sweep's step is shown")
            .to_string();
        if steps.last() != Some(&step) {
            steps.push(step);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, stderr) = run.wait(Duration::from_secs(60));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        steps.ends_with(&["step1".to_string(), "step2".to_string()]),
        "{steps:?}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let reads: f64 = runs.iter().map(|r| number(&r["host"]["read"]["ios"])).sum();
    assert_eq!(
        sum_of(&last, "hostmax_ios_total", &["kind=\"read\""]),
        reads
    );
    assert_eq!(sum_of(&last, "hostmax_runs_completed_total", &[]), 2.0);
    assert_eq!(
        sum_of(&last, "hostmax_phase", &["hostmax_phase=\"done\""]),
        1.0
    );
}

/// 200 clients that each send half a request and wait, reconnecting whenever hostmax closes
/// them, while a run with a limit of 64 descriptors goes on: the server keeps at most a few
/// open (a new one takes the place of the oldest still waiting for its request), so a whole
/// scrape is answered during the flood, and the run still writes its report and exits 0.
#[test]
fn clients_that_send_half_a_request_cannot_cost_the_run_its_report() {
    require_root!();
    let host = loop_volumes(1, 64 * MIB);
    let paths = volume_paths(&host);
    let dir = ScratchDir::new("metrics-flood");
    let json = dir.join("r.json");
    let args = run_args(&paths, &json, "127.0.0.1:0", "6s");
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(hostmax_bin())
        .args(&args);
    let run = ServingRun::start_command(command);
    let addr = run.addr;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            let mut opened = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Those hostmax closed (a read gives 0 or fails) are opened again.
                held.retain(|s| {
                    let mut byte = [0u8; 1];
                    s.set_nonblocking(true).is_ok()
                        && matches!(s.peek(&mut byte), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
                });
                while held.len() < 200 {
                    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1))
                    else {
                        break;
                    };
                    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
                    held.push(s);
                    opened += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            opened
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    // During the flood: a scraper that sends its request at once is answered.
    let clock = Instant::now();
    let mut tries = 0;
    let scraped = loop {
        tries += 1;
        if let Some((head, body)) = http_get(addr, "/metrics", "text/plain") {
            break (head, body);
        }
        assert!(
            clock.elapsed() < Duration::from_secs(3),
            "no scrape answered during the flood ({tries} tries)"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let opened = flood.join().unwrap();
    assert!(opened > 200, "{opened} connections");
    assert!(scraped.0.starts_with("HTTP/1.1 200"), "{}", scraped.0);
    assert!(scraped.1.contains("hostmax_ios_total"), "{}", scraped.1);
    let (code, stderr) = run.wait(Duration::from_secs(90));
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report_figure(&report, &paths[0], "read", "ios") > 0.0);
}
