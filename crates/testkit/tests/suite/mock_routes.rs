//! Routing, rules, index modes and request recording.

use std::collections::BTreeMap;

use dsh_testkit::mock_llm::{
    IndexBy, MockOptions, MockServer, RecordedRequest, Reply, RuleMatch, Script, Served,
    DEFAULT_MODELS,
};
use serde_json::{json, Value};

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

#[tokio::test]
async fn models_are_listed_on_both_paths() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let expected: Vec<Value> = DEFAULT_MODELS
        .iter()
        .map(|id| json!({"id": id, "object": "model", "owned_by": "dsh-mock"}))
        .collect();
    for path in ["/models", "/v1/models"] {
        let response = client.request("GET", path, None).await;
        assert_eq!(response.status, 200);
        assert_eq!(response.json(), json!({"object": "list", "data": expected}));
    }
    server.shutdown().await;

    let server = MockServer::start(Script::new().models(["m1"]))
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let response = client.request("GET", "/v1/models", None).await;
    assert_eq!(
        response.json(),
        json!({"object": "list", "data": [{"id": "m1", "object": "model", "owned_by": "dsh-mock"}]})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_wrong_methods_and_bad_bodies() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let missing = client.request("GET", "/v2/other", None).await;
    assert_eq!(missing.status, 404);
    let wrong = client.request("GET", "/chat/completions", None).await;
    assert_eq!((wrong.status, wrong.header("allow")), (405, Some("POST")));
    client
        .send_raw(b"POST /chat/completions HTTP/1.1\r\ncontent-length: 5\r\n\r\n{nope")
        .await;
    let bad = client.read_response().await.unwrap();
    assert_eq!(bad.status, 400);
    let recorded = server.requests();
    assert_eq!(
        recorded
            .iter()
            .map(|r| r.served.clone())
            .collect::<Vec<_>>(),
        vec![
            Served::NotFound,
            Served::MethodNotAllowed,
            Served::BadRequest
        ]
    );
    assert_eq!(
        (recorded[2].body.clone(), recorded[2].raw_body.as_deref()),
        (Value::Null, Some("{nope"))
    );
    // A garbled request line gets a 400 and the connection is closed.
    let mut client = RawClient::connect(server.addr()).await;
    client.send_raw(b"NONSENSE\r\n\r\n").await;
    let garbled = client.read_response().await.unwrap();
    assert_eq!(
        (garbled.status, garbled.header("connection")),
        (400, Some("close"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn title_rule_matches_only_small_tool_less_requests() {
    let script = Script::new()
        .rule(
            RuleMatch::any().no_tools().max_tokens_le(64),
            Reply::text("A title"),
        )
        .respond(Reply::text("main answer"));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let mut title = chat_body(true);
    title.as_object_mut().unwrap().remove("tools");
    title["max_tokens"] = json!(32);
    let mut big_without_tools = title.clone();
    big_without_tools["max_tokens"] = json!(65);
    for (body, expected) in [
        (&title, "A title"),
        (&chat_body(true), "main answer"),
        (&title, "A title"),
    ] {
        let response = client
            .request("POST", "/chat/completions", Some(body))
            .await;
        assert_eq!(text_of(&response.events()), expected);
    }
    let response = client
        .request("POST", "/chat/completions", Some(&big_without_tools))
        .await;
    assert_eq!(
        response.status, 500,
        "not a rule, and the one response is used up"
    );
    let served: Vec<Served> = server.requests().into_iter().map(|r| r.served).collect();
    assert_eq!(
        served,
        vec![
            Served::Rule { index: 0 },
            Served::Response { index: 0 },
            Served::Rule { index: 0 },
            Served::Exhausted { index: 1 },
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn assistant_turns_index_serves_retries_the_same_reply() {
    let script = Script::new()
        .index_by(IndexBy::AssistantTurns)
        .respond(Reply::text("zero"))
        .respond(Reply::text("one"));
    let server = MockServer::start(script).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let mut later = chat_body(true);
    later["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": "zero"}));
    let mut texts = Vec::new();
    for body in [&chat_body(true), &chat_body(true), &later] {
        let response = client
            .request("POST", "/chat/completions", Some(body))
            .await;
        texts.push(text_of(&response.events()));
    }
    assert_eq!(texts, ["zero", "zero", "one"]);
    server.shutdown().await;
}

#[tokio::test]
async fn every_request_is_recorded_whole() {
    let server = MockServer::start(Script::new().respond(Reply::text("x")))
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let body = chat_body(true);
    client
        .send(
            "POST",
            "/v1/chat/completions?trace=1",
            Some(&body),
            &[
                ("Authorization", "Bearer sk-test"),
                ("X-DeepSeek-Harness-Session-Id", "s-1"),
                ("accept", "text/event-stream"),
            ],
        )
        .await;
    client.read_response().await.unwrap();
    client.request("GET", "/models", None).await;
    let length = body.to_string().len().to_string();
    let headers: BTreeMap<String, String> = [
        ("accept", "text/event-stream"),
        ("authorization", "Bearer sk-test"),
        ("content-length", length.as_str()),
        ("content-type", "application/json"),
        ("host", "127.0.0.1"),
        ("x-deepseek-harness-session-id", "s-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let recorded = server.requests();
    assert_eq!(
        recorded[0],
        RecordedRequest {
            number: 0,
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            headers,
            body,
            raw_body: None,
            served: Served::Response { index: 0 },
        }
    );
    assert_eq!(
        recorded[0].header("X-DeepSeek-Harness-Session-Id"),
        Some("s-1")
    );
    assert_eq!(
        (
            recorded[1].number,
            recorded[1].path.as_str(),
            &recorded[1].served
        ),
        (1, "/models", &Served::Models)
    );
    server.shutdown().await;
}

/// What `dsh-mock-llm` runs with: requests go to the record sink, numbered as always, and
/// the server keeps none of them (its memory does not grow with a long run).
#[tokio::test]
async fn a_forgetting_server_numbers_and_sends_every_request_but_keeps_none() {
    let (sink, mut records) = tokio::sync::mpsc::unbounded_channel();
    let options = MockOptions::default().record_sink(sink).forget_requests();
    let script = Script::new()
        .respond(Reply::text("one"))
        .respond(Reply::text("two"));
    let server = MockServer::start_with(script, options).await.unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    for _ in 0..2 {
        let response = client
            .request("POST", "/chat/completions", Some(&chat_body(true)))
            .await;
        assert_eq!(response.status, 200);
    }
    client.request("GET", "/models", None).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let record = records.recv().await.unwrap();
        seen.push((record.number, record.served));
    }
    assert_eq!(
        seen,
        [
            (0, Served::Response { index: 0 }),
            (1, Served::Response { index: 1 }),
            (2, Served::Models),
        ]
    );
    assert!(server.requests().is_empty());
    assert!(server.title_requests().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn chunked_request_bodies_are_accepted() {
    let server = MockServer::start(Script::new().respond(Reply::text("ok")))
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let body = chat_body(false).to_string();
    let (a, b) = body.split_at(10);
    let raw = format!(
        "POST /chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    client.send_raw(raw.as_bytes()).await;
    let response = client.read_response().await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(server.requests()[0].body, chat_body(false));
    server.shutdown().await;
}

#[tokio::test]
async fn expect_continue_gets_an_interim_response_before_the_body() {
    let server = MockServer::start(Script::new().respond(Reply::text("ok")))
        .await
        .unwrap();
    let mut client = RawClient::connect(server.addr()).await;
    let body = chat_body(false).to_string();
    let head = format!(
        "POST /chat/completions HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    client.send_raw(head.as_bytes()).await;
    assert_eq!(client.read_response().await.unwrap().status, 100);
    client.send_raw(body.as_bytes()).await;
    assert_eq!(client.read_response().await.unwrap().status, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn wait_for_requests_returns_once_enough_have_arrived() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let addr = server.addr();
    let sender = tokio::spawn(async move {
        let mut client = RawClient::connect(addr).await;
        client.request("GET", "/models", None).await;
        client.request("GET", "/v1/models", None).await;
    });
    let seen = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        server.wait_for_requests(2),
    )
    .await
    .unwrap();
    let paths: Vec<&str> = seen.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/models", "/v1/models"]);
    sender.await.unwrap();
    server.shutdown().await;
}
