//! The system prompt: sections, variables, tool schemas and runtime-context snapshots.
//!
//! Plugins contribute prompt parts through the [`SystemPrompt`] kernel service; each
//! registration is an effect scoped to the caller's context, so an agent-scoped persona
//! shadows the global one for that agent only and vanishes with its owner. Once per step
//! the loop asks for an [`Assembly`] (sections, runtime contexts, ordered tool schemas,
//! variables), renders the system prompt with [`render_prompt`] (through a [`RenderedPrompt`]
//! that shares an unchanged rendering between steps), and turns the contexts into
//! a [`RuntimeSnapshot`] that [`RuntimeContextProjection`] logs as a user message only when
//! it changed — dynamic facts never rewrite the system prompt.

mod assembly;
mod error;
mod layer;
mod parts;
mod render;
mod rendered;
mod runtime_context;
mod service;
mod tool_order;

pub use assembly::{Assembly, NamedText, Variables};
pub use error::{PartKind, PromptError};
pub use parts::{AssembleContext, ContextEntry, PromptText, Section, ToolProvision};
pub use render::{interpolate, is_valid_variable_name, render_prompt};
pub use rendered::RenderedPrompt;
pub use runtime_context::{
    is_runtime_context_message, ProjectionState, RuntimeContextProjection, RuntimeSnapshot,
    RUNTIME_CONTEXT_CLEARED, RUNTIME_CONTEXT_PREFIX,
};
pub use service::{
    AssembleArgs, SystemPrompt, SystemPromptAssemble, SystemPromptConfig, SystemPromptPlugin,
    HARNESS_IDENTITY, HARNESS_IDENTITY_SECTION, PERSONA_SECTION,
};
pub use tool_order::{ToolOrder, UNLISTED_TOOLS};
