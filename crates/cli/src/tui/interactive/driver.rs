//! The seam between the terminal UI and the running application.
//!
//! The UI never touches agents, sessions or the kernel directly: it asks an [`AgentDriver`]
//! to do things (steer, cancel, resume ...) and hears back through [`Input`]s that the
//! application sends into the UI's channel (session events, approval questions). This keeps
//! the UI testable with a scripted driver and lets the application own every resource.

use super::state::Input;
use crate::tui::history::HistoryFile;
use crate::tui::ContextFill;
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_tools_builtin::approval::{ApprovalAnswerer, ApprovalDecision, ApprovalQuestion};
use dsh_tools_builtin::PermissionPreset;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc, oneshot};

/// What went wrong when the UI asked the application for something. Shown to the person as
/// a one-line notice; the UI keeps running.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The request needs an idle agent (resume, fork, new session while a turn runs).
    #[error("the agent is busy; press Esc to cancel the turn first")]
    Busy,
    /// This build or configuration cannot do it.
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Failed(String),
}

impl DriverError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Busy => "AGENT_BUSY",
            Self::Unsupported(_) => "UNSUPPORTED",
            Self::Failed(_) => "DRIVER_FAILED",
        }
    }

    /// Wraps any error as [`DriverError::Failed`], keeping its causes in the text.
    pub fn failed(error: impl std::fmt::Display) -> Self {
        Self::Failed(error.to_string())
    }
}

/// How a session came to be the one on screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenedHow {
    /// A fresh session (at start or after `/clear`).
    New,
    /// An existing session, continued.
    Resumed,
    /// A fork of `parent`; its history is the parent's.
    Forked { parent: SessionId },
    /// A fork of `parent` from just before its last prompt (Esc-Esc), to edit that prompt.
    Rewound { parent: SessionId },
}

/// A session the UI now shows: its id, its log so far and where requests go.
#[derive(Clone, Debug)]
pub struct OpenedSession {
    pub id: SessionId,
    pub how: OpenedHow,
    /// The log up to the moment of opening; later events arrive as [`Input::Session`].
    pub events: Vec<Arc<SessionEvent>>,
    pub provider: String,
    pub model: String,
    pub context_window: Option<u64>,
}

/// One row of `/agents`: a subagent below the session on screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentListing {
    pub id: SessionId,
    /// 1 for a child of the session on screen, 2 for a grandchild, ...
    pub depth: u64,
    /// The `description` it was started with, on one line.
    pub label: String,
    /// `working`, `done`, `interrupted`, `stopped early` or `failed`.
    pub status: &'static str,
}

impl AgentListing {
    /// How `/agents` words a child's state: working, or how its last epoch ended (`done`
    /// also for a child recovered from the log, whose outcome the recovery notice tells).
    pub fn status_of(child: &dsh_subagents::ChildSnapshot) -> &'static str {
        use dsh_subagents::StopReason;
        if child.working {
            return "working";
        }
        match child.last_stop {
            None | Some(StopReason::Completed) => "done",
            Some(StopReason::Aborted) => "interrupted",
            Some(StopReason::MaxTokens | StopReason::Refusal) => "stopped early",
            Some(StopReason::Error) => "failed",
        }
    }
}

/// One subagent's conversation, for `/agents ID` to show read-only.
#[derive(Clone, Debug)]
pub struct AgentTranscript {
    pub id: SessionId,
    /// The `description` it was started with.
    pub label: String,
    /// Its log after its seed (a fork's inherited history is left out).
    pub events: Vec<Arc<SessionEvent>>,
    /// How many seed events were left out (the parent's history a fork started from).
    pub seeded: usize,
}

/// One row of `/sessions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionListing {
    pub id: SessionId,
    /// When it was last written, as the application chooses to show it.
    pub updated: String,
    /// The first prompt (or a title), on one line.
    pub title: String,
    pub turns: u64,
    /// How its last turn ended (`completed`, `interrupted` ...), if one did.
    pub outcome: Option<String>,
}

/// One `/search` hit: the best-matching event of a session of the workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchHit {
    pub session: SessionId,
    /// The session's title (or first prompt), as stored.
    pub title: String,
    /// How long ago the matching event was written, as the application chooses to show it.
    pub age: String,
    pub turn: u64,
    pub seq: u64,
    /// The matching passage, the matches between `dsh_memory::index::MARK_START` and
    /// `MARK_END`.
    pub snippet: String,
}

/// The model choice `/model` shows and switches. (What the adapter knows about a model is
/// `dsh_llm::ModelInfo`; this is only which one is in use and what else could be.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentModel {
    pub provider: String,
    pub model: String,
    /// The provider's catalogued models, to choose from.
    pub catalog: Vec<String>,
    /// The context window of each catalogued model, in the catalogue's order, where known.
    pub windows: Vec<Option<u64>>,
}

/// The application as the UI sees it. Everything the UI can make happen goes through here.
///
/// Quick calls are synchronous (they only touch memory and the log); the ones that may
/// start an agent or read and write files return futures, which the UI awaits before it
/// reads the next key. Sending a prompt is one of those: a session's agent may be started
/// only when its first prompt arrives, so an opened-and-left UI leaves no empty session.
pub trait AgentDriver: Send + Sync {
    /// Steers the current agent: starts a turn when idle, else claimed at the next step.
    fn steer(&self, text: &str) -> BoxFuture<'_, Result<(), DriverError>>;
    /// Queues a prompt that becomes its own turn after the current one.
    fn follow_up(&self, text: &str) -> BoxFuture<'_, Result<(), DriverError>>;
    /// Cancels the running turn as the user; queued input stays queued (and parked: the
    /// agent does not start it by itself).
    fn cancel(&self) -> Result<(), DriverError>;
    /// Starts the parked queued input on an idle agent, in its order.
    fn send_queued(&self) -> Result<(), DriverError>;
    fn model(&self) -> CurrentModel;
    /// Switches the model for the next step; returns a note to show.
    fn set_model(&self, model: &str) -> Result<String, DriverError>;
    fn permission(&self) -> PermissionPreset;
    /// Switches the session's sandbox mode and approval policy together; returns a note.
    fn set_permission(
        &self,
        preset: PermissionPreset,
    ) -> BoxFuture<'_, Result<String, DriverError>>;
    /// The subagents below the session on screen that this process knows (started or
    /// recovered), each followed by its own children, in creation order.
    fn list_agents(&self) -> Vec<AgentListing>;
    /// One subagent's transcript (`/agents ID`; an id prefix that names one child is
    /// enough), read without resuming it or writing to its session. Only the subagents
    /// [`list_agents`](Self::list_agents) lists can be shown.
    fn agent_transcript(&self, id: &str) -> BoxFuture<'_, Result<AgentTranscript, DriverError>> {
        let _ = id;
        Box::pin(async {
            Err(DriverError::Unsupported(
                "this UI cannot show subagent transcripts".into(),
            ))
        })
    }
    /// Sessions of this workspace, newest first.
    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionListing>, DriverError>>;
    fn resume(&self, id: &str) -> BoxFuture<'_, Result<OpenedSession, DriverError>>;
    /// Forks the current session and continues in the child.
    fn fork(&self) -> BoxFuture<'_, Result<OpenedSession, DriverError>>;
    /// Searches this workspace's sessions (`/search`) and returns at once; the hits arrive
    /// as [`Input::SearchHits`] for the same query. A search asked for while an older one
    /// waits supersedes it.
    fn search_sessions(&self, _query: &str) -> Result<(), DriverError> {
        Err(DriverError::Unsupported(
            "searching sessions needs the memory row".into(),
        ))
    }
    /// Forks stored session `id` through the turn that holds event `seq` (a `/search` hit)
    /// and continues in the fork.
    fn fork_at(&self, _id: &str, _seq: u64) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        Box::pin(async {
            Err(DriverError::Unsupported(
                "forking from a search hit is not available in this composition".into(),
            ))
        })
    }
    fn new_session(&self) -> BoxFuture<'_, Result<OpenedSession, DriverError>>;
    /// How full the context of the session on screen is: the token meter's estimate of the
    /// next request against the model's window. `None` when nothing measures it (no agent
    /// yet, or a composition without compaction). Cheap: the meter is kept up to date as
    /// events are appended, so this is a read, not a rescan.
    fn context(&self) -> BoxFuture<'_, Option<ContextFill>>;
    /// Starts a manual compaction of the session on screen and returns at once (it asks the
    /// model for a summary, which takes a while); the outcome arrives later as
    /// [`Input::Compacted`]. An error means it did not start.
    fn compact(&self) -> Result<(), DriverError>;
    /// Switches plan mode of the session on screen (`None` toggles); returns the note to
    /// show. The default: this application has no plan mode.
    fn set_plan(&self, _on: Option<bool>) -> BoxFuture<'_, Result<String, DriverError>> {
        Box::pin(async {
            Err(DriverError::Unsupported(
                "plan mode is not available here".into(),
            ))
        })
    }
    /// Where question cards are answered, when the application asks the person questions.
    fn question_slots(&self) -> Option<super::QuestionSlots> {
        None
    }
    /// Stops work and makes everything durable; the UI exits afterwards.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    /// The prompt-history file (`$DSH_HOME/history.jsonl`); `None` keeps history in memory.
    fn history_file(&self) -> Option<HistoryFile> {
        None
    }
    /// The workspace root, whose files `@path` completes; `None` turns completion off.
    fn workspace(&self) -> Option<PathBuf> {
        None
    }
    /// Starts `command` in the workspace under the session's sandbox and returns at once;
    /// its output arrives as [`Input::ShellDone`]. It is not logged or sent to the model.
    /// [`AgentDriver::cancel`] stops it.
    fn shell(&self, _command: &str) -> Result<(), DriverError> {
        Err(DriverError::Unsupported(
            "!commands are not available in this composition".into(),
        ))
    }
    /// Forks the session on screen from just before its last prompt, continues in the fork,
    /// and returns it with that prompt's text (Esc-Esc).
    fn rewind(&self) -> BoxFuture<'_, Result<(OpenedSession, String), DriverError>> {
        Box::pin(async {
            Err(DriverError::Unsupported(
                "rewinding is not available in this composition".into(),
            ))
        })
    }
    /// The workspace and `$DSH_HOME`, where `#` and `##` notes go (`None`: notes are off).
    fn note_dirs(&self) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
        None
    }

    /// Runs `/goal` with its raw arguments on the session on screen; the lines to print
    /// (a refusal is printed too, as the original's command result).
    fn goal(&self, _raw: &str) -> BoxFuture<'_, Result<Vec<String>, DriverError>> {
        Box::pin(async {
            Err(DriverError::Unsupported(
                "goals are not available here".into(),
            ))
        })
    }
    /// The goal line of the session on screen (objective, round r/N, phase), if it has a
    /// goal.
    fn goal_line(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
}

/// Answers approval questions by putting them on screen.
///
/// Each question becomes an [`Input::ApprovalAsked`] with a fresh ticket; the UI's answer
/// comes back through [`Answers::answer`]. If the UI is gone the call is denied, so a turn
/// never hangs on a closed terminal.
#[derive(Clone, Debug)]
pub struct TuiAnswerer {
    inputs: mpsc::UnboundedSender<Input>,
    answers: Answers,
}

/// The open questions' reply slots, shared by the answerer and the UI runner.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    inner: Arc<AnswersInner>,
}

#[derive(Debug, Default)]
struct AnswersInner {
    next: AtomicU64,
    open: Mutex<HashMap<u64, oneshot::Sender<ApprovalDecision>>>,
}

impl Answers {
    pub fn new() -> Self {
        Self::default()
    }

    fn open(&self) -> (u64, oneshot::Receiver<ApprovalDecision>) {
        let ticket = self.inner.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        self.slots().insert(ticket, tx);
        (ticket, rx)
    }

    /// Delivers the person's answer; `false` when the question was withdrawn meanwhile.
    pub fn answer(&self, ticket: u64, decision: ApprovalDecision) -> bool {
        match self.slots().remove(&ticket) {
            Some(slot) => slot.send(decision).is_ok(),
            None => false,
        }
    }

    /// Whether the asker still waits for `ticket` (it stops when the turn is cancelled).
    pub fn is_waiting(&self, ticket: u64) -> bool {
        self.slots()
            .get(&ticket)
            .is_some_and(|slot| !slot.is_closed())
    }

    /// Forgets questions whose asker stopped waiting and returns their tickets.
    pub fn take_withdrawn(&self) -> Vec<u64> {
        let mut slots = self.slots();
        let mut gone: Vec<u64> = slots
            .iter()
            .filter(|(_, slot)| slot.is_closed())
            .map(|(ticket, _)| *ticket)
            .collect();
        gone.sort_unstable();
        for ticket in &gone {
            slots.remove(ticket);
        }
        gone
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<ApprovalDecision>>> {
        self.inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl TuiAnswerer {
    pub fn new(inputs: mpsc::UnboundedSender<Input>, answers: Answers) -> Self {
        Self { inputs, answers }
    }
}

impl ApprovalAnswerer for TuiAnswerer {
    fn answer(&self, request: ApprovalQuestion) -> BoxFuture<'_, ApprovalDecision> {
        Box::pin(async move {
            let (ticket, reply) = self.answers.open();
            let closed = ApprovalDecision::Deny {
                feedback: Some("the terminal UI closed before anyone answered".into()),
            };
            if self
                .inputs
                .send(Input::ApprovalAsked { ticket, request })
                .is_err()
            {
                self.answers.slots().remove(&ticket);
                return closed;
            }
            // Dropping this future (a cancelled turn) drops `reply`; the UI sees the slot
            // closed and takes the prompt down.
            reply.await.unwrap_or(closed)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_subagents::{ChildSnapshot, StopReason, SubagentMode};

    #[test]
    fn agents_are_listed_as_working_or_by_how_their_last_epoch_ended() {
        let child = |working, last_stop| ChildSnapshot {
            id: SessionId::new("session-2"),
            parent: SessionId::new("session-1"),
            depth: 1,
            label: "scan".into(),
            mode: SubagentMode::Continuable,
            status: "idle",
            working,
            last_report: None,
            last_output: None,
            last_stop,
        };
        let status = |working, stop| AgentListing::status_of(&child(working, stop));
        assert_eq!(status(true, Some(StopReason::Completed)), "working");
        assert_eq!(status(false, None), "done");
        assert_eq!(status(false, Some(StopReason::Completed)), "done");
        assert_eq!(status(false, Some(StopReason::Aborted)), "interrupted");
        assert_eq!(status(false, Some(StopReason::MaxTokens)), "stopped early");
        assert_eq!(status(false, Some(StopReason::Refusal)), "stopped early");
        assert_eq!(status(false, Some(StopReason::Error)), "failed");
    }
}
