mod harness;
mod normalize;
mod scripted;

mod cancel;
mod cancel_windows;
mod contracts;
mod expect;
mod invariants_agent;
mod invariants_log;
mod invariants_requests;
mod invariants_turns;
mod lifecycle;
mod support;
mod tool_caller;
mod tools;
mod turns;
