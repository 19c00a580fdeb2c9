//! The engine's worker threads' CPU time while they run, read from procfs: each worker is a
//! thread of this process named `hostmax-cpuN` after the CPU it is pinned to
//! (`/proc/self/task/TID/comm`), its user and system time are fields 14 and 15 of
//! `/proc/self/task/TID/stat`. The engine's own account (`CpuUse`) comes only when the run
//! ends; this is what a scrape shows meanwhile.

use std::collections::BTreeMap;
use std::path::Path;

/// A worker's CPU time, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// User time.
    pub user_ns: u64,
    /// System time (submitting and reaping I/O).
    pub system_ns: u64,
}

/// Ticks per second of procfs' times (`USER_HZ`, 100 on every Linux architecture's ABI).
const USER_HZ: u64 = 100;

/// The name prefix of the engine's worker threads.
const WORKER_PREFIX: &str = "hostmax-cpu";

/// CPU time per CPU the workers are pinned to (threads of one CPU added).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerTimes(pub BTreeMap<usize, CpuTimes>);

impl WorkerTimes {
    /// Keeps, per CPU and mode, the larger of what it holds and `now` (a thread that ended
    /// drops out of a reading; its time does not).
    pub fn keep_most(&mut self, now: &WorkerTimes) {
        for (cpu, t) in &now.0 {
            let kept = self.0.entry(*cpu).or_default();
            kept.user_ns = kept.user_ns.max(t.user_ns);
            kept.system_ns = kept.system_ns.max(t.system_ns);
        }
    }
}

/// This process's worker threads now (none when no run goes on or procfs is not there).
pub fn read_worker_threads() -> WorkerTimes {
    read_threads_under(Path::new("/proc/self/task"))
}

fn read_threads_under(tasks: &Path) -> WorkerTimes {
    let mut times = WorkerTimes::default();
    let Ok(entries) = std::fs::read_dir(tasks) else {
        return times;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        let Some(cpu) = comm
            .trim()
            .strip_prefix(WORKER_PREFIX)
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let Some((user, system)) = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|stat| user_and_system_ticks(&stat))
        else {
            continue;
        };
        let t = times.0.entry(cpu).or_default();
        t.user_ns += user * (1_000_000_000 / USER_HZ);
        t.system_ns += system * (1_000_000_000 / USER_HZ);
    }
    times
}

/// utime and stime of a `stat` line. The name (field 2) is in parentheses and may hold
/// spaces, so fields are counted after its closing one.
fn user_and_system_ticks(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so utime (14) and stime (15) are the 12th and 13th.
    let mut fields = rest.split_whitespace().skip(11);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScratchDir;

    #[test]
    fn worker_threads_are_found_by_name_and_added_per_cpu() {
        let scratch = ScratchDir::new("worker-cpu");
        let task = |tid: &str, comm: &str, utime: u64, stime: u64| {
            let dir = scratch.0.join(tid);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
            let stat = format!(
                "{tid} ({comm}) R 1 1 1 0 -1 4194560 100 0 0 0 {utime} {stime} 0 0 20 0 1 0 5 0 0"
            );
            std::fs::write(dir.join("stat"), stat).unwrap();
        };
        task("10", "hostmax", 500, 500);
        task("11", "hostmax-cpu3", 120, 30);
        task("12", "hostmax-cpu3", 5, 5);
        task("13", "hostmax-cpu0", 0, 7);
        task("14", "hostmax-signals", 1, 1);
        let times = read_threads_under(&scratch.0);
        let ms = 10_000_000;
        assert_eq!(
            times.0.into_iter().collect::<Vec<_>>(),
            vec![
                (
                    0,
                    CpuTimes {
                        user_ns: 0,
                        system_ns: 7 * ms
                    }
                ),
                (
                    3,
                    CpuTimes {
                        user_ns: 125 * ms,
                        system_ns: 35 * ms
                    }
                ),
            ]
        );
    }

    #[test]
    fn names_with_spaces_and_parentheses_do_not_shift_the_fields() {
        let stat = "7 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 42 9 0 0 20 0";
        assert_eq!(user_and_system_ticks(stat), Some((42, 9)));
        assert_eq!(user_and_system_ticks("garbage"), None);
    }
}
