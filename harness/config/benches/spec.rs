//! Benchmarks of reading task specs: `spec/load_with_repo` parses and validates a generated spec
//! of 10,000, 25,000, 50,000 and 100,000 turns (about 195 bytes a turn: 19.5 MB at 100,000), as
//! `foldbench validate` does, so the figures show how the time grows with the spec. Each turn
//! reads a file with an `expect`, needs that fact and a code the previous turn's user message
//! said, and closes with a `say`: every check of the validator runs on every turn.
//!
//! Run with `cargo bench -p harness-config --bench spec`.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use harness_config::spec;

/// A spec of `turns` turns of the shape the module docs describe.
fn big_spec(turns: usize) -> String {
    let mut s = String::from("name: big\ndescription: many turns\nrepo: fixtures/r\nturns:\n");
    for i in 0..turns {
        let _ = write!(
            s,
            "  - user: \"turn {i}: the code is C{i}.\"\n    unit: u{}\n",
            i % 50
        );
        if i > 0 {
            let _ = writeln!(s, "    needs: [\"A = 1\", \"code is C{}.\"]", i - 1);
        }
        let _ = write!(
            s,
            "    script:\n      - read_file: {{ path: a.txt }}\n        expect: \"A = 1\"\n      - say: \"done {i}\"\n"
        );
    }
    s.push_str("checks:\n  - file_contains: { path: a.txt, text: \"A = 1\" }\n");
    s
}

fn bench_load(c: &mut Criterion) {
    let mut g = c.benchmark_group("spec/load_with_repo");
    g.sample_size(10);
    for turns in [10_000, 25_000, 50_000, 100_000] {
        let text = big_spec(turns);
        let loaded = spec::load_with_repo("big.yaml", &text);
        assert_eq!(
            loaded.spec.as_ref().map(|s| s.turns.len()),
            Ok(turns),
            "the generated spec validates"
        );
        g.throughput(Throughput::Elements(turns as u64));
        g.bench_with_input(BenchmarkId::from_parameter(turns), &text, |b, text| {
            b.iter(|| {
                spec::load_with_repo("big.yaml", black_box(text))
                    .spec
                    .is_ok()
            })
        });
    }
    g.finish();
}

/// The group `criterion_main!` runs, in a private module: `criterion_group!` makes an
/// undocumented `pub fn`, which the workspace's `missing_docs` lint would flag.
mod group {
    use super::bench_load;
    use criterion::criterion_group;

    criterion_group!(benches, bench_load);
}

criterion::criterion_main!(group::benches);
