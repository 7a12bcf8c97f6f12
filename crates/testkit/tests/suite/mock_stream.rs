//! Successful streamed and non-streamed completions: exact payload sequences.

use dsh_testkit::mock_llm::{
    default_call_id, CacheField, MockServer, Reply, Script, UsageSpec, CREATED,
};
use serde_json::{json, Value};

use super::mock_client::{
    chat_body, default_usage, delta, finish, usage, BodyEnd, RawClient, MODEL,
};

async fn serve(script: Script) -> (MockServer, RawClient) {
    let server = MockServer::start(script).await.unwrap();
    let client = RawClient::connect(server.addr()).await;
    (server, client)
}

#[tokio::test]
async fn text_is_split_into_deltas_then_finish_usage_done() {
    let (server, mut client) =
        serve(Script::new().respond(Reply::text("Hello world").chunks(3))).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("transfer-encoding"), Some("chunked"));
    assert_eq!(response.end, BodyEnd::Complete);
    assert_eq!(
        response.events(),
        vec![
            delta(0, json!({"role": "assistant", "content": "Hell"})),
            delta(0, json!({"content": "o wo"})),
            delta(0, json!({"content": "rld"})),
            finish(0, "stop"),
            usage(0, default_usage(2, 0)),
            json!("[DONE]"),
        ]
    );
    // The exact bytes of one event, so SSE framing itself is pinned.
    let text = String::from_utf8(response.body.clone()).unwrap();
    assert!(text.ends_with("\n\ndata: [DONE]\n\n"), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn reasoning_then_text_with_keep_alive_between_requests() {
    let script = Script::new()
        .respond(Reply::text("Hi!").with_reasoning("Greet them.").chunks(2))
        .respond(Reply::text("Again").delay_ms(1).head_delay_ms(1));
    let (server, mut client) = serve(script).await;
    let first = client
        .request("POST", "/v1/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(
        first.events(),
        vec![
            delta(
                0,
                json!({"role": "assistant", "reasoning_content": "Greet "})
            ),
            delta(0, json!({"reasoning_content": "them."})),
            delta(0, json!({"content": "Hi"})),
            delta(0, json!({"content": "!"})),
            finish(0, "stop"),
            usage(0, default_usage(2, 2)),
            json!("[DONE]"),
        ]
    );
    // Same connection, second request.
    let second = client
        .request("POST", "/v1/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(
        second.events(),
        vec![
            delta(1, json!({"role": "assistant", "content": "Again"})),
            finish(1, "stop"),
            usage(1, default_usage(1, 0)),
            json!("[DONE]"),
        ]
    );
    assert_eq!(server.requests().len(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn tool_call_arguments_split_over_deltas() {
    let args = json!({"command": "cat notes.txt"});
    let script = Script::new().respond(Reply::tool_call("bash", args).arg_chunks(3));
    let (server, mut client) = serve(script).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    let wire = r#"{"command": "cat notes.txt"}"#;
    let id = default_call_id(0, 0, "bash", wire);
    assert_eq!(
        response.events(),
        vec![
            delta(
                0,
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": "bash", "arguments": r#"{"command""#}}]})
            ),
            delta(
                0,
                json!({"tool_calls": [{"index": 0, "function": {"arguments": r#": "cat no"#}}]})
            ),
            delta(
                0,
                json!({"tool_calls": [{"index": 0, "function": {"arguments": r#"tes.txt"}"#}}]})
            ),
            finish(0, "tool_calls"),
            usage(0, default_usage(7, 0)),
            json!("[DONE]"),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn two_parallel_tool_calls_stream_one_after_another() {
    let reply = Reply::text("Reading.")
        .with_tool_call("read", json!({"p": "a"}))
        .with_tool_call("read", json!({"p": "b"}))
        .arg_chunks(2);
    let (server, mut client) = serve(Script::new().respond(reply)).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    let (a, b) = (r#"{"p": "a"}"#, r#"{"p": "b"}"#);
    let (id_a, id_b) = (
        default_call_id(0, 0, "read", a),
        default_call_id(0, 1, "read", b),
    );
    assert_ne!(id_a, id_b);
    assert_eq!(
        response.events(),
        vec![
            delta(0, json!({"role": "assistant", "content": "Reading."})),
            delta(
                0,
                json!({"tool_calls": [{"index": 0, "id": id_a, "type": "function",
                "function": {"name": "read", "arguments": r#"{"p":"#}}]})
            ),
            delta(
                0,
                json!({"tool_calls": [{"index": 0, "function": {"arguments": r#" "a"}"#}}]})
            ),
            delta(
                0,
                json!({"tool_calls": [{"index": 1, "id": id_b, "type": "function",
                "function": {"name": "read", "arguments": r#"{"p":"#}}]})
            ),
            delta(
                0,
                json!({"tool_calls": [{"index": 1, "function": {"arguments": r#" "b"}"#}}]})
            ),
            finish(0, "tool_calls"),
            usage(0, default_usage(2 + 2 + 2, 0)),
            json!("[DONE]"),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn finish_reason_and_usage_overrides_and_usage_only_when_asked() {
    let script = Script::new()
        .respond(Reply::text("cut").finish_reason("length").usage(UsageSpec {
            prompt_tokens: Some(1000),
            completion_tokens: Some(5),
            cached_tokens: Some(600),
            reasoning_tokens: Some(2),
            cache_field: CacheField::Openai,
        }))
        .respond(Reply::text("blocked").finish_reason("content_filter"));
    let (server, mut client) = serve(script).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(
        response.events(),
        vec![
            delta(0, json!({"role": "assistant", "content": "cut"})),
            finish(0, "length"),
            usage(
                0,
                json!({"prompt_tokens": 1000, "completion_tokens": 5, "total_tokens": 1005,
                "prompt_tokens_details": {"cached_tokens": 600},
                "completion_tokens_details": {"reasoning_tokens": 2}})
            ),
            json!("[DONE]"),
        ]
    );
    let mut no_usage = chat_body(true);
    no_usage.as_object_mut().unwrap().remove("stream_options");
    let response = client
        .request("POST", "/chat/completions", Some(&no_usage))
        .await;
    assert_eq!(
        response.events(),
        vec![
            delta(1, json!({"role": "assistant", "content": "blocked"})),
            finish(1, "content_filter"),
            json!("[DONE]"),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn non_stream_request_gets_one_json_completion() {
    let reply = Reply::text("Done.")
        .with_reasoning("Think")
        .with_tool_call("read", json!({"p": 1}));
    let (server, mut client) = serve(Script::new().respond(reply)).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(false)))
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let args = r#"{"p": 1}"#;
    assert_eq!(
        response.json(),
        json!({
            "id": "chatcmpl-mock-0", "object": "chat.completion", "created": CREATED, "model": MODEL,
            "choices": [{"index": 0, "message": {
                "role": "assistant", "content": "Done.", "reasoning_content": "Think",
                "tool_calls": [{"id": default_call_id(0, 0, "read", args), "type": "function",
                                "function": {"name": "read", "arguments": args}}]},
                "finish_reason": "tool_calls"}],
            "usage": default_usage(1 + 1 + 2, 1)
        })
    );
    server.shutdown().await;
}

#[tokio::test]
async fn explicit_ids_and_verbatim_argument_strings_pass_through() {
    let mut reply = Reply::tool_call("edit", Value::from("{not json"));
    reply.tool_calls[0].id = Some("call-fixed".into());
    let (server, mut client) = serve(Script::new().respond(reply)).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(
        response.events()[0],
        delta(
            0,
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call-fixed", "type": "function",
            "function": {"name": "edit", "arguments": "{not json"}}]})
        )
    );
    server.shutdown().await;
}
