mod bench;
mod e2e_harness;
mod e2e_turns;
mod http;
mod retry;
mod server;
