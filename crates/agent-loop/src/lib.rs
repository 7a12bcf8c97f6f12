//! The ReAct driver: turns of steps, each one model request plus the tool calls it asked for.
//!
//! - [`ReactLoopAgent`] implements `dsh_agent::Agent` with the exact turn/step machine of the
//!   spec (synchronous turn open, wake latch, pre-step gate, in-place retry, max-tokens
//!   stickiness, typed turn-end reasons) and a model-ordered tool-call scheduler.
//! - [`AgentLoop`] (plugin [`AgentLoopPlugin`], name `agent-loop`) is the factory behind
//!   `AgentRegistry::create`/`resume`: it prepares the driver, runs the publication
//!   transaction with rollback, and owns each agent's ordered teardown.
//!
//! Every await of a turn is raced against the turn's abort signal, and every boundary the
//! loop opens is closed by a guard, so cancellation at any point leaves a balanced log.

mod agent;
mod config;
mod driver;
mod error;
mod factory;
mod phase;
mod request;
mod runtime_context;
mod step;
mod teardown;
mod tool_calls;

pub use agent::ReactLoopAgent;
pub use config::{AgentLoopConfig, ConfiguredAgent, DEFAULT_MAX_PARALLEL_TOOL_CALLS};
pub use error::LoopError;
pub use factory::{AgentLoop, AgentLoopPlugin};
