//! `CompactionEngine`: the kernel service that compacts sessions (spec §2.1).
//!
//! Operations: [`compact_if_needed`](CompactionEngine::compact_if_needed) (pressure and
//! overflow paths, [`pressure`](crate::pressure), [`overflow`](crate::overflow)),
//! [`compact_now`](CompactionEngine::compact_now) (manual, idle only, [`manual`](crate::manual))
//! and [`compact_region`](CompactionEngine::compact_region) (a forced span inside an open
//! turn). All of them end in the region transaction ([`region`](crate::region)).

use crate::config::CompactionConfig;
use crate::error::CompactionError;
use crate::events::SeqRange;
use crate::failure::AttemptError;
use crate::lock::{InFlight, LockFold};
use crate::pruner::PrunerConfig;
use crate::region::{self, Owner, Region, Stability};
use crate::select::{CompactRange, SelectFloor};
use crate::service::MeterService;
use dsh_agent::{AbortSignal, Agent};
use dsh_kernel::sync::lock;
use dsh_kernel::Context;
use dsh_llm::LlmRuntime;
use dsh_protocol::{ContentBlock, SessionId};
use dsh_session::{EventData, Session, SessionStore};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};

/// What started an automatic compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// The pre-step pressure check.
    Pressure,
    /// The provider refused a request as too large.
    ContextOverflow,
}

/// A finished compaction.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionResult {
    pub compaction_id: String,
    pub source_command_id: Option<String>,
    pub start_seq: u64,
    pub summary_seq: u64,
    /// The seq of the `compaction/end` (the checkpoint is `end_seq - 1`).
    pub end_seq: u64,
    /// The summary's text blocks.
    pub summary: Vec<ContentBlock>,
    pub shadowed_range: SeqRange,
    pub shadowed_seqs: Vec<u64>,
    pub shadowed_token_count: u64,
}

/// Per-session state the engine keeps beside the log.
pub(crate) struct Track {
    session: Session,
    pub(crate) lock: LockFold,
    pub(crate) overflow: OverflowCount,
}

/// Overflow recoveries of the current request, cleared by an assistant message or idle.
#[derive(Debug, Default)]
pub(crate) struct OverflowCount {
    pub(crate) count: u64,
    /// Log length when the count was last checked (messages after it clear the count).
    pub(crate) checked_len: u64,
}

/// The compaction service; see the module docs.
pub struct CompactionEngine {
    pub(crate) ctx: Context,
    pub(crate) config: CompactionConfig,
    pub(crate) meters: Arc<MeterService>,
    pub(crate) sessions: Arc<SessionStore>,
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) pruner: PrunerConfig,
    pub(crate) floor: SelectFloor,
    tracks: Mutex<HashMap<SessionId, Track>>,
    warned: Mutex<HashSet<String>>,
    /// This engine, for work that must outlive a borrowed call (maintenance tasks).
    me: Weak<CompactionEngine>,
}

impl std::fmt::Debug for CompactionEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionEngine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl CompactionEngine {
    /// An engine over `ctx`'s services (the LLM runtime is looked up per call).
    pub fn new(
        ctx: &Context,
        config: CompactionConfig,
        meters: Arc<MeterService>,
        sessions: Arc<SessionStore>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            ctx: ctx.clone(),
            config,
            meters,
            sessions,
            in_flight: Arc::new(InFlight::default()),
            pruner: PrunerConfig::default(),
            floor: SelectFloor::default(),
            tracks: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashSet::new()),
        })
    }

    /// This engine as an owned handle (`None` while it is being dropped).
    pub(crate) fn handle(&self) -> Option<Arc<CompactionEngine>> {
        self.me.upgrade()
    }

    /// The settings in force.
    pub fn config(&self) -> &CompactionConfig {
        &self.config
    }

    /// The selection floor automatic compactions use (manual ones only refuse ranges that
    /// hold nothing new beyond earlier checkpoints).
    pub fn floor(&self) -> SelectFloor {
        self.floor
    }

    /// Whether a compaction of `session` would be refused as `busy` right now (an attempt of
    /// this process in flight, or the durable lock held). Front ends use it to say so before
    /// asking; it also folds the session's new events into the engine's lock state.
    pub fn is_busy(&self, session: &Session) -> bool {
        self.busy_reason(session).is_some()
    }

    /// Automatic compaction for `trigger`; `None` when nothing was (or needed to be) done.
    pub async fn compact_if_needed(
        &self,
        agent: &Arc<dyn Agent>,
        trigger: Trigger,
        signal: &AbortSignal,
    ) -> Result<Option<CompactionResult>, CompactionError> {
        let outcome = match trigger {
            Trigger::Pressure => crate::pressure::relieve(self, agent, signal).await,
            Trigger::ContextOverflow => crate::overflow::recover(self, agent, signal).await,
        };
        outcome.map_err(CompactionError::from)
    }

    /// Compacts the surface span `start..=end` (positions) inside the open turn.
    pub async fn compact_region(
        &self,
        agent: &Arc<dyn Agent>,
        start: u64,
        end: u64,
        signal: &AbortSignal,
    ) -> Result<CompactionResult, CompactionError> {
        let session = agent.session();
        let range = self
            .meters
            .with_meter(session, |meter| region::span(meter, start, end))
            .map_err(CompactionError::from)?
            .map_err(CompactionError::from)?;
        let region = Region {
            range,
            owner: Owner::OpenTurn,
            stability: Stability::WholeSurface,
            source_command_id: None,
        };
        region::run(self, agent, region, signal)
            .await
            .map_err(CompactionError::from)
    }

    /// The LLM runtime, when mounted.
    pub(crate) fn llm(&self) -> Result<Arc<LlmRuntime>, AttemptError> {
        self.ctx
            .get::<LlmRuntime>()
            .ok_or(AttemptError::Missing("LlmRuntime"))
    }

    /// Runs `f` on the caught-up engine state of `session`.
    pub(crate) fn with_track<R>(&self, session: &Session, f: impl FnOnce(&mut Track) -> R) -> R {
        let mut tracks = lock(&self.tracks);
        let stale = tracks
            .get(session.id())
            .is_some_and(|t| !Session::ptr_eq(&t.session, session));
        if stale {
            tracks.remove(session.id());
        }
        let track = tracks.entry(session.id().clone()).or_insert_with(|| Track {
            session: session.clone(),
            lock: LockFold::default(),
            overflow: OverflowCount::default(),
        });
        track.lock.catch_up(session);
        f(track)
    }

    /// Drops the state of a session that left the store.
    pub(crate) fn forget(&self, session: &Session) {
        let mut tracks = lock(&self.tracks);
        if tracks
            .get(session.id())
            .is_some_and(|t| Session::ptr_eq(&t.session, session))
        {
            tracks.remove(session.id());
        }
    }

    /// Clears the overflow count of `session` (the agent went idle).
    pub(crate) fn reset_overflow(&self, session: &Session) {
        let mut tracks = lock(&self.tracks);
        if let Some(track) = tracks.get_mut(session.id()) {
            track.overflow.count = 0;
            track.overflow.checked_len = session.len();
        }
    }

    /// True the first time `key` is warned about.
    pub(crate) fn first_warning(&self, key: String) -> bool {
        lock(&self.warned).insert(key)
    }

    /// Why `session` cannot be compacted now, if it cannot: a live bracket or an attempt of
    /// this process.
    pub(crate) fn busy_reason(&self, session: &Session) -> Option<String> {
        if self.in_flight.contains(session.id()) {
            return Some("compaction already in progress in this process".into());
        }
        self.busy_reason_durable(session)
    }

    /// Why the durable lock refuses a compaction of `session`, if it does.
    pub(crate) fn busy_reason_durable(&self, session: &Session) -> Option<String> {
        self.with_track(session, |t| t.lock.holder().cloned())
            .map(|holder| {
                format!(
                    "compaction already in progress; the session compaction lock is already active (compaction {})",
                    holder.compaction_id
                )
            })
    }

    /// The range a compaction keeping `retain` tokens may shadow now.
    pub(crate) fn select(
        &self,
        session: &Session,
        retain: u64,
        floor: SelectFloor,
    ) -> Result<Option<CompactRange>, AttemptError> {
        let selected = self.meters.with_meter(session, |meter| {
            crate::select::select_compactable_range(session, meter, retain, floor)
        });
        Ok(selected.map_err(CompactionError::from)??)
    }

    /// The measured total of `session`'s next request.
    pub(crate) fn total_tokens(&self, session: &Session) -> Result<u64, AttemptError> {
        Ok(self
            .meters
            .measure(session)
            .map_err(CompactionError::from)?
            .total_tokens)
    }

    /// Whether any `assistant/message` was appended at or after `from`.
    pub(crate) fn assistant_since(session: &Session, from: u64) -> bool {
        session
            .events_from(from)
            .iter()
            .any(|e| matches!(e.data, EventData::AssistantMessage(_)))
    }
}
