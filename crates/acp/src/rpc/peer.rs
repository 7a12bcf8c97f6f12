//! The write side of a connection and the requests dsh sends over it.

use super::frame::{self, RpcError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

type Pending = Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>;

/// A cheap, cloneable handle on the connection's write side.
///
/// Frames are queued to one writer task in the order they are sent, so a response queued
/// after a notification reaches the client after it.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<Inner>,
}

struct Inner {
    out: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
    pending: Pending,
    closed: AtomicBool,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").finish_non_exhaustive()
    }
}

/// Removes an abandoned request's reply slot (its asker stopped waiting).
struct SlotGuard<'a> {
    pending: &'a Pending,
    id: u64,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        lock(self.pending).remove(&self.id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Peer {
    /// A peer writing to `writer`; the returned task ends when every handle is dropped or
    /// a write fails (the client went away).
    pub fn new<W>(writer: W) -> (Self, tokio::task::JoinHandle<()>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::unbounded_channel();
        let peer = Self {
            inner: Arc::new(Inner {
                out,
                next_id: AtomicU64::new(0),
                pending: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
            }),
        };
        let task = tokio::spawn(write_frames(writer, rx));
        (peer, task)
    }

    fn send(&self, mut bytes: Vec<u8>) {
        bytes.push(b'\n');
        // A closed writer means the client is gone; the frame has nowhere to go.
        let _ = self.inner.out.send(bytes);
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(frame::message(None, method, params));
    }

    pub fn respond(&self, id: &Value, result: Result<Value, RpcError>) {
        self.send(frame::response(id, result));
    }

    /// Sends a request and waits for its answer. Fails at once when the connection is
    /// closed, and when it closes while waiting. Dropping the future forgets the request
    /// (a late answer is ignored).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let closed = || RpcError::internal("the client connection is closed");
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(closed());
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, tx);
        let _guard = SlotGuard {
            pending: &self.inner.pending,
            id,
        };
        self.send(frame::message(Some(id), method, params));
        rx.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Delivers the client's answer to a request dsh sent; answers to unknown ids are
    /// dropped.
    pub fn answer(&self, id: &Value, result: Result<Value, RpcError>) {
        let Some(id) = id.as_u64() else { return };
        if let Some(slot) = lock(&self.inner.pending).remove(&id) {
            let _ = slot.send(result);
        }
    }

    /// The client is gone: every waiting request fails, and new ones fail at once.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        lock(&self.inner.pending).clear();
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }
}

async fn write_frames<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut frames: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(frame) = frames.recv().await {
        if let Err(error) = writer.write_all(&frame).await {
            tracing::debug!(%error, "the client stopped reading; dropping output");
            return;
        }
        // Flush once the queue is drained, not per frame: a burst of chunks costs one flush.
        if frames.is_empty() {
            if let Err(error) = writer.flush().await {
                tracing::debug!(%error, "the client stopped reading; dropping output");
                return;
            }
        }
    }
    let _ = writer.flush().await;
}
