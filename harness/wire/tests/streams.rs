//! Streams of each API: an answer written as events reads back as the same answer, in pieces of
//! any size; a cut stream is not done; parts move when a host leaves one out.

use harness_core::ToolCall;
use harness_core::Usage;
use harness_wire::Answer;
use harness_wire::Api;
use harness_wire::SseParser;
use harness_wire::{error_event, rewrite, write_stream, EventRole, StreamDecoder};
use serde_json::json;

fn answer(api: Api) -> Answer {
    let calls = vec![
        ToolCall {
            id: "c1".into(),
            name: "fold_unit".into(),
            args: json!({"from": 1, "to": 2}),
        },
        ToolCall {
            id: "c2".into(),
            name: "Read".into(),
            args: json!({"file_path": "a.py"}),
        },
    ];
    let usage = Usage {
        input_tokens: 100,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        output_tokens: 9,
    };
    Answer::from_parts(
        api,
        "a1",
        "model-x",
        "Folding, then reading.",
        calls,
        Some(usage),
    )
}

fn stream_bytes(api: Api, a: &Answer) -> String {
    write_stream(api, a)
        .iter()
        .map(|e| harness_wire::write_event(e.event.as_deref(), &e.data))
        .collect()
}

#[test]
fn a_written_stream_reads_back_as_its_answer_in_pieces_of_any_size() {
    for api in [Api::Anthropic, Api::Chat, Api::Responses] {
        let a = answer(api);
        let text = stream_bytes(api, &a);
        for step in [1, 7, 64, text.len()] {
            let mut parser = SseParser::new();
            let mut dec = StreamDecoder::new(api);
            let mut roles = Vec::new();
            for piece in text.as_bytes().chunks(step) {
                for ev in parser.feed(piece).unwrap() {
                    roles.push(dec.decode(&ev).unwrap());
                }
            }
            assert!(dec.done(), "{api:?}");
            let back = dec.answer();
            assert_eq!(back.text, a.text, "{api:?}");
            assert_eq!(back.calls, a.calls, "{api:?}");
            assert_eq!(back.usage.map(|u| u.output_tokens), Some(9), "{api:?}");
            assert_eq!(roles.first(), Some(&EventRole::Start), "{api:?}");
            assert_eq!(roles.last(), Some(&EventRole::Finish), "{api:?}");
            let fold_part = roles
                .iter()
                .find_map(|r| match r {
                    EventRole::Part(i) if dec.call(*i).is_some_and(|c| c.1 == "fold_unit") => {
                        Some(*i)
                    }
                    _ => None,
                })
                .expect("the fold_unit part is named");
            assert_eq!(dec.call(fold_part).unwrap().0, "c1");
        }
    }
}

#[test]
fn a_cut_stream_is_not_done_and_what_came_is_kept() {
    for api in [Api::Anthropic, Api::Chat, Api::Responses] {
        let text = stream_bytes(api, &answer(api));
        let cut = &text.as_bytes()[..text.len() / 2];
        let mut parser = SseParser::new();
        let mut dec = StreamDecoder::new(api);
        for ev in parser.feed(cut).unwrap() {
            dec.decode(&ev).unwrap();
        }
        assert!(!dec.done(), "{api:?}");
        let err = error_event(api, "the upstream closed the stream");
        let role = StreamDecoder::new(api).decode(&err).unwrap();
        assert!(
            matches!(role, EventRole::Error(ref m) if m.contains("closed")),
            "{api:?}: {role:?}"
        );
    }
}

#[test]
fn rewriting_moves_parts_and_drops_a_hosts_call_from_the_final_event() {
    let api = Api::Anthropic;
    let events = write_stream(api, &answer(api));
    let moved = rewrite(api, &events[1], &|i| i + 3, &[], None);
    assert!(moved.data.contains("\"index\":3"), "{}", moved.data);
    let untouched = rewrite(api, &events[0], &|i| i + 3, &[], None);
    assert_eq!(untouched, events[0]);
    let api = Api::Responses;
    let events = write_stream(api, &answer(api));
    let last = events.last().unwrap();
    let dropped = rewrite(api, last, &|i| i, &["c1".into()], Some(40));
    let v: serde_json::Value = serde_json::from_str(&dropped.data).unwrap();
    assert_eq!(v["sequence_number"], 40);
    let output = v["response"]["output"].as_array().unwrap();
    assert!(output.iter().all(|it| it["call_id"] != "c1"), "{output:?}");
    assert_eq!(output.len(), 2);
}
