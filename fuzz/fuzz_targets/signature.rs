//! The on-disk signature prober on arbitrary bytes: a whole image, and the same bytes cut into
//! a head and a tail window of a device of any size. Never panics, never reads out of range.
#![no_main]

use hostmax_device::{detect, probe_bytes, DiskView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = probe_bytes(data);
    if data.len() < 17 {
        return;
    }
    let size = u64::from_le_bytes(data[..8].try_into().unwrap());
    let tail_offset = u64::from_le_bytes(data[8..16].try_into().unwrap());
    let rest = &data[16..];
    let cut = rest.len() / 2;
    let view = DiskView {
        size,
        head: rest[..cut].to_vec(),
        tail_offset,
        tail: rest[cut..].to_vec(),
    };
    for sig in detect(&view) {
        assert!(!sig.to_string().contains('\n'));
    }
});
