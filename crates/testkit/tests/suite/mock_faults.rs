//! Transport and framing faults, observed at the byte level.

use std::time::Duration;

use dsh_testkit::mock_llm::{
    Fault, MockServer, Reply, Script, ENDLESS_DELTA, ENDLESS_LINE_START, MALFORMED_PAYLOAD,
};
use serde_json::json;

use super::mock_client::{chat_body, default_usage, delta, finish, usage, BodyEnd, RawClient};

/// Three text deltas ("abc" in three chunks), plus finish and usage: five events.
fn three_deltas() -> Reply {
    Reply::text("abc").chunks(3)
}

async fn one_stream(reply: Reply) -> (MockServer, RawClient, super::mock_client::RawResponse) {
    let server = MockServer::start(Script::new().respond(reply))
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    client.idle_limit = Duration::from_millis(300);
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    (server, client, response)
}

#[tokio::test]
async fn reset_mid_stream_after_n_chunks() {
    let (server, _client, response) = one_stream(three_deltas().with_fault(Fault::Reset {
        after_chunks: Some(2),
    }))
    .await;
    assert_eq!(response.end, BodyEnd::Reset);
    assert_eq!(
        response.events(),
        vec![
            delta(0, json!({"role": "assistant", "content": "a"})),
            delta(0, json!({"content": "b"})),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn stall_keeps_the_socket_open_until_shutdown() {
    let server = MockServer::start(Script::new().respond(three_deltas().with_fault(
        Fault::Stall {
            after_chunks: Some(1),
        },
    )))
    .await
    .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    client
        .send("POST", "/chat/completions", Some(&chat_body(true)), &[])
        .await;
    // Wait (as long as it takes) for the one event, then check that nothing more comes.
    let response = client.read_events(1).await;
    client.idle_limit = Duration::from_millis(300);
    assert_eq!(
        response.events(),
        vec![delta(0, json!({"role": "assistant", "content": "a"}))]
    );
    // Still open (nothing arrives), then closed once the server shuts down.
    assert_eq!(client.wait_end().await, BodyEnd::Stalled);
    assert_eq!(client.buffered(), 0, "nothing may follow the stall point");
    client.idle_limit = Duration::from_secs(10);
    server.shutdown().await;
    assert!(matches!(
        client.wait_end().await,
        BodyEnd::Eof | BodyEnd::Reset
    ));
}

#[tokio::test]
async fn eof_without_done_ends_the_body_cleanly_and_keeps_the_connection() {
    let script = Script::new()
        .respond(three_deltas().with_fault(Fault::EofWithoutDone { after_chunks: None }))
        .respond(Reply::text("next"));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(response.end, BodyEnd::Complete);
    assert_eq!(
        response.events(),
        vec![
            delta(0, json!({"role": "assistant", "content": "a"})),
            delta(0, json!({"content": "b"})),
            delta(0, json!({"content": "c"})),
            finish(0, "stop"),
            usage(0, default_usage(0, 0)),
        ]
    );
    let next = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(next.events().last(), Some(&json!("[DONE]")));
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_json_line_is_inserted_and_the_stream_goes_on() {
    let (server, _client, response) = one_stream(three_deltas().with_fault(Fault::MalformedJson {
        after_chunks: Some(1),
    }))
    .await;
    assert_eq!(response.end, BodyEnd::Complete);
    assert_eq!(
        response.events(),
        vec![
            delta(0, json!({"role": "assistant", "content": "a"})),
            json!(MALFORMED_PAYLOAD),
            delta(0, json!({"content": "b"})),
            delta(0, json!({"content": "c"})),
            finish(0, "stop"),
            usage(0, default_usage(0, 0)),
            json!("[DONE]"),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn empty_stream_is_just_done() {
    let (server, _client, response) =
        one_stream(three_deltas().with_fault(Fault::EmptyStream)).await;
    assert_eq!((response.status, response.end), (200, BodyEnd::Complete));
    assert_eq!(response.events(), vec![json!("[DONE]")]);
    server.shutdown().await;
}

#[tokio::test]
async fn missing_body_is_an_empty_200() {
    let (server, _client, response) =
        one_stream(three_deltas().with_fault(Fault::MissingBody)).await;
    assert_eq!(
        (
            response.status,
            response.header("content-length"),
            response.header("content-type"),
            response.body.len()
        ),
        (200, Some("0"), Some("text/event-stream"), 0)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn faults_before_the_response_head() {
    let script = Script::new()
        .respond(Reply::fault(Fault::ResetBeforeResponse))
        .respond(Reply::fault(Fault::StallBeforeResponse));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    client
        .send("POST", "/chat/completions", Some(&chat_body(true)), &[])
        .await;
    assert_eq!(client.read_response().await.err(), Some(BodyEnd::Reset));

    let mut client = RawClient::connect(server.addr()).await;
    client.idle_limit = Duration::from_millis(300);
    client
        .send("POST", "/chat/completions", Some(&chat_body(true)), &[])
        .await;
    assert_eq!(client.read_response().await.err(), Some(BodyEnd::Stalled));
    server.shutdown().await;
}

#[tokio::test]
async fn non_stream_truncated_body_closes_the_connection() {
    let script = Script::new()
        .respond(Reply::text("hello").with_fault(Fault::EofWithoutDone { after_chunks: None }));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(false)))
        .await;
    let declared: usize = response.header("content-length").unwrap().parse().unwrap();
    assert_eq!(
        (response.end, response.body.len()),
        (BodyEnd::Eof, declared / 2)
    );
    server.shutdown().await;
}

/// Enough bytes to show a body goes on far past any one write of the server.
const MANY_BYTES: usize = 1024 * 1024;

#[tokio::test]
async fn an_endless_line_never_ends_and_stops_when_the_client_goes() {
    let server = MockServer::start(Script::new().respond(three_deltas().with_fault(
        Fault::EndlessLine {
            after_chunks: Some(1),
        },
    )))
    .await
    .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    client
        .send("POST", "/chat/completions", Some(&chat_body(true)), &[])
        .await;
    let response = client.read_bytes(MANY_BYTES).await;
    let first = format!(
        "data: {}\n\n",
        delta(0, json!({"role": "assistant", "content": "a"}))
    );
    let body = String::from_utf8(response.body).unwrap();
    let rest = body.strip_prefix(&first).unwrap();
    let tail = rest.strip_prefix(ENDLESS_LINE_START).unwrap();
    assert!(tail.len() > MANY_BYTES / 2);
    assert!(tail.bytes().all(|b| b == b'a'), "no line break, ever");
    // The server stops writing once the client is gone, and shuts down promptly.
    drop(client);
    server.shutdown().await;
}

#[tokio::test]
async fn an_endless_stream_sends_valid_deltas_until_the_client_goes() {
    let server = MockServer::start(Script::new().respond(three_deltas().with_fault(
        Fault::EndlessStream {
            after_chunks: Some(0),
        },
    )))
    .await
    .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    client
        .send("POST", "/chat/completions", Some(&chat_body(true)), &[])
        .await;
    let mut response = client.read_bytes(MANY_BYTES).await;
    // Whole events up to the last complete one.
    let cut = response
        .body
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .unwrap()
        + 2;
    response.body.truncate(cut);
    let events = response.events();
    assert!(events.len() > 1000);
    let expected: serde_json::Value = serde_json::from_str(ENDLESS_DELTA).unwrap();
    assert!(events.iter().all(|event| *event == expected));
    drop(client);
    server.shutdown().await;
}

#[tokio::test]
async fn an_error_event_mid_stream_then_done() {
    let error = json!({"message": "engine died", "type": "InternalServerError", "code": 500});
    for sse_event in [false, true] {
        let (server, _client, response) =
            one_stream(three_deltas().with_fault(Fault::ErrorEvent {
                after_chunks: Some(2),
                error: error.clone(),
                sse_event,
            }))
            .await;
        assert_eq!(response.end, BodyEnd::Complete);
        let name = if sse_event { "event: error\n" } else { "" };
        let expected = format!(
            "data: {}\n\ndata: {}\n\n{name}data: {}\n\ndata: [DONE]\n\n",
            delta(0, json!({"role": "assistant", "content": "a"})),
            delta(0, json!({"content": "b"})),
            json!({"error": error}),
        );
        assert_eq!(String::from_utf8(response.body).unwrap(), expected);
        server.shutdown().await;
    }
}
