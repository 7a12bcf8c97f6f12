//! The `dsh` command: configuration, workspace instructions, the persona, the terminal UI's
//! view layer, and the command-line surface that ties them together.
//!
//! - [`allocator`]: the binary's memory allocator (mimalloc), and why.
//! - [`config`]: `$DSH_HOME/settings.toml`, env and flag overrides, each effective value
//!   with its provenance; `dsh config show`.
//! - [`instructions`]: `AGENTS.md` / `CLAUDE.md` discovery and rendering into one logged
//!   message.
//! - [`persona`]: the persona section of the system prompt.
//! - [`tui`]: the transcript view-model folded from session events, and pure rendering of
//!   it (plus status line, input box and approval prompt) into a ratatui buffer;
//!   [`tui::interactive`] is the interactive UI that bare `dsh` opens on a terminal.
//! - [`app`]: boot — from settings to a mounted plugin composition ([`app::Runtime`]) that
//!   creates and resumes agents and streams their session events to a surface.
//! - [`commands`]: the clap command tree (`run`, `sessions`, `config`); `main.rs` only calls
//!   [`commands::main`].
//! - [`mcp_config`]: MCP servers from `[mcp_servers.NAME]`, `$DSH_HOME/mcp.json` and the
//!   workspace's `.mcp.json`, resolved into the `mcp` row's list; `dsh mcp add|remove`.
//! - [`trust`]: workspace trust — project files that run programs load only in a trusted
//!   directory (`$DSH_HOME/trusted.json`, `dsh trust`).
//! - [`sanitize`]: strips control and escape sequences from model and tool text bound for a
//!   terminal; `dsh run` and the interactive UI both use it.

pub mod allocator;
pub mod app;
pub mod commands;
pub mod config;
pub mod instructions;
pub mod mcp_config;
pub mod persona;
pub mod sanitize;
pub mod trust;
pub mod tui;
