//! The policies' docs are the registry's: the parameter tables of README.md and
//! docs/policies.md are what `foldbench policies --markdown` prints, and every policy has its
//! row in docs/policies.md.

use crate::helpers::root;

/// The text between `<!-- registry:begin -->` and `<!-- registry:end -->` of a file.
fn generated(file: &str) -> String {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let begin = "<!-- registry:begin -->\n";
    let a = text
        .find(begin)
        .unwrap_or_else(|| panic!("{file} has no {begin}"))
        + begin.len();
    let b = text[a..].find("<!-- registry:end -->").unwrap() + a;
    text[a..b].to_string()
}

#[test]
fn the_parameter_tables_are_the_registrys() {
    // The registry the binary installs: the built-in policies and `exec:COMMAND`.
    let table = harness_runner::exec_policy::with_exec(policies::Registry::builtin()).markdown();
    for file in ["README.md", "docs/policies.md"] {
        assert_eq!(
            generated(file),
            table,
            "{file}: paste the output of `foldbench policies --markdown` between the registry markers"
        );
    }
}

#[test]
fn every_policy_has_its_row_with_its_source() {
    let text = std::fs::read_to_string(root().join("docs/policies.md")).unwrap();
    let rows = &text[text.find("| arm | source |").expect("the peers' table")..];
    for name in policies::PEERS.iter().chain(["pipeline"].iter()) {
        let row = rows
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("docs/policies.md has no row for `{name}`"));
        assert_eq!(
            row.matches(" | ").count(),
            4,
            "five cells (arm, source, reproduces, approximates, cannot be checked): {row}"
        );
        // Each arm's row cites a conformance scenario that shows what it reproduces.
        assert!(
            row.contains(".json::"),
            "no conformance scenario cited: {row}"
        );
    }
}
