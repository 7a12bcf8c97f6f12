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
//!
//! ```
//! use std::sync::Arc;
//! use dsh_kernel::{Context, Event, Waterfall};
//!
//! /// One type per extension point; the name is for logs.
//! struct PreStep;
//! impl Event for PreStep { const NAME: &'static str = "agent/pre-step"; }
//! impl Waterfall for PreStep { type Args = Vec<String>; type Output = bool; }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let root = Context::root();
//! let plugin = root.child("guard")?;
//! // Middleware: not calling `next` vetoes everything inward, including the default.
//! plugin.on_waterfall::<PreStep, _, _>(|msgs, next| async move {
//!     if msgs.iter().any(|m| m.contains("rm -rf")) { return Ok(false); }
//!     next.run().await
//! })?.forget();
//!
//! let enter = |_: Arc<Vec<String>>| async { Ok(true) };
//! let args = Arc::new(vec!["rm -rf /".to_string()]);
//! assert!(!root.waterfall::<PreStep, _, _>(None, args.clone(), enter).await?);
//! plugin.fiber().dispose(); // the guard unwinds with its fiber
//! assert!(root.waterfall::<PreStep, _, _>(None, args, enter).await?);
//! # Ok::<(), dsh_kernel::BoxError>(())
//! # }).unwrap();
//! ```

mod composition;
mod context;
mod dispatch;
mod error;
mod events;
mod fiber;
mod layers;
mod plugin;
mod scope;
pub mod sync;

pub use composition::{mount, Composition, PatchOp, PluginTable, Row};
pub use context::Context;
pub use dispatch::Next;
pub use error::{AggregateError, BoxError, KernelError, ListenerPanicked};
pub use events::{
    BoxFuture, DispatchMode, Event, ListenOptions, ListenerInfo, Notification, Parallel, Serial,
    Waterfall,
};
pub use fiber::{Disposer, Fiber};
pub use layers::{AnonymousEntries, EntryId, LayerUndo, NamedEntries, ScopedLayers};
pub use plugin::{Plugin, ServiceName};
pub use scope::ScopeKey;
