//! `hostmax::units::parse_seed` on arbitrary text: never panics; decimal and hex agree.
#![no_main]

use hostmax::units::parse_seed;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_seed(text) {
        Ok(n) => {
            assert_eq!(parse_seed(&n.to_string()), Ok(n), "{text:?}");
            assert_eq!(parse_seed(&format!("{n:#x}")), Ok(n), "{text:?}");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
