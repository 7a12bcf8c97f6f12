mod e2e_cancel;
mod e2e_faults;
mod e2e_harness;
mod e2e_limits;
mod e2e_turns;
mod http;
mod limits;
mod server;
