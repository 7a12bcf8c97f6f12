//! `Session`: one append-only event log with its incremental projections.
//!
//! Append takes a short lock, validates, commits, releases, then notifies the store's
//! publisher (if the session is attached). Appends of one session are serialized by a
//! publication gate so observers see events in seq order; an append attempted *from inside*
//! that notification (on the publishing thread) is refused instead of deadlocking.

use crate::companion::{Companions, EventOrigin};
use crate::derive::{canonical_header, derive_event_message};
use crate::error::SessionError;
use crate::event::{EventData, SessionEvent, SurfaceOp};
use crate::header::SessionHeader;
use crate::plugin_event::PluginEvent;
use crate::seed::{SeedSource, SessionBuilder};
use crate::surface::{Surface, SurfaceFold, SurfacePlan};
use crate::validate::{self, Admission};
use crate::vocabulary::RequestContext;
use dsh_protocol::{EpochHeader, Message, SessionId};
use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Source of event times, in epoch milliseconds.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The wall clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    })
}

/// Surface metadata and flags of one append.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppendOptions {
    /// Required on message-producing types, refused on all others.
    pub surface_op: Option<SurfaceOp>,
    /// Provenance; only on message-producing types.
    pub source_event_seqs: Option<Vec<u64>>,
    /// Readers that do not know the type may skip it.
    pub ignorable: bool,
}

impl AppendOptions {
    /// A log-only event (no surface metadata).
    pub fn log_only() -> Self {
        Self::default()
    }

    /// A message event appended to the surface tail.
    pub fn surface_append() -> Self {
        Self {
            surface_op: Some(SurfaceOp::Append),
            ..Self::default()
        }
    }

    /// A message event replacing the surface nodes `start..=end`.
    pub fn surface_replace(start: u64, end: u64) -> Self {
        Self {
            surface_op: Some(SurfaceOp::Replace { start, end }),
            ..Self::default()
        }
    }

    /// Cites the events this one derives from.
    pub fn sources(mut self, seqs: Vec<u64>) -> Self {
        self.source_event_seqs = Some(seqs);
        self
    }

    /// Marks the event skippable by readers that do not know its type.
    pub fn ignorable(mut self) -> Self {
        self.ignorable = true;
        self
    }
}

/// Called after each committed append of an attached session (the store installs one).
pub(crate) trait Publisher: Send + Sync {
    fn publish(&self, session: &Session, event: &Arc<SessionEvent>);
}

/// An append-only session log. Cheap to clone; identity is the shared allocation.
#[derive(Clone)]
pub struct Session(Arc<Inner>);

struct Inner {
    header: SessionHeader,
    first_live_seq: u64,
    seed_source: Option<SeedSource>,
    clock: Clock,
    /// Serializes commit + publication so observers see seq order.
    gate: Mutex<()>,
    state: Mutex<State>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) log: Vec<Arc<SessionEvent>>,
    snapshot: Option<Arc<[Arc<SessionEvent>]>>,
    /// Where the newest event of each plugin type sits in `log`, kept at every commit so
    /// "the latest `plan-mode/set`" or "the latest title" is a lookup, not a scan of a log
    /// that only grows.
    newest_plugin: HashMap<String, usize>,
    pub(crate) fold: SurfaceFold,
    derived: Vec<Arc<Message>>,
    derived_nodes: usize,
    derived_generation: u64,
    request_header: Option<Arc<EpochHeader>>,
    request_context: Option<RequestContext>,
    publisher: Option<Arc<dyn Publisher>>,
    /// The registered invariant companions' states.
    companions: Companions,
    /// Events below this seq came from construction (seed and its end marker); `u64::MAX`
    /// while the builder is still replaying.
    pub(crate) constructed: u64,
}

impl State {
    /// Asks the invariant companions whether `event` may be committed next.
    pub(crate) fn check_companions(
        &mut self,
        event: &SessionEvent,
        origin: EventOrigin,
    ) -> Result<(), SessionError> {
        self.companions
            .check(&self.log, self.constructed, event, origin)
    }

    /// Pushes an already validated event (surface plan and companions checked) and advances
    /// the incremental folds.
    pub(crate) fn commit(
        &mut self,
        event: Arc<SessionEvent>,
        plan: SurfacePlan,
        origin: EventOrigin,
    ) {
        self.companions.apply(&event, origin);
        match &event.data {
            EventData::RequestHeader(h) => {
                self.request_header = Some(Arc::new(canonical_header(&h.header)));
            }
            EventData::RequestContext(c) => self.request_context = Some(c.clone()),
            EventData::Other { type_name, .. } => {
                let at = self.log.len();
                match self.newest_plugin.get_mut(type_name.as_str()) {
                    Some(newest) => *newest = at,
                    None => {
                        self.newest_plugin.insert(type_name.clone(), at);
                    }
                }
            }
            _ => {}
        }
        self.fold.apply(plan);
        self.log.push(event);
        self.snapshot = None;
    }
}

thread_local! {
    /// Sessions whose `session/event` notification is running on this thread.
    static PUBLISHING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

struct PublishingGuard(usize);

impl PublishingGuard {
    fn enter(key: usize) -> Self {
        PUBLISHING.with(|p| p.borrow_mut().push(key));
        Self(key)
    }
}

impl Drop for PublishingGuard {
    fn drop(&mut self) {
        PUBLISHING.with(|p| {
            let mut p = p.borrow_mut();
            if let Some(i) = p.iter().rposition(|&k| k == self.0) {
                p.remove(i);
            }
        });
    }
}

pub(crate) use dsh_kernel::sync::lock;

impl Session {
    /// An empty log.
    pub fn new(header: SessionHeader) -> Result<Session, SessionError> {
        SessionBuilder::new(header).build()
    }

    /// A log constructed from `seed` (replay, fork, resume); see [`SessionBuilder::seed`].
    pub fn with_seed<I, E>(
        header: SessionHeader,
        seed: I,
        source: SeedSource,
    ) -> Result<Session, SessionError>
    where
        I: IntoIterator<Item = E>,
        E: Into<Arc<SessionEvent>>,
    {
        SessionBuilder::new(header).seed(seed, source).build()
    }

    /// A builder for the less common options (clock).
    pub fn builder(header: SessionHeader) -> SessionBuilder {
        SessionBuilder::new(header)
    }

    pub(crate) fn from_parts(
        header: SessionHeader,
        first_live_seq: u64,
        seed_source: Option<SeedSource>,
        clock: Clock,
        state: State,
    ) -> Session {
        Session(Arc::new(Inner {
            header,
            first_live_seq,
            seed_source,
            clock,
            gate: Mutex::new(()),
            state: Mutex::new(state),
        }))
    }

    pub fn id(&self) -> &SessionId {
        &self.0.header.id
    }

    pub fn header(&self) -> &SessionHeader {
        &self.0.header
    }

    /// How the constructor seed came about, if there was one.
    pub fn seed_source(&self) -> Option<SeedSource> {
        self.0.seed_source
    }

    /// The first seq appended in this process (the seed length). Events before it were
    /// never published on `session/event`. Not the durable fork boundary
    /// ([`SessionHeader::seed_length`]).
    pub fn first_live_seq(&self) -> u64 {
        self.0.first_live_seq
    }

    /// Number of events, which is also the next seq.
    pub fn len(&self) -> u64 {
        lock(&self.0.state).log.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `a` and `b` are the same session object.
    pub fn ptr_eq(a: &Session, b: &Session) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Validates and commits one event, then notifies the attached store.
    ///
    /// Refused (log unchanged) when the data is not lossless or breaks its type's shape, the
    /// type is unknown and not ignorable, the surface metadata breaks the surface rules, or
    /// the call comes from inside this session's own `session/event` notification.
    pub fn append(
        &self,
        data: EventData,
        opts: AppendOptions,
    ) -> Result<Arc<SessionEvent>, SessionError> {
        self.admit(data, opts, Admission::Append)
    }

    /// Validates and commits one plugin-owned event (log-only, `ignorable` as `T` declares),
    /// then notifies the attached store.
    ///
    /// Refused (log unchanged) when `T`'s validation hook refuses the payload, for every
    /// reason [`append`](Self::append) refuses, and when `T` is required but this build does
    /// not know it: a type that is not the original's must be registered
    /// ([`register_event_types`](crate::register_event_types)) before its events are written,
    /// or the log could not be read back.
    pub fn append_typed<T: PluginEvent>(
        &self,
        payload: &T,
    ) -> Result<Arc<SessionEvent>, SessionError> {
        payload
            .validate()
            .map_err(|reason| SessionError::data(T::TYPE, reason))?;
        let opts = AppendOptions {
            ignorable: T::IGNORABLE,
            ..AppendOptions::log_only()
        };
        self.admit(
            EventData::plugin(payload)?,
            opts,
            Admission::Typed(TypeId::of::<T>()),
        )
    }

    fn admit(
        &self,
        data: EventData,
        opts: AppendOptions,
        admission: Admission,
    ) -> Result<Arc<SessionEvent>, SessionError> {
        validate::check_event(&data, opts.ignorable, admission)?;
        let key = self.key();
        if PUBLISHING.with(|p| p.borrow().contains(&key)) {
            return Err(SessionError::AppendReentered {
                session: self.id().clone(),
            });
        }
        let _gate = lock(&self.0.gate);
        let (event, publisher) = {
            let mut state = lock(&self.0.state);
            let seq = state.log.len() as u64;
            let plan = state
                .fold
                .plan(
                    seq,
                    &data,
                    opts.surface_op.as_ref(),
                    opts.source_event_seqs.as_deref(),
                    &state.log,
                )
                .map_err(|violation| SessionError::InvalidSurface {
                    seq,
                    type_name: data.type_name().to_owned(),
                    violation,
                })?;
            let event = Arc::new(SessionEvent {
                seq,
                time: (self.0.clock)(),
                data,
                ignorable: opts.ignorable,
                surface_op: opts.surface_op,
                source_event_seqs: opts.source_event_seqs,
            });
            state.check_companions(&event, EventOrigin::Append)?;
            state.commit(Arc::clone(&event), plan, EventOrigin::Append);
            (event, state.publisher.clone())
        };
        if let Some(publisher) = publisher {
            let _publishing = PublishingGuard::enter(key);
            publisher.publish(self, &event);
        }
        Ok(event)
    }

    /// The whole log. The snapshot is cached until the next append, so repeated reads are
    /// cheap; a snapshot never grows. After an append it is rebuilt, a copy of the whole
    /// log: code that runs every step reads [`newest`](Self::newest) or
    /// [`events_from`](Self::events_from) instead.
    pub fn events(&self) -> Arc<[Arc<SessionEvent>]> {
        let mut state = lock(&self.0.state);
        if let Some(snapshot) = &state.snapshot {
            return Arc::clone(snapshot);
        }
        let snapshot: Arc<[Arc<SessionEvent>]> = state.log.iter().cloned().collect();
        state.snapshot = Some(Arc::clone(&snapshot));
        snapshot
    }

    /// The event at `seq`.
    pub fn event(&self, seq: u64) -> Option<Arc<SessionEvent>> {
        let state = lock(&self.0.state);
        usize::try_from(seq)
            .ok()
            .and_then(|i| state.log.get(i))
            .cloned()
    }

    /// The events from `seq` on (empty when `seq >= len`).
    pub fn events_from(&self, seq: u64) -> Vec<Arc<SessionEvent>> {
        let state = lock(&self.0.state);
        let start = usize::try_from(seq)
            .unwrap_or(usize::MAX)
            .min(state.log.len());
        state.log[start..].to_vec()
    }

    pub fn last_event(&self) -> Option<Arc<SessionEvent>> {
        lock(&self.0.state).log.last().cloned()
    }

    /// The newest event of plugin type `T`, found without scanning the log.
    ///
    /// Per-step readers of a plugin's latest state (plan mode, the title) use this rather
    /// than [`events`](Self::events), whose snapshot is rebuilt after every append: in a
    /// long session that is a copy of the whole log per call.
    pub fn newest<T: PluginEvent>(&self) -> Option<Arc<SessionEvent>> {
        let state = lock(&self.0.state);
        let at = *state.newest_plugin.get(T::TYPE)?;
        state.log.get(at).cloned()
    }

    /// The newest event of plugin type `T`, decoded: `Some(Err)` when it does not decode
    /// (another writer shaped it differently), `None` when the log has none.
    pub fn newest_decoded<T: PluginEvent>(&self) -> Option<Result<T, SessionError>> {
        self.newest::<T>()?.decode::<T>()
    }

    /// A copy of the current surface.
    pub fn surface(&self) -> Surface {
        lock(&self.0.state).fold.surface.clone()
    }

    /// Model history: the message of every surface node, in order (empty assistant
    /// messages contribute nothing). Cached per node; rebuilt after a replace.
    pub fn derive_messages(&self) -> Vec<Arc<Message>> {
        let mut guard = lock(&self.0.state);
        let state = &mut *guard;
        let surface = &state.fold.surface;
        if surface.replace_generation != state.derived_generation {
            state.derived.clear();
            state.derived_nodes = 0;
            state.derived_generation = surface.replace_generation;
        }
        for &seq in &surface.nodes[state.derived_nodes.min(surface.nodes.len())..] {
            let event = usize::try_from(seq).ok().and_then(|i| state.log.get(i));
            if let Some(message) = event.and_then(|e| derive_event_message(e)) {
                state.derived.push(message);
            }
        }
        state.derived_nodes = surface.nodes.len();
        state.derived.clone()
    }

    /// The canonical form of the latest `request/header`.
    pub fn request_header(&self) -> Option<Arc<EpochHeader>> {
        lock(&self.0.state).request_header.clone()
    }

    /// The latest `request/context`.
    pub fn request_context(&self) -> Option<RequestContext> {
        lock(&self.0.state).request_context.clone()
    }

    /// Installs (or, with `None`, removes) the store's publisher; returns the previous one.
    pub(crate) fn set_publisher(
        &self,
        publisher: Option<Arc<dyn Publisher>>,
    ) -> Option<Arc<dyn Publisher>> {
        // Not behind the gate: a deferred detach runs from inside a publication. The store's
        // publisher checks its own liveness, so a racing publication after removal is inert.
        std::mem::replace(&mut lock(&self.0.state).publisher, publisher)
    }

    /// The clock this session stamps events with.
    pub fn clock(&self) -> &Clock {
        &self.0.clock
    }

    pub(crate) fn has_publisher(&self) -> bool {
        lock(&self.0.state).publisher.is_some()
    }
}

impl PartialEq for Session {
    fn eq(&self, other: &Self) -> bool {
        Session::ptr_eq(self, other)
    }
}

impl Eq for Session {}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", self.id())
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::TurnStart;

    type Outcome = Result<u64, &'static str>;

    /// Records what an observer saw and what its own reentrant append got.
    struct Reentrant {
        other: Session,
        seen: Mutex<Vec<(u64, Outcome, Outcome)>>,
    }

    impl Publisher for Reentrant {
        fn publish(&self, session: &Session, event: &Arc<SessionEvent>) {
            let own = session
                .append(turn(99), AppendOptions::log_only())
                .map(|e| e.seq)
                .map_err(|e| e.code());
            let other = self
                .other
                .append(turn(7), AppendOptions::log_only())
                .map(|e| e.seq)
                .map_err(|e| e.code());
            lock(&self.seen).push((event.seq, own, other));
        }
    }

    fn turn(turn: u64) -> EventData {
        EventData::TurnStart(TurnStart { turn })
    }

    fn session(id: &str) -> Session {
        Session::builder(SessionHeader::new(id.into(), 1))
            .clock(Arc::new(|| 42))
            .build()
            .unwrap()
    }

    #[test]
    fn an_observer_cannot_append_to_the_session_it_is_observing() {
        let session = session("s");
        let observer = Arc::new(Reentrant {
            other: self::session("o"),
            seen: Mutex::new(Vec::new()),
        });
        assert!(session.set_publisher(Some(observer.clone())).is_none());
        assert!(session.has_publisher());
        let event = session.append(turn(1), AppendOptions::log_only()).unwrap();
        assert_eq!((event.seq, event.time), (0, 42));
        // Refused, not deadlocked; appending to a different session is fine.
        assert_eq!(
            *lock(&observer.seen),
            vec![(0, Err("APPEND_REENTERED"), Ok(0))]
        );
        assert_eq!(session.len(), 1);
        // After publication the session accepts appends again.
        session.set_publisher(None);
        session.append(turn(2), AppendOptions::log_only()).unwrap();
        assert_eq!(session.len(), 2);
    }

    #[test]
    fn concurrent_appends_keep_seqs_contiguous() {
        let session = session("s");
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let session = session.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        session
                            .append(turn(t * 100 + i), AppendOptions::log_only())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let events = session.events();
        assert_eq!(events.len(), 200);
        assert!(events.iter().enumerate().all(|(i, e)| e.seq == i as u64));
    }

    #[test]
    fn snapshots_are_cached_until_the_next_append() {
        let session = session("s");
        session.append(turn(1), AppendOptions::log_only()).unwrap();
        let a = session.events();
        assert!(Arc::ptr_eq(&a, &session.events()));
        session.append(turn(2), AppendOptions::log_only()).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(session.events().len(), 2);
        assert_eq!(session.events_from(1)[0].seq, 1);
        assert!(session.events_from(5).is_empty());
        assert_eq!(session.event(1).map(|e| e.seq), Some(1));
    }
}
