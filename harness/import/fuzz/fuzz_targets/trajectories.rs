//! The trajectory importers (mini-swe-agent `.traj.json`, SWE-agent `.traj`, OpenHands
//! `output.jsonl`) on arbitrary bytes (converted lossily), each forced, so every one of them sees
//! every input rather than only the ones detection sends it.
#![no_main]

use harness_import::{import, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for f in [Format::MiniSweAgent, Format::SweAgent, Format::OpenHands] {
        let _ = import("fuzz.json", &text, Some(f));
    }
});
