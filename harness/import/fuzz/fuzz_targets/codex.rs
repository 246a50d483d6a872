//! Codex importers (current and legacy rollouts) on arbitrary bytes (converted lossily), with
//! fork linking over what they read.
#![no_main]

use harness_import::{import, link_forks, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut all = Vec::new();
    for f in [Format::Codex, Format::CodexLegacy] {
        if let Ok(s) = import("fuzz.jsonl", &text, Some(f)) {
            all.extend(s);
        }
    }
    link_forks(&mut all);
});
