//! The whole command line (clap plus every value parser) on arbitrary arguments: never panics,
//! and every error renders.
#![no_main]

use clap::Parser;
use hostmax::args::Cli;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let argv = std::iter::once("hostmax").chain(text.split('\0'));
    if let Err(e) = Cli::try_parse_from(argv) {
        let _ = e.render().to_string();
    }
});
