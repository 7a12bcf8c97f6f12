//! Rules that look at request headers and message text, so one script can answer a
//! summarisation request with a summary and a turn request with its tool call.

use dsh_testkit::mock_llm::{MockServer, Reply, RuleMatch, Script, Served};
use serde_json::{json, Value};
use std::path::PathBuf;

use super::mock_client::{chat_body, RawClient};

fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect()
}

fn summary_script() -> Script {
    Script::new()
        .rule(
            RuleMatch::any().header("X-DeepSeek-Harness-Compact", "1"),
            Reply::text("## Current Work\n- by header"),
        )
        .rule(
            RuleMatch::any().last_message_contains("compaction engine"),
            Reply::text("## Current Work\n- by instruction"),
        )
        .rule(
            RuleMatch::any().message_contains("<compacted-summary>"),
            Reply::text("after a checkpoint"),
        )
        .respond(Reply::tool_call("read", json!({"file_path": "a.txt"})))
        .respond(Reply::tool_call("read", json!({"file_path": "b.txt"})))
}

#[tokio::test]
async fn headers_and_message_text_pick_rules_and_requests_keep_their_headers() {
    let server = MockServer::start(summary_script()).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let turn = chat_body(true);
    let mut instructed = chat_body(true);
    instructed["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": [
            {"type": "text", "text": "You are now a compaction engine."}
        ]}));
    let mut checkpointed = chat_body(true);
    checkpointed["messages"][1]["content"] =
        json!("Resume.\n\n<compacted-summary>## x</compacted-summary>");

    let mut texts = Vec::new();
    for (body, headers) in [
        (&turn, &[][..]),
        (&turn, &[("x-deepseek-harness-compact", "1")][..]),
        (&turn, &[("x-deepseek-harness-compact", "0")][..]),
        (&instructed, &[][..]),
        (&checkpointed, &[][..]),
    ] {
        client
            .send("POST", "/chat/completions", Some(body), headers)
            .await;
        let response = client.read_response().await.unwrap();
        assert_eq!(response.status, 200, "{body}");
        texts.push(text_of(&response.events()));
    }
    assert_eq!(
        texts,
        [
            "",
            "## Current Work\n- by header",
            "",
            "## Current Work\n- by instruction",
            "after a checkpoint",
        ]
    );
    let requests = server.requests();
    let served: Vec<Served> = requests.iter().map(|r| r.served.clone()).collect();
    assert_eq!(
        served,
        [
            Served::Response { index: 0 },
            Served::Rule { index: 0 },
            Served::Response { index: 1 },
            Served::Rule { index: 1 },
            Served::Rule { index: 2 },
        ]
    );
    let compact: Vec<Option<&str>> = requests
        .iter()
        .map(|r| r.header("x-deepseek-harness-compact"))
        .collect();
    assert_eq!(compact, [None, Some("1"), Some("0"), None, None]);
    server.shutdown().await;
}

#[test]
fn header_and_text_conditions_round_trip_through_json() {
    let script: Script = serde_json::from_value(json!({
        "rules": [
            {"match": {"header": {"x-deepseek-harness-compact": "1"}}, "response": {"text": "s"}},
            {"match": {"headers": {"x-a": "b"}, "message_contains": "c", "last_message_contains": "d"},
             "response": {"text": "t"}},
        ],
        "responses": []
    }))
    .unwrap();
    assert!(script.warnings().is_empty(), "{:?}", script.warnings());
    assert_eq!(
        script.rules[0].matcher,
        RuleMatch::any().header("x-deepseek-harness-compact", "1")
    );
    assert_eq!(
        script.rules[1].matcher,
        RuleMatch::any()
            .header("x-a", "b")
            .message_contains("c")
            .last_message_contains("d")
    );
    let back = serde_json::to_value(&script).unwrap();
    assert_eq!(
        back["rules"][1]["match"],
        json!({"header": {"x-a": "b"}, "message_contains": "c", "last_message_contains": "d"})
    );
}

/// The compaction fixture's script answers by header; it loads without warnings, so its
/// summary rule is a real condition rather than an ignored key that matches everything.
#[tokio::test]
async fn the_compaction_fixture_script_answers_summaries_by_header() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0-compaction/script.json");
    let script = Script::load(&path).unwrap();
    assert!(script.warnings().is_empty(), "{:?}", script.warnings());
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    client
        .send(
            "POST",
            "/chat/completions",
            Some(&chat_body(true)),
            &[("x-deepseek-harness-compact", "1")],
        )
        .await;
    let summary = client.read_response().await.unwrap();
    assert!(
        text_of(&summary.events()).starts_with("## Primary Request and Intent\n"),
        "{:?}",
        summary.events()
    );
    let turn = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    let call = turn.events().iter().find_map(|e| {
        e.pointer("/choices/0/delta/tool_calls/0/function/name")
            .cloned()
    });
    assert_eq!(call, Some(json!("read")));
    server.shutdown().await;
}
