//! Event types owned by plugin crates: how one is declared, and the registry of the
//! declarations compiled into this build.
//!
//! The core types are [`EventData`] variants; every other type travels as
//! [`EventData::Other`], its data kept verbatim so nothing a writer put in it is lost. A plugin
//! crate gives such a type a Rust shape by implementing [`PluginEvent`] on its payload: the wire
//! name, serde, whether it is ignorable, and a validation hook. Writers append the typed value
//! ([`Session::append_typed`](crate::Session::append_typed)) and readers decode it
//! ([`SessionEvent::decode`]); neither matches strings.
//!
//! # Why a process-wide registry of compiled-in types
//!
//! Whether a type is *known* decides whether a stored log loads at all (a required type this
//! build does not know means the log came from a newer build). That answer has to be the same
//! for every reader of the log — resume, fork, `dsh sessions verify`, the store's inspection —
//! and it has to be there before any plugin is mounted: a log is read before its session's
//! composition exists, a composition may leave a plugin out (an `approval: null` row) while its
//! old events stay in the log, and a verifying command mounts nothing. So knownness is a fact
//! about the build, not about what is mounted, and the registry is process-wide instead of a
//! kernel service whose registrations unwind with a fiber.
//!
//! Registration is explicit ([`register_event_types`], called by the binary at startup for
//! every crate it links) rather than collected by the linker: link-section tricks drop the
//! entries of a crate the linker saw no reference into, and a silently shrinking vocabulary
//! would make good logs unreadable. The original's plugin types stay known without any
//! registration ([`ORIGINAL_PLUGIN_EVENT_TYPES`](crate::event_types::ORIGINAL_PLUGIN_EVENT_TYPES)),
//! so a forgotten registration can only affect types this implementation added.
//!
//! Lookups are lock-free: registered batches live in write-once slots (an atomic load each) and
//! are searched without allocating. Registration takes a lock, but only registrations contend.

use crate::error::SessionError;
use crate::event::{EventData, SessionEvent};
use crate::event_types;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::any::TypeId;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

/// A session event type owned by a plugin crate, implemented on its payload.
///
/// ```
/// use dsh_session::{EventDeclaration, PluginEvent};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct TitleSet { title: String }
///
/// impl PluginEvent for TitleSet {
///     const TYPE: &'static str = "example/title";
///     fn validate(&self) -> Result<(), String> {
///         if self.title.trim().is_empty() { return Err("title must not be blank".into()); }
///         Ok(())
///     }
/// }
///
/// /// Registered once by the binary: `dsh_session::register_event_types(EVENT_TYPES)`.
/// pub static EVENT_TYPES: &[EventDeclaration] = &[EventDeclaration::of::<TitleSet>()];
/// ```
///
/// Plugin types are log-only: only the core message types join the model-visible surface (a
/// plugin that changes history appends a core `user/message` or `tool/result` replace).
pub trait PluginEvent: Serialize + DeserializeOwned + 'static {
    /// The wire `type`, e.g. `"approval/asked"`. Must not be a core type.
    const TYPE: &'static str;

    /// Appended with `"ignorable": true`, so a build that does not know the type may skip it.
    /// Right for records a reader can do without (titles, metrics), wrong for anything a
    /// resumed session must honour.
    const IGNORABLE: bool = false;

    /// Also run [`validate`](Self::validate) (and require the data to decode) when a stored
    /// log is read back into a session (resume, fork, verify), not only on append. Off by
    /// default: logs outlive builds, and a record another writer (the original, an older
    /// build) shaped differently should make a decode fail for the readers that care, not
    /// make the whole session unreadable.
    const CHECK_STORED: bool = false;

    /// Rules beyond what deserializing checks. `Err(reason)` refuses the event
    /// ([`SessionError::InvalidEventData`]) and leaves the log unchanged.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The type-erased form of one [`PluginEvent`], for the registry.
#[derive(Clone, Copy)]
pub struct EventDeclaration {
    type_name: &'static str,
    ignorable: bool,
    check_stored: bool,
    check: fn(&Value) -> Result<(), String>,
    rust_type: fn() -> TypeId,
    rust_name: fn() -> &'static str,
}

impl EventDeclaration {
    /// The declaration of `T`; usable in a `static` list.
    pub const fn of<T: PluginEvent>() -> Self {
        Self {
            type_name: T::TYPE,
            ignorable: T::IGNORABLE,
            check_stored: T::CHECK_STORED,
            check: check_value::<T>,
            rust_type: TypeId::of::<T>,
            rust_name: std::any::type_name::<T>,
        }
    }

    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// See [`PluginEvent::IGNORABLE`].
    pub fn ignorable(&self) -> bool {
        self.ignorable
    }

    /// See [`PluginEvent::CHECK_STORED`].
    pub fn checks_stored(&self) -> bool {
        self.check_stored
    }

    /// The Rust payload type, for diagnostics.
    pub fn rust_name(&self) -> &'static str {
        (self.rust_name)()
    }

    /// Decodes `data` as this type and runs its validation hook.
    pub fn check(&self, data: &Value) -> Result<(), SessionError> {
        (self.check)(data).map_err(|reason| SessionError::data(self.type_name, reason))
    }

    /// The Rust payload type.
    pub(crate) fn rust_type(&self) -> TypeId {
        (self.rust_type)()
    }

    fn same_type(&self, other: &EventDeclaration) -> bool {
        (self.rust_type)() == (other.rust_type)()
    }
}

impl fmt::Debug for EventDeclaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventDeclaration")
            .field("type_name", &self.type_name)
            .field("rust_type", &self.rust_name())
            .field("ignorable", &self.ignorable)
            .field("check_stored", &self.check_stored)
            .finish()
    }
}

fn check_value<T: PluginEvent>(data: &Value) -> Result<(), String> {
    T::deserialize(data).map_err(|e| e.to_string())?.validate()
}

impl EventData {
    /// The payload of a plugin-owned event (not yet validated: `append` does that).
    pub fn plugin<T: PluginEvent>(payload: &T) -> Result<Self, SessionError> {
        let data = serde_json::to_value(payload)
            .map_err(|e| SessionError::data(T::TYPE, e.to_string()))?;
        Ok(Self::Other {
            type_name: T::TYPE.to_owned(),
            data,
        })
    }

    /// Whether this is an event of type `T`.
    pub fn is<T: PluginEvent>(&self) -> bool {
        matches!(self, Self::Other { type_name, .. } if type_name == T::TYPE)
    }

    /// The payload as `T`: `None` for an event of another type, `Some(Err)` when the data does
    /// not decode (a record another writer shaped differently). Validation is not rerun: it
    /// guards what enters a log, not what may be read from one.
    pub fn decode<T: PluginEvent>(&self) -> Option<Result<T, SessionError>> {
        match self {
            Self::Other { type_name, data } if type_name == T::TYPE => {
                Some(T::deserialize(data).map_err(|e| SessionError::data(T::TYPE, e.to_string())))
            }
            _ => None,
        }
    }
}

impl SessionEvent {
    /// Whether this is an event of type `T`.
    pub fn is<T: PluginEvent>(&self) -> bool {
        self.data.is::<T>()
    }

    /// The payload as `T`; see [`EventData::decode`].
    pub fn decode<T: PluginEvent>(&self) -> Option<Result<T, SessionError>> {
        self.data.decode()
    }
}

/// How many batches can be registered; one per crate is the intended use.
const SLOTS: usize = 64;

/// Registered batches, filled front to back; an empty slot ends the list.
static BATCHES: [OnceLock<&'static [EventDeclaration]>; SLOTS] = [const { OnceLock::new() }; SLOTS];

/// Serializes registrations (lookups never take it).
static REGISTERING: Mutex<()> = Mutex::new(());

/// Adds plugin-declared types to this process's vocabulary, so logs holding them load and
/// raw appends of them are validated. Call it at startup, before any log is read, once per
/// crate the binary links; registering the same declarations again is a no-op.
///
/// Refused (`INVALID_EVENT_DECLARATION`, nothing registered) when a name is empty, a core or
/// retired type, listed twice, or already declared by a different Rust type.
pub fn register_event_types(declarations: &'static [EventDeclaration]) -> Result<(), SessionError> {
    let _registering = REGISTERING.lock().unwrap_or_else(PoisonError::into_inner);
    let mut fresh: Vec<EventDeclaration> = Vec::with_capacity(declarations.len());
    for (i, declaration) in declarations.iter().enumerate() {
        let name = declaration.type_name;
        let refuse = |reason: String| SessionError::InvalidDeclaration {
            type_name: name.to_owned(),
            reason,
        };
        if name.is_empty() {
            return Err(refuse("the type name is empty".into()));
        }
        if event_types::is_core_event_type(name) || name == event_types::LEGACY_REQUEST_HEADER_DELTA
        {
            return Err(refuse("the name belongs to dsh-session".into()));
        }
        if declarations[..i].iter().any(|d| d.type_name == name) {
            return Err(refuse("the batch declares it twice".into()));
        }
        match declared_event_type(name) {
            Some(existing) if existing.same_type(declaration) => {}
            Some(existing) => {
                return Err(refuse(format!(
                    "already declared by {}, not {}",
                    existing.rust_name(),
                    declaration.rust_name()
                )))
            }
            None => fresh.push(*declaration),
        }
    }
    if fresh.is_empty() {
        return Ok(());
    }
    let Some(slot) = BATCHES.iter().find(|slot| slot.get().is_none()) else {
        return Err(SessionError::InvalidDeclaration {
            type_name: fresh.first().map_or("", |d| d.type_name).to_owned(),
            reason: format!("more than {SLOTS} batches of event types"),
        });
    };
    fresh.sort_by_key(|d| d.type_name);
    // Leaked on purpose: the vocabulary lives as long as the process, and there is one
    // allocation per registered batch.
    let batch: &'static [EventDeclaration] = Vec::leak(fresh);
    // Only registrations fill slots, and they hold the lock, so the slot is still empty.
    let _ = slot.set(batch);
    Ok(())
}

/// The registered declaration of `type_name`, if any.
pub fn declared_event_type(type_name: &str) -> Option<&'static EventDeclaration> {
    for slot in &BATCHES {
        let batch = slot.get()?;
        if let Ok(i) = batch.binary_search_by(|d| d.type_name.cmp(type_name)) {
            return batch.get(i);
        }
    }
    None
}

/// Every registered declaration, batch by batch.
pub fn registered_event_types() -> impl Iterator<Item = &'static EventDeclaration> {
    BATCHES
        .iter()
        .map_while(|slot| slot.get())
        .flat_map(|batch| batch.iter())
}
