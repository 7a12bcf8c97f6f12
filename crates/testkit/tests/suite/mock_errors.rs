//! HTTP error replies and script exhaustion.

use dsh_testkit::mock_llm::{MockServer, Reply, Script, Served};
use serde_json::json;

use super::mock_client::{chat_body, BodyEnd, RawClient};

#[tokio::test]
async fn rate_limit_with_retry_after_then_success_on_the_same_connection() {
    let script = Script::new()
        .respond(
            Reply::error(429, "Rate limit reached")
                .retry_after("2")
                .header("x-request-id", "req-42"),
        )
        .respond(Reply::text("ok"));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("2"));
    assert_eq!(response.header("x-request-id"), Some("req-42"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.end, BodyEnd::Complete);
    assert_eq!(
        response.json(),
        json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": null}})
    );
    let retried = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(retried.status, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn server_error_body_uses_the_scripted_fields() {
    let script = Script::from_json(
        r#"{"responses": [{"status": 500, "error_message": "Internal server error (mock)",
            "error_type": "server_error", "error_code": "internal_error"}]}"#,
    )
    .unwrap();
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(response.status, 500);
    assert_eq!(
        response.json(),
        json!({"error": {"message": "Internal server error (mock)", "type": "server_error",
                         "code": "internal_error"}})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn verbatim_body_with_a_wrong_content_type() {
    let script =
        Script::new().respond(Reply::empty().raw_body("<html>gateway</html>", "text/html"));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(
        (
            response.status,
            response.header("content-type"),
            response.body.as_slice()
        ),
        (200, Some("text/html"), b"<html>gateway</html>".as_slice())
    );
    server.shutdown().await;
}

#[tokio::test]
async fn exhausted_script_answers_500_saying_so() {
    let server = MockServer::start(Script::new().respond(Reply::text("only")))
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let first = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(first.status, 200);
    let second = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(second.status, 500);
    assert_eq!(
        second.json(),
        json!({"error": {
            "message": "mock script exhausted: this request needs responses[1] but the script has 1 response(s)",
            "type": "mock_script_exhausted", "code": "script_exhausted"}})
    );
    let served: Vec<Served> = server.requests().into_iter().map(|r| r.served).collect();
    assert_eq!(
        served,
        vec![
            Served::Response { index: 0 },
            Served::Exhausted { index: 1 }
        ]
    );
    server.shutdown().await;
}
