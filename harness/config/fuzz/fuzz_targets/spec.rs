//! The task-spec loader (`yaml::parse`, the locator and every check) on arbitrary bytes
//! (converted lossily), and the `repo` field the runner reads from specs with problems.
#![no_main]

use harness_config::spec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(problems) = spec::load("fuzz.yaml", &text) {
        assert!(!problems.is_empty(), "a failed load reports a problem");
        for p in &problems {
            assert!(p.line >= 1 && p.col >= 1, "positions are 1-based: {p}");
        }
    }
    let _ = spec::repo_field("fuzz.yaml", &text);
});
