//! Tools: what a tool is, which tools a scope sees, and how one call runs.
//!
//! - [`Tool`] is the definition the registry stores (`Arc<dyn Tool>`); [`TypedTool`] with
//!   [`Typed`] is the same with serde arguments and output.
//! - A call is a [`ToolInvocation`]; its body sees the live [`ToolExecution`], which
//!   carries the [`ToolCaller`] (the agent the call runs for: its session, scoped context and
//!   the agent registry) and yields an [`InvocationResult`].
//! - [`ToolRuntime`] is the `ctx.tools` service: a scoped registry (global layer plus one
//!   layer per scope; nearest wins, restrictions narrow what is inherited, guards deny) and
//!   the per-call pipeline `prepare → dispatch → finalize` that the agent loop's scheduler
//!   drives. Every stage is total: failures become results the model can read.
//! - The `tools/*` extension points live in [`events`]; the approval seam in [`Approval`].
//!
//! The binding API shape is described in `docs/tools-api.md`.

mod approval;
mod args;
mod caller;
mod definition;
mod error;
pub mod events;
mod execution;
mod pipeline;
mod plugin;
mod registry;
mod result;

pub use approval::{Approval, ApprovalOutcome, ApprovalRequest, ApprovalService};
pub use args::{parse_arguments, validate_arguments};
pub use caller::ToolCaller;
pub use definition::{render_json, Tool, Typed, TypedTool};
pub use error::{codes, ErrorInfo, RegistryError, ToolFailure};
pub use events::{
    Execute, ExecuteArgs, PostExecute, PostExecuteArgs, PostExecuteDecision, PreExecute,
    PreExecuteArgs, PreExecuteDecision, ToolResultEvent, ToolResultNotice, ToolsChange,
    ToolsChanged,
};
pub use execution::{Extensions, ToolExecution, ToolInvocation};
pub use pipeline::{Dispatched, Prepared, ReadyCall};
pub use plugin::{ToolsConfig, ToolsPlugin};
pub use registry::{ExecutionMode, GuardDecision, Restriction, ToolRuntime, RESERVED_TOOL_NAME};
pub use result::{InvocationResult, ToolErrorDetail, ToolOutcome};
