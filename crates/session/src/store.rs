//! `SessionStore`: the kernel service that publishes sessions to plugins.
//!
//! Lifecycle of one session: [`SessionStore::prepare`] builds it unpublished;
//! [`SessionStore::enter`] makes it live (id collision check, publisher hook, scope carrier
//! of the entering context) and returns an exact-entry [`Detach`];
//! [`SessionStore::announce`] emits `session/created` once (a listener error vetoes);
//! detaching emits `session/disposed` for announced entries. [`SessionStore::create`] does
//! all of it as one effect of the caller's fiber.
//!
//! Every dispatch carries the carrier captured at `enter`, so listeners registered in an
//! agent's scope hear only that agent's sessions.

use crate::error::SessionError;
use crate::event::SessionEvent;
use crate::fork::fork;
use crate::header::SessionHeader;
use crate::seed::SeedSource;
use crate::session::{lock, system_clock, Clock, Publisher, Session};
use dsh_kernel::{Context, Event, Notification, Parallel, Plugin, ScopeKey};
use dsh_protocol::SessionId;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// `session/created` (strict emit): a listener error vetoes publication, which is rolled
/// back with a paired `session/disposed`.
#[derive(Debug)]
pub struct SessionCreated;
impl Event for SessionCreated {
    const NAME: &'static str = "session/created";
}
impl Notification for SessionCreated {
    type Payload = Session;
}

/// `session/event` (contained emit, after commit): one accepted event, exactly as logged.
#[derive(Debug)]
pub struct SessionEventPublished;
impl Event for SessionEventPublished {
    const NAME: &'static str = "session/event";
}
impl Notification for SessionEventPublished {
    type Payload = PublishedEvent;
}

/// Payload of [`SessionEventPublished`].
#[derive(Clone, Debug)]
pub struct PublishedEvent {
    pub session: Session,
    pub event: Arc<SessionEvent>,
}

/// `session/flush` (parallel, awaited): make everything appended so far durable.
#[derive(Debug)]
pub struct SessionFlush;
impl Event for SessionFlush {
    const NAME: &'static str = "session/flush";
}
impl Parallel for SessionFlush {
    type Args = Session;
}

/// `session/disposed` (contained emit): an announced session left the store.
#[derive(Debug)]
pub struct SessionDisposed;
impl Event for SessionDisposed {
    const NAME: &'static str = "session/disposed";
}
impl Notification for SessionDisposed {
    type Payload = Session;
}

/// A constructor seed handed to [`SessionStore::prepare`].
#[derive(Clone, Debug)]
pub struct Seed {
    pub events: Vec<Arc<SessionEvent>>,
    pub source: SeedSource,
}

/// Creation metadata and seed of a new session. The store fills `version`, `id` and (when
/// absent) `createdAt`.
#[derive(Clone, Default)]
pub struct SessionOptions {
    pub created_at: Option<u64>,
    pub cwd: Option<String>,
    pub parent_session: Option<SessionId>,
    pub seed_length: Option<u64>,
    pub origin: Option<crate::header::SessionOrigin>,
    pub delegation_depth: Option<u64>,
    pub agent_preset: Option<Value>,
    pub seed: Option<Seed>,
    /// Event clock; the wall clock when absent.
    pub clock: Option<Clock>,
}

/// The session service (`ctx.sessions`).
pub struct SessionStore {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    /// Dispatches go through the store's own context; the carrier does the routing.
    ctx: Context,
    state: Mutex<StoreState>,
}

#[derive(Default)]
struct StoreState {
    entries: HashMap<SessionId, Arc<Entry>>,
    /// Creation order, for `list`.
    order: Vec<SessionId>,
    counter: u64,
}

struct Entry {
    session: Session,
    carrier: Option<ScopeKey>,
    flags: Mutex<Flags>,
}

#[derive(Default)]
struct Flags {
    announced: bool,
    announcing: bool,
    publishing: bool,
    detach_requested: bool,
    detached: bool,
}

/// Detaches one exact store entry. Idempotent; a stale handle never removes a later entry
/// with the same id. Requested during `session/created` or a `session/event` publication,
/// the detach runs when that dispatch unwinds.
#[derive(Clone)]
pub struct Detach {
    store: Weak<StoreInner>,
    entry: Arc<Entry>,
}

impl Detach {
    pub fn detach(&self) {
        if let Some(store) = self.store.upgrade() {
            store.detach(&self.entry);
        }
    }
}

impl std::fmt::Debug for Detach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detach")
            .field("session", self.entry.session.id())
            .finish()
    }
}

struct EntryPublisher {
    store: Weak<StoreInner>,
    entry: Weak<Entry>,
}

impl Publisher for EntryPublisher {
    fn publish(&self, session: &Session, event: &Arc<SessionEvent>) {
        let (Some(store), Some(entry)) = (self.store.upgrade(), self.entry.upgrade()) else {
            return;
        };
        {
            let mut flags = lock(&entry.flags);
            if flags.detached {
                return;
            }
            flags.publishing = true;
        }
        let payload = PublishedEvent {
            session: session.clone(),
            event: Arc::clone(event),
        };
        store
            .ctx
            .emit::<SessionEventPublished>(entry.carrier.as_ref(), &payload);
        let deferred = {
            let mut flags = lock(&entry.flags);
            flags.publishing = false;
            flags.detach_requested && !flags.announcing
        };
        if deferred {
            store.detach(&entry);
        }
    }
}

impl StoreInner {
    fn detach(&self, entry: &Arc<Entry>) {
        let announced = {
            let mut flags = lock(&entry.flags);
            if flags.detached {
                return;
            }
            if flags.announcing || flags.publishing {
                flags.detach_requested = true;
                return;
            }
            flags.detached = true;
            flags.detach_requested = false;
            flags.announced
        };
        {
            let mut state = lock(&self.state);
            let id = entry.session.id();
            if state.entries.get(id).is_some_and(|e| Arc::ptr_eq(e, entry)) {
                state.entries.remove(id);
                state.order.retain(|i| i != id);
            }
        }
        entry.session.set_publisher(None);
        if announced {
            self.ctx
                .emit::<SessionDisposed>(entry.carrier.as_ref(), &entry.session);
        }
    }

    fn live_entry(&self, session: &Session) -> Result<Arc<Entry>, SessionError> {
        let state = lock(&self.state);
        match state.entries.get(session.id()) {
            Some(entry) if entry.session == *session => Ok(Arc::clone(entry)),
            Some(_) => Err(SessionError::SessionNotLive {
                id: session.id().clone(),
            }),
            None => Err(SessionError::SessionNotFound {
                id: session.id().clone(),
            }),
        }
    }
}

impl SessionStore {
    /// A store dispatching through `ctx`.
    pub fn new(ctx: &Context) -> SessionStore {
        SessionStore {
            inner: Arc::new(StoreInner {
                ctx: ctx.clone(),
                state: Mutex::new(StoreState::default()),
            }),
        }
    }

    /// Validates the id and metadata and constructs the session, unpublished. Without an
    /// id the store mints `session-<n>`.
    pub fn prepare(
        &self,
        id: Option<SessionId>,
        opts: SessionOptions,
    ) -> Result<Session, SessionError> {
        let id = {
            let mut state = lock(&self.inner.state);
            match id {
                Some(id) if state.entries.contains_key(&id) => {
                    return Err(SessionError::SessionAlreadyExists { id })
                }
                Some(id) => id,
                None => loop {
                    state.counter += 1;
                    let id = SessionId::new(format!("session-{}", state.counter));
                    if !state.entries.contains_key(&id) {
                        break id;
                    }
                },
            }
        };
        let clock = opts.clock.unwrap_or_else(system_clock);
        let mut header = SessionHeader::new(id, opts.created_at.unwrap_or_else(|| clock()));
        header.cwd = opts.cwd;
        header.parent_session = opts.parent_session;
        header.seed_length = opts.seed_length;
        header.origin = opts.origin;
        header.delegation_depth = opts.delegation_depth;
        header.agent_preset = opts.agent_preset;
        let mut builder = Session::builder(header).clock(clock);
        if let Some(seed) = opts.seed {
            builder = builder.seed(seed.events, seed.source);
        }
        builder.build()
    }

    /// Makes a prepared session live: collision check, publisher hook, and the scope of
    /// `ctx` as its carrier. Nothing is announced yet.
    pub fn enter(&self, ctx: &Context, session: &Session) -> Result<Detach, SessionError> {
        let id = session.id().clone();
        let entry = Arc::new(Entry {
            session: session.clone(),
            carrier: ctx.scope().cloned(),
            flags: Mutex::new(Flags::default()),
        });
        {
            let mut state = lock(&self.inner.state);
            if state.entries.contains_key(&id) {
                return Err(SessionError::SessionAlreadyExists { id });
            }
            if session.has_publisher() {
                return Err(SessionError::AlreadyAttached { id });
            }
            state.entries.insert(id.clone(), Arc::clone(&entry));
            state.order.push(id);
            session.set_publisher(Some(Arc::new(EntryPublisher {
                store: Arc::downgrade(&self.inner),
                entry: Arc::downgrade(&entry),
            })));
        }
        Ok(Detach {
            store: Arc::downgrade(&self.inner),
            entry,
        })
    }

    /// Emits `session/created` for an entered session, once. A listener error (or panic)
    /// is returned as [`SessionError::CreationVetoed`]; the caller then detaches.
    pub fn announce(&self, session: &Session) -> Result<(), SessionError> {
        let entry = self.inner.live_entry(session)?;
        {
            let mut flags = lock(&entry.flags);
            if flags.announced {
                return Err(SessionError::AlreadyAnnounced {
                    id: session.id().clone(),
                });
            }
            // Marked before dispatch: a partial announcement is still paired with a
            // disposal, and a reentrant announce is refused.
            flags.announced = true;
            flags.announcing = true;
        }
        let result = self
            .inner
            .ctx
            .emit_strict::<SessionCreated>(entry.carrier.as_ref(), session);
        let deferred = {
            let mut flags = lock(&entry.flags);
            flags.announcing = false;
            flags.detach_requested && !flags.publishing
        };
        if deferred {
            self.inner.detach(&entry);
        }
        result.map_err(|source| SessionError::CreationVetoed {
            id: session.id().clone(),
            source,
        })
    }

    /// Prepare, enter and announce as one effect owned by `ctx`'s fiber: disposing that
    /// fiber detaches the session. A vetoed announcement is rolled back before returning.
    pub fn create(
        &self,
        ctx: &Context,
        id: Option<SessionId>,
        opts: SessionOptions,
    ) -> Result<Session, SessionError> {
        let session = self.prepare(id, opts)?;
        let detach = self.enter(ctx, &session)?;
        let undo = detach.clone();
        // On a disposed fiber the undo runs at once and the error is returned.
        let effect = ctx.effect("sessions.create", move || undo.detach())?;
        if let Err(e) = self.announce(&session) {
            effect.dispose();
            return Err(e);
        }
        effect.forget();
        Ok(session)
    }

    /// Detaches the live entry of `session` (emitting `session/disposed` if announced).
    pub fn dispose(&self, session: &Session) -> Result<(), SessionError> {
        let entry = self.inner.live_entry(session)?;
        self.inner.detach(&entry);
        Ok(())
    }

    /// Awaits every `session/flush` listener (concurrently); fails with the first failure
    /// after all settle. Only for live sessions.
    pub async fn flush(&self, session: &Session) -> Result<(), SessionError> {
        let entry = self.inner.live_entry(session)?;
        self.inner
            .ctx
            .parallel::<SessionFlush>(entry.carrier.as_ref(), Arc::new(session.clone()))
            .await
            .map_err(|aggregate| SessionError::FlushFailed {
                id: session.id().clone(),
                source: aggregate
                    .errors
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| "flush failed".into()),
            })
    }

    /// The live session with this id.
    pub fn get(&self, id: &SessionId) -> Option<Session> {
        lock(&self.inner.state)
            .entries
            .get(id)
            .map(|e| e.session.clone())
    }

    /// All live sessions, in creation order.
    pub fn list(&self) -> Vec<Session> {
        let state = lock(&self.inner.state);
        state
            .order
            .iter()
            .filter_map(|id| state.entries.get(id).map(|e| e.session.clone()))
            .collect()
    }

    /// Whether `session` is the live instance for its id.
    pub fn is_live(&self, session: &Session) -> bool {
        self.inner.live_entry(session).is_ok()
    }

    /// The scope carrier captured when `session` entered.
    pub fn carrier(&self, session: &Session) -> Option<ScopeKey> {
        self.inner
            .live_entry(session)
            .ok()
            .and_then(|e| e.carrier.clone())
    }

    /// Creates a live child of `source` seeded with its events through `boundary` (see
    /// [`fork`](crate::fork())), owned by `ctx`. `source` must be the live instance.
    pub fn fork(
        &self,
        ctx: &Context,
        source: &Session,
        boundary: Option<u64>,
        child_id: Option<SessionId>,
    ) -> Result<Session, SessionError> {
        if let Some(id) = &child_id {
            if self.get(id).is_some() {
                return Err(SessionError::SessionAlreadyExists { id: id.clone() });
            }
        }
        self.inner.live_entry(source)?;
        // The id only matters for the plan's header; prepare assigns the real one.
        let plan = fork(
            source,
            boundary,
            child_id.clone().unwrap_or_else(|| "fork".into()),
        )?;
        let opts = SessionOptions {
            created_at: Some(plan.header.created_at),
            cwd: plan.header.cwd,
            parent_session: plan.header.parent_session,
            seed_length: plan.header.seed_length,
            seed: Some(Seed {
                events: plan.seed,
                source: SeedSource::Fork,
            }),
            clock: Some(Arc::clone(source.clock())),
            ..SessionOptions::default()
        };
        self.create(ctx, child_id, opts)
    }
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("live", &lock(&self.inner.state).entries.len())
            .finish()
    }
}

/// Provides [`SessionStore`] as a service (`ctx.require::<SessionStore>()`).
#[derive(Debug)]
pub struct SessionsPlugin;

impl Plugin for SessionsPlugin {
    const NAME: &'static str = "sessions";
    type Config = ();

    fn apply(ctx: &Context, _config: ()) -> Result<(), dsh_kernel::BoxError> {
        ctx.provide(Arc::new(SessionStore::new(ctx)))?.forget();
        Ok(())
    }
}
