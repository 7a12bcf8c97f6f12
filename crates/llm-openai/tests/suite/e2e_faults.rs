//! Every fault the mock injects, through the real adapter, runtime, loop and retry plugin:
//! the failure code, whether and how it is retried, and the durable outcome (spec §4.4,
//! §4.8, §6.4, §6.6; invariants 14, 15, 16). Failed attempts leave their chunks log-only and
//! never an `assistant/message`; the message of a successful retry cites only its own chunks.

use super::e2e_harness::*;
use super::e2e_turns::usage_spec;
use dsh_llm::ResolvedRetryPolicy;
use dsh_testkit::mock_llm::{Fault, Reply, Script};
use dsh_testkit::normalize::normalize_json;
use serde_json::{json, Value};
use std::path::Path;

/// The answer every recovered attempt streams.
pub(super) fn ok_reply() -> Reply {
    Reply::text("ok").usage(usage_spec(30, 1))
}

/// The events of a successful `ok_reply()` attempt in turn 1 step 1 starting at `s`,
/// then the step and turn closing as completed.
pub(super) fn ok_attempt_and_close(s: &mut Seq, message_id: &str) -> Vec<Value> {
    ok_attempt_and_close_in(s, 1, message_id)
}

/// [`ok_attempt_and_close`] in step 1 of `turn`.
fn ok_attempt_and_close_in(s: &mut Seq, turn: u64, message_id: &str) -> Vec<Value> {
    let first = s.0;
    let mut events = vec![
        s.chunk(turn, 1, block_start(0, "text")),
        s.chunk(turn, 1, text_delta(0, "ok")),
        s.chunk(turn, 1, block_end(0, json!({"type": "text", "text": "ok"}))),
        s.chunk(turn, 1, usage(30, 1, 0)),
        s.chunk(turn, 1, finish("stop")),
    ];
    events.push(assistant(
        s,
        (turn, 1),
        message_id,
        json!([{"type": "text", "text": "ok"}]),
        Some(usage_json(30, 1, 0)),
        first..first + 5,
    ));
    events.push(s.event("step/end", json!({"turn": turn, "step": 1})));
    events.push(s.event(
        "turn/end",
        json!({"turn": turn, "reason": {"kind": "completed"}}),
    ));
    events
}

/// `llm/retry` + `llm/retry-started` for retry `n` of turn 1 step 1.
pub(super) fn retry_pair(
    s: &mut Seq,
    retry_id: &str,
    n: u64,
    policy: (&str, u64),
    delay: Value,
    failure: &Value,
) -> [Value; 2] {
    retry_pair_in(s, 1, retry_id, n, policy, delay, failure)
}

/// [`retry_pair`] in step 1 of `turn`.
fn retry_pair_in(
    s: &mut Seq,
    turn: u64,
    retry_id: &str,
    n: u64,
    (key, max): (&str, u64),
    delay: Value,
    failure: &Value,
) -> [Value; 2] {
    [
        s.event(
            "llm/retry",
            json!({"retryId": retry_id, "turn": turn, "step": 1, "provider": ROUTE, "mode": "normal",
                "policyKey": key, "retry": n, "maxRetries": max, "delayMs": delay, "failure": failure}),
        ),
        s.event(
            "llm/retry-started",
            json!({"retryId": retry_id, "turn": turn, "step": 1, "retry": n}),
        ),
    ]
}

/// Step and turn closing with `failure` as the turn's error.
pub(super) fn close_with_error(s: &mut Seq, failure: &Value) -> [Value; 2] {
    [
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "error", "error": failure}}),
        ),
    ]
}

/// The model-visible history after the turn: only the prompt and, if any, the answer.
pub(super) fn history(e2e: &E2e) -> Vec<String> {
    e2e.session()
        .derive_messages()
        .iter()
        .map(|m| format!("{:?}: {}", m.role, m.text()))
        .collect()
}

#[tokio::test]
async fn http_500_is_retried_once_with_the_original_shape() {
    let script = Script::new()
        .respond(
            Reply::error(500, "Internal server error (mock)")
                .error_type("server_error")
                .error_code("internal_error"),
        )
        .respond(
            Reply::text("Yes, I am here and working.")
                .with_reasoning("Simple question, simple answer.")
                .chunks(3)
                .usage(usage_spec(8002, 13)),
        );
    // The default policy, as the original ran it (500 ms ± 10% before the retry).
    let setup = Setup::default().policy(ResolvedRetryPolicy::default());
    let e2e = E2e::start(script, setup).await;
    e2e.run("Are you there?").await;

    let delay = e2e.session().events()[8].data.to_value()["delayMs"]
        .as_f64()
        .unwrap();
    assert!((450.0..=550.0).contains(&delay), "jittered 500 ms: {delay}");
    let failure =
        json!({"message": "Internal server error (mock)", "code": "SERVER", "status": 500});
    let reasoning = json!({"type": "reasoning", "text": "Simple question, simple answer."});
    let text = json!({"type": "text", "text": "Yes, I am here and working."});
    let key = "[\"normal\",5,[\"EMPTY_RESPONSE\",\"RATE_LIMIT\",\"SERVER\",\"TIMEOUT\",\"TRANSPORT\"],500,10000,0.1]";
    let mut log = turn_opening("Are you there?", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (key, 5),
        json!("<delay>"),
        &failure,
    ));
    log.extend([
        s.chunk(1, 1, block_start(0, "reasoning")),
        s.chunk(1, 1, reasoning_delta(0, "Simple ques")),
        s.chunk(1, 1, reasoning_delta(0, "tion, simp")),
        s.chunk(1, 1, reasoning_delta(0, "le answer.")),
        s.chunk(1, 1, block_start(1, "text")),
        s.chunk(1, 1, text_delta(1, "Yes, I am")),
        s.chunk(1, 1, text_delta(1, " here and")),
        s.chunk(1, 1, text_delta(1, " working.")),
        s.chunk(1, 1, block_end(0, reasoning.clone())),
        s.chunk(1, 1, block_end(1, text.clone())),
        s.chunk(1, 1, usage(8002, 13, 7)),
        s.chunk(1, 1, finish("stop")),
        assistant(
            &mut s,
            (1, 1),
            "<id-2>",
            json!([reasoning, text]),
            Some(usage_json(8002, 13, 7)),
            10..22,
        ),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]);
    assert_log_eq(&e2e.log_without_delays(), &log);
    assert_eq!(e2e.server.requests().len(), 2);
    e2e.verify();

    // The same events, from the failed attempt to turn/end, as the original logged them
    // (its log also carries session-title events from a concurrent request; those are not
    // part of the retry and are left out).
    let original = original_retry_tail();
    let ours: Vec<Value> = e2e.log_without_delays().as_array().unwrap()[7..]
        .iter()
        .map(|e| strip_seq(e.clone()))
        .collect();
    assert_eq!(ours, original);
}

fn strip_seq(mut event: Value) -> Value {
    event.as_object_mut().unwrap().remove("seq");
    if let Some(cites) = event.get_mut("sourceEventSeqs") {
        *cites = json!("<cites>");
    }
    event
}

/// The original's retry fixture from its first `assistant/chunk` on, without times, seqs,
/// session-title events and the random delay; UUIDs numbered as in ours (the fixture's
/// first UUIDs are the prompt's message id, which ours replaces with a fixed one).
fn original_retry_tail() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0/retry/jsonl/sessions/--home-user-project--");
    let session = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
    let text = std::fs::read_to_string(session.path().join("session.jsonl")).unwrap();
    let events: Vec<Value> = text
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).unwrap())
        .skip_while(|e: &Value| e["type"] != "assistant/chunk")
        .filter(|e| !e["type"].as_str().unwrap().starts_with("session/"))
        .map(|mut e: Value| {
            e.as_object_mut().unwrap().remove("time");
            if e["type"] == "llm/retry" {
                e["data"]["delayMs"] = json!("<delay>");
            }
            strip_seq(e)
        })
        .collect();
    normalize_json(Value::Array(events))
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn http_429_waits_for_the_providers_retry_after() {
    let script = Script::new()
        .respond(Reply::error(429, "Rate limit reached").retry_after("1"))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "Rate limit reached", "code": "RATE_LIMIT", "status": 429,
        "providerRetryAfterMs": 1000});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    // Retry-After (1 s) is within the policy's 2 s cap, so it replaces the 5 ms backoff.
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (&fast_key(5), 5),
        json!(1000),
        &failure,
    ));
    log.extend(ok_attempt_and_close(&mut s, "<id-2>"));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(history(&e2e), ["User: hi", "Assistant: ok"]);
    e2e.verify();
}

#[tokio::test]
async fn http_401_ends_the_turn_with_auth_and_no_retry() {
    let script = Script::new()
        .respond(Reply::error(401, "Authentication Fails").error_type("authentication_error"))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "Authentication Fails", "code": "AUTH", "status": 401});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    log.extend(close_with_error(&mut s, &failure));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    assert_eq!(history(&e2e), ["User: hi"]);
    e2e.verify();
}

#[tokio::test]
async fn http_400_context_overflow_is_classified_and_not_retried() {
    let script = Script::new()
        .respond(
            Reply::error(400, "This model's maximum context length is 65536 tokens")
                .error_code("context_length_exceeded"),
        )
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "This model's maximum context length is 65536 tokens",
        "code": "CONTEXT_WINDOW_EXCEEDED", "status": 400});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    log.extend(close_with_error(&mut s, &failure));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    e2e.verify();
}

#[tokio::test]
async fn a_reset_mid_stream_is_a_transport_failure_and_is_retried() {
    let script = Script::new()
        .respond(
            Reply::text("Hello world")
                .chunks(2)
                .with_fault(Fault::Reset {
                    after_chunks: Some(2),
                }),
        )
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "reading the model API response failed", "code": "TRANSPORT"});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    // The partial attempt's chunks stay in the log, uncited.
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Hello ")),
        s.chunk(1, 1, text_delta(0, "world")),
        s.chunk(1, 1, finish_error(failure.clone())),
    ]);
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (&fast_key(5), 5),
        json!(5),
        &failure,
    ));
    log.extend(ok_attempt_and_close(&mut s, "<id-2>"));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(history(&e2e), ["User: hi", "Assistant: ok"]);
    e2e.verify();
}

#[tokio::test]
async fn a_stall_past_the_idle_timeout_is_a_timeout_and_is_retried() {
    let script = Script::new()
        .respond(
            Reply::text("Hello world")
                .chunks(2)
                .with_fault(Fault::Stall {
                    after_chunks: Some(1),
                }),
        )
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default().idle_timeout_ms(300)).await;
    e2e.run("hi").await;
    let failure = json!({"message": "the model API sent nothing for 300 ms", "code": "TIMEOUT"});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Hello ")),
        s.chunk(1, 1, finish_error(failure.clone())),
    ]);
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (&fast_key(5), 5),
        json!(5),
        &failure,
    ));
    log.extend(ok_attempt_and_close(&mut s, "<id-2>"));
    assert_log_eq(&e2e.log(), &log);
    e2e.verify();
}

#[tokio::test]
async fn eof_without_done_is_stream_closed_and_ends_the_turn() {
    // Every delta, the finish event and usage arrive; only `[DONE]` is missing, so the
    // held-back block ends, usage and finish reason are never trusted.
    let script = Script::new()
        .respond(
            Reply::text("Hello world")
                .chunks(2)
                .with_fault(Fault::EofWithoutDone { after_chunks: None }),
        )
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure =
        json!({"message": "the response stream ended without [DONE]", "code": "STREAM_CLOSED"});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Hello ")),
        s.chunk(1, 1, text_delta(0, "world")),
        s.chunk(1, 1, finish_error(failure.clone())),
    ]);
    log.extend(close_with_error(&mut s, &failure));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    assert_eq!(history(&e2e), ["User: hi"]);
    e2e.verify();
}

#[tokio::test]
async fn malformed_json_is_a_malformed_response_and_ends_the_turn() {
    let script = Script::new()
        .respond(
            Reply::text("Hello world")
                .chunks(2)
                .with_fault(Fault::MalformedJson {
                    after_chunks: Some(1),
                }),
        )
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "malformed stream payload: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"unterminated",
        "code": "MALFORMED_RESPONSE"});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Hello ")),
        s.chunk(1, 1, finish_error(failure.clone())),
    ]);
    log.extend(close_with_error(&mut s, &failure));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    e2e.verify();
}

#[tokio::test]
async fn an_empty_stream_and_a_missing_body_are_empty_responses_and_are_retried() {
    let script = Script::new()
        .respond(Reply::fault(Fault::EmptyStream))
        .respond(Reply::fault(Fault::MissingBody))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let empty =
        json!({"message": "the model returned an empty response", "code": "EMPTY_RESPONSE"});
    let no_body =
        json!({"message": "the model API returned no response body", "code": "EMPTY_RESPONSE"});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(empty.clone())));
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (&fast_key(5), 5),
        json!(5),
        &empty,
    ));
    log.push(s.chunk(1, 1, finish_error(no_body.clone())));
    // The second retry doubles the backoff.
    log.extend(retry_pair(
        &mut s,
        "<id-2>",
        2,
        (&fast_key(5), 5),
        json!(10),
        &no_body,
    ));
    log.extend(ok_attempt_and_close(&mut s, "<id-3>"));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 3);
    e2e.verify();
}

#[tokio::test]
async fn exhausted_retries_end_the_turn_with_the_last_provider_failure() {
    let overloaded = |id: &str| Reply::error(503, "overloaded").header("x-request-id", id);
    let script = Script::new()
        .respond(overloaded("req-1"))
        .respond(overloaded("req-2"))
        .respond(overloaded("req-3"))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default().policy(fast_policy(2))).await;
    e2e.run("hi").await;
    let failure = |id: &str| json!({"message": "overloaded", "code": "SERVER", "status": 503, "requestId": id});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    let key = fast_key(2);
    log.push(s.chunk(1, 1, finish_error(failure("req-1"))));
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (&key, 2),
        json!(5),
        &failure("req-1"),
    ));
    log.push(s.chunk(1, 1, finish_error(failure("req-2"))));
    log.extend(retry_pair(
        &mut s,
        "<id-2>",
        2,
        (&key, 2),
        json!(10),
        &failure("req-2"),
    ));
    log.push(s.chunk(1, 1, finish_error(failure("req-3"))));
    log.extend(close_with_error(&mut s, &failure("req-3")));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 3);
    assert_eq!(history(&e2e), ["User: hi"]);
    e2e.verify();
}

#[tokio::test]
async fn without_the_retry_plugin_a_retryable_failure_is_terminal() {
    let script = Script::new()
        .respond(Reply::error(500, "boom"))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default().without_retry()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "boom", "code": "SERVER", "status": 500});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    log.extend(close_with_error(&mut s, &failure));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    e2e.verify();
}

#[tokio::test]
async fn a_tool_call_cut_mid_arguments_is_never_executed_and_the_retry_is() {
    let call = || {
        Reply::tool_call("echo", json!({"text": "hi"}))
            .arg_chunks(3)
            .usage(usage_spec(40, 5))
    };
    let script = Script::new()
        .respond(call().with_fault(Fault::Reset {
            after_chunks: Some(2),
        }))
        .respond(call())
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default().with_tools()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "reading the model API response failed", "code": "TRANSPORT"});
    // The retried attempt is a new response, so the mock gives its call a new id.
    let (cut, id) = ("call_0_0_6b66fc23", "call_1_0_ed0de658");
    let delta = |id: &str, text: &str| json!({"type": "tool-call-delta", "index": 0, "id": id, "name": "echo", "argumentsDelta": text});
    let args = r#"{"text": "hi"}"#;
    let block = json!({"type": "tool-call", "id": id, "name": "echo", "arguments": args});
    let mut log = turn_opening("hi", true);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "tool-call")),
        s.chunk(1, 1, delta(cut, "{\"tex")),
        s.chunk(1, 1, delta(cut, "t\": \"")),
        s.chunk(1, 1, finish_error(failure.clone())),
    ]);
    log.extend(retry_pair(
        &mut s,
        "<id-1>",
        1,
        (&fast_key(5), 5),
        json!(5),
        &failure,
    ));
    log.extend([
        s.chunk(1, 1, block_start(0, "tool-call")),
        s.chunk(1, 1, delta(id, "{\"tex")),
        s.chunk(1, 1, delta(id, "t\": \"")),
        s.chunk(1, 1, delta(id, "hi\"}")),
        s.chunk(1, 1, block_end(0, block.clone())),
        s.chunk(1, 1, usage(40, 5, 0)),
        s.chunk(1, 1, finish("tool-calls")),
        assistant(
            &mut s,
            (1, 1),
            "<id-2>",
            json!([block]),
            Some(usage_json(40, 5, 0)),
            13..20,
        ),
        // Only the completed attempt's call runs.
        s.event(
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": id, "name": "echo", "arguments": args}),
        ),
        json!({"type": "tool/result", "seq": s.next(), "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {"id": "<id-3>", "role": "user",
                "content": [{"type": "tool-result", "toolCallId": id,
                    "content": [{"type": "text", "text": "hi"}], "isError": false}],
                "source": {"kind": "tool", "callId": id}}},
            "sourceEventSeqs": [21]}),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event("step/start", json!({"turn": 1, "step": 2})),
        s.chunk(1, 2, block_start(0, "text")),
        s.chunk(1, 2, text_delta(0, "ok")),
        s.chunk(1, 2, block_end(0, json!({"type": "text", "text": "ok"}))),
        s.chunk(1, 2, usage(30, 1, 0)),
        s.chunk(1, 2, finish("stop")),
        assistant(
            &mut s,
            (1, 2),
            "<id-4>",
            json!([{"type": "text", "text": "ok"}]),
            Some(usage_json(30, 1, 0)),
            25..30,
        ),
        s.event("step/end", json!({"turn": 1, "step": 2})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 3);
    e2e.verify();
}

#[tokio::test]
async fn a_reset_or_a_stall_before_the_response_head_is_retried() {
    // The reset lands on a kept-alive connection reused from turn 1, where an HTTP client
    // might be tempted to resend on its own; exactly one request per logged attempt may
    // reach the server.
    let script = Script::new()
        .respond(ok_reply())
        .respond(Reply::fault(Fault::ResetBeforeResponse))
        .respond(Reply::fault(Fault::StallBeforeResponse))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default().idle_timeout_ms(300)).await;
    e2e.run("hi").await;
    e2e.run("again").await;
    let transport = json!({"message": "model API request to <base> failed", "code": "TRANSPORT"});
    let timeout = json!({"message": "the model API sent nothing for 300 ms", "code": "TIMEOUT"});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend(ok_attempt_and_close(&mut s, "<id-1>"));
    log.extend([
        s.event(
            "agent/inbox/spliced",
            json!({"target": "next-turn", "start": 0, "inserted": [user_json("again")]}),
        ),
        s.event("turn/start", json!({"turn": 2})),
        s.event(
            "agent/inbox/spliced",
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
        ),
        s.event("step/start", json!({"turn": 2, "step": 1})),
        json!({"type": "user/message", "seq": s.next(), "data": user_json("again"), "surfaceOp": "append"}),
    ]);
    log.push(s.chunk(2, 1, finish_error(transport.clone())));
    let key = fast_key(5);
    log.extend(retry_pair_in(
        &mut s,
        2,
        "<id-2>",
        1,
        (&key, 5),
        json!(5),
        &transport,
    ));
    log.push(s.chunk(2, 1, finish_error(timeout.clone())));
    log.extend(retry_pair_in(
        &mut s,
        2,
        "<id-3>",
        2,
        (&key, 5),
        json!(10),
        &timeout,
    ));
    log.extend(ok_attempt_and_close_in(&mut s, 2, "<id-4>"));
    // The transport message names the endpoint, which changes with the port.
    let base = e2e.server.base_url();
    let actual =
        serde_json::from_str::<Value>(&e2e.log().to_string().replace(&base, "<base>")).unwrap();
    assert_log_eq(&actual, &log);
    assert_eq!(e2e.server.requests().len(), 4);
    e2e.verify();
}
