//! How much CPU a worker used: its own thread's time and its CPU's busy time.

use std::time::Instant;

use crate::CpuUse;

/// Ticks per second of `/proc/stat` (`USER_HZ`, 100 on every Linux architecture's ABI).
const USER_HZ: u64 = 100;

/// A reading taken at the start of a worker's loop, to subtract from one at its end.
pub(crate) struct CpuClock {
    cpu: usize,
    wall: Instant,
    user_ns: u64,
    system_ns: u64,
    cpu_ticks: Option<(u64, u64)>,
}

impl CpuClock {
    /// Reads the calling thread's times and CPU `cpu`'s counters now.
    pub fn start(cpu: usize) -> CpuClock {
        let (user_ns, system_ns) = thread_times();
        CpuClock {
            cpu,
            wall: Instant::now(),
            user_ns,
            system_ns,
            cpu_ticks: cpu_ticks(cpu),
        }
    }

    /// What was used since [`CpuClock::start`] (call on the same thread).
    pub fn stop(&self) -> CpuUse {
        let (user_ns, system_ns) = thread_times();
        let wall_ns = self.wall.elapsed().as_nanos() as u64;
        let (cpu_busy_ns, cpu_total_ns) = match (self.cpu_ticks, cpu_ticks(self.cpu)) {
            (Some((busy0, total0)), Some((busy1, total1))) => {
                let ns = |ticks: u64| ticks * (1_000_000_000 / USER_HZ);
                (
                    Some(ns(busy1.saturating_sub(busy0))),
                    Some(ns(total1.saturating_sub(total0))),
                )
            }
            _ => (None, None),
        };
        CpuUse {
            user_ns: user_ns.saturating_sub(self.user_ns),
            system_ns: system_ns.saturating_sub(self.system_ns),
            wall_ns,
            cpu_busy_ns,
            cpu_total_ns,
        }
    }
}

/// (user, system) nanoseconds of the calling thread; zeros if the kernel will not say.
fn thread_times() -> (u64, u64) {
    use nix::sys::resource::{getrusage, UsageWho};
    match getrusage(UsageWho::RUSAGE_THREAD) {
        Ok(u) => {
            let ns = |t: nix::sys::time::TimeVal| {
                t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1_000
            };
            (ns(u.user_time()), ns(u.system_time()))
        }
        Err(_) => (0, 0),
    }
}

/// (busy, total) ticks of CPU `cpu` from `/proc/stat`.
fn cpu_ticks(cpu: usize) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_ticks(&stat, cpu)
}

fn parse_cpu_ticks(stat: &str, cpu: usize) -> Option<(u64, u64)> {
    let name = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let field = |i: usize| v.get(i).copied().unwrap_or(0);
    let idle = field(3) + field(4);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    Some((busy, busy + idle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_split_into_busy_and_idle() {
        let stat =
            "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 10 1 20 100 5 2 3 0 0 0\ncpu1 1 0 1 50 0 0 0 0 0 0\n";
        assert_eq!(parse_cpu_ticks(stat, 0), Some((36, 141)));
        assert_eq!(parse_cpu_ticks(stat, 1), Some((2, 52)));
        assert_eq!(parse_cpu_ticks(stat, 2), None);
    }

    #[test]
    fn a_spinning_thread_is_busy() {
        let clock = CpuClock::start(0);
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 50 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let used = clock.stop();
        assert!(used.user_ns + used.system_ns > 0, "{used:?} {x}");
        assert!(used.wall_ns >= 50_000_000);
    }
}
