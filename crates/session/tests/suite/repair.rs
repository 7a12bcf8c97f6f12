//! Crash repair of an open tail turn.

use super::common::*;
use dsh_protocol::ContentBlock;
use dsh_session::*;
use serde_json::json;
use std::sync::Arc;

#[test]
fn an_open_turn_gets_results_step_end_and_turn_end() {
    let session = session("s");
    tool_turn(&session, 1);
    session.append(turn_start(2), log_only()).unwrap(); // 11
    session.append(step_start(2, 1), log_only()).unwrap(); // 12
    session.append(user("u2", "go"), surface()).unwrap(); // 13
    session
        .append(
            assistant(
                2,
                1,
                "a2",
                vec![
                    ContentBlock::text("two calls"),
                    call_block("c1"),
                    call_block("c2"),
                ],
            ),
            surface().sources(vec![]),
        )
        .unwrap(); // 14
    session.append(tool_call(2, 1, "c1"), log_only()).unwrap(); // 15
    let events = session.events();
    let closers = interrupted_turn_closers(&events);
    assert_eq!(
        serde_json::to_value(&closers).unwrap(),
        json!([
            {"type": "tool/result", "seq": 16, "time": TIME, "sourceEventSeqs": [15], "surfaceOp": "append",
             "data": {"turn": 2, "step": 1,
                "message": {"id": "interrupted-tool-result-c1-16", "role": "user",
                    "content": [{"type": "tool-result", "toolCallId": "c1", "isError": true,
                        "content": [{"type": "text", "text": TOOL_OUTCOME_UNKNOWN_TEXT}]}],
                    "source": {"kind": "tool", "callId": "c1"}},
                "error": {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}}},
            {"type": "tool/result", "seq": 17, "time": TIME, "surfaceOp": "append",
             "data": {"turn": 2, "step": 1,
                "message": {"id": "interrupted-tool-result-c2-17", "role": "user",
                    "content": [{"type": "tool-result", "toolCallId": "c2", "isError": true,
                        "content": [{"type": "text", "text": TOOL_NOT_STARTED_TEXT}]}],
                    "source": {"kind": "tool", "callId": "c2"}},
                "error": {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}}},
            {"type": "step/end", "seq": 18, "time": TIME, "data": {"turn": 2, "step": 1}},
            {"type": "turn/end", "seq": 19, "time": TIME, "data": {"turn": 2, "reason": {"kind": "interrupted"}}},
        ])
    );
    // The repaired log is a valid seed, balanced, and its history pairs every call.
    let mut repaired = events.to_vec();
    repaired.extend(closers.into_iter().map(Arc::new));
    assert!(interrupted_turn_closers(&repaired).is_empty());
    let resumed = seeded("r", repaired).unwrap();
    let ids: Vec<String> = resumed
        .derive_messages()
        .iter()
        .map(|m| m.id.to_string())
        .collect();
    assert_eq!(
        &ids[4..],
        [
            "u2",
            "a2",
            "interrupted-tool-result-c1-16",
            "interrupted-tool-result-c2-17"
        ]
    );
}

#[test]
fn a_turn_without_a_step_gets_only_its_turn_end() {
    let session = session("s");
    session.append(turn_start(1), log_only()).unwrap();
    session
        .append(
            EventData::other("session/title", json!({"title": "t"})),
            log_only(),
        )
        .unwrap();
    let closers = interrupted_turn_closers(&session.events());
    assert_eq!(
        serde_json::to_value(&closers).unwrap(),
        json!([{"type": "turn/end", "seq": 2, "time": TIME, "data": {"turn": 1, "reason": {"kind": "interrupted"}}}])
    );
}

#[test]
fn balanced_and_empty_logs_need_nothing() {
    assert!(interrupted_turn_closers(&[]).is_empty());
    let session = session("s");
    tool_turn(&session, 1);
    session
        .append(
            EventData::other("sandbox/mode", json!({"mode": "x"})),
            log_only(),
        )
        .unwrap();
    assert!(interrupted_turn_closers(&session.events()).is_empty());
}
