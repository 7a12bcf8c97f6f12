//! `GET /api/events`: the host's session roster as server-sent events: a `snapshot` (or,
//! resuming from a cursor, the changes missed), then `session` and `session-removed`
//! frames as the list changes. Every frame carries an `id:` cursor (`launch.rev`), so the
//! browser's own reconnect resumes with `Last-Event-ID`.

use super::{Change, Delta, Roster, Start};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, watch};

type Item = Result<Event, Infallible>;

/// Frames buffered per client before the task waits for it.
const CLIENT_BUFFER: usize = 64;

fn cursor(roster: &Roster, rev: u64) -> String {
    format!("{}.{rev}", roster.launch())
}

fn delta_item(roster: &Roster, delta: &Delta) -> Item {
    let event = Event::default().id(cursor(roster, delta.rev));
    Ok(match &delta.change {
        Change::Upsert {
            session,
            created,
            fields,
        } => event.event("session").data(
            json!({
                "change": if *created { "created" } else { "updated" },
                "fields": fields,
                "session": session,
            })
            .to_string(),
        ),
        Change::Removed { id } => event
            .event("session-removed")
            .data(json!({ "id": id }).to_string()),
    })
}

async fn send_start(roster: &Roster, start: Start, tx: &mpsc::Sender<Item>) -> bool {
    match start {
        Start::Snapshot { rev, sessions } => {
            let frame = Event::default()
                .event("snapshot")
                .id(cursor(roster, rev))
                .data(json!({ "sessions": sessions }).to_string());
            tx.send(Ok(frame)).await.is_ok()
        }
        Start::Resume(deltas) => {
            for delta in deltas {
                if tx.send(delta_item(roster, &delta)).await.is_err() {
                    return false;
                }
            }
            true
        }
    }
}

/// The SSE response for a client that starts with `start` and then follows `feed`.
/// `closing` flips when the server shuts down, which ends the stream.
pub fn events(
    roster: Arc<Roster>,
    start: Start,
    feed: broadcast::Receiver<Arc<Delta>>,
    closing: watch::Receiver<bool>,
) -> Sse<impl Stream<Item = Item>> {
    let (tx, rx) = mpsc::channel(CLIENT_BUFFER);
    tokio::spawn(pump(roster, start, feed, tx, closing));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(crate::stream::KEEP_ALIVE)
            .text("keep-alive"),
    )
}

async fn pump(
    roster: Arc<Roster>,
    start: Start,
    mut feed: broadcast::Receiver<Arc<Delta>>,
    tx: mpsc::Sender<Item>,
    mut closing: watch::Receiver<bool>,
) {
    if !send_start(&roster, start, &tx).await {
        return;
    }
    loop {
        let next = tokio::select! {
            _ = tx.closed() => return,
            _ = closing.changed() => return,
            next = feed.recv() => next,
        };
        let sent = match next {
            Ok(delta) => tx.send(delta_item(&roster, &delta)).await.is_ok(),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "a slow roster stream gets a fresh snapshot");
                let (start, again) = roster.rejoin();
                feed = again;
                send_start(&roster, start, &tx).await
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if !sent {
            return;
        }
    }
}
