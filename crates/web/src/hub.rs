//! The sessions this server holds.
//!
//! A [`Hub`] keeps one agent per session that any client touched (created, resumed, or
//! asked for), alive whether or not a page is open, until the server shuts down. Each
//! held session has a [`LiveSession`]: its agent, a broadcast feed of [`Frame`]s for the
//! event streams, and the approvals and questions it has open. Every workspace the hub
//! boots gets its listeners once: session events and agent status go to the held
//! session's feed, and the workspace's question service asks through the hub.

mod answer;
mod listing;
mod stored;

pub use listing::SessionSummary;
pub use stored::Events;

use crate::error::ApiError;
use crate::host::WebHost;
use crate::roster::Roster;
use answer::{Open, WebApprovals, WebQuestions};
use dsh_acp::{AgentChoice, Workspace};
use dsh_agent::{AgentHandle, AgentStatus, AgentStatusChanged, ModelSelectionRef};
use dsh_kernel::Disposer;
use dsh_protocol::SessionId;
use dsh_session::{SessionEvent, SessionEventPublished};
use dsh_store::SessionPersistence;
use dsh_tools_builtin::Approvals;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use tokio::sync::broadcast;

pub use answer::{ApprovalAnswer, QuestionAnswer};

/// How many frames a slow stream may fall behind before it is caught up from the log.
const FEED_CAPACITY: usize = 1024;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One item on a session's live feed.
#[derive(Clone, Debug)]
pub enum Frame {
    /// A log event (durable; has a seq).
    Event(Arc<SessionEvent>),
    /// The agent started or stopped working.
    Status {
        running: bool,
    },
    /// An approval or question opened or closed (payloads as docs/web-api.md).
    Approval(Value),
    ApprovalResolved(Value),
    Question(Value),
    QuestionResolved(Value),
}

/// A session held by this server.
pub struct LiveSession {
    pub id: SessionId,
    pub workspace: Arc<dyn Workspace>,
    pub handle: AgentHandle,
    /// The model this session asks from its next step (`None`: the configured one).
    pub selection: Arc<ModelSelectionRef>,
    feed: broadcast::Sender<Arc<Frame>>,
    open: Mutex<Open>,
    listeners: Mutex<Vec<Disposer>>,
    roster: Arc<Roster>,
}

impl LiveSession {
    pub fn running(&self) -> bool {
        self.handle.agent().status() == AgentStatus::Running
    }

    /// A receiver of every frame published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Frame>> {
        self.feed.subscribe()
    }

    /// Whether an approval or question waits for an answer.
    pub fn waiting(&self) -> bool {
        lock(&self.open).is_waiting()
    }

    pub(crate) fn publish(&self, frame: Frame) {
        let listed = match &frame {
            Frame::Event(event) => event.data.type_name() == "session/title",
            Frame::Status { .. }
            | Frame::Approval(_)
            | Frame::ApprovalResolved(_)
            | Frame::Question(_)
            | Frame::QuestionResolved(_) => true,
        };
        // No receiver is fine: nobody is watching.
        let _ = self.feed.send(Arc::new(frame));
        if listed {
            self.roster.touch();
        }
    }

    /// The open approvals' and questions' payloads, oldest first.
    pub fn pending(&self) -> (Vec<Value>, Vec<Value>) {
        lock(&self.open).payloads()
    }

    /// Answers an open approval; `ApprovalNotFound` when it is not open.
    pub fn answer_approval(&self, id: &str, answer: ApprovalAnswer) -> Result<(), ApiError> {
        let (slot, word) = lock(&self.open)
            .take_approval(id)
            .map(|slot| (slot, answer.word()))
            .ok_or_else(|| ApiError::ApprovalNotFound(id.to_owned()))?;
        let _ = slot.send(answer.into_decision());
        self.publish(Frame::ApprovalResolved(
            serde_json::json!({ "id": id, "decision": word }),
        ));
        Ok(())
    }

    /// Answers an open question; `QuestionNotFound` when it is not open.
    pub fn answer_question(&self, id: &str, answer: QuestionAnswer) -> Result<(), ApiError> {
        let slot = lock(&self.open)
            .take_question(id)
            .ok_or_else(|| ApiError::QuestionNotFound(id.to_owned()))?;
        let word = answer.word();
        let _ = slot.send(answer.into_outcome());
        self.publish(Frame::QuestionResolved(
            serde_json::json!({ "id": id, "outcome": word }),
        ));
        Ok(())
    }
}

/// Listeners installed on one booted workspace.
struct Wired {
    listeners: Vec<Disposer>,
    questions: Option<dsh_modes::question::ProviderRegistration>,
}

struct HubInner {
    host: Arc<dyn WebHost>,
    default_cwd: PathBuf,
    persistence: Option<Arc<dyn SessionPersistence>>,
    live: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
    /// Serialises creating and resuming, so two clients racing share one agent.
    opening: tokio::sync::Mutex<()>,
    wired: Mutex<HashMap<PathBuf, Wired>>,
    roster: Arc<Roster>,
    /// The last stored (not held) log `history` read.
    stored_logs: stored::StoredLogs,
}

/// The sessions this server holds; cheap to clone.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

impl Hub {
    /// Boots the default workspace (so a broken configuration fails the launch, not the
    /// first click) and finds the session store through it.
    pub async fn start(host: Arc<dyn WebHost>) -> Result<Self, ApiError> {
        let default_cwd = host.default_cwd();
        let workspace = host.open(&default_cwd, &[]).await?;
        let persistence = workspace.ctx().get::<dyn SessionPersistence>();
        let hub = Self {
            inner: Arc::new(HubInner {
                host,
                default_cwd: workspace.root().to_path_buf(),
                persistence,
                live: Mutex::new(HashMap::new()),
                opening: tokio::sync::Mutex::new(()),
                wired: Mutex::new(HashMap::new()),
                roster: Arc::new(Roster::new()),
                stored_logs: stored::StoredLogs::default(),
            }),
        };
        hub.wire(&workspace)?;
        Ok(hub)
    }

    pub fn host(&self) -> &Arc<dyn WebHost> {
        &self.inner.host
    }

    /// The directory `dsh web` serves by default (sessions are created there).
    pub fn default_cwd(&self) -> &Path {
        &self.inner.default_cwd
    }

    pub fn persistence(&self) -> Option<&Arc<dyn SessionPersistence>> {
        self.inner.persistence.as_ref()
    }

    /// The session list's changes, for the host event stream.
    pub fn roster(&self) -> &Arc<Roster> {
        &self.inner.roster
    }

    /// The held session `id`, if any.
    pub fn held(&self, id: &SessionId) -> Option<Arc<LiveSession>> {
        lock(&self.inner.live).get(id).cloned()
    }

    /// Every held session.
    pub fn held_all(&self) -> Vec<Arc<LiveSession>> {
        lock(&self.inner.live).values().cloned().collect()
    }

    /// A new session in `cwd` (default: the server's directory), held from now on.
    pub async fn create(
        &self,
        cwd: Option<&Path>,
        choice: AgentChoice,
    ) -> Result<Arc<LiveSession>, ApiError> {
        self.inner.host.check_choice(&choice)?;
        let cwd = cwd.unwrap_or(&self.inner.default_cwd);
        let workspace = self.inner.host.open(cwd, &[]).await?;
        self.wire(&workspace)?;
        let _opening = self.inner.opening.lock().await;
        let id = workspace.new_session_id();
        let handle = workspace.create(id, &choice).await?;
        self.adopt(workspace, handle)
    }

    /// The held session `id`, resuming it from the store (crash repair included) when it
    /// is not held yet.
    pub async fn session(&self, id: &SessionId) -> Result<Arc<LiveSession>, ApiError> {
        if let Some(live) = self.held(id) {
            return Ok(live);
        }
        let _opening = self.inner.opening.lock().await;
        if let Some(live) = self.held(id) {
            return Ok(live);
        }
        let stored = self
            .stored_summary(id)?
            .ok_or_else(|| ApiError::SessionNotFound(id.as_str().to_owned()))?;
        let cwd = stored
            .cwd
            .map(PathBuf::from)
            .unwrap_or_else(|| self.inner.default_cwd.clone());
        let workspace = self.inner.host.open(&cwd, &[]).await?;
        self.wire(&workspace)?;
        let handle = workspace
            .resume(id.clone(), &AgentChoice::default())
            .await?;
        self.adopt(workspace, handle)
    }

    /// The store's summary of `id`, when stored.
    pub fn stored_summary(
        &self,
        id: &SessionId,
    ) -> Result<Option<dsh_store::SessionSummary>, ApiError> {
        let Some(persistence) = &self.inner.persistence else {
            return Ok(None);
        };
        let all = persistence
            .list()
            .map_err(|e| ApiError::Internal(format!("listing the session store failed: {e}")))?;
        Ok(all.into_iter().find(|s| s.id == id.as_str()))
    }

    /// Holds a fresh agent: its feed, its approval answerer, its model selection.
    fn adopt(
        &self,
        workspace: Arc<dyn Workspace>,
        handle: AgentHandle,
    ) -> Result<Arc<LiveSession>, ApiError> {
        let agent = handle.agent().clone();
        let selection = Arc::new(ModelSelectionRef::new(None));
        let listeners = dsh_agent::install_model_selection(agent.ctx(), selection.clone())
            .map_err(|e| ApiError::Internal(format!("installing the model switch failed: {e}")))?;
        let (feed, _) = broadcast::channel(FEED_CAPACITY);
        let live = Arc::new(LiveSession {
            id: agent.id().clone(),
            workspace: workspace.clone(),
            handle,
            selection,
            feed,
            open: Mutex::new(Open::default()),
            listeners: Mutex::new(listeners.into_iter().collect()),
            roster: self.inner.roster.clone(),
        });
        if let Some(approvals) = workspace.ctx().get::<Approvals>() {
            let answerer = WebApprovals::new(Arc::downgrade(&live));
            approvals.set_session_answerer(agent.session(), Some(Arc::new(answerer)));
        }
        lock(&self.inner.live).insert(live.id.clone(), live.clone());
        self.inner.roster.touch();
        Ok(live)
    }

    /// Installs a workspace's listeners, once per workspace root.
    fn wire(&self, workspace: &Arc<dyn Workspace>) -> Result<(), ApiError> {
        let root = workspace.root().to_path_buf();
        let mut wired = lock(&self.inner.wired);
        if wired.contains_key(&root) {
            return Ok(());
        }
        let ctx = workspace.ctx();
        let failed = |e: dsh_kernel::KernelError| {
            ApiError::Internal(format!("listening to the workspace failed: {e}"))
        };
        let hub = Arc::downgrade(&self.inner);
        let events = ctx
            .on::<SessionEventPublished>(move |published| {
                if let Some(live) = held(&hub, published.session.id()) {
                    live.publish(Frame::Event(published.event.clone()));
                }
                Ok(())
            })
            .map_err(failed)?;
        let hub = Arc::downgrade(&self.inner);
        let status = ctx
            .on::<AgentStatusChanged>(move |changed| {
                if let Some(live) = held(&hub, changed.agent.id()) {
                    live.publish(Frame::Status {
                        running: changed.data == AgentStatus::Running,
                    });
                }
                Ok(())
            })
            .map_err(failed)?;
        let questions = ctx
            .get::<dsh_modes::question::UserQuestions>()
            .and_then(|service| {
                let provider = WebQuestions::new(Arc::downgrade(&self.inner));
                match service.register_provider(Arc::new(provider)) {
                    Ok(registration) => Some(registration),
                    Err(error) => {
                        tracing::warn!(%error, "the web server cannot take this workspace's questions");
                        None
                    }
                }
            });
        wired.insert(
            root,
            Wired {
                listeners: vec![events, status],
                questions,
            },
        );
        Ok(())
    }

    /// Cancels and disposes every held agent (each log ends balanced and flushed), then
    /// unloads the workspaces.
    pub async fn shutdown(&self) {
        let held: Vec<Arc<LiveSession>> = lock(&self.inner.live).drain().map(|(_, l)| l).collect();
        for live in held {
            live.handle.dispose().await;
            for listener in lock(&live.listeners).drain(..) {
                listener.dispose();
            }
        }
        let wired: Vec<Wired> = lock(&self.inner.wired).drain().map(|(_, w)| w).collect();
        for workspace in wired {
            for listener in workspace.listeners {
                listener.dispose();
            }
            drop(workspace.questions);
        }
        self.inner.host.shutdown();
    }
}

fn held(hub: &Weak<HubInner>, id: &SessionId) -> Option<Arc<LiveSession>> {
    let hub = hub.upgrade()?;
    let live = lock(&hub.live).get(id).cloned();
    live
}
