//! Claude Code importer on arbitrary bytes (converted lossily).
#![no_main]

use harness_import::{import, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = import("fuzz.jsonl", &text, Some(Format::ClaudeCode));
});
