//! `hostmax::units::parse_size` on arbitrary text: never panics; what it accepts formats back
//! to the same number; what it refuses is explained.
#![no_main]

use hostmax::units::{format_size, parse_size};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_size(text) {
        Ok(bytes) => assert_eq!(parse_size(&format_size(bytes)), Ok(bytes), "{text:?}"),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
