//! A bare io_uring random-read loop: the ceiling hostmax's engine is measured against
//! (`benches/data_cost.sh`). One pinned thread per CPU, one ring each over its share of the
//! devices, QD per device, fixed buffers and files, SINGLE_ISSUER + DEFER_TASKRUN, batched
//! submit and reap, no clock reads per I/O, no accounting beyond a counter: what REFERENCE.md
//! calls the bare loop.
//!
//! `bare_uring SECONDS QD BS CPUS DEVICE...` (CPUS as `0,1`), prints `IOPS <n>` on stdout.
//!
//! This is a benchmark tool, not part of hostmax: it keeps its own unsafe io_uring code so
//! that it shares nothing with the engine it measures.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn worker(cpu: usize, devices: Vec<String>, qd: usize, bs: usize, secs: u64) -> u64 {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
    let files: Vec<std::fs::File> = devices
        .iter()
        .map(|d| {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(d)
                .unwrap_or_else(|e| panic!("{d}: {e}"))
        })
        .collect();
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| {
            let mut f = f;
            std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0)).unwrap()
        })
        .collect();
    let slots = qd * files.len();
    let entries = slots.next_power_of_two().max(8) as u32;
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(entries * 2)
        .build(entries)
        .expect("io_uring with SINGLE_ISSUER + DEFER_TASKRUN");
    let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
    ring.submitter().register_files(&fds).unwrap();
    let layout = std::alloc::Layout::from_size_align(slots * bs, 4096).unwrap();
    // SAFETY: the layout has a non-zero size; the memory is freed never (the process exits).
    let arena = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!arena.is_null());
    let iov = [libc::iovec {
        iov_base: arena.cast(),
        iov_len: slots * bs,
    }];
    // SAFETY: the arena lives until the process exits, longer than the registration.
    unsafe { ring.submitter().register_buffers(&iov) }.unwrap();
    let mut rng = 0x1234_5678_u64 ^ cpu as u64;
    let push = |ring: &mut IoUring, slot: usize, rng: &mut u64| {
        let dev = slot / qd;
        let blocks = sizes[dev] / bs as u64;
        let offset = ((splitmix64(rng) as u128 * blocks as u128) >> 64) as u64 * bs as u64;
        // SAFETY: slot * bs + bs <= slots * bs, inside the registered arena.
        let buf = unsafe { arena.add(slot * bs) };
        let sqe = opcode::ReadFixed::new(types::Fixed(dev as u32), buf, bs as u32, 0)
            .offset(offset)
            .build()
            .user_data(slot as u64);
        // SAFETY: the buffer and file stay valid until the completion is reaped; each slot
        // has at most one I/O in flight.
        unsafe { ring.submission().push(&sqe) }.expect("the ring holds every slot");
    };
    for slot in 0..slots {
        push(&mut ring, slot, &mut rng);
    }
    let end = Instant::now() + Duration::from_secs(secs);
    let mut done = 0u64;
    let mut in_flight = slots;
    let mut reaped = Vec::with_capacity(slots);
    loop {
        ring.submitter().submit_and_wait(1).unwrap();
        reaped.clear();
        reaped.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        in_flight -= reaped.len();
        let going = Instant::now() < end;
        for &(slot, res) in &reaped {
            assert_eq!(res, bs as i32, "read failed");
            done += 1;
            if going {
                push(&mut ring, slot as usize, &mut rng);
                in_flight += 1;
            }
        }
        if !going && in_flight == 0 {
            break;
        }
    }
    done
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: bare_uring SECONDS QD BS CPUS DEVICE...");
        std::process::exit(2);
    }
    let secs: u64 = args[0].parse().unwrap();
    let qd: usize = args[1].parse().unwrap();
    let bs: usize = args[2].parse().unwrap();
    let cpus: Vec<usize> = args[3].split(',').map(|c| c.parse().unwrap()).collect();
    let devices = &args[4..];
    let started = Instant::now();
    let threads: Vec<_> = cpus
        .iter()
        .enumerate()
        .map(|(t, &cpu)| {
            let mine: Vec<String> = devices
                .iter()
                .enumerate()
                .filter(|(i, _)| i % cpus.len() == t)
                .map(|(_, d)| d.clone())
                .collect();
            std::thread::spawn(move || worker(cpu, mine, qd, bs, secs))
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let elapsed = started.elapsed().as_secs_f64();
    println!("IOPS {:.0}", total as f64 / elapsed.max(secs as f64));
}
