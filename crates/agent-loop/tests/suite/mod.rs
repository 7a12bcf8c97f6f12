//! Every test drives the loop through `dsh_testkit::harness` and ends with
//! `Harness::finish`, which runs the log invariant checkers over every log and the request
//! reconstruction check over every model request.
//!
//! dsh-testkit depends on this crate and this crate dev-depends on dsh-testkit: cargo
//! allows that cycle, and an integration-test binary links one build of dsh-agent-loop, so
//! the types the harness hands out (`AgentLoop`, `AgentLoopConfig`) are the ones named
//! here. (Unit tests under src/ would see a second build; they do not use the testkit.)

mod cancel;
mod cancel_windows;
mod contracts;
mod invariants_agent;
mod invariants_log;
mod invariants_requests;
mod invariants_turns;
mod lifecycle;
mod retry;
mod session_meta;
mod tool_caller;
mod tools;
mod turns;
