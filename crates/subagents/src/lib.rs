//! Delegation: agents that start agents.
//!
//! - [`SubagentsPlugin`] (row `subagents`) mounts the [`Subagents`] service and the tools
//!   `subagent`, `subagent_fork`, `send_message`, `interrupt_agent` and `list_agents`
//!   ([`tools`]); each continuable child gets its own `report`.
//! - [`child`]: how a child is composed (depth cap, header, seed, delegated policy, scope).
//! - One-shot children run to one result in the foreground (`run`) or as a job
//!   (`background`); continuable children settle into their parent and can be continued
//!   (`continuable`).
//! - [`descriptor`]: the durable `subagent/descriptor` record ([`EVENT_TYPES`]).
//! - [`recovery`]: what a resumed parent learns about its children from its own log.
//! - [`outcome`]: how a child's run ended and how that reads to the parent.

mod background;
pub mod child;
mod config;
mod continuable;
pub mod descriptor;
mod error;
pub mod outcome;
mod plugin;
pub mod recovery;
mod run;
mod service;
pub mod tools;

pub use child::{depth_of, is_delegated, Provider, DELEGATION_CONTEXT};
pub use config::{SubagentsConfig, DEFAULT_MAX_CONSECUTIVE_WAKES, DEFAULT_MAX_DEPTH};
pub use descriptor::{
    fold_descriptor, SubagentDescriptor, SubagentMode, ToolFilter, EVENT_TYPES,
    SUBAGENT_DESCRIPTOR_VERSION,
};
pub use error::SubagentError;
pub use outcome::{RunOutcome, StopReason};
pub use plugin::SubagentsPlugin;
pub use service::{ChildLifecycle, ChildSnapshot, SubagentEnd, SubagentStart, Subagents};
