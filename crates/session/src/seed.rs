//! Seeded construction: building a session from an existing event list.
//!
//! A seed is validated event by event with the same rules as `append` (plus `seq == index`),
//! so a constructed log is one the session could have written itself. When a seed is given
//! and does not already end with `session/end-seed`, that marker is appended before the
//! session can be attached to a store, so it is never published on `session/event`.

use crate::companion::EventOrigin;
use crate::error::SessionError;
use crate::event::{EventData, SessionEvent};
use crate::header::SessionHeader;
use crate::session::{system_clock, Clock, Session, State};
use crate::surface::SurfacePlan;
use crate::validate::{self, Admission, MAX_SAFE_INTEGER};
use std::sync::Arc;

/// Where a constructor seed came from. Informational: validation is the same for all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SeedSource {
    /// A prefix of a live session of this process.
    Fork,
    /// The stored log of a session being resumed.
    Persistence,
    /// Events supplied by a caller (import, replay, tests).
    Import,
}

/// Builds a [`Session`].
pub struct SessionBuilder {
    header: SessionHeader,
    seed: Option<Seeding>,
    clock: Option<Clock>,
}

/// What a builder was seeded with.
enum Seeding {
    /// Events still to be checked.
    Events(Vec<Arc<SessionEvent>>, SeedSource),
    /// Events checked as they arrived (boxed: the log's fold state is large).
    Checked(Box<SeedLog>),
}

impl SessionBuilder {
    pub fn new(header: SessionHeader) -> Self {
        Self {
            header,
            seed: None,
            clock: None,
        }
    }

    /// Seeds the log with `events` (seq must equal index).
    pub fn seed<I, E>(mut self, events: I, source: SeedSource) -> Self
    where
        I: IntoIterator<Item = E>,
        E: Into<Arc<SessionEvent>>,
    {
        let events = events.into_iter().map(Into::into).collect();
        self.seed = Some(Seeding::Events(events, source));
        self
    }

    /// Seeds the log with the events `log` has already checked.
    pub fn seed_log(mut self, log: SeedLog) -> Self {
        self.seed = Some(Seeding::Checked(Box::new(log)));
        self
    }

    /// Uses `clock` for event times instead of the wall clock.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Validates header and seed and constructs the session. The header is checked first,
    /// then the seed's events in order; the first refusal is the error.
    pub fn build(self) -> Result<Session, SessionError> {
        self.header.validate()?;
        let clock = self.clock.unwrap_or_else(system_clock);
        let log = match self.seed {
            None => {
                return Ok(Session::from_parts(
                    self.header,
                    0,
                    None,
                    clock,
                    State::default(),
                ))
            }
            Some(Seeding::Events(events, source)) => {
                let mut log = SeedLog::new(source);
                log.state.log.reserve(events.len() + 1);
                log.extend(events);
                log
            }
            Some(Seeding::Checked(log)) => *log,
        };
        log.finish(self.header, clock)
    }
}

/// A seed validated event by event as it arrives, with the rules [`SessionBuilder::build`]
/// applies to a seed given whole.
///
/// A reader can hand it each event as soon as the event is typed (it is an [`Extend`]
/// sink), so a resume validates the log while the file is still being decoded instead of
/// in a second pass after it; [`SessionBuilder::seed_log`] then builds the session from it.
/// The first event refused is kept as the error, and nothing after it is taken.
pub struct SeedLog {
    state: State,
    source: SeedSource,
    refused: Option<(usize, SessionError)>,
}

impl SeedLog {
    pub fn new(source: SeedSource) -> Self {
        let mut state = State::default();
        state.constructed = u64::MAX;
        SeedLog {
            state,
            source,
            refused: None,
        }
    }

    /// Checks `event` as the next of the seed (seq must equal its index) and keeps it.
    pub fn push(&mut self, event: Arc<SessionEvent>) {
        if self.refused.is_some() {
            return;
        }
        let index = self.state.log.len();
        match check_seed_event(&mut self.state, index, &event) {
            Ok(plan) => self.state.commit(event, plan, EventOrigin::Seed),
            Err(error) => self.refused = Some((index, error)),
        }
    }

    /// The events taken so far (those before the first refusal).
    pub fn events(&self) -> &[Arc<SessionEvent>] {
        &self.state.log
    }

    fn finish(self, header: SessionHeader, clock: Clock) -> Result<Session, SessionError> {
        let SeedLog {
            mut state,
            source,
            refused,
        } = self;
        if let Some((index, error)) = refused {
            return Err(SessionError::InvalidSeed {
                index,
                source: Box::new(error),
            });
        }
        let first_live_seq = state.log.len() as u64;
        let ends_with_marker = state
            .log
            .last()
            .is_some_and(|e| matches!(e.data, EventData::EndSeed));
        if !ends_with_marker {
            let marker = Arc::new(SessionEvent {
                seq: first_live_seq,
                time: clock(),
                data: EventData::EndSeed,
                ignorable: false,
                surface_op: None,
                source_event_seqs: None,
            });
            let index = state.log.len();
            state
                .check_companions(&marker, EventOrigin::Seed)
                .map_err(|e| SessionError::InvalidSeed {
                    index,
                    source: Box::new(e),
                })?;
            state.commit(marker, SurfacePlan::None, EventOrigin::Seed);
        }
        state.constructed = state.log.len() as u64;
        Ok(Session::from_parts(
            header,
            first_live_seq,
            Some(source),
            clock,
            state,
        ))
    }
}

impl Extend<Arc<SessionEvent>> for SeedLog {
    fn extend<T: IntoIterator<Item = Arc<SessionEvent>>>(&mut self, events: T) {
        for event in events {
            self.push(event);
        }
    }
}

fn check_seed_event(
    state: &mut State,
    index: usize,
    event: &SessionEvent,
) -> Result<SurfacePlan, SessionError> {
    if event.seq != index as u64 {
        return Err(SessionError::InvalidEnvelope {
            reason: format!(
                "seq {} at index {index}; a seed must be contiguous from 0",
                event.seq
            ),
        });
    }
    if event.time > MAX_SAFE_INTEGER || event.seq > MAX_SAFE_INTEGER {
        return Err(SessionError::InvalidEnvelope {
            reason: "seq and time must be safe integers".into(),
        });
    }
    validate::check_event(&event.data, event.ignorable, Admission::Seed)?;
    let plan = state
        .fold
        .plan(
            event.seq,
            &event.data,
            event.surface_op.as_ref(),
            event.source_event_seqs.as_deref(),
            &state.log,
        )
        .map_err(|violation| SessionError::InvalidSurface {
            seq: event.seq,
            type_name: event.type_name().to_owned(),
            violation,
        })?;
    state.check_companions(event, EventOrigin::Seed)?;
    Ok(plan)
}
