//! `GET /api/sessions/{id}/events`: a held session's live log as server-sent events
//! (docs/web-api.md "The event stream").
//!
//! Each stream is a task feeding a small channel: it subscribes to the session's feed
//! first, then sends the status, the open approvals and questions, and every event after
//! the resume point from the log, then live frames. It tracks the next seq it owes, so an
//! event is never sent twice, and a stream that falls behind the feed (a slow client) is
//! caught up from the log instead of losing frames. A closed client ends the task and
//! nothing else: the run goes on.

use crate::hub::{Frame, LiveSession};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

/// Frames buffered per client before the task waits for it.
const CLIENT_BUFFER: usize = 256;

/// Comment lines keep proxies from closing an idle stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

type Item = Result<Event, Infallible>;

/// The SSE response for `live`, resuming after seq `after` (`None`: from the start);
/// `render` adds assistant messages' HTML ([`crate::markdown`]). `closing` flips when the
/// server shuts down, which ends the stream.
pub fn events(
    live: Arc<LiveSession>,
    after: Option<u64>,
    render: bool,
    closing: watch::Receiver<bool>,
) -> Sse<impl Stream<Item = Item>> {
    let (tx, rx) = mpsc::channel(CLIENT_BUFFER);
    tokio::spawn(pump(live, after, render, tx, closing));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
}

fn event_frame(event: &dsh_session::SessionEvent, render: bool) -> Item {
    let data = crate::markdown::event_json(event, render).unwrap_or_else(|_| "null".into());
    Ok(Event::default()
        .event("event")
        .id(event.seq.to_string())
        .data(data))
}

fn named(name: &str, data: &serde_json::Value) -> Item {
    Ok(Event::default().event(name).data(data.to_string()))
}

fn frame_item(frame: &Frame, render: bool) -> Option<Item> {
    Some(match frame {
        Frame::Event(event) => event_frame(event, render),
        Frame::Status { running } => named("status", &json!({ "running": running })),
        Frame::Approval(payload) => named("approval", payload),
        Frame::ApprovalResolved(payload) => named("approval-resolved", payload),
        Frame::Question(payload) => named("question", payload),
        Frame::QuestionResolved(payload) => named("question-resolved", payload),
    })
}

/// What a stream owes its client next.
struct Cursor {
    next: u64,
    render: bool,
}

impl Cursor {
    /// Sends every logged event from `next` on; `false` when the client is gone.
    async fn catch_up(&mut self, live: &LiveSession, tx: &mpsc::Sender<Item>) -> bool {
        let events = live.handle.agent().session().events_from(self.next);
        for event in events {
            if tx.send(event_frame(&event, self.render)).await.is_err() {
                return false;
            }
            self.next = event.seq + 1;
        }
        true
    }
}

async fn announce(live: &LiveSession, tx: &mpsc::Sender<Item>) -> bool {
    let status = named("status", &json!({ "running": live.running() }));
    if tx.send(status).await.is_err() {
        return false;
    }
    let (approvals, questions) = live.pending();
    for payload in approvals {
        if tx.send(named("approval", &payload)).await.is_err() {
            return false;
        }
    }
    for payload in questions {
        if tx.send(named("question", &payload)).await.is_err() {
            return false;
        }
    }
    true
}

async fn pump(
    live: Arc<LiveSession>,
    after: Option<u64>,
    render: bool,
    tx: mpsc::Sender<Item>,
    mut closing: watch::Receiver<bool>,
) {
    let mut feed = live.subscribe();
    let mut cursor = Cursor {
        next: after.map_or(0, |seq| seq.saturating_add(1)),
        render,
    };
    if !announce(&live, &tx).await || !cursor.catch_up(&live, &tx).await {
        return;
    }
    loop {
        let frame = tokio::select! {
            _ = tx.closed() => return,
            _ = closing.changed() => return,
            frame = feed.recv() => frame,
        };
        let sent = match frame {
            Ok(frame) => match &*frame {
                Frame::Event(event) if event.seq < cursor.next => true,
                Frame::Event(event) if event.seq > cursor.next => cursor.catch_up(&live, &tx).await,
                Frame::Event(event) => {
                    cursor.next = event.seq + 1;
                    tx.send(event_frame(event, render)).await.is_ok()
                }
                other => match frame_item(other, render) {
                    Some(item) => tx.send(item).await.is_ok(),
                    None => true,
                },
            },
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(session = %live.id, missed, "a slow stream is caught up from the log");
                announce(&live, &tx).await && cursor.catch_up(&live, &tx).await
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if !sent {
            return;
        }
    }
}
