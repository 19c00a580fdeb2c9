//! `hostmax::units::parse_duration` on arbitrary text: never panics; what it accepts formats
//! back to the same duration.
#![no_main]

use hostmax::units::{format_duration, parse_duration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_duration(text) {
        Ok(d) => assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{text:?}"),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
