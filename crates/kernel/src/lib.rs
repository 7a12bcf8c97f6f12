//! The plugin kernel dsh is built on: a Rust take on Cordis.
//!
//! A [`Context`] is the handle plugins register through. Every registration — a service, a
//! listener, a layered entry — is an *effect* owned by the context's [`Fiber`] and undone,
//! in reverse order, when that fiber is disposed. Extension points are Rust types
//! implementing one of the four dispatch modes ([`Notification`], [`Serial`], [`Parallel`],
//! [`Waterfall`]). Dispatches may carry a [`ScopeKey`]: events flow *up* the scope chain to
//! listeners registered in ancestor scopes, while registries built on [`ScopedLayers`] let
//! registrations flow *down* (a scope sees its ancestors' layers, nearest wins).
//! Plugins are compiled in, listed in a [`PluginTable`] and mounted from a [`Composition`].

mod composition;
mod context;
mod dispatch;
mod error;
mod events;
mod fiber;
mod layers;
mod plugin;
mod scope;

pub use composition::{mount, Composition, PatchOp, PluginTable, Row};
pub use context::Context;
pub use dispatch::Next;
pub use error::{AggregateError, BoxError, KernelError, ListenerPanicked};
pub use events::{BoxFuture, Event, ListenOptions, Notification, Parallel, Serial, Waterfall};
pub use fiber::{Disposer, Fiber};
pub use layers::{AnonymousEntries, EntryId, LayerUndo, NamedEntries, ScopedLayers};
pub use plugin::{Plugin, ServiceName};
pub use scope::ScopeKey;
