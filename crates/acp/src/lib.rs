//! dsh for editors and programs, over stdio.
//!
//! - [`acp`]: `dsh acp`, an Agent Client Protocol (v1) agent: streamed updates, tool calls,
//!   plans, permission requests, `session/load`, cancel;
//! - [`sdk`]: `dsh sdk`, the original's SDK JSON-RPC runtime (`session.event` feeds);
//! - [`rpc`]: newline-delimited JSON-RPC 2.0: bounded frames, one writer, requests to the
//!   client;
//! - [`host`]: what the embedding program provides ([`Host`], [`Workspace`]): booted
//!   workspaces and their agents, so both servers run on the CLI's own composition, store,
//!   settings, sandbox, approval and trust.
//!
//! stdout carries protocol frames only; every diagnostic goes through `tracing` (stderr).

pub mod acp;
pub mod host;
pub mod rpc;
pub mod sdk;

pub use host::{AgentChoice, ClientMcpServer, ClientMcpTransport, Host, HostError, Workspace};
