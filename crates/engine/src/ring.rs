//! The only module with `unsafe` io_uring code: one ring, the files it reads and writes, and
//! the buffer arena the kernel reads into and writes from.
//!
//! [`UringIo`] owns all three together, so that the ownership rule io_uring imposes (every
//! buffer and file an SQE names must stay valid until its CQE is reaped) holds by
//! construction: the arena and the files are dropped only after every submitted I/O has
//! completed ([`Drop`] drains the ring first, and leaks the arena rather than free memory the
//! kernel may still write into if draining fails).

use std::alloc::{self, Layout};
use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

use crate::op::{BufferUse, OpKind};

/// Alignment of the arena and of every buffer in it: page size, which satisfies the `O_DIRECT`
/// memory alignment of every device the kernel supports.
pub(crate) const BUFFER_ALIGN: usize = 4096;

/// Largest single registered buffer the kernel accepts (1 GiB).
const MAX_REGISTERED_REGION: usize = 1 << 30;
/// Most registered buffers one ring may have (`IORING_MAX_REG_BUFFERS`).
const MAX_REGISTERED_REGIONS: usize = 1 << 14;

/// Which optional ring features the kernel accepted; reported so users see what ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RingFeatures {
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN`.
    pub defer_taskrun: bool,
    /// `IORING_SETUP_COOP_TASKRUN`.
    pub coop_taskrun: bool,
    /// Files registered (`IOSQE_FIXED_FILE`).
    pub fixed_files: bool,
    /// Buffers registered (`READ_FIXED` / `WRITE_FIXED`).
    pub fixed_buffers: bool,
    /// The ring fd is registered (saves an fd lookup per `io_uring_enter`).
    pub registered_ring: bool,
    /// `IORING_SETUP_IOPOLL`: completions are polled from the device's poll queues.
    pub iopoll: bool,
    /// `IORING_SETUP_SQPOLL`: a kernel thread submits, no system call per batch.
    pub sqpoll: bool,
    /// `IORING_SETUP_NO_SQARRAY` (Linux 6.6+): the kernel takes each submission by its ring
    /// index, without the indirection array.
    #[serde(default)]
    pub no_sqarray: bool,
}

/// How a file's trims are issued ([`crate::OpKind::Trim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TrimMethod {
    /// io_uring's block discard command (`BLOCK_URING_CMD_DISCARD`, Linux 6.12+): queued and
    /// completed like reads and writes, at the workload's depth.
    UringCmd,
    /// The `BLKDISCARD` ioctl, as fio issues trims: kernels before 6.12 have no io_uring
    /// discard. Synchronous: the worker runs one at a time and submits nothing meanwhile, and
    /// each trim's latency is its own ioctl's time.
    Ioctl,
    /// `fallocate(PUNCH_HOLE | KEEP_SIZE)` through io_uring, for a regular file.
    PunchHole,
}

impl TrimMethod {
    /// The name in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            TrimMethod::UringCmd => "uring-cmd",
            TrimMethod::Ioctl => "ioctl",
            TrimMethod::PunchHole => "punch-hole",
        }
    }
}

/// `BLOCK_URING_CMD_DISCARD`: `_IO(0x12, 0)` (include/uapi/linux/fs.h).
const BLOCK_URING_CMD_DISCARD: u32 = 0x12 << 8;

/// One reaped completion.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reaped {
    /// What the submitter gave the I/O.
    pub user_data: u64,
    /// The I/O's result: bytes moved, or a negative errno.
    pub result: i32,
    /// The I/O's own time, for one run synchronously ([`TrimMethod::Ioctl`]); `None` for the
    /// ring's, which the submitter times.
    pub took_ns: Option<u64>,
}

/// The polling a run asks for ([`crate::RunConfig::polling`]); the default polls nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Polling {
    /// Poll for completions (only devices with poll queues: `queue/io_poll` = 1).
    pub iopoll: bool,
    /// A kernel thread polls the submission queue.
    pub sqpoll: bool,
}

with_setters!(Polling {
    with_iopoll => iopoll: bool,
    with_sqpoll => sqpoll: bool,
});

/// Arenas of at least this size are aligned to it and asked to be backed by transparent huge
/// pages (`MADV_HUGEPAGE`): a buffer inside one huge page is physically contiguous, so a 1 MiB
/// I/O is 16 segments of 64 KiB instead of 256 pages, and devices that allow 128 segments
/// (loop, many NVMe drives) take it whole instead of splitting it in two.
const HUGE_PAGE: usize = 2 << 20;

/// Page-aligned memory for all I/O buffers of one worker.
struct Arena {
    ptr: *mut u8,
    layout: Layout,
}

impl Arena {
    fn new(len: usize) -> io::Result<Arena> {
        let align = if len >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            BUFFER_ALIGN
        };
        let layout = Layout::from_size_align(len.max(BUFFER_ALIGN), align)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "buffer arena too large"))?;
        // SAFETY: the layout has a non-zero size (at least one page).
        let ptr = unsafe { alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("cannot allocate {} bytes of I/O buffers", layout.size()),
            ));
        }
        if align == HUGE_PAGE {
            // Advice before the first touch, so the pages are faulted in huge. Where the kernel
            // has THP off (or none), the call fails and 4 KiB pages serve as before.
            // SAFETY: `ptr..ptr + layout.size()` is memory we own; madvise only changes how the
            // kernel backs it, not its contents or validity.
            unsafe {
                libc::madvise(ptr.cast(), layout.size(), libc::MADV_HUGEPAGE);
            }
        }
        // SAFETY: `ptr` is valid for writes of `layout.size()` bytes and owned by us; zeroing
        // through the raw pointer initialises the memory before any reference to it exists.
        // Write slots are filled by their owner (`data::BlockMaker`) before their first write.
        unsafe { std::ptr::write_bytes(ptr, 0, layout.size()) };
        Ok(Arena { ptr, layout })
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc` with this exact layout and is freed once.
        unsafe { alloc::dealloc(self.ptr, self.layout) }
    }
}

/// The completions of one reap ([`UringIo::completions`]): `next` takes them one by one;
/// dropping it hands the ones taken back to the kernel's queue and counts them out of the
/// ring's I/O in flight.
pub(crate) struct Completions<'a> {
    cq: io_uring::CompletionQueue<'a>,
    buffers: Buffers<'a>,
    sync_done: &'a mut Vec<Reaped>,
    in_flight: &'a mut usize,
    /// The ring's completions there were when the reap began: those taken are counted from
    /// what is left at the drop, not one by one.
    ring_ready: usize,
    /// Synchronous completions taken.
    taken_synchronous: usize,
}

impl Completions<'_> {
    /// The next completion, `None` when none is left: the ring's
    /// ([`Completions::next_from_ring`]), then the synchronous ones.
    #[inline]
    pub fn next(&mut self) -> Option<Reaped> {
        self.next_from_ring().or_else(|| self.next_synchronous())
    }

    /// The next completion from the ring, `None` when it has none left: an I/O the
    /// submitter timed (`took_ns` is `None`), so a caller that takes these apart from the
    /// synchronous ones has no time of the I/O's own to look at.
    #[inline]
    pub fn next_from_ring(&mut self) -> Option<Reaped> {
        let cqe = self.cq.next()?;
        Some(Reaped {
            user_data: cqe.user_data(),
            result: cqe.result(),
            took_ns: None,
        })
    }

    /// The next synchronous completion ([`TrimMethod::Ioctl`]'s, timed on its own), `None`
    /// when none is left.
    #[inline]
    pub fn next_synchronous(&mut self) -> Option<Reaped> {
        let done = self.sync_done.pop()?;
        self.taken_synchronous += 1;
        Some(done)
    }

    /// The ring's buffers, to look at what a reaped read brought.
    #[inline]
    pub fn buffers(&self) -> &Buffers<'_> {
        &self.buffers
    }
}

impl Drop for Completions<'_> {
    fn drop(&mut self) {
        *self.in_flight -= self.ring_ready - self.cq.len() + self.taken_synchronous;
    }
}

/// Pushes to one file sharing one view of a ring's submission queue ([`UringIo::pusher`]):
/// what they queue is published to the kernel, and counted in the ring's I/O in flight, when
/// the pusher is dropped.
pub(crate) struct Pusher<'a> {
    sq: io_uring::SubmissionQueue<'a>,
    entries: EntryMaker<'a>,
    in_flight: &'a mut usize,
    sync_trims: &'a mut Vec<(u64, usize, u64, u32)>,
    nops: bool,
    /// The file every push names, found not abandoned when the pusher was made (and it cannot
    /// be abandoned while the pusher holds the ring).
    file: usize,
    /// Queued by this pusher, added to `in_flight` when it is dropped.
    pushed: usize,
}

impl Pusher<'_> {
    /// Queues one I/O of `len` bytes at byte `offset` of the pusher's file, using the buffer
    /// at `buf_offset` in that file's region (none for a trim). Returns `false` when the
    /// submission queue is full (nothing was queued). Panics if the buffer does not lie within
    /// the region, or a trim comes before [`UringIo::choose_trim_method`]: that is a bug in
    /// the caller, and going on would hand the kernel memory we do not own.
    ///
    /// Safe whatever the caller does: the memory and the file an I/O names stay valid until
    /// it completes (see `Drop`). What is the caller's to keep (the slot rule): a buffer
    /// serves one read at a time (two reads into one buffer leave either's bytes), and it is
    /// looked at only when no I/O names it ([`UringIo::buffer`]'s `# Safety`).
    #[inline(always)]
    pub fn push(
        &mut self,
        user_data: u64,
        op: OpKind,
        buf_offset: usize,
        len: u32,
        offset: u64,
    ) -> bool {
        let file = self.file;
        if self.nops {
            // Every NOP's entry is the same but for its user_data.
            return self.queue(&opcode::Nop::new().build().user_data(user_data));
        }
        if op == OpKind::Trim && self.entries.trim_methods[file] == Some(TrimMethod::Ioctl) {
            self.sync_trims.push((user_data, file, offset, len));
            self.pushed += 1;
            return true;
        }
        let buf = match op.buffer_use() {
            BufferUse::None => std::ptr::null_mut(),
            // The file was found not abandoned when the pusher was made.
            _ => (self.entries.buffers).region_ptr(file, buf_offset, len as usize),
        };
        let entry = self.entries.build(op, file, buf, len, offset, file as u16);
        self.queue(&entry.user_data(user_data))
    }

    /// The `len` bytes at `buf_offset` of the pusher's file's region, to fill before they are
    /// written: [`UringIo::buffer_mut`] while the pusher holds the ring.
    ///
    /// # Safety
    ///
    /// As for [`UringIo::buffer_mut`]: no I/O in flight, nor one this pusher queued, may name
    /// any of these bytes while the slice lives.
    pub unsafe fn buffer_mut(&mut self, buf_offset: usize, len: usize) -> &mut [u8] {
        let ptr = (self.entries.buffers).region_ptr(self.file, buf_offset, len);
        // SAFETY: `region_ptr` checked the range lies in the arena, and the file's I/O was
        // found not abandoned when the pusher was made; the caller promises no I/O names it,
        // and `&mut self` makes this the only reference handed out while it lives (the pusher
        // holds the ring mutably).
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    /// Queues one entry made by [`Pusher::push`]; `false` when the queue is full.
    #[inline]
    fn queue(&mut self, entry: &squeue::Entry) -> bool {
        // SAFETY: the entry names a buffer in the arena (or none) and a file in
        // `UringIo::files` (a NOP, [`UringIo::issue_nops`], names neither); both are owned by
        // the `UringIo` this borrows and released only after every queued I/O has completed
        // (its `Drop` drains, or leaks the arena once any file's I/O was abandoned), and no
        // abandoned file's region is named again (`Buffers::ptr` and `UringIo::pusher`'s
        // assertion refuse it). Rust code touches the buffer only through `buffer` or
        // `buffer_mut`, whose callers promise no I/O in flight names it.
        let pushed = unsafe { self.sq.push(entry) }.is_ok();
        self.pushed += usize::from(pushed);
        pushed
    }
}

impl Drop for Pusher<'_> {
    fn drop(&mut self) {
        *self.in_flight += self.pushed;
    }
}

/// What makes a ring's entries: its files, what the kernel accepted, each file's trim method
/// and the buffer arena.
struct EntryMaker<'a> {
    files: &'a [File],
    features: RingFeatures,
    trim_methods: &'a [Option<TrimMethod>],
    buffers: Buffers<'a>,
}

impl EntryMaker<'_> {
    fn build(
        &self,
        op: OpKind,
        file: usize,
        buf: *mut u8,
        len: u32,
        offset: u64,
        buf_index: u16,
    ) -> squeue::Entry {
        let raw = types::Fd(self.files[file].as_raw_fd());
        let fixed = types::Fixed(file as u32);
        macro_rules! with_fd {
            ($build:expr) => {
                if self.features.fixed_files {
                    $build(fixed)
                } else {
                    $build(raw)
                }
            };
        }
        match (op, self.features.fixed_buffers) {
            (OpKind::Read, true) => with_fd!(|fd| opcode::ReadFixed::new(fd, buf, len, buf_index)
                .offset(offset)
                .build()),
            (OpKind::Write, true) => {
                with_fd!(|fd| opcode::WriteFixed::new(fd, buf, len, buf_index)
                    .offset(offset)
                    .build())
            }
            (OpKind::Read, false) => {
                with_fd!(|fd| opcode::Read::new(fd, buf, len).offset(offset).build())
            }
            (OpKind::Write, false) => {
                with_fd!(|fd| opcode::Write::new(fd, buf, len).offset(offset).build())
            }
            (OpKind::Trim, _) => match self.trim_methods[file] {
                Some(TrimMethod::PunchHole) => {
                    with_fd!(|fd| opcode::Fallocate::new(fd, u64::from(len))
                        .offset(offset)
                        .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                        .build())
                }
                // The kernel reads the range from `addr` (start) and `addr3` (length), which
                // is where the 16-byte command begins.
                Some(TrimMethod::UringCmd) => {
                    let mut cmd = [0u8; 16];
                    cmd[..8].copy_from_slice(&u64::from(len).to_ne_bytes());
                    with_fd!(|fd| opcode::UringCmd16::new(fd, BLOCK_URING_CMD_DISCARD)
                        .addr(Some(offset))
                        .cmd(cmd)
                        .build())
                }
                other => panic!("trim queued on a ring with trim method {other:?}"),
            },
        }
    }
}

/// Read-only access to a ring's buffer arena while its completion queue is borrowed
/// ([`UringIo::completions`]): the same checks as [`UringIo::buffer`].
pub(crate) struct Buffers<'a> {
    arena: *mut u8,
    regions: &'a [Region],
    abandoned: &'a [bool],
}

impl<'a> Buffers<'a> {
    /// The `len` bytes at `buf_offset` of file `file`'s region. Panics if they are not inside
    /// the region, or the file's I/O was abandoned.
    ///
    /// # Safety
    ///
    /// As for [`UringIo::buffer`]: no I/O in flight may name any of these bytes while the
    /// slice lives.
    pub unsafe fn buffer(&self, file: usize, buf_offset: usize, len: usize) -> &'a [u8] {
        let ptr = self.ptr(file, buf_offset, len);
        // SAFETY: the range lies in the arena (`ptr` checked it), which lives as long as the
        // `UringIo` this borrows from; the caller promises no I/O in flight names it, and
        // `ptr` refuses the region of a file whose I/O was abandoned, which the kernel may
        // still write.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }

    /// Where the `len` bytes at `buf_offset` of file `file`'s region start. Panics if they
    /// are not inside the region, or the file's I/O was abandoned: the kernel may still write
    /// into its region, so handing it out again would be a data race.
    #[inline]
    fn ptr(&self, file: usize, buf_offset: usize, len: usize) -> *mut u8 {
        assert!(
            !self.abandoned[file],
            "buffer of a file whose I/O was abandoned"
        );
        self.region_ptr(file, buf_offset, len)
    }

    /// [`Buffers::ptr`] for a caller that found the file not abandoned (a [`Pusher`]'s):
    /// panics only if the bytes are not inside the region.
    #[inline]
    fn region_ptr(&self, file: usize, buf_offset: usize, len: usize) -> *mut u8 {
        let region = self.regions[file];
        assert!(buf_offset + len <= region.len, "buffer outside its region");
        // SAFETY: the bounds were checked just above, so the pointer stays inside the arena.
        unsafe { self.arena.add(region.offset + buf_offset) }
    }
}

/// One buffer region per target: `iodepth` slots of `block_size` bytes each.
#[derive(Debug, Clone, Copy)]
struct Region {
    offset: usize,
    len: usize,
}

/// A ring with its files and buffer arena; see the module overview for the ownership rule.
pub(crate) struct UringIo {
    // Field order matters for drop: `ring` closes before `files` and `arena` are released,
    // and `Drop for UringIo` has already drained every in-flight I/O by then.
    ring: IoUring,
    files: Vec<File>,
    arena: Option<Arena>,
    regions: Vec<Region>,
    features: RingFeatures,
    in_flight: usize,
    /// Completions of the last [`UringIo::reap`], kept to reuse the allocation.
    reaped: Vec<Reaped>,
    /// How each file is trimmed; `None` until [`UringIo::choose_trim_method`].
    trim_methods: Vec<Option<TrimMethod>>,
    /// Synchronous trims queued (user_data, file, offset, len): run at the next submit.
    sync_trims: Vec<(u64, usize, u64, u32)>,
    /// Synchronous trims done and not yet reaped.
    sync_done: Vec<Reaped>,
    /// Whether the CPU has a prefetch for writing ([`cpu_prefetches_for_write`]).
    write_prefetch: bool,
    /// Per file: the caller gave up on its I/O still in flight ([`UringIo::abandon`]), so its
    /// region is the kernel's for good.
    abandoned: Vec<bool>,
    /// Every push is an `IORING_OP_NOP` ([`UringIo::issue_nops`]).
    nops: bool,
    /// The ring's index among this thread's registered rings (`IORING_REGISTER_RING_FDS`),
    /// which every `io_uring_enter` names instead of the ring's descriptor ([`UringIo::enter`]).
    ring_index: Option<u32>,
}

impl UringIo {
    /// Builds a ring for `slots` I/Os in flight at most, registers `files`, and makes one
    /// buffer region of `region_lens[i]` bytes per file (page-aligned).
    ///
    /// Must be called on the thread that will submit: with `DEFER_TASKRUN` only the creating
    /// task may enter the ring.
    pub fn new(
        files: Vec<File>,
        region_lens: &[usize],
        slots: usize,
        polling: Polling,
    ) -> io::Result<UringIo> {
        let sq_entries = slots.next_power_of_two().clamp(8, 4096) as u32;
        let cq_entries = (slots.next_power_of_two() as u32)
            .max(2 * sq_entries)
            .min(65_536);
        let (ring, setup) = build_ring(sq_entries, cq_entries, polling)?;

        let mut regions = Vec::with_capacity(region_lens.len());
        let mut total = 0usize;
        for &len in region_lens {
            // At least a page: a workload without buffers (trims) still registers a region,
            // since the kernel refuses an empty one.
            let len = len.max(1).div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN;
            regions.push(Region { offset: total, len });
            total = total
                .checked_add(len)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "arena overflow"))?;
        }
        let arena = Arena::new(total)?;

        let mut io = UringIo {
            ring,
            files,
            arena: Some(arena),
            regions,
            features: RingFeatures {
                iopoll: polling.iopoll,
                sqpoll: polling.sqpoll,
                ..setup
            },
            in_flight: 0,
            reaped: Vec::with_capacity(slots),
            trim_methods: Vec::new(),
            sync_trims: Vec::new(),
            sync_done: Vec::new(),
            write_prefetch: cpu_prefetches_for_write(),
            abandoned: Vec::new(),
            nops: false,
            ring_index: None,
        };
        io.trim_methods = vec![None; io.files.len()];
        io.abandoned = vec![false; io.files.len()];

        let fds: Vec<i32> = io.files.iter().map(|f| f.as_raw_fd()).collect();
        io.features.fixed_files = io.ring.submitter().register_files(&fds).is_ok();

        if io.regions.len() <= MAX_REGISTERED_REGIONS
            && io.regions.iter().all(|r| r.len <= MAX_REGISTERED_REGION)
        {
            let base = io.arena_ptr();
            let iovecs: Vec<libc::iovec> = io
                .regions
                .iter()
                .map(|r| libc::iovec {
                    // SAFETY: `r.offset + r.len` lies within the arena by construction.
                    iov_base: unsafe { base.add(r.offset) }.cast(),
                    iov_len: r.len,
                })
                .collect();
            // SAFETY: every iovec points into `arena`, which `io` owns and frees only after the
            // ring is closed (see `Drop`), so the registered memory outlives the registration.
            // A failure (e.g. RLIMIT_MEMLOCK for a user without CAP_IPC_LOCK) leaves nothing
            // registered and we use plain READ/WRITE.
            io.features.fixed_buffers =
                unsafe { io.ring.submitter().register_buffers(&iovecs) }.is_ok();
        }
        io.ring_index = register_ring_fd(&io.ring);
        io.features.registered_ring = io.ring_index.is_some();
        Ok(io)
    }

    /// Makes every later [`UringIo::push`] an `IORING_OP_NOP`: a request that names no file
    /// and no memory and completes with 0 at once. The submitter's loop is unchanged, so its
    /// rate is what the loop itself can issue (the load generator's ceiling, measured by
    /// [`crate::measure_issue_ceiling`]).
    pub fn issue_nops(&mut self) {
        self.nops = true;
    }

    /// What the kernel accepted.
    pub fn features(&self) -> RingFeatures {
        self.features
    }

    /// I/Os submitted (or queued) and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn arena_ptr(&self) -> *mut u8 {
        self.arena.as_ref().expect("arena lives until drop").ptr
    }

    /// The arena bytes of `len` at `buf_offset` in file `file`'s region, checked like
    /// [`UringIo::push`] checks them. Panics for an abandoned file's region: the kernel may
    /// still write into it, so handing it out again would be a data race.
    fn buffer_ptr(&self, file: usize, buf_offset: usize, len: usize) -> *mut u8 {
        self.buffers().ptr(file, buf_offset, len)
    }

    /// The `len` bytes at `buf_offset` of file `file`'s region, to check what a read brought.
    /// Panics if they are not inside the region, or the file's I/O was abandoned.
    ///
    /// # Safety
    ///
    /// No I/O in flight may name any of these bytes while the slice lives: every I/O pushed
    /// with a buffer overlapping them must have been reaped ([`UringIo::reap`]). The kernel
    /// writes a read's buffer at any moment until its completion is reaped, and a `&[u8]` to
    /// memory written meanwhile is a data race. (The borrow of `self` keeps new I/O from
    /// being pushed while the slice lives.)
    pub unsafe fn buffer(&self, file: usize, buf_offset: usize, len: usize) -> &[u8] {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.buffers().buffer(file, buf_offset, len) }
    }

    /// The arena's buffers, read-only ([`Buffers`]; [`UringIo::completions`] makes its own
    /// beside its borrow of the completion queue).
    fn buffers(&self) -> Buffers<'_> {
        Buffers {
            arena: self.arena_ptr(),
            regions: &self.regions,
            abandoned: &self.abandoned,
        }
    }

    /// The `len` bytes at `buf_offset` of file `file`'s region, to fill before they are
    /// written. Panics as [`UringIo::buffer`] does.
    ///
    /// # Safety
    ///
    /// As for [`UringIo::buffer`]: no I/O in flight may name any of these bytes (a write in
    /// flight reads them, a read writes them) while the slice lives.
    pub unsafe fn buffer_mut(&mut self, file: usize, buf_offset: usize, len: usize) -> &mut [u8] {
        let ptr = self.buffer_ptr(file, buf_offset, len);
        // SAFETY: as in `buffer`; `&mut self` makes this the only reference handed out.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    /// Asks the CPU to bring the cache line at every `stride` bytes of the buffer at
    /// `buf_offset` (`len` bytes) of file `file`'s region into its cache, to be written: the
    /// stamps that follow then do not each wait for a line the loop device's copy (or a DMA)
    /// last read. Only a hint: it changes no byte and cannot fault.
    #[inline]
    pub fn prefetch_for_write(&self, file: usize, buf_offset: usize, len: usize, stride: usize) {
        if !self.write_prefetch {
            return;
        }
        let ptr = self.buffer_ptr(file, buf_offset, len);
        for at in (0..len).step_by(stride.max(1)) {
            prefetch_line_for_write(ptr.wrapping_add(at));
        }
    }

    /// Decides how file `file` is trimmed: a hole punched in a regular file; on a block
    /// device, io_uring's discard command where the kernel has it, else the `BLKDISCARD`
    /// ioctl. The kernel is asked with a discard of no bytes, which discards nothing: a kernel
    /// with the command rejects the length (`EINVAL`), one without it the command (6.1:
    /// `EOPNOTSUPP`). Call before any other I/O of this ring. `HOSTMAX_TRIM_METHOD=ioctl` in
    /// the environment takes the ioctl on any kernel, so tests reach that path everywhere.
    pub fn choose_trim_method(
        &mut self,
        file: usize,
        regular_file: bool,
    ) -> io::Result<TrimMethod> {
        let method = if regular_file {
            TrimMethod::PunchHole
        } else if std::env::var("HOSTMAX_TRIM_METHOD").as_deref() == Ok("ioctl") {
            TrimMethod::Ioctl
        } else {
            self.trim_methods[file] = Some(TrimMethod::UringCmd);
            // The entry as every push makes it; the pusher that lends its maker queues nothing.
            let entry = (self.pusher(file).entries).build(
                OpKind::Trim,
                file,
                std::ptr::null_mut(),
                0,
                0,
                0,
            );
            // SAFETY: a discard command names no memory, only the file, which `self` owns
            // until the completion is reaped below.
            unsafe { self.ring.submission().push(&entry.user_data(u64::MAX)) }
                .map_err(|_| io::Error::other("submission queue full at setup"))?;
            self.ring.submitter().submit_and_wait(1)?;
            let result = self
                .ring
                .completion()
                .next()
                .map_or(-libc::EIO, |c| c.result());
            if result == 0 || result == -libc::EINVAL {
                TrimMethod::UringCmd
            } else {
                TrimMethod::Ioctl
            }
        };
        self.trim_methods[file] = Some(method);
        Ok(method)
    }

    /// Queues one I/O of `len` bytes at byte `offset` of file `file`, using the buffer at
    /// `buf_offset` in that file's region (none for a trim): [`Pusher::push`] through a
    /// pusher of its own. Returns `false` when the submission queue is full.
    #[inline]
    pub fn push(
        &mut self,
        user_data: u64,
        op: OpKind,
        file: usize,
        buf_offset: usize,
        len: u32,
        offset: u64,
    ) -> bool {
        self.pusher(file)
            .push(user_data, op, buf_offset, len, offset)
    }

    /// A pusher for a run of pushes to file `file` ([`Pusher`]): the submission queue's head
    /// is read once and its tail published once, when the pusher is dropped, and the file
    /// checked once, not once an I/O. Panics if the file's I/O was abandoned
    /// ([`UringIo::abandon`]): its region is the kernel's.
    pub fn pusher(&mut self, file: usize) -> Pusher<'_> {
        assert!(!self.abandoned[file], "I/O queued to an abandoned file");
        let arena = self.arena_ptr();
        Pusher {
            sq: self.ring.submission(),
            entries: EntryMaker {
                files: &self.files,
                features: self.features,
                trim_methods: &self.trim_methods,
                buffers: Buffers {
                    arena,
                    regions: &self.regions,
                    abandoned: &self.abandoned,
                },
            },
            in_flight: &mut self.in_flight,
            sync_trims: &mut self.sync_trims,
            nops: self.nops,
            file,
            pushed: 0,
        }
    }

    /// Runs the queued synchronous trims, timing each.
    fn run_sync_trims(&mut self) {
        for (user_data, file, offset, len) in std::mem::take(&mut self.sync_trims) {
            let started = std::time::Instant::now();
            let done = crate::target::discard_now(&self.files[file], offset, u64::from(len));
            let took_ns = started.elapsed().as_nanos() as u64;
            let result = match done {
                Ok(()) => OpKind::Trim.success_result(len),
                Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
            };
            self.sync_done.push(Reaped {
                user_data,
                result,
                took_ns: Some(took_ns),
            });
        }
    }

    /// Submits what is queued and waits for at least `want` completions, or until `timeout`.
    /// A timeout or a signal is not an error: the caller reaps whatever arrived.
    pub fn submit_and_wait(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<()> {
        if !self.sync_trims.is_empty() {
            // The ring's I/O first, so it runs while the synchronous trims do; with those
            // done there is something to reap, so no waiting.
            self.ring.submit()?;
            self.run_sync_trims();
            return Ok(());
        }
        let want = want.min(self.in_flight - self.sync_done.len());
        let timeout = timeout.filter(|_| want > 0);
        let res = match (self.ring_index, timeout) {
            (Some(index), _) if !self.features.sqpoll => self.enter(index, want, timeout),
            (_, Some(t)) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want, &args)
            }
            (_, None) => self.ring.submitter().submit_and_wait(want),
        };
        match res {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Submits what is queued and waits for `want` completions (or `timeout`) through the
    /// registered ring `index`: what the io-uring crate's `submit_with_args` does, without the
    /// descriptor lookup (`fget`/`fput`) the kernel makes for an enter that names the ring's
    /// descriptor (the crate remembers a registration only in the `Submitter` that made it,
    /// and `IoUring::submitter` makes a fresh one each call). Not for SQPOLL rings, whose
    /// wake-up the crate handles.
    fn enter(&mut self, index: u32, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
        let (to_submit, needs_events) = {
            let sq = self.ring.submission();
            (sq.len(), sq.cq_overflow() || sq.taskrun())
        };
        let mut flags = IORING_ENTER_REGISTERED_RING;
        // Deferred task work runs only in an enter that asks for events.
        if want > 0 || self.features.iopoll || needs_events {
            flags |= IORING_ENTER_GETEVENTS;
        }
        let ts = timeout.map(|t| KernelTimespec {
            tv_sec: t.as_secs() as i64,
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        let arg = ts.as_ref().map(|ts| GeteventsArg {
            sigmask: 0,
            sigmask_sz: 0,
            min_wait_usec: 0,
            ts: std::ptr::from_ref(ts) as u64,
        });
        let (arg_ptr, arg_size) = match &arg {
            Some(arg) => {
                flags |= IORING_ENTER_EXT_ARG;
                (
                    std::ptr::from_ref(arg).cast::<libc::c_void>(),
                    std::mem::size_of::<GeteventsArg>(),
                )
            }
            None => (std::ptr::null(), 0),
        };
        // SAFETY: `index` names this ring among the calling thread's registered rings
        // (`UringIo::new` registered it on the thread that submits, the only one that may
        // enter a SINGLE_ISSUER ring), and the ring outlives the call. The kernel reads `arg`
        // and the timespec it points to, locals alive until the call returns; it writes nothing
        // back.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                index as libc::c_long,
                to_submit as libc::c_long,
                want as libc::c_long,
                flags as libc::c_long,
                arg_ptr,
                arg_size as libc::c_long,
            )
        };
        if ret < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ret as usize)
    }

    /// Every available completion, each read where it lies in the completion queue, with the
    /// buffers to look at what a read brought: no copy of the batch first, as
    /// [`UringIo::reap`] makes. The slot a completion names is free once it was taken.
    #[inline]
    pub fn completions(&mut self) -> Completions<'_> {
        let mut cq = self.ring.completion();
        cq.sync();
        Completions {
            ring_ready: cq.len(),
            cq,
            buffers: Buffers {
                arena: self.arena.as_ref().expect("arena lives until drop").ptr,
                regions: &self.regions,
                abandoned: &self.abandoned,
            },
            sync_done: &mut self.sync_done,
            in_flight: &mut self.in_flight,
            taken_synchronous: 0,
        }
    }

    /// Takes every available completion; [`UringIo::reaped`] lists them.
    pub fn reap(&mut self) {
        // The list is kept to reuse its allocation; `completions` takes them as the worker does.
        let mut reaped = std::mem::take(&mut self.reaped);
        reaped.clear();
        let mut completions = self.completions();
        while let Some(done) = completions.next() {
            reaped.push(done);
        }
        drop(completions);
        self.reaped = reaped;
    }

    /// The completions the last [`UringIo::reap`] took. The slots they name are free again,
    /// so their buffers may be read ([`UringIo::buffer`]).
    pub fn reaped(&self) -> &[Reaped] {
        &self.reaped
    }

    /// Gives up on file `file`'s I/O still in flight (a device that stopped answering): its
    /// region stays the kernel's, so no later [`UringIo::push`], [`UringIo::buffer`] or
    /// [`UringIo::buffer_mut`] may name the file again (they panic). The ring goes on serving
    /// the other files, whose regions are disjoint; completions of the abandoned I/O may
    /// still be reaped, and the caller must recognise and ignore them. Dropping this then
    /// neither waits for the abandoned I/O nor unregisters anything (both would wait as long
    /// as the device does), and the arena is leaked, since the kernel may still write into it.
    pub fn abandon(&mut self, file: usize) {
        self.abandoned[file] = true;
    }

    /// Waits until every queued or submitted I/O has completed, discarding the results.
    /// Returns `false` if the kernel stopped answering.
    fn drain(&mut self) -> bool {
        let mut failures = 0;
        while self.in_flight > 0 {
            if self
                .submit_and_wait(1, Some(Duration::from_millis(100)))
                .is_err()
            {
                failures += 1;
                if failures > 100 {
                    return false;
                }
            }
            self.reap();
        }
        true
    }
}

impl Drop for UringIo {
    fn drop(&mut self) {
        // An abandoned ring's requests keep their own references to the files; closing the
        // ring leaves them to the kernel's exit work, which waits for them off this thread.
        if self.abandoned.contains(&true) || !self.drain() {
            // The kernel may still write into the arena: leaking it is the only safe choice.
            std::mem::forget(self.arena.take());
            if let Some(index) = self.ring_index {
                unregister_ring_fd(&self.ring, index);
            }
            return;
        }
        // Closing a ring releases its registered files later, from a kernel work queue; until
        // then a device written with O_EXCL stays claimed and the next run's open gets EBUSY.
        // A registered file is dropped at unregistering once no request holds it, so first let
        // the kernel run the task work it deferred to us (with DEFER_TASKRUN, freeing requests
        // that finished on io-wq threads is such work), then unregister.
        let _ = self.ring.submitter().submit_and_wait(0);
        if self.features.fixed_files {
            let _ = self.ring.submitter().unregister_files();
        }
        if self.features.fixed_buffers {
            let _ = self.ring.submitter().unregister_buffers();
        }
        if let Some(index) = self.ring_index {
            unregister_ring_fd(&self.ring, index);
        }
    }
}

/// `io_uring_enter` flags (include/uapi/linux/io_uring.h).
const IORING_ENTER_GETEVENTS: u32 = 1 << 0;
const IORING_ENTER_EXT_ARG: u32 = 1 << 3;
const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
/// `io_uring_register` opcodes for a ring's own descriptor.
const IORING_REGISTER_RING_FDS: libc::c_long = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_long = 21;

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// `struct io_uring_getevents_arg`: what `IORING_ENTER_EXT_ARG` passes.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// Registers `ring`'s descriptor with the calling thread (Linux 5.18+) and returns its index,
/// or `None` where the kernel refuses (the ring is then entered through its descriptor).
fn register_ring_fd(ring: &IoUring) -> Option<u32> {
    let mut update = RsrcUpdate {
        // Any free index: the kernel writes the one it chose back.
        offset: u32::MAX,
        resv: 0,
        data: ring.as_raw_fd() as u64,
    };
    // SAFETY: the kernel reads and writes back the one `RsrcUpdate` the pointer names, a local
    // alive for the call; the descriptor is the ring's own, open for the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd() as libc::c_long,
            IORING_REGISTER_RING_FDS,
            std::ptr::from_mut(&mut update),
            1 as libc::c_long,
        )
    };
    (ret == 1).then_some(update.offset)
}

/// Takes back [`register_ring_fd`]'s registration, which holds a reference to the ring: it
/// would otherwise keep the ring (and its registered files, with their `O_EXCL` claims) until
/// the thread exits.
fn unregister_ring_fd(ring: &IoUring, index: u32) {
    let update = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    // SAFETY: as in `register_ring_fd`; the kernel only reads `update`.
    unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd() as libc::c_long,
            IORING_UNREGISTER_RING_FDS,
            std::ptr::from_ref(&update),
            1 as libc::c_long,
        );
    }
}

/// How long an idle SQPOLL thread spins before it sleeps.
const SQPOLL_IDLE_MS: u32 = 50;

/// Builds a ring with the fastest flags the kernel accepts, falling back step by step. The
/// polling the user asked for is never dropped silently: if the kernel refuses it, so do we.
/// Returns the ring and the setup flags it got (`defer_taskrun`, `coop_taskrun`,
/// `no_sqarray`).
fn build_ring(sq: u32, cq: u32, polling: Polling) -> io::Result<(IoUring, RingFeatures)> {
    // Each (defer task work, cooperative task work), first without the SQ indirection array
    // (Linux 6.6+: the kernel reads each entry by its ring index), then with it.
    let attempts = [(true, true), (false, true), (false, false)]
        .into_iter()
        .flat_map(|(defer, coop)| [(true, defer, coop), (false, defer, coop)]);
    let mut last_err = None;
    for (no_sqarray, defer, coop) in attempts {
        // The kernel rejects DEFER_TASKRUN together with SQPOLL.
        if defer && polling.sqpoll {
            continue;
        }
        let mut b = IoUring::builder();
        b.setup_cqsize(cq);
        if polling.iopoll {
            b.setup_iopoll();
        }
        if polling.sqpoll {
            b.setup_sqpoll(SQPOLL_IDLE_MS);
        }
        if defer {
            b.setup_single_issuer().setup_defer_taskrun();
        }
        if coop {
            b.setup_coop_taskrun();
        }
        if no_sqarray {
            b.setup_no_sqarray();
        }
        match b.build(sq) {
            Ok(ring) => {
                let setup = RingFeatures {
                    defer_taskrun: defer,
                    coop_taskrun: coop,
                    no_sqarray,
                    ..RingFeatures::default()
                };
                return Ok((ring, setup));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("io_uring setup failed")))
}

/// What the running kernel's io_uring offers hostmax, found by building (and dropping) a
/// small ring on the calling thread: for a health check before any run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct KernelRingSupport {
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN` (Linux 6.1+).
    pub defer_taskrun: bool,
    /// `IORING_SETUP_COOP_TASKRUN` (Linux 5.19+).
    pub coop_taskrun: bool,
    /// The ring fd can be registered (Linux 5.18+).
    pub registered_ring: bool,
    /// `READ_FIXED` / `WRITE_FIXED` on registered buffers.
    pub fixed_buffers: bool,
    /// `IORING_FEAT_NODROP`: completions are never dropped when the CQ ring is full.
    pub nodrop: bool,
    /// `IORING_FEAT_EXT_ARG`: waits take a timeout without an extra SQE.
    pub ext_arg: bool,
    /// `IORING_SETUP_NO_SQARRAY` (Linux 6.6+): no indirection array between the submission
    /// ring and its entries.
    #[serde(default)]
    pub no_sqarray: bool,
}

/// Probes the running kernel's io_uring (see [`KernelRingSupport`]); an error means no
/// ring could be built at all (io_uring disabled, or not in this kernel).
pub fn probe_kernel_ring() -> io::Result<KernelRingSupport> {
    let (ring, setup) = build_ring(8, 16, Polling::default())?;
    let mut probe = io_uring::Probe::new();
    let fixed_buffers = ring.submitter().register_probe(&mut probe).is_ok()
        && probe.is_supported(opcode::ReadFixed::CODE)
        && probe.is_supported(opcode::WriteFixed::CODE);
    Ok(KernelRingSupport {
        defer_taskrun: setup.defer_taskrun,
        coop_taskrun: setup.coop_taskrun,
        no_sqarray: setup.no_sqarray,
        registered_ring: register_ring_fd(&ring)
            .inspect(|&i| unregister_ring_fd(&ring, i))
            .is_some(),
        fixed_buffers,
        nodrop: ring.params().is_feature_nodrop(),
        ext_arg: ring.params().is_feature_ext_arg(),
    })
}

/// Whether this CPU has a prefetch for writing: on x86-64 `PREFETCHW` (CPUID
/// 0x8000_0001 ECX bit 8, which std's feature detection does not name; AMD's for long, Intel's
/// from Broadwell on), on aarch64 always (`PRFM PST*`), elsewhere none.
fn cpu_prefetches_for_write() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
    }
    #[cfg(target_arch = "aarch64")]
    {
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// Prefetches the cache line at `ptr` with intent to write (the line arrives owned, so a store
/// to it need not ask the other cores first). x86-64 has no stable intrinsic that emits
/// `PREFETCHW` without the `prfchw` target feature, hence the instruction itself; call only
/// where [`cpu_prefetches_for_write`] said yes. Safe for any address: a prefetch is a hint
/// that never faults and reads or writes no memory the program sees.
#[inline(always)]
fn prefetch_line_for_write(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch touches only the cache, never memory the program sees, and does not
    // fault, whatever `ptr` is; it uses no stack and leaves the flags alone.
    unsafe {
        std::arch::asm!("prefetchw [{0}]", in(reg) ptr, options(nostack, preserves_flags, readonly));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above, for aarch64's store prefetch.
    unsafe {
        std::arch::asm!("prfm pstl1keep, [{0}]", in(reg) ptr, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = ptr;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `AnonHugePages` of the mapping that holds `addr`, in bytes, from /proc/self/smaps.
    fn anon_huge_bytes(addr: usize) -> Option<usize> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
            if let Some((lo, hi)) = range {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = lo <= addr && addr < hi;
                    continue;
                }
            }
            if let (true, Some(kb)) = (inside, line.strip_prefix("AnonHugePages:")) {
                return kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .map(|k| k * 1024);
            }
        }
        None
    }

    /// The running kernel's (major, minor) release, from `uname`.
    fn kernel_version() -> (u32, u32) {
        let uts = nix::sys::utsname::uname().unwrap();
        let release = uts.release().to_string_lossy().into_owned();
        let mut parts = release
            .split(|c: char| !c.is_ascii_digit())
            .map(|p| p.parse().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    #[test]
    fn rings_go_without_the_sq_array_where_the_kernel_allows_and_work_either_way() {
        let file = File::open("/dev/null").unwrap();
        let mut io = match UringIo::new(vec![file], &[4096], 8, Polling::default()) {
            Ok(io) => io,
            Err(e) => {
                eprintln!("skipped: no io_uring here ({e})");
                return;
            }
        };
        let version = kernel_version();
        // IORING_SETUP_NO_SQARRAY came with Linux 6.6; an older kernel falls back to the array.
        assert_eq!(io.features().no_sqarray, version >= (6, 6), "{version:?}");
        assert_eq!(probe_kernel_ring().unwrap().no_sqarray, version >= (6, 6));
        // More entries than the ring holds, in rounds: the tail wraps past the ring's size.
        io.issue_nops();
        for round in 0..5u64 {
            for i in 0..7 {
                assert!(io.push(round * 10 + i, OpKind::Read, 0, 0, 512, 0));
            }
            io.submit_and_wait(7, Some(Duration::from_secs(5))).unwrap();
            io.reap();
            let mut got: Vec<u64> = io.reaped().iter().map(|r| r.user_data).collect();
            got.sort_unstable();
            assert_eq!(got, (0..7).map(|i| round * 10 + i).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_pusher_queues_until_the_queue_is_full_and_counts_what_it_queued() {
        let file = File::open("/dev/null").unwrap();
        // 8 slots: a submission queue of 8 entries (and room for the buffer of a 9th try).
        let mut io = match UringIo::new(vec![file], &[8192], 8, Polling::default()) {
            Ok(io) => io,
            Err(e) => {
                eprintln!("skipped: no io_uring here ({e})");
                return;
            }
        };
        for round in 0..3u64 {
            let mut pusher = io.pusher(0);
            let mut queued = 0;
            while pusher.push(
                round * 100 + queued,
                OpKind::Read,
                queued as usize * 512,
                512,
                0,
            ) {
                queued += 1;
            }
            drop(pusher);
            assert_eq!(queued, 8, "round {round}: the queue holds 8");
            assert_eq!(io.in_flight(), 8);
            io.submit_and_wait(8, Some(Duration::from_secs(5))).unwrap();
            io.reap();
            let mut done: Vec<(u64, i32)> = io
                .reaped()
                .iter()
                .map(|r| (r.user_data, r.result))
                .collect();
            done.sort_unstable();
            // /dev/null reads end at once with nothing read.
            let expected: Vec<(u64, i32)> = (0..8).map(|i| (round * 100 + i, 0)).collect();
            assert_eq!(done, expected);
            assert_eq!(io.in_flight(), 0);
        }
    }

    #[test]
    fn every_enter_goes_through_the_registered_ring_and_a_dropped_ring_takes_it_back() {
        // A thread of its own: registered rings are the thread's, numbered from 0.
        std::thread::spawn(|| {
            let ring = |n: u64| {
                let file = File::open("/dev/null").unwrap();
                let mut io = match UringIo::new(vec![file], &[4096], 4, Polling::default()) {
                    Ok(io) => io,
                    Err(e) => {
                        eprintln!("skipped: no io_uring here ({e})");
                        return None;
                    }
                };
                let Some(index) = io.ring_index else {
                    eprintln!("skipped: this kernel registers no ring descriptor (before 5.18)");
                    return None;
                };
                assert!(io.features().registered_ring);
                // NOPs and a wait with a timeout, all through `UringIo::enter`.
                io.issue_nops();
                for i in 0..n {
                    assert!(io.push(i, OpKind::Read, 0, 0, 512, 0));
                }
                io.submit_and_wait(n as usize, Some(Duration::from_secs(5)))
                    .unwrap();
                io.reap();
                assert_eq!(io.reaped().len(), n as usize);
                assert_eq!(io.in_flight(), 0);
                Some(index)
            };
            let Some(first) = ring(3) else { return };
            // Dropping the first ring unregistered it: the second gets the same index.
            assert_eq!(ring(2), Some(first));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_abandoned_file_is_never_named_again_and_the_others_keep_the_ring() {
        let dir = std::env::temp_dir().join(format!("hostmax-abandon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<File> = (0..2)
            .map(|i| {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(dir.join(format!("file{i}")))
                    .unwrap()
            })
            .collect();
        let mut io = match UringIo::new(files, &[4096, 4096], 2, Polling::default()) {
            Ok(io) => io,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                eprintln!("skipped: no io_uring here ({e})");
                return;
            }
        };
        io.abandon(0);
        // The other file's region still goes through the ring.
        // SAFETY: no I/O was pushed yet.
        unsafe { io.buffer_mut(1, 0, 4096) }.fill(0xa5);
        assert!(io.push(7, OpKind::Write, 1, 0, 4096, 0));
        io.submit_and_wait(1, Some(Duration::from_secs(5))).unwrap();
        io.reap();
        let done: Vec<(u64, i32)> = io
            .reaped()
            .iter()
            .map(|r| (r.user_data, r.result))
            .collect();
        assert_eq!(done, vec![(7, 4096)]);
        // The abandoned file's region, and I/O to the file, are refused.
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the write was reaped; the abandoned file's region is refused (the panic
            // this test expects) before any slice is made.
            unsafe { io.buffer(0, 0, 4096) }.len()
        }));
        assert!(read.is_err(), "its buffer was handed out");
        let queued = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            io.push(8, OpKind::Read, 0, 0, 4096, 0)
        }));
        assert!(queued.is_err(), "I/O to it was queued");
        drop(io);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn large_arenas_sit_on_huge_pages_where_the_kernel_offers_them() {
        let sysfs = hostmax_device::Sysfs::default();
        let thp = sysfs
            .read("kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !(thp.contains("[always]") || thp.contains("[madvise]")) {
            eprintln!(
                "skipped: transparent huge pages are off or absent here ({})",
                thp.trim()
            );
            return;
        }
        // Without compaction on fault a fragmented machine may have no free huge page to give.
        let defrag = sysfs
            .read("kernel/mm/transparent_hugepage/defrag")
            .unwrap_or_default();
        if !["[always]", "[madvise]", "[defer+madvise]"]
            .iter()
            .any(|mode| defrag.contains(mode))
        {
            eprintln!(
                "skipped: huge pages are not compacted on fault here (defrag {})",
                defrag.trim()
            );
            return;
        }
        let arena = Arena::new(8 << 20).unwrap();
        assert_eq!(arena.ptr as usize % HUGE_PAGE, 0, "aligned to a huge page");
        let huge = anon_huge_bytes(arena.ptr as usize).expect("the arena's mapping is in smaps");
        assert!(
            huge >= 8 << 20,
            "{huge} bytes on huge pages of an 8 MiB arena"
        );
        // Small arenas stay on ordinary pages: a 2 MiB page per worker would waste memory.
        let small = Arena::new(64 << 10).unwrap();
        assert_eq!(small.layout.align(), BUFFER_ALIGN);
        // SAFETY: the arena is 64 KiB of initialised bytes we own.
        let bytes = unsafe { std::slice::from_raw_parts(small.ptr, 64 << 10) };
        assert!(bytes.iter().all(|&b| b == 0), "read buffers start zeroed");
    }
}
