//! The interactive terminal UI that `dsh` opens when run on a terminal without a command.
//!
//! It is built in three layers so most of it can be tested without a terminal:
//!
//! - [`InteractiveState`] is a pure state machine: [`Input`]s in (keys, session events,
//!   approval questions, ticks), [`Effect`]s out (steer, cancel, answer, print to
//!   scrollback ...).
//! - [`Runner`] carries the effects out against an [`AgentDriver`] (the application seam)
//!   and draws the [`LiveView`] into an inline viewport that grows with it (see
//!   [`fit_viewport`]) on any [`LiveBackend`]. Finished
//!   transcript entries are printed above the viewport with `insert_before`, so they stay in
//!   the terminal's own scrollback; the viewport shows only what still changes.
//! - [`run_terminal`] wires the real terminal: raw mode, bracketed paste, a key reader
//!   thread and SIGTERM.
//!
//! Approval questions reach the UI through [`TuiAnswerer`], the TUI's implementation of
//! `dsh_tools_builtin::ApprovalAnswerer`.

pub mod commands;
mod driver;
mod goal_line;
pub mod modes;
mod notes;
mod pending;
pub mod pickers;
mod questions;
mod runner;
pub mod search_picker;
pub mod slash;
mod state;
mod terminal;
mod trust;
mod view;
mod viewport;

pub use driver::{
    AgentDriver, AgentListing, AgentTranscript, Answers, CurrentModel, DriverError, OpenedHow,
    OpenedSession, SearchHit, SessionListing, TuiAnswerer,
};
pub use pending::PendingInput;
pub use questions::{QuestionSlots, TuiQuestions};
pub use runner::{agent_lines, Runner, TICK_MS};
pub use state::{AtCompletion, Effect, Input, InteractiveState, QUIT_HINT_TICKS};
pub use terminal::{run_terminal, viewport_height};
pub use trust::ask_trust;
pub use view::LiveView;
pub use viewport::{fit_viewport, KnownCursor, LiveBackend};
