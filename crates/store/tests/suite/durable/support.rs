//! A live harness for the durability tests: the session store, a write coordinator over a
//! recording (and optionally failing) persistence, the resume source and the checkpoint
//! policy, wired the way `session-persistence-jsonl` wires them.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agent::ResumeSource;
use dsh_kernel::{BoxError, Context};
use dsh_protocol::{Message, SessionId};
use dsh_session::{
    AppendOptions, EventData, Session, SessionCreated, SessionDisposed, SessionEvent,
    SessionEventPublished, SessionFlush, SessionHeader, SessionOptions, SessionStore,
    SessionsPlugin, StepBoundary, TurnStart,
};
use dsh_store::{
    CheckpointPolicyPlugin, Compression, Inspection, JsonlBackend, JsonlConfig, SessionPersistence,
    SessionPreparation, SessionSummary, StoreError, StoreResumeSource, StoredSession,
    WriteBehindConfig, WriteCoordinator,
};

pub const CWD: &str = "/home/user/project";

/// A [`JsonlBackend`] that records every durable append and can be told to fail them.
pub struct RecordingPersistence {
    inner: JsonlBackend,
    /// (session, first seq, count) per successful append, in order.
    appends: Mutex<Vec<(SessionId, u64, usize)>>,
    fail_with: Mutex<Option<io::ErrorKind>>,
}

impl RecordingPersistence {
    pub fn new(root: &Path, compression: Compression) -> Arc<Self> {
        let mut config = JsonlConfig::new(root);
        config.compression = compression;
        Arc::new(RecordingPersistence {
            inner: JsonlBackend::new(config),
            appends: Mutex::new(Vec::new()),
            fail_with: Mutex::new(None),
        })
    }

    /// Events of `id` durably stored so far.
    pub fn durable(&self, id: &SessionId) -> u64 {
        self.inner.next_seq(id).unwrap_or(0)
    }

    pub fn appends(&self) -> Vec<(SessionId, u64, usize)> {
        self.appends.lock().unwrap().clone()
    }

    /// Makes every later append fail with `kind` (`None` heals the disk).
    pub fn fail_appends(&self, kind: Option<io::ErrorKind>) {
        *self.fail_with.lock().unwrap() = kind;
    }
}

impl SessionPersistence for RecordingPersistence {
    fn create(&self, header: &SessionHeader) -> Result<(), StoreError> {
        self.inner.create(header)
    }
    fn next_seq(&self, id: &SessionId) -> Result<u64, StoreError> {
        self.inner.next_seq(id)
    }
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), StoreError> {
        if let Some(kind) = *self.fail_with.lock().unwrap() {
            return Err(StoreError::Io {
                op: "append to",
                path: PathBuf::from(format!("/sessions/{id}/session.jsonl.zstd")),
                source: io::Error::new(kind, "simulated"),
            });
        }
        self.inner.append(id, events)?;
        if let Some(first) = events.first() {
            self.appends
                .lock()
                .unwrap()
                .push((id.clone(), first.seq, events.len()));
        }
        Ok(())
    }
    fn prepare(&self, id: &SessionId) -> Result<SessionPreparation, StoreError> {
        self.inner.prepare(id)
    }
    fn load(&self, id: &SessionId) -> Result<StoredSession, StoreError> {
        self.inner.load(id)
    }
    fn inspect(&self, id: &SessionId) -> Result<Inspection, StoreError> {
        self.inner.inspect(id)
    }
    fn read_from(
        &self,
        id: &SessionId,
        from_seq: u64,
    ) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
        self.inner.read_from(id, from_seq)
    }
    fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.inner.list()
    }
    fn release(&self, id: &SessionId) {
        self.inner.release(id)
    }
}

pub struct Harness {
    pub ctx: Context,
    pub sessions: Arc<SessionStore>,
    pub persistence: Arc<RecordingPersistence>,
    pub resume: Arc<dyn ResumeSource>,
}

/// Mounts the harness over `root`. Write-behind windows are an hour long, so nothing is
/// written unless a checkpoint (or the test) flushes.
pub fn mount(root: &Path, compression: Compression) -> Harness {
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(()).unwrap();
    let persistence = RecordingPersistence::new(root, compression);
    let dyn_persistence: Arc<dyn SessionPersistence> = persistence.clone();
    let coordinator = WriteCoordinator::new(
        dyn_persistence,
        WriteBehindConfig {
            max_delay: Duration::from_secs(3600),
        },
    );
    let c = coordinator.clone();
    ctx.on::<SessionCreated>(move |session| c.register(session).map_err(boxed))
        .unwrap()
        .forget();
    let c = coordinator.clone();
    ctx.on::<SessionEventPublished>(move |published| {
        c.notify(published.session.id());
        Ok(())
    })
    .unwrap()
    .forget();
    let c = coordinator.clone();
    ctx.on_parallel::<SessionFlush, _, _>(move |session| {
        let c = c.clone();
        async move { c.flush(session.id()).await.map_err(boxed) }
    })
    .unwrap()
    .forget();
    let c = coordinator.clone();
    ctx.on::<SessionDisposed>(move |session| {
        c.release_detached(session.id());
        Ok(())
    })
    .unwrap()
    .forget();
    let resume: Arc<dyn ResumeSource> = Arc::new(StoreResumeSource::new(coordinator));
    ctx.plugin::<CheckpointPolicyPlugin>(()).unwrap();
    Harness {
        sessions: ctx.require::<SessionStore>().unwrap(),
        ctx,
        persistence,
        resume,
    }
}

fn boxed(err: StoreError) -> BoxError {
    Box::new(err)
}

impl Harness {
    /// A live session in [`CWD`].
    pub fn create(&self, id: &str) -> Session {
        let opts = SessionOptions {
            cwd: Some(CWD.into()),
            ..SessionOptions::default()
        };
        self.sessions
            .create(&self.ctx, Some(SessionId::from(id)), opts)
            .unwrap()
    }

    /// Publishes a prepared (resumed) session.
    pub fn publish(&self, session: &Session) {
        let detach = self.sessions.enter(&self.ctx, session).unwrap();
        std::mem::forget(detach);
        self.sessions.announce(session).unwrap();
    }
}

pub fn log_only(session: &Session, data: EventData) {
    session.append(data, AppendOptions::log_only()).unwrap();
}

/// Opens turn `turn` with its first step and a user prompt.
pub fn open_step(session: &Session, turn: u64, step: u64) {
    if step == 1 {
        log_only(session, EventData::TurnStart(TurnStart { turn }));
    }
    log_only(session, EventData::StepStart(StepBoundary { turn, step }));
    session
        .append(
            EventData::UserMessage(Arc::new(Message::user_text(format!("prompt {turn}")))),
            AppendOptions::surface_append(),
        )
        .unwrap();
}

/// Copies a directory tree (fixtures are read-only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` with its bytes, to prove that something wrote nothing.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}
