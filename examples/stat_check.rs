use hostmax_engine::{IoPattern, RunConfig, Workload};
use std::time::Duration;
fn stat(name: &str) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    let f: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    (f[0], f[4])
}
fn main() {
    let targets: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let names: Vec<String> = targets
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let before: Vec<_> = names.iter().map(|n| stat(n)).collect();
    let w = Workload {
        pattern: IoPattern::RandRw,
        rwmixread: 70,
        iodepth: 8,
        runtime: Duration::from_secs(2),
        ramp: Duration::ZERO,
        record_latency: std::env::var("NOLAT").is_err(),
        ..Workload::default()
    };
    let r = hostmax_engine::start(RunConfig {
        targets,
        workload: w,
        cpus: None,
        live: false,
        on_error: Default::default(),
        layout: if std::env::var("PERDEV").is_ok() {
            hostmax_engine::ThreadLayout::PerDevice
        } else {
            Default::default()
        },
    })
    .unwrap()
    .wait()
    .unwrap();
    let mut tot = 0;
    for (i, d) in r.devices.iter().enumerate() {
        let a = stat(&names[i]);
        tot += d.read.ios + d.write.ios;
        println!(
            "{} ours r{} w{} kernel r{} w{} share {:.3} hist {}",
            names[i],
            d.read.ios,
            d.write.ios,
            a.0 - before[i].0,
            a.1 - before[i].1,
            d.read.ios as f64 / (d.read.ios + d.write.ios) as f64,
            d.read.latency.len()
        );
    }
    println!("total IOPS {:.0}", tot as f64 / r.measured.as_secs_f64());
}
