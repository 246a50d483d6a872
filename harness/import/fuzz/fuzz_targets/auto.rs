//! Format detection and whatever importer it picks, on arbitrary bytes (converted lossily).
#![no_main]

use harness_import::{detect, import, import_bytes, link_forks};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = detect("fuzz", &text);
    if let Ok(mut s) = import("fuzz", &text, None) {
        link_forks(&mut s);
    }
    let _ = import_bytes("fuzz", data, None);
});
