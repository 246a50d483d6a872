use super::*;
use crate::message::MessageKind;

/// Asks to compact whenever the context holds more than one message.
struct Squeezer;

impl Policy for Squeezer {
    fn name(&self) -> String {
        "squeezer".into()
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        if ctx.messages.len() > 1 {
            Plan::Compact { emergency: true }
        } else {
            Plan::Send {
                messages: ctx.messages.clone(),
                action: None,
            }
        }
    }
}

fn summary(t: u32) -> Arc<Message> {
    Message::host(t, "Summary.\n- done", MessageKind::Summary)
}

#[test]
fn a_request_compacts_at_most_once_and_then_sends_the_context_as_it_is() {
    let mut d = Driver::new(Box::new(Squeezer), 10);
    d.start_turn(1);
    d.push(Message::user(1, "first", None));
    d.push(Message::assistant(1, "ok", Vec::new()));
    let Next::Summarise(s) = d.next_request() else {
        panic!("two messages: the policy compacts")
    };
    assert_eq!(s.action(), "emergency compaction");
    assert_eq!(
        s.messages.last().map(|m| m.text.as_str()),
        Some(COMPACTION_PROMPT)
    );
    assert_eq!(s.messages.len(), 3, "the context and the prompt");
    d.compacted(&s.messages, summary(1));
    // The summary and the current prompt: still two, so the policy asks again.
    match d.next_request() {
        Next::Send { messages, action } => {
            assert_eq!(messages.len(), 2);
            assert_eq!(action.as_deref(), Some(COMPACTION_DID_NOT_FIT));
        }
        Next::Summarise(_) => panic!("a second compaction in one request"),
    }
    // The next request may compact again.
    assert!(matches!(d.next_request(), Next::Summarise(_)));
}

#[test]
fn a_policy_without_tools_answers_none_and_a_splice_of_a_gone_range_says_so() {
    let mut d = Driver::new(Box::new(Squeezer), 0);
    let call = ToolCall {
        id: "c1".into(),
        name: "fold_unit".into(),
        args: serde_json::json!({"from": 1, "to": 1}),
    };
    assert!(d.tool(&call).is_none());
    assert!(d.end_turn("a", None).is_empty());
    let splice = Splice {
        from: 1,
        to: 1,
        messages: Vec::new(),
        kind: SpliceKind::Fold,
    };
    let archived = archive_splice("a", &splice);
    assert_eq!(archived.kind, "fold");
    let p = PendingSplice { splice, archived };
    let err = d.apply_splice(&p, None).unwrap_err();
    assert_eq!(err.to_string(), "turns 1–1 are no longer in the context");
}
