use super::*;

/// Every form, each named after itself, or none.
struct Sample(bool);

impl Document for Sample {
    fn terminal(&self) -> Form {
        self.0.then(|| Ok("terminal".into()))
    }
    fn markdown(&self) -> Form {
        self.0.then(|| Ok("markdown".into()))
    }
    fn csv(&self) -> Form {
        self.0.then(|| Ok("csv".into()))
    }
    fn json(&self) -> Form {
        self.0.then(|| Ok("json".into()))
    }
    fn junit(&self) -> Form {
        self.0.then(|| Ok("junit".into()))
    }
    fn chart(&self) -> Form {
        self.0.then(|| Ok("chart".into()))
    }
    fn page(&self) -> Form {
        self.0.then(|| Ok("page".into()))
    }
}

const ALL: Outputs = Outputs {
    terminal: Some("t"),
    markdown: Some("m"),
    csv: Some("c"),
    json: Some("j"),
    junit: Some("u"),
    chart: Some("s"),
    page: Some("h"),
};

#[test]
fn every_format_has_its_own_name_extensions_and_form() {
    let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name()).collect();
    let mut exts: Vec<&str> = FORMATS
        .iter()
        .flat_map(|f| f.extensions().to_vec())
        .collect();
    let mut forms: Vec<String> = Vec::new();
    for f in FORMATS {
        assert!(f.help(&ALL).is_some(), "{}", f.name());
        assert!(f.help(&Outputs::default()).is_none(), "{}", f.name());
        assert!(f
            .file_hint()
            .starts_with(&format!(".{}", f.extensions()[0])));
        forms.push(f.render(&Sample(true)).unwrap());
        let e = f.render(&Sample(false)).unwrap_err().to_string();
        assert!(e.contains(f.name()), "{e}");
    }
    for v in [&mut names, &mut exts] {
        let n = v.len();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), n, "{v:?}");
    }
    forms.sort_unstable();
    forms.dedup();
    assert_eq!(
        forms.len(),
        FORMATS.len(),
        "each format prints a form of its own"
    );
    assert_eq!(default().name(), "table");
}

#[test]
fn a_files_extension_picks_its_format_among_the_commands() {
    let compare = Outputs {
        terminal: Some("t"),
        markdown: Some("m"),
        json: Some("j"),
        ..Outputs::default()
    };
    for (file, f) in [
        ("a/report.md", "md"),
        ("x.CSV", "csv"),
        ("s.json", "json"),
        ("junit.xml", "junit"),
        ("chart.svg", "svg"),
        ("report.HTML", "html"),
        ("r.htm", "html"),
        ("t.txt", "table"),
    ] {
        assert_eq!(
            for_path(Path::new(file), &ALL).map(|f| f.name()),
            Some(f),
            "{file}"
        );
    }
    assert!(for_path(Path::new("report.pdf"), &ALL).is_none());
    assert!(for_path(Path::new("report"), &ALL).is_none());
    assert!(for_path(Path::new("x.csv"), &compare).is_none());
    assert_eq!(extension_hints(&compare), ".md, .json or .txt");
    assert_eq!(
        extension_hints(&ALL),
        ".md, .csv, .json, .xml (JUnit), .svg, .html or .txt"
    );
}

#[test]
fn a_flag_takes_its_commands_formats_and_refuses_the_others_listing_them() {
    static COMPARE: Outputs = Outputs {
        terminal: Some("t"),
        markdown: Some("m"),
        csv: None,
        json: Some("j"),
        junit: None,
        chart: None,
        page: None,
    };
    let cmd = clap::Command::new("t").arg(
        clap::Arg::new("format")
            .long("format")
            .value_parser(parser(&COMPARE)),
    );
    let m = cmd
        .clone()
        .try_get_matches_from(["t", "--format", "md"])
        .unwrap();
    assert_eq!(m.get_one::<Format>("format").map(|f| f.name()), Some("md"));
    let e = cmd
        .try_get_matches_from(["t", "--format", "csv"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("invalid value 'csv' for '--format <format>'")
            && e.contains("[possible values: table, md, json]"),
        "{e}"
    );
}
