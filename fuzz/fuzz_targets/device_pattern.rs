//! The `--devices` pattern check on arbitrary text: `is_pattern` is exactly "has a glob
//! metacharacter", and compiling what it calls a pattern (as `glob::glob` does before it
//! touches the filesystem) never panics.
#![no_main]

use hostmax::devices::is_pattern;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let pattern = is_pattern(text);
    assert_eq!(pattern, text.contains(['*', '?', '[']), "{text:?}");
    if pattern {
        if let Ok(p) = glob::Pattern::new(text) {
            let _ = p.matches(text);
        }
    }
});
