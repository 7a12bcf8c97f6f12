mod harness;
mod normalize;
mod scripted;

mod cancel;
mod contracts;
mod lifecycle;
mod tools;
mod turns;
mod expect;
mod support;
mod invariants_turns;
mod invariants_log;
mod invariants_agent;
mod cancel_windows;
