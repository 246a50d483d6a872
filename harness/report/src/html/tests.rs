use super::*;

fn series(label: &str, sizes: &[u64], marks: Vec<Mark>) -> Series {
    Series {
        label: label.into(),
        sizes: sizes.to_vec(),
        marks,
    }
}

fn page() -> Page {
    let chart = Chart {
        x_label: "request".into(),
        y_label: "tokens".into(),
        series: vec![
            series("none", &[100, 200, 300, 400], vec![]),
            series("trim", &[100, 150, 160, 170], vec![]),
            series(
                "compact",
                &[100, 200, 90, 120],
                vec![Mark {
                    at: 2,
                    kind: MarkKind::Compaction,
                    note: "compaction in turn 2".into(),
                }],
            ),
            series(
                "fold",
                &[100, 200, 80, 110],
                vec![Mark {
                    at: 2,
                    kind: MarkKind::Fold,
                    note: "fold of turns 1–1".into(),
                }],
            ),
        ],
    };
    Page {
        title: "run <1> & co".into(),
        subtitle: vec!["4 cells".into()],
        blocks: vec![
            Block::Lines(vec!["fold vs none: tokens 0.62×".into()]),
            Block::Table {
                title: "Arms".into(),
                table: Table {
                    headers: vec!["arm".into(), "median req".into()],
                    rows: vec![vec!["none".into(), "1,945".into()]],
                },
            },
            Block::Groups {
                title: "Cells".into(),
                groups: vec![Group {
                    title: "task · sim · seed 1".into(),
                    facts: vec![],
                    chart: Some(chart),
                    drill_label: String::new(),
                    drill: vec![
                        Block::Table {
                            title: "Turns".into(),
                            table: Table {
                                headers: vec!["turn".into(), "user".into()],
                                rows: vec![vec![
                                    "1".into(),
                                    "<script>alert(1)</script> & <img src=x onerror=alert(2)>"
                                        .into(),
                                ]],
                            },
                        },
                        Block::Pre {
                            title: "fold result".into(),
                            text: "</pre><b>not bold</b> \u{1b}[31mred".into(),
                        },
                    ],
                }],
            },
        ],
    }
}

#[test]
fn each_chart_has_one_series_per_policy_and_its_marks() {
    let html = render(&page());
    assert_eq!(html.matches("class=\"series\"").count(), 4, "{html}");
    for p in ["none", "trim", "compact", "fold"] {
        assert_eq!(
            html.matches(&format!("class=\"series\" data-policy=\"{p}\""))
                .count(),
            1,
            "{p}"
        );
    }
    assert_eq!(html.matches("class=\"mark fold\"").count(), 1);
    assert_eq!(html.matches("class=\"mark compaction\"").count(), 1);
    assert!(html.contains("data-series=\"4\""));
}

#[test]
fn the_drill_down_and_the_table_controls_exist() {
    let html = render(&page());
    assert_eq!(html.matches("<details class=\"drill\">").count(), 1);
    assert!(html.contains("<summary>Turns, folds and results</summary>"));
    // Three tables in all (one in the drill-down), each with a filter box and sortable headers.
    assert_eq!(html.matches("<table class=\"sortable\">").count(), 2);
    assert_eq!(html.matches("<input class=\"filter\"").count(), 2);
    assert!(html.contains("<input class=\"group-filter\""));
    assert!(html.contains("<th data-col=\"1\""));
    assert!(html.contains("id=\"group-1\"") && html.contains("id=\"table-2\""));
}

#[test]
fn text_from_a_session_never_becomes_markup() {
    let html = render(&page());
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("<img"));
    assert!(!html.contains("<b>not bold"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x"));
    assert!(html.contains("&lt;/pre&gt;&lt;b&gt;not bold&lt;/b&gt;"));
    assert!(html.contains("run &lt;1&gt; &amp; co"));
    assert!(
        !html.contains('\u{1b}'),
        "control characters are shown, not passed"
    );
    assert!(html.contains("\u{241b}[31mred"));
    // Exactly one script element: the page's own.
    assert_eq!(html.matches("<script>").count(), 1);
    assert_eq!(escape("a\"b'c"), "a&quot;b&#39;c");
}

#[test]
fn the_same_input_gives_the_same_bytes_and_nothing_is_fetched() {
    let a = render(&page());
    let b = render(&page());
    assert_eq!(a, b);
    for external in ["http://", "https://", "src=", "<link", "@import"] {
        let hits: Vec<&str> = a
            .match_indices(external)
            .map(|(i, _)| &a[i.saturating_sub(40)..(i + 40).min(a.len())])
            .filter(|ctx| !ctx.contains("xmlns=\"http://www.w3.org/2000/svg\""))
            .filter(|ctx| !ctx.contains("&lt;img src=x"))
            .collect();
        assert!(hits.is_empty(), "{external}: {hits:?}");
    }
}

#[test]
fn a_series_with_more_requests_sets_the_axis_and_marks_sit_on_their_line() {
    let c = Chart {
        x_label: "x".into(),
        y_label: "y".into(),
        series: vec![
            series("none", &[10, 20, 30], vec![]),
            series(
                "fold",
                &[10],
                vec![Mark {
                    at: 5,
                    kind: MarkKind::Fold,
                    note: "past the end".into(),
                }],
            ),
        ],
    };
    let svg = chart_svg(&c);
    assert_eq!(svg.matches("class=\"series\"").count(), 2);
    assert_eq!(
        svg.matches("class=\"mark").count(),
        0,
        "a mark past the line is not drawn"
    );
    assert!(
        svg.contains("class=\"dot\""),
        "a one-request series stays visible"
    );
    assert_eq!(cut("abcdef", 3), "abc… (6 characters)");
    assert_eq!(cut("abc", 3), "abc");
}
