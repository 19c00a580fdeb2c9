//! One read of every block of each target, start to end: what a cloud volume restored from a
//! snapshot needs before it is measured (its blocks come from object storage on first read,
//! slowly, until each has been read once). Nothing is written.
//!
//! Each target is read in large blocks by `depth` threads in order, one `O_DIRECT` read at a
//! time each (a handful of 1 MiB reads in flight keep a volume busy; a pass is bound by the
//! volume, not the CPU). Each thread reads through a small ring of its own, so a read that
//! gets no answer within [`crate::DRAIN_LIMIT`] ends the pass with an error naming the
//! device instead of holding it in the kernel. What is done is the
//! prefix of the target every read below has completed, so a pass stopped at any moment
//! continues from there ([`ReadPass::from`]) and reads no block twice but the few in flight.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hostmax_device::Patience;

use crate::bounded_read::BoundedReader;
use crate::{EngineError, DRAIN_LIMIT};

/// Direct I/O's alignment of the buffer; a logical block never needs more.
const ALIGN: usize = 4096;

/// What to read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReadPass {
    /// The targets (block devices or files), each read whole.
    pub targets: Vec<PathBuf>,
    /// Where each target's pass starts (bytes, a multiple of its logical block size; 0
    /// where missing): what an earlier, stopped pass had done.
    pub from: Vec<u64>,
    /// Bytes per read (1 MiB by default).
    pub block_size: u32,
    /// Reads in flight per target (8 by default).
    pub depth: u32,
    /// How often the progress callback is called (1 s by default).
    pub interval: Duration,
}

impl Default for ReadPass {
    fn default() -> Self {
        ReadPass {
            targets: Vec::new(),
            from: Vec::new(),
            block_size: 1 << 20,
            depth: 8,
            interval: Duration::from_secs(1),
        }
    }
}

impl ReadPass {
    /// Each of `targets` read whole from its start, every other choice at its default.
    pub fn new(targets: Vec<PathBuf>) -> ReadPass {
        ReadPass {
            targets,
            ..ReadPass::default()
        }
    }
}

with_setters!(ReadPass {
    with_from => from: Vec<u64>,
    with_block_size => block_size: u32,
    with_depth => depth: u32,
    with_interval => interval: Duration,
});

/// How far a pass is: per target, its size and the bytes from its start read so far.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PassProgress {
    /// Each target's size in bytes.
    pub sizes: Vec<u64>,
    /// Each target's prefix read (ends at its size when the target is done).
    pub done: Vec<u64>,
}

impl PassProgress {
    /// A pass's progress: each target's size and the prefix of it read.
    pub fn new(sizes: Vec<u64>, done: Vec<u64>) -> PassProgress {
        PassProgress { sizes, done }
    }

    /// Whether every target was read to its end.
    pub fn complete(&self) -> bool {
        self.done == self.sizes
    }
}

/// One target's reads: the next offset to hand out and the offset each reader holds.
struct Cursor {
    next: u64,
    in_flight: Vec<Option<u64>>,
}

impl Cursor {
    /// The prefix every read has completed: up to the lowest offset still being read.
    fn done(&self, size: u64) -> u64 {
        self.in_flight
            .iter()
            .flatten()
            .copied()
            .min()
            .unwrap_or(self.next)
            .min(size)
    }
}

/// Reads every block of each target of `pass` once, from its `from` offset to its end.
/// `progress` is called every `pass.interval` and once at the end; when it returns false the
/// pass stops after the reads in flight (each waited for at most [`DRAIN_LIMIT`]). Returns
/// how far each target got.
///
/// # Errors
///
/// [`EngineError::Read`] for a read that failed, or that got no answer within
/// [`DRAIN_LIMIT`] (its source [`std::io::ErrorKind::TimedOut`]: the device stopped
/// answering).
pub fn read_pass(
    pass: &ReadPass,
    mut progress: impl FnMut(&PassProgress) -> bool,
) -> Result<PassProgress, EngineError> {
    let mut files = Vec::new();
    let mut sizes = Vec::new();
    for path in &pass.targets {
        let info = hostmax_device::probe(path)?;
        files.push(open_for_reading(path)?);
        sizes.push(info.size);
    }
    let block = u64::from(pass.block_size.max(ALIGN as u32));
    let depth = pass.depth.max(1) as usize;
    let cursors: Vec<Mutex<Cursor>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            Mutex::new(Cursor {
                next: pass.from.get(i).copied().unwrap_or(0).min(size),
                in_flight: vec![None; depth],
            })
        })
        .collect();
    let stop = AtomicBool::new(false);
    // A read of a device that stopped answering ends the pass within the drain limit; a stop
    // lets the reads in flight finish (within the same limit), as a run's drain does, so
    // what the kernel counted for the pass is what it read.
    let patience = Patience::new(DRAIN_LIMIT, DRAIN_LIMIT);
    let failure: Mutex<Option<EngineError>> = Mutex::new(None);
    let snapshot = || PassProgress {
        sizes: sizes.clone(),
        done: cursors
            .iter()
            .zip(&sizes)
            .map(|(c, &size)| lock(c).done(size))
            .collect(),
    };
    std::thread::scope(|scope| {
        let mut readers = Vec::new();
        for (t, file) in files.iter().enumerate() {
            for slot in 0..depth {
                let (cursor, size, path) = (&cursors[t], sizes[t], &pass.targets[t]);
                let (stop, failure) = (&stop, &failure);
                let patience = &patience;
                readers.push(scope.spawn(move || {
                    let fail = |offset, source| {
                        stop.store(true, Ordering::Relaxed);
                        lock(failure).get_or_insert(EngineError::Read {
                            path: path.clone(),
                            offset,
                            source,
                        });
                    };
                    let mut reader = match BoundedReader::new(file, block as usize) {
                        Ok(reader) => reader,
                        Err(source) => return fail(lock(cursor).next, source),
                    };
                    loop {
                        let offset = {
                            let mut c = lock(cursor);
                            c.in_flight[slot] = None;
                            if stop.load(Ordering::Relaxed) || c.next >= size {
                                return;
                            }
                            let offset = c.next;
                            c.next += block;
                            c.in_flight[slot] = Some(offset);
                            offset
                        };
                        let len = block.min(size - offset) as usize;
                        // A read given up on stays in flight in the cursor, so the prefix
                        // done ends before it.
                        if let Err(source) = reader.read_exact_at(offset, len, patience) {
                            return fail(offset, source);
                        }
                    }
                }));
            }
        }
        let mut last_call = Instant::now();
        while !readers.iter().all(|r| r.is_finished()) {
            std::thread::sleep(pass.interval.min(Duration::from_millis(50)));
            if last_call.elapsed() >= pass.interval {
                last_call = Instant::now();
                if !progress(&snapshot()) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    if let Some(err) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(err);
    }
    let last = snapshot();
    progress(&last);
    Ok(last)
}

/// Read-only, direct where the target takes it (a file on a filesystem without `O_DIRECT`
/// is read through the page cache).
fn open_for_reading(path: &std::path::Path) -> Result<File, EngineError> {
    let open = |direct: libc::c_int| {
        crate::target::with_noatime(|noatime| {
            OpenOptions::new()
                .read(true)
                .custom_flags(direct | noatime)
                .open(path)
        })
    };
    match open(libc::O_DIRECT) {
        Ok(file) => Ok(file),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => open(0),
        Err(e) => Err(e),
    }
    .map_err(|source| EngineError::Open {
        path: path.to_path_buf(),
        source,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_of(bytes: usize) -> (tempfile_path::Scratch, PathBuf) {
        let scratch = tempfile_path::Scratch::new();
        let path = scratch.0.join("target");
        std::fs::write(&path, vec![7u8; bytes]).unwrap();
        (scratch, path)
    }

    /// A scratch directory of this test process, removed on drop.
    mod tempfile_path {
        pub struct Scratch(pub std::path::PathBuf);
        impl Scratch {
            pub fn new() -> Scratch {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let dir = std::env::temp_dir().join(format!(
                    "hostmax-read-pass-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&dir).unwrap();
                Scratch(dir)
            }
        }
        impl Drop for Scratch {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn reads_to_the_end_from_where_it_is_told_and_stops_when_asked() {
        let size = 3 * (1 << 20) + 8192;
        let (_scratch, path) = file_of(size);
        let pass = ReadPass {
            targets: vec![path.clone()],
            interval: Duration::from_millis(1),
            ..ReadPass::default()
        };
        let done = read_pass(&pass, |_| true).unwrap();
        assert!(done.complete(), "{done:?}");
        assert_eq!(done.sizes, vec![size as u64]);
        // Resumed at the end: nothing left.
        let resumed = ReadPass {
            from: vec![size as u64],
            ..pass.clone()
        };
        assert!(read_pass(&resumed, |_| true).unwrap().complete());
        // Called off at the first progress call: a prefix, never past the end.
        let stopped = read_pass(&pass, |_| false).unwrap();
        assert!(stopped.done[0] <= size as u64);
    }

    #[test]
    fn the_prefix_stops_at_the_lowest_read_in_flight() {
        let cursor = Cursor {
            next: 10 << 20,
            in_flight: vec![Some(8 << 20), None, Some(9 << 20)],
        };
        assert_eq!(cursor.done(100 << 20), 8 << 20);
        let idle = Cursor {
            next: 10 << 20,
            in_flight: vec![None, None],
        };
        assert_eq!(idle.done(100 << 20), 10 << 20);
        assert_eq!(idle.done(4 << 20), 4 << 20);
    }
}
