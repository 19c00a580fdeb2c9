//! `hostmax_device::parse_cpu_list` (`--cpus` and the kernel's `cpu_list` files) on
//! arbitrary text: never panics; an accepted list is sorted, without repeats, and formats back
//! to itself.
#![no_main]

use hostmax_device::{format_cpu_list, parse_cpu_list};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_cpu_list(text) {
        Ok(cpus) => {
            assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{text:?}: {cpus:?}");
            assert_eq!(
                parse_cpu_list(&format_cpu_list(&cpus)),
                Ok(cpus),
                "{text:?}"
            );
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
