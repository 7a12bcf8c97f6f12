//! Cancelling a turn while the model streams or a retry waits (spec §4.4, §4.8; invariants
//! 13, 16): the HTTP request is dropped at once, the visible prefix is logged as an
//! interrupted message, and a cancelled retry wait never issues its request.
//!
//! A small TCP relay sits between the adapter and the mock server and reports when the
//! adapter's side of a connection closes, which is what the server sees when the request
//! is dropped; the mock itself stalls and would hold the connection open forever.

use super::e2e_harness::*;
use super::e2e_turns::usage_spec;
use dsh_agent::{AgentCancelCause, CancelOptions};
use dsh_protocol::StreamChunk;
use dsh_session::EventData;
use dsh_testkit::mock_llm::{Fault, MockServer, Reply, Script};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Relays connections to `upstream` and counts client-side closes.
struct CloseWatch {
    url: String,
    closed: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

impl CloseWatch {
    async fn start(upstream: SocketAddr) -> CloseWatch {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let closed = Arc::new(AtomicUsize::new(0));
        let changed = Arc::new(Notify::new());
        let (c, n) = (closed.clone(), changed.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(upstream).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let (c, n) = (c.clone(), n.clone());
                tokio::spawn(async move {
                    let mut buf = [0u8; 16 * 1024];
                    loop {
                        match client_read.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(len) => {
                                if server_write.write_all(&buf[..len]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    c.fetch_add(1, Ordering::SeqCst);
                    n.notify_waiters();
                    // Pass the close on, so the server's connection task ends too.
                    let _ = server_write.shutdown().await;
                });
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
            }
        });
        CloseWatch {
            url,
            closed,
            changed,
        }
    }

    fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }

    /// Waits until `n` client connections have closed.
    async fn wait_closed(&self, n: usize) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if self.closed() >= n {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the adapter never closed the connection");
    }
}

fn text_deltas(e2e: &E2e) -> usize {
    e2e.session()
        .events()
        .iter()
        .filter(|e| {
            matches!(&e.data, EventData::AssistantChunk(c)
                if matches!(c.chunk, StreamChunk::TextDelta { .. }))
        })
        .count()
}

async fn until_text_deltas(e2e: &E2e, n: usize) {
    for _ in 0..2000 {
        if text_deltas(e2e) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{n} text deltas never arrived");
}

/// Starts a turn against a reply that stalls after `after` events, behind a relay.
async fn stalled(reply: Reply, after: usize) -> (E2e, CloseWatch) {
    let script = Script::new().respond(reply.with_fault(Fault::Stall {
        after_chunks: Some(after),
    }));
    let server = MockServer::start(script).await.unwrap();
    let watch = CloseWatch::start(server.addr()).await;
    // An idle timeout far beyond the wait for the close, so only the cancel can close it.
    let setup = Setup::default().idle_timeout_ms(60_000);
    let e2e = E2e::start_at(server, Some(watch.url.clone()), setup).await;
    (e2e, watch)
}

#[tokio::test]
async fn cancel_mid_stream_drops_the_request_and_logs_the_visible_prefix() {
    let (e2e, watch) = stalled(Reply::text("Hello world, and more").chunks(4), 2).await;
    e2e.agent.followup(user_msg("hi")).unwrap();
    until_text_deltas(&e2e, 2).await;
    assert_eq!(watch.closed(), 0, "the stalled request is still open");
    e2e.agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    e2e.idle().await;
    watch.wait_closed(1).await;

    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Hello ")),
        s.chunk(1, 1, text_delta(0, "world")),
    ]);
    let mut interrupted = assistant(
        &mut s,
        (1, 1),
        "<id-1>",
        json!([{"type": "text", "text": "Hello world"}]),
        None,
        7..10,
    );
    interrupted["data"]["interrupted"] = json!(true);
    log.extend([
        interrupted,
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    e2e.verify();
}

#[tokio::test]
async fn cancel_before_the_response_head_drops_the_request_and_logs_no_chunk() {
    let script = Script::new().respond(Reply::fault(Fault::StallBeforeResponse));
    let server = MockServer::start(script).await.unwrap();
    let watch = CloseWatch::start(server.addr()).await;
    let setup = Setup::default().idle_timeout_ms(60_000);
    let e2e = E2e::start_at(server, Some(watch.url.clone()), setup).await;
    e2e.agent.followup(user_msg("hi")).unwrap();
    tokio::time::timeout(Duration::from_secs(10), e2e.server.wait_for_requests(1))
        .await
        .expect("the request never arrived");
    e2e.agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    e2e.idle().await;
    watch.wait_closed(1).await;

    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    // An attempt with no chunk is invisible to `verify`'s attempt finder; rebuild the one
    // request from the log as it stood before the step closed.
    let requests = e2e.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body, rebuild_body(e2e.session(), &e2e.route, 7));
    e2e.recon.assert_clean();
    assert_eq!(e2e.recon.checked(), 1);
    dsh_testkit::checks::assert_log_ok(&e2e.session().events());
}

#[tokio::test]
async fn cancel_before_visible_text_drops_the_request_and_logs_no_message() {
    let (e2e, watch) = stalled(Reply::text("   ").chunks(1), 1).await;
    e2e.agent.followup(user_msg("hi")).unwrap();
    until_text_deltas(&e2e, 1).await;
    e2e.agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    e2e.idle().await;
    watch.wait_closed(1).await;

    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "   ")),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    e2e.verify();
}

#[tokio::test]
async fn cancelling_during_the_retry_wait_ends_the_turn_aborted_without_a_retry() {
    let script = Script::new()
        .respond(Reply::error(429, "Rate limit reached").retry_after("1"))
        .respond(Reply::text("ok").usage(usage_spec(30, 1)));
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.agent.followup(user_msg("hi")).unwrap();
    // Wait until the retry is logged (its 1 s wait has begun), then cancel.
    for _ in 0..2000 {
        let logged = e2e
            .session()
            .events()
            .iter()
            .any(|e| matches!(e.data, EventData::LlmRetry(_)));
        if logged {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    e2e.agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    e2e.idle().await;
    let failure = json!({"message": "Rate limit reached", "code": "RATE_LIMIT", "status": 429,
        "providerRetryAfterMs": 1000});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.push(s.chunk(1, 1, finish_error(failure.clone())));
    log.push(s.event(
        "llm/retry",
        json!({"retryId": "<id-1>", "turn": 1, "step": 1, "provider": ROUTE, "mode": "normal",
            "policyKey": fast_key(5), "retry": 1, "maxRetries": 5, "delayMs": 1000, "failure": failure}),
    ));
    log.extend([
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    assert_eq!(e2e.server.requests().len(), 1);
    e2e.verify();
}
