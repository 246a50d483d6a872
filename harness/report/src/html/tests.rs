use super::chart::same_as;
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
        spans: Vec::new(),
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
        spans: Vec::new(),
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

#[test]
fn the_first_column_of_every_table_stays_in_view_when_it_scrolls() {
    let html = render(&page());
    // The first cell of each row and its header are sticky at the left of the scroll box.
    assert!(html.contains("tbody td:first-child { position: sticky; left: 0;"));
    assert!(html.contains("thead th:first-child { position: sticky; left: 0;"));
    assert!(html.contains(".scroll { overflow-x: auto;"));
}

#[test]
fn raw_numbers_in_a_table_are_formatted_by_their_column() {
    let t = Table {
        headers: vec![
            "id".into(),
            "median req".into(),
            "req ÷ none".into(),
            "cost $".into(),
            "sha256".into(),
        ],
        rows: vec![vec![
            "long-session/fold/sim/1".into(),
            "12345.5".into(),
            "0.8717454194792671".into(),
            "0.012345678".into(),
            "1234".into(),
        ]],
    };
    let html = render(&Page {
        blocks: vec![Block::Table {
            title: "Cells".into(),
            table: t,
        }],
        ..Default::default()
    });
    assert!(!html.contains("0.8717454194792671"), "{html}");
    assert!(html.contains("<td>12,345.5</td>"), "{html}");
    assert!(html.contains("<td>0.87×</td>"));
    assert!(html.contains("<td>$0.0123</td>"));
    assert!(
        html.contains("<td>1234</td>"),
        "a digest column is kept as it is"
    );
}

#[test]
fn the_first_chart_is_the_largest_group_not_the_first_by_name() {
    let group = |title: &str, sizes: &[u64]| Group {
        title: title.into(),
        chart: Some(Chart {
            spans: Vec::new(),
            series: vec![series("none", sizes, vec![])],
            ..Default::default()
        }),
        ..Default::default()
    };
    let html = render(&Page {
        blocks: vec![Block::Groups {
            title: "Sessions".into(),
            groups: vec![
                group("aaaa small", &[10, 20]),
                group("mmmm largest", &[500, 900, 1200]),
                group("zzzz middle", &[100, 200]),
            ],
        }],
        ..Default::default()
    });
    let at = |t: &str| html.find(&format!("<h3>{t}</h3>")).unwrap();
    assert!(at("mmmm largest") < at("zzzz middle"), "{html}");
    assert!(at("zzzz middle") < at("aaaa small"));
    assert_eq!(group_weight(&group("x", &[500, 900, 1200])), 2600);
}

#[test]
fn a_line_on_another_is_ringed_and_the_legend_shows_each_dash_and_says_so() {
    let c = Chart {
        spans: Vec::new(),
        series: vec![
            series("none", &[10, 20, 30], vec![]),
            series("fold", &[10, 15, 12], vec![]),
            series("fold+strategies", &[10, 15, 12], vec![]),
        ],
        ..Default::default()
    };
    let svg = chart_svg(&c);
    assert_eq!(same_as(&c, 2), Some("fold"));
    assert_eq!(same_as(&c, 1), None);
    assert_eq!(svg.matches("class=\"dot same\"").count(), 3, "{svg}");
    assert!(svg.contains("the same requests as fold"));
    // Each key's swatch has its line's dash pattern (the third: "3 3").
    assert_eq!(svg.matches("<svg class=\"swatch\"").count(), 3);
    assert!(svg.contains("stroke-dasharray=\"3 3\"/></svg>fold+strategies"));
}

#[test]
fn savings_sit_beside_loss_and_the_label_stays_first() {
    let t = Table {
        headers: [
            "arm",
            "success",
            "lost",
            "median req",
            "folds",
            "Σ× none",
            "hidden",
            "cost $",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
        rows: vec![["fold", "3/3", "1", "900", "2", "0.62", "4", "0.0100"]
            .iter()
            .map(|h| h.to_string())
            .collect()],
    };
    let r = savings_beside_loss(&t);
    assert_eq!(
        r.headers,
        [
            "arm",
            "success",
            "median req",
            "Σ× none",
            "cost $",
            "lost",
            "hidden",
            "folds"
        ]
    );
    assert_eq!(
        r.rows[0],
        ["fold", "3/3", "900", "0.62", "0.0100", "1", "4", "2"]
    );
}
