//! `hostmax::units::parse_count` on arbitrary text: never panics, never zero.
#![no_main]

use hostmax::units::parse_count;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_count(text) {
        Ok(n) => {
            assert!(n > 0, "{text:?} gave 0");
            assert_eq!(parse_count(&n.to_string()), Ok(n));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
