//! Every `script.json` shipped with the dsh 0.1.0 fixtures loads and serves its first reply
//! (and its title rule) the way the original fake server did.

use std::path::PathBuf;

use dsh_testkit::mock_llm::{wire_arguments, MockServer, Script};
use serde_json::{json, Value};

use super::mock_client::{chat_body, RawClient};

/// The fixtures live in `shared/` beside the repository clone (as in CI).
fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0")
}

fn fixture_scripts() -> Vec<PathBuf> {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path().join("script.json"))
        .filter(|path| path.is_file())
        .collect();
    scripts.sort();
    scripts
}

/// Concatenated delta strings of one kind.
fn joined(events: &[Value], pointer: &str) -> String {
    events
        .iter()
        .filter_map(|e| e.pointer(pointer).and_then(Value::as_str))
        .collect()
}

fn count(events: &[Value], pointer: &str) -> usize {
    events
        .iter()
        .filter(|e| e.pointer(pointer).is_some())
        .count()
}

#[tokio::test]
async fn every_fixture_script_serves_its_first_response() {
    let scripts = fixture_scripts();
    assert!(scripts.len() >= 6, "found {scripts:?}");
    for path in scripts {
        let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let script = Script::load(&path).unwrap();
        assert!(
            script.warnings().is_empty(),
            "{path:?}: {:?}",
            script.warnings()
        );
        let server = MockServer::start(script).await.unwrap();
        let mut client = RawClient::connect(server.addr()).await;
        let first = &raw["responses"][0];
        let response = client
            .request("POST", "/chat/completions", Some(&chat_body(true)))
            .await;
        if let Some(status) = first.get("status") {
            assert_eq!(Value::from(response.status), *status, "{path:?}");
            assert_eq!(
                response.json(),
                json!({"error": {"message": first["error_message"], "type": first["error_type"],
                                 "code": first["error_code"]}}),
                "{path:?}"
            );
        } else {
            let events = response.events();
            let chunks = first.get("chunks").and_then(Value::as_u64).unwrap_or(1) as usize;
            for (field, pointer) in [
                ("reasoning", "/choices/0/delta/reasoning_content"),
                ("text", "/choices/0/delta/content"),
            ] {
                let expected = first.get(field).and_then(Value::as_str).unwrap_or("");
                assert_eq!(joined(&events, pointer), expected, "{path:?} {field}");
                let pieces = if expected.is_empty() {
                    0
                } else {
                    chunks.min(expected.chars().count())
                };
                assert_eq!(count(&events, pointer), pieces, "{path:?} {field} pieces");
            }
            let calls: Vec<Value> = match (first.get("tool_call"), first.get("tool_calls")) {
                (Some(one), _) => vec![one.clone()],
                (None, Some(many)) => many.as_array().unwrap().clone(),
                (None, None) => Vec::new(),
            };
            for (i, call) in calls.iter().enumerate() {
                let args: String = events
                    .iter()
                    .filter_map(|e| e.pointer("/choices/0/delta/tool_calls/0"))
                    .filter(|c| c["index"] == json!(i))
                    .filter_map(|c| c.pointer("/function/arguments").and_then(Value::as_str))
                    .collect();
                assert_eq!(
                    args,
                    wire_arguments(&call["arguments"]),
                    "{path:?} call {i}"
                );
            }
            let reason = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            let reasons: Vec<&Value> = events
                .iter()
                .filter_map(|e| e.pointer("/choices/0/finish_reason"))
                .filter(|r| !r.is_null())
                .collect();
            assert_eq!(reasons, vec![&json!(reason)], "{path:?}");
            assert_eq!(events.last(), Some(&json!("[DONE]")), "{path:?}");
        }
        // The session-title request is answered by the rule.
        let mut title = chat_body(true);
        title.as_object_mut().unwrap().remove("tools");
        title["max_tokens"] = json!(64);
        let response = client
            .request("POST", "/chat/completions", Some(&title))
            .await;
        assert_eq!(
            joined(&response.events(), "/choices/0/delta/content"),
            raw["rules"][0]["response"]["text"].as_str().unwrap(),
            "{path:?}"
        );
        server.shutdown().await;
    }
}

/// The bash fixture's log recorded the original server's argument pieces; ours match.
#[tokio::test]
async fn bash_fixture_pieces_match_the_recorded_log() {
    let server = MockServer::start(Script::load(fixtures_dir().join("bash/script.json")).unwrap())
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let events = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await
        .events();
    let pieces = |pointer: &str| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| e.pointer(pointer).and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        pieces("/choices/0/delta/tool_calls/0/function/arguments"),
        [
            r#"{"command": "cat notes"#,
            r#".txt", "description": "#,
            r#""Show the notes file"}"#
        ]
    );
    assert_eq!(
        pieces("/choices/0/delta/content"),
        ["Let me p", "rint th", "e file."]
    );
    let usage = events.iter().find_map(|e| e.get("usage")).unwrap();
    assert_eq!(
        (
            &usage["completion_tokens"],
            &usage["completion_tokens_details"]["reasoning_tokens"]
        ),
        (&json!(36), &json!(15))
    );
    server.shutdown().await;
}
