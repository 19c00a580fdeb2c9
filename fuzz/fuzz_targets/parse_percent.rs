//! `hostmax::units::parse_percent` on arbitrary text: never panics, never above 100.
#![no_main]

use hostmax::units::parse_percent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_percent(text) {
        Ok(p) => {
            assert!(p <= 100, "{text:?} gave {p}");
            assert_eq!(parse_percent(&p.to_string()), Ok(p));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
