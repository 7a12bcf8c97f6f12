//! `log_json` turns a live session's log into a stable value for whole-log assertions.

use std::sync::Arc;

use dsh_protocol::{Message, SessionId};
use dsh_session::{
    AppendOptions, EventData, InboxSplice, InboxTarget, Session, SessionHeader, StepBoundary,
    TurnStart,
};
use dsh_testkit::normalize::log_json;
use serde_json::json;

use super::checks_fixtures::{fixture_logs, load_events};

#[test]
fn a_live_log_compares_as_one_value() {
    let session = Session::new(SessionHeader::new(SessionId::from("s"), 1)).unwrap();
    let prompt = Arc::new(Message::user_text("hello"));
    let append = |data, opts| session.append(data, opts).unwrap();
    append(
        EventData::InboxSpliced(InboxSplice {
            target: InboxTarget::NextTurn,
            start: 0,
            removed_count: 0,
            inserted: vec![prompt.clone()],
            outcome: None,
        }),
        AppendOptions::log_only(),
    );
    append(
        EventData::TurnStart(TurnStart { turn: 1 }),
        AppendOptions::log_only(),
    );
    append(
        EventData::StepStart(StepBoundary { turn: 1, step: 1 }),
        AppendOptions::log_only(),
    );
    append(
        EventData::UserMessage(prompt),
        AppendOptions::surface_append(),
    );
    append(
        EventData::UserMessage(Arc::new(Message::user_text("more"))),
        AppendOptions::surface_append(),
    );
    let hello = json!({"id": "<id-1>", "role": "user",
        "content": [{"type": "text", "text": "hello"}], "source": {"kind": "user"}});
    assert_eq!(
        log_json(&session.events()),
        json!([
            {"type": "agent/inbox/spliced", "seq": 0,
             "data": {"target": "next-turn", "start": 0, "inserted": [hello]}},
            {"type": "turn/start", "seq": 1, "data": {"turn": 1}},
            {"type": "step/start", "seq": 2, "data": {"turn": 1, "step": 1}},
            {"type": "user/message", "seq": 3, "data": hello, "surfaceOp": "append"},
            {"type": "user/message", "seq": 4, "surfaceOp": "append",
             "data": {"id": "<id-2>", "role": "user",
                      "content": [{"type": "text", "text": "more"}], "source": {"kind": "user"}}},
        ])
    );
}

#[test]
fn fixture_logs_lose_times_and_keep_id_links() {
    let path = fixture_logs()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("/retry/"))
        .unwrap();
    let value = log_json(&load_events(&path));
    let events = value.as_array().unwrap();
    assert!(events.iter().all(|e| e.get("time").is_none()));
    let retry = events.iter().find(|e| e["type"] == "llm/retry").unwrap();
    let started = events
        .iter()
        .find(|e| e["type"] == "llm/retry-started")
        .unwrap();
    assert_eq!(retry["data"]["retryId"], started["data"]["retryId"]);
    assert!(retry["data"]["retryId"]
        .as_str()
        .unwrap()
        .starts_with("<id-"));
    // The prompt's id is the first UUID of the log (in its inbox splice), and the entered
    // user/message carries the same placeholder.
    assert_eq!(events[3]["data"]["inserted"][0]["id"], "<id-1>");
    assert_eq!(events[7]["data"]["id"], "<id-1>");
}
