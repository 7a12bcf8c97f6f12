//! Hostile and broken streams through the real adapter and loop: a line without end, a
//! stream without end and an error reported mid-stream each end the attempt with a typed
//! failure, retried only when its code is retryable, and the log records exactly that.

use super::e2e_faults::{close_with_error, history, ok_attempt_and_close, ok_reply, retry_pair};
use super::e2e_harness::*;
use dsh_llm_openai::DEFAULT_MAX_SSE_LINE_BYTES;
use dsh_testkit::mock_llm::{Fault, Reply, Script, ENDLESS_DELTA};
use serde_json::json;

/// "Hello " as the first delta, then the fault.
fn hello_then(fault: Fault) -> Reply {
    Reply::text("Hello world").chunks(2).with_fault(fault)
}

#[tokio::test]
async fn a_line_without_end_stops_at_the_line_limit_and_is_not_retried() {
    let script = Script::new()
        .respond(hello_then(Fault::EndlessLine {
            after_chunks: Some(1),
        }))
        .respond(ok_reply());
    // The default limit: the test also shows it is reached quickly and then let go.
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({
        "message": format!(
            "the model API sent an event-stream line or event longer than {DEFAULT_MAX_SSE_LINE_BYTES} bytes \
             (max_sse_line_bytes of provider route '{ROUTE}'); the rest of the response was not read"
        ),
        "code": "RESPONSE_TOO_LARGE",
    });
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
    assert_eq!(history(&e2e), ["User: hi"]);
    e2e.verify();
}

#[tokio::test]
async fn a_stream_without_end_stops_at_exactly_the_response_limit() {
    let event = format!("data: {ENDLESS_DELTA}\n\n");
    // Room for 40 whole events and part of the 41st, however the reads fall.
    let limit = event.len() * 40 + event.len() / 2;
    let mut setup = Setup::default();
    setup.route.max_response_bytes = limit as u64;
    let script = Script::new()
        .respond(Reply::text("unused").with_fault(Fault::EndlessStream {
            after_chunks: Some(0),
        }))
        .respond(ok_reply());
    let e2e = E2e::start(script, setup).await;
    e2e.run("hi").await;
    let failure = json!({
        "message": format!(
            "the model API response exceeded {limit} bytes (max_response_bytes of provider \
             route '{ROUTE}'); the rest was not read"
        ),
        "code": "RESPONSE_TOO_LARGE",
    });
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, block_start(0, "text")));
    for _ in 0..40 {
        log.push(s.chunk(1, 1, text_delta(0, "more ")));
    }
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    log.extend(close_with_error(&mut s, &failure));
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    e2e.verify();
}

#[tokio::test]
async fn a_server_error_reported_mid_stream_is_retried() {
    let script = Script::new()
        .respond(hello_then(Fault::ErrorEvent {
            after_chunks: Some(1),
            error: json!({"object": "error", "message": "engine died", "type": "InternalServerError",
                "param": null, "code": 500}),
            sse_event: false,
        }))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "the model API reported an error mid-stream: engine died",
        "code": "SERVER", "status": 500});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    // The partial attempt stays log-only; the retry's answer is the message.
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
    assert_eq!(history(&e2e), ["User: hi", "Assistant: ok"]);
    e2e.verify();
}

#[tokio::test]
async fn an_unexplained_error_event_ends_the_turn_instead_of_completing_it() {
    let script = Script::new()
        .respond(hello_then(Fault::ErrorEvent {
            after_chunks: Some(1),
            error: json!({"message": "something broke"}),
            sse_event: true,
        }))
        .respond(ok_reply());
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let failure = json!({"message": "the model API reported an error mid-stream: something broke",
        "code": "STREAM_ERROR"});
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
    assert_eq!(history(&e2e), ["User: hi"]);
    e2e.verify();
}
