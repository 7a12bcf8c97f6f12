//! Claude Code and Codex hooks for dsh: the files people already have, run unchanged.
//!
//! - [`config`]: the `hooks` row's config — which files, which dialect, trust, limits.
//! - [`parse`]: one file into groups of commands, with notices naming file, line and key.
//! - [`matcher`]: literal lists and regexes; [`names`]: Claude Code's tool names and fields.
//! - [`runner`]: one `sh -c` process per hook, payload on stdin, timeout, bounded output.
//! - [`codec`]: exit status and output into a decision; [`merge`]: deny > ask > allow.
//! - [`hooks`]: the loaded table and firing a point; [`log`]: the `hook/*` records.
//! - [`bridge`]: the events on dsh's extension points; [`plugin`]: [`HooksPlugin`].
//!
//! docs/hooks.md is the user-facing description.

pub mod bridge;
pub mod codec;
pub mod config;
pub mod event;
pub mod hooks;
pub mod log;
pub mod matcher;
pub mod merge;
pub mod names;
pub mod parse;
pub mod plugin;
pub mod runner;

pub use config::{Dialect, HookSource, HooksConfig, SourceScope};
pub use event::HookEvent;
pub use hooks::{Hooks, PointContext, Subject};
pub use log::{HookInvoked, HookResult, EVENT_TYPES};
pub use merge::{Decision, Merged};
pub use parse::LoadNotice;
pub use plugin::HooksPlugin;
