//! `MeterService`: one [`TokenMeter`] per live session, kept current as events are appended.
//!
//! A session gets its meter the first time it is measured (folding its log once); from then
//! on each `session/event` advances the meter by that one event, and every measurement first
//! folds whatever the listener has not (so a reading is never stale). A session's meter is
//! dropped when the session leaves the store (`session/disposed`). Sessions that are not live
//! in the store (a stored log being inspected) are measured with a throwaway meter, so the
//! service never holds a session the store has let go.

use crate::error::MeterError;
use crate::meter::{Measurement, TokenMeter};
use dsh_kernel::sync::lock;
use dsh_kernel::{Context, KernelError};
use dsh_protocol::SessionId;
use dsh_session::{PublishedEvent, Session, SessionDisposed, SessionEventPublished, SessionStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, TryLockError};

/// The kernel service holding the meters of live sessions.
pub struct MeterService {
    store: Arc<SessionStore>,
    /// The map lock is never held while waiting for a meter's lock, so a listener running
    /// inside a `with_meter` callback's append cannot deadlock against another thread.
    meters: Mutex<HashMap<SessionId, Slot>>,
}

/// A live session and its meter.
struct Slot {
    session: Session,
    tracked: Arc<Mutex<Tracked>>,
}

/// One live session's meter.
struct Tracked {
    meter: TokenMeter,
    /// The eager fold failed; warned once, and measurements report the error.
    failed: bool,
}

impl MeterService {
    /// A service over the sessions of `store`; not yet listening (see [`install`](Self::install)).
    pub fn new(store: Arc<SessionStore>) -> Self {
        Self {
            store,
            meters: Mutex::new(HashMap::new()),
        }
    }

    /// Provides the service on `ctx` and follows the session store's `session/event` and
    /// `session/disposed` with listeners owned by `ctx`'s fiber. Needs the
    /// [`SessionStore`] service.
    pub fn install(ctx: &Context) -> Result<Arc<MeterService>, KernelError> {
        let service = Arc::new(MeterService::new(ctx.require::<SessionStore>()?));
        ctx.provide(Arc::clone(&service))?.forget();
        let s = Arc::clone(&service);
        ctx.on::<SessionEventPublished>(move |published| {
            s.observe_published(published);
            Ok(())
        })?
        .forget();
        let s = Arc::clone(&service);
        ctx.on::<SessionDisposed>(move |session| {
            s.forget(session);
            Ok(())
        })?
        .forget();
        Ok(service)
    }

    /// A reading of `session` against its latest logged header, after folding any events the
    /// meter has not seen.
    pub fn measure(&self, session: &Session) -> Result<Measurement, MeterError> {
        self.with_meter(session, TokenMeter::measure)
    }

    /// Runs `f` on the caught-up meter of `session`. The meter stays locked while `f` runs;
    /// appends made meanwhile are folded by the next call instead of eagerly.
    pub fn with_meter<R>(
        &self,
        session: &Session,
        f: impl FnOnce(&TokenMeter) -> R,
    ) -> Result<R, MeterError> {
        let Some(entry) = self.entry(session) else {
            let mut meter = TokenMeter::new();
            meter.catch_up(session)?;
            return Ok(f(&meter));
        };
        let mut tracked = lock(&entry);
        tracked.meter.catch_up(session)?;
        tracked.failed = false;
        Ok(f(&tracked.meter))
    }

    /// Drops the meter of `session` (done automatically on `session/disposed`).
    pub fn forget(&self, session: &Session) {
        let mut meters = lock(&self.meters);
        let same = meters
            .get(session.id())
            .is_some_and(|slot| Session::ptr_eq(&slot.session, session));
        if same {
            meters.remove(session.id());
        }
    }

    /// How many sessions have a meter.
    pub fn tracked(&self) -> usize {
        lock(&self.meters).len()
    }

    /// How many events the tracked meter of `session` has folded, without catching it up
    /// (`None` when the session has no meter, or its meter is busy in a measurement).
    pub fn folded(&self, session: &Session) -> Option<u64> {
        let tracked = lock(&self.meters)
            .get(session.id())
            .filter(|slot| Session::ptr_eq(&slot.session, session))
            .map(|slot| Arc::clone(&slot.tracked))?;
        let consumed = tracked.try_lock().ok().map(|t| t.meter.consumed());
        consumed
    }

    /// The meter entry of a live session, created (empty) on first use. `None` for a session
    /// the store does not hold live.
    fn entry(&self, session: &Session) -> Option<Arc<Mutex<Tracked>>> {
        let mut meters = lock(&self.meters);
        if let Some(slot) = meters.get(session.id()) {
            if Session::ptr_eq(&slot.session, session) {
                return Some(Arc::clone(&slot.tracked));
            }
        }
        // Checked under the map lock: a session detached after this check emits
        // `session/disposed` afterwards, and that removes the entry made here.
        if !self.store.is_live(session) {
            return None;
        }
        // A session that left the store without `session/disposed` (entered but never
        // announced) must not stay here either: new entries sweep the departed ones.
        meters.retain(|_, slot| self.store.is_live(&slot.session));
        let tracked = Arc::new(Mutex::new(Tracked {
            meter: TokenMeter::new(),
            failed: false,
        }));
        let slot = Slot {
            session: session.clone(),
            tracked: Arc::clone(&tracked),
        };
        meters.insert(session.id().clone(), slot);
        Some(tracked)
    }

    /// The eager fold of one published event. A meter busy in a measurement is skipped (that
    /// measurement or the next one folds the event), so a `with_meter` callback that appends
    /// cannot deadlock.
    fn observe_published(&self, published: &PublishedEvent) {
        let session = &published.session;
        let entry = lock(&self.meters)
            .get(session.id())
            .filter(|slot| Session::ptr_eq(&slot.session, session))
            .map(|slot| Arc::clone(&slot.tracked));
        let Some(entry) = entry else {
            return;
        };
        let mut tracked = match entry.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        if tracked.failed {
            return;
        }
        let consumed = tracked.meter.consumed();
        let result = if published.event.seq == consumed {
            tracked.meter.observe(&published.event)
        } else if published.event.seq > consumed {
            tracked.meter.catch_up(session)
        } else {
            Ok(())
        };
        if let Err(error) = result {
            tracked.failed = true;
            tracing::warn!(
                session = %session.id(),
                code = error.code(),
                %error,
                "token meter cannot fold the session; measurements will report the error"
            );
        }
    }
}

impl std::fmt::Debug for MeterService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeterService")
            .field("tracked", &self.tracked())
            .finish()
    }
}
