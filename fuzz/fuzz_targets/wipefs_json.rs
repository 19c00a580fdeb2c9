//! The reader of `wipefs --json` output (what libblkid reports): never panics, and every kind
//! it accepts is one line.
#![no_main]

use hostmax_device::parse_wipefs_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(entries) = parse_wipefs_json(text) {
            for e in entries {
                assert!(!e.kind.contains('\n'));
            }
        }
    }
});
