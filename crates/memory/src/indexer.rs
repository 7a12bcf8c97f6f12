//! The live indexer: a background thread fed by `session/event`, so a turn never waits on
//! the index.
//!
//! The listener only clones two `Arc`s (the session handle and the event) into a bounded
//! queue: no lock, no allocation, no string copied on the turn's thread. The thread reads
//! the session's header, notes it as live and writes; when the queue is full (an index on a
//! stalled disk) the event is dropped and the session is left for the next
//! [`MemoryIndex::sync`], which reads what is missing from the log. The thread lets events
//! gather for [`GATHER`] after the first one, then takes what is queued in one go and writes
//! one transaction per session: a step's dozen events cost one transaction and one wake-up of
//! the thread instead of one each, which on a small machine is CPU taken from the turn. A
//! [`flush`](Indexer::flush) cuts the wait short.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::Duration;

use dsh_session::{Session, SessionEvent};

use crate::index::{MemoryIndex, SessionMeta};

/// Events queued for the thread before new ones are dropped.
const QUEUE: usize = 8_192;

/// How long the thread lets events gather after the first one before it writes them.
pub const GATHER: Duration = Duration::from_millis(50);

enum Job {
    Event(Session, Arc<SessionEvent>),
    Barrier(mpsc::Sender<()>),
}

/// The sending half; cheap to clone. The thread ends when the last one is dropped.
#[derive(Clone, Debug)]
pub struct Indexer {
    queue: SyncSender<Job>,
    /// Sessions this process has published events of (as far as the thread has taken
    /// them): a sync must not drop them for not being on disk yet (a new session's log is
    /// created by its first flush). [`Memory::sync`](crate::Memory::sync) flushes first.
    live: Arc<Mutex<HashSet<String>>>,
    /// The indexing thread, unparked by a flush so it need not wait out [`GATHER`].
    thread: Thread,
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
        let live: Arc<Mutex<HashSet<String>>> = Arc::default();
        let seen = live.clone();
        let thread = std::thread::Builder::new()
            .name("dsh-memory-index".into())
            .spawn(move || run(&index, &jobs, &seen))?
            .thread()
            .clone();
        Ok(Self {
            queue,
            live,
            thread,
        })
    }

    /// The ids of sessions this process published events of.
    pub fn live_ids(&self) -> HashSet<String> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Queues one published event; never blocks. Runs on the thread that appended the
    /// event (a turn's), so it only clones two `Arc`s.
    pub fn offer(&self, session: &Session, event: &Arc<SessionEvent>) {
        match self
            .queue
            .try_send(Job::Event(session.clone(), event.clone()))
        {
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
            self.thread.unpark();
            let _ = wait.recv();
        }
    }
}

fn meta_of(session: &Session) -> SessionMeta {
    let header = session.header();
    SessionMeta {
        id: header.id.as_str().to_owned(),
        cwd: header.cwd.clone(),
        created_at: header.created_at,
        parent_session: header
            .parent_session
            .as_ref()
            .map(|p| p.as_str().to_owned()),
    }
}

fn run(index: &MemoryIndex, jobs: &Receiver<Job>, live: &Mutex<HashSet<String>>) {
    while let Ok(first) = jobs.recv() {
        if matches!(first, Job::Event(..)) {
            // Let the rest of the step's events arrive; a flush unparks at once.
            std::thread::park_timeout(GATHER);
        }
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
                Job::Event(session, event) => {
                    let id = session.id().as_str();
                    if let Some(entry) = sessions.get_mut(id) {
                        entry.1.push(event);
                    } else {
                        order.push(id.to_owned());
                        sessions.insert(id.to_owned(), (meta_of(&session), vec![event]));
                    }
                }
                Job::Barrier(done) => barriers.push(done),
            }
        }
        {
            let mut live = live.lock().unwrap_or_else(PoisonError::into_inner);
            for id in &order {
                if !live.contains(id) {
                    live.insert(id.clone());
                }
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
