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
mod retry;
mod session_meta;
mod support;
mod tools;
mod turns;
