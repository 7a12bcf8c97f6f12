//! The live indexer: a background thread fed by `session/event`, so a turn never waits on
//! the index.
//!
//! The listener only clones an `Arc` into a bounded queue; when the queue is full (an index
//! on a stalled disk) the event is dropped and the session is left for the next
//! [`MemoryIndex::sync`], which reads what is missing from the log. The thread takes what is
//! queued in one go and writes one transaction per session.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};

use dsh_session::{Session, SessionEvent};

use crate::index::{MemoryIndex, SessionMeta};

/// Events queued for the thread before new ones are dropped.
const QUEUE: usize = 8_192;

enum Job {
    Event(SessionMeta, Arc<SessionEvent>),
    Barrier(mpsc::Sender<()>),
}

/// The sending half; cheap to clone. The thread ends when the last one is dropped.
#[derive(Clone, Debug)]
pub struct Indexer {
    queue: SyncSender<Job>,
    /// Sessions this process has published events of: a sync must not drop them for not
    /// being on disk yet (a new session's log is created by its first flush).
    live: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Indexer {
    /// Starts the thread over `index`.
    pub fn start(index: Arc<MemoryIndex>) -> std::io::Result<Self> {
        let (queue, jobs) = mpsc::sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("dsh-memory-index".into())
            .spawn(move || run(&index, &jobs))?;
        Ok(Self {
            queue,
            live: Arc::default(),
        })
    }

    /// The ids of sessions this process published events of.
    pub fn live_ids(&self) -> HashSet<String> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Queues one published event; never blocks.
    pub fn offer(&self, session: &Session, event: &Arc<SessionEvent>) {
        let header = session.header();
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if !live.contains(header.id.as_str()) {
                live.insert(header.id.as_str().to_owned());
            }
        }
        let meta = SessionMeta {
            id: header.id.as_str().to_owned(),
            cwd: header.cwd.clone(),
            created_at: header.created_at,
            parent_session: header
                .parent_session
                .as_ref()
                .map(|p| p.as_str().to_owned()),
        };
        match self.queue.try_send(Job::Event(meta, event.clone())) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                tracing::debug!("memory index queue full; the next sync catches up");
            }
        }
    }

    /// Waits until everything queued before this call is written (tests, shutdown).
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        if self.queue.send(Job::Barrier(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

fn run(index: &MemoryIndex, jobs: &Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while let Ok(more) = jobs.try_recv() {
            batch.push(more);
            if batch.len() >= QUEUE {
                break;
            }
        }
        let mut sessions: HashMap<String, (SessionMeta, Vec<Arc<SessionEvent>>)> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut barriers = Vec::new();
        for job in batch {
            match job {
                Job::Event(meta, event) => {
                    let entry = sessions.entry(meta.id.clone()).or_insert_with(|| {
                        order.push(meta.id.clone());
                        (meta, Vec::new())
                    });
                    entry.1.push(event);
                }
                Job::Barrier(done) => barriers.push(done),
            }
        }
        for id in order {
            if let Some((meta, events)) = sessions.remove(&id) {
                if let Err(err) = index.index_events(&meta, &events) {
                    tracing::warn!(code = err.code(), %err, "memory index not updated");
                }
            }
        }
        for done in barriers {
            let _ = done.send(());
        }
    }
}
