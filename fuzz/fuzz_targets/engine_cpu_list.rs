//! `hostmax_engine::placement::parse_cpu_list` (the kernel's `cpu_list` files) on arbitrary
//! text: never panics; an accepted list is sorted and without repeats.
#![no_main]

use hostmax_engine::placement::parse_cpu_list;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Some(cpus) = parse_cpu_list(text) {
        assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{text:?}: {cpus:?}");
    }
});
