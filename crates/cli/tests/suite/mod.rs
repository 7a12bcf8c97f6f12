mod binary;
mod run;
mod run_support;
mod sessions;
mod tui_binary;
mod tui_runner;
mod tui_state;
mod tui_support;
