//! [`InteractiveState`]: the whole interactive UI as a pure state machine.
//!
//! Every key press, session event, approval question and timer tick is an [`Input`];
//! [`InteractiveState::reduce`] folds it in and returns the [`Effect`]s the runner must carry
//! out (steer the agent, answer a question, print lines into scrollback ...). Nothing here
//! does I/O, so a test can drive the UI with scripted inputs and read what a person would
//! see.

mod editing;
mod keys;
mod memory;
mod notes;
mod questions;
mod scrollback;

use super::commands::{CommandDirectory, CommandEntry};
use super::driver::{AgentTranscript, OpenedHow, OpenedSession, SearchHit, SessionListing};
use super::pending::PendingInput;
use crate::tui::complete::FileIndex;
use crate::tui::history::{History, HistorySearch};
use crate::tui::picker::Picker;
use crate::tui::{
    child_transcript_lines, ApprovalPrompt, ContextFill, EscalationLine, InputBox, LiveChild,
    RunState, Transcript,
};
use crossterm::event::KeyEvent;
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_tools_builtin::approval::ApprovalDecided;
use dsh_tools_builtin::approval::{ApprovalDecision, ApprovalQuestion};
use dsh_tools_builtin::PermissionPreset;
pub use memory::AtCompletion;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use scrollback::push_scrollback;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many ticks the "press Ctrl-C again" hint stays armed (the runner ticks every 250 ms).
pub const QUIT_HINT_TICKS: u32 = 12;

/// Something that happened, for the state machine to fold in.
#[derive(Clone, Debug)]
pub enum Input {
    Key(KeyEvent),
    /// Text pasted in one piece (bracketed paste).
    Paste(String),
    /// The terminal's width changed.
    Resize {
        width: u16,
    },
    /// The runner's timer.
    Tick,
    /// An event appended to `session`'s log (events of other sessions are ignored).
    Session {
        session: SessionId,
        event: Arc<SessionEvent>,
    },
    /// A tool call waits for a person's answer; `ticket` routes the answer back.
    ApprovalAsked {
        ticket: u64,
        request: ApprovalQuestion,
    },
    /// The asker stopped waiting (its turn was cancelled).
    ApprovalWithdrawn {
        ticket: u64,
    },
    /// `ask_user_question` or a plan review waits for the person; `ticket` routes the outcome.
    QuestionAsked {
        ticket: u64,
        request: dsh_modes::question::QuestionRequest,
    },
    /// The asker stopped waiting (its turn was cancelled).
    QuestionWithdrawn {
        ticket: u64,
    },
    /// A session is now the one on screen.
    Opened(OpenedSession),
    /// Lines answering a command (`/sessions`, `/model` ...), to print.
    Notice(Vec<String>),
    /// An effect failed; the text says why.
    Failed(String),
    /// A `/compact` finished: the result text, `Err` when it did not compact.
    Compacted(Result<String, String>),
    /// The application measured the context of the session on screen (`None`: nothing
    /// measures it).
    Context(Option<ContextFill>),
    /// The slash commands known now (built-ins plus the `skills` row's).
    Commands(CommandDirectory),
    /// Leave now (SIGTERM).
    Quit,
    /// How many background jobs are running (or stopping) in this process.
    Jobs(usize),
    /// How many subagents are working in this process.
    Agents(usize),
    /// The subagents working now, for the live list above the input.
    Children(Vec<LiveChild>),
    /// A subagent's transcript to show, read-only (`/agents ID`).
    AgentTranscript(AgentTranscript),
    /// The prompt history kept across sessions, oldest first (read once at start).
    History(Vec<String>),
    /// The workspace's files, for `@path` completion (asked for by [`Effect::IndexFiles`]).
    Files(FileIndex),
    /// A list to choose from (`/resume`, `/sessions`, `/model`, `/permission`).
    Pick(Picker),
    /// A `!command` finished: its command line and its output (or why it did not run).
    ShellDone {
        command: String,
        output: Result<String, String>,
    },
    /// Text to edit in the input box (Esc-Esc: the previous prompt of a rewound session).
    Edit(String),
    /// The goal line above the input (`None`: the session has no goal).
    GoalLine(Option<String>),
    /// A `/search`'s hits (asked for by [`Effect::SearchSessions`]), or why it failed.
    SearchHits {
        query: String,
        hits: Result<Vec<SearchHit>, String>,
    },
    /// The workspace's sessions, for `@session` completion (asked for by
    /// [`Effect::ListSessionRefs`]).
    SessionRefs(Vec<SessionListing>),
}

/// Something the runner must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Send a prompt as steering (starts a turn when idle).
    Steer(String),
    /// Queue a prompt as its own next turn.
    FollowUp(String),
    /// Cancel the running turn as the user, keeping queued input.
    Cancel,
    /// Start the input left queued (by a cancelled turn) on an idle agent.
    SendQueued,
    Answer {
        ticket: u64,
        decision: ApprovalDecision,
    },
    /// The person answered (or dismissed) a question card.
    AnswerQuestion {
        ticket: u64,
        outcome: dsh_modes::question::QuestionOutcome,
    },
    /// `/plan [on|off]` or Shift-Tab: switch plan mode (`None` toggles).
    SetPlan(Option<bool>),
    ShowModel,
    SetModel(String),
    ListSessions,
    ListAgents,
    /// Show one subagent's transcript read-only; it comes back as [`Input::AgentTranscript`].
    ViewAgent(String),
    Resume(String),
    Fork,
    NewSession,
    ShowPermission,
    SetPermission(PermissionPreset),
    /// Start a manual compaction; its outcome comes back as [`Input::Compacted`].
    Compact,
    /// Show the diff a `#` / `##` note would make (it is written on a second Enter).
    PreviewNote(dsh_memory::NoteScope, String),
    /// Append a confirmed note to AGENTS.md.
    WriteNote(dsh_memory::NoteScope, String),
    /// Run `/goal` with these arguments.
    Goal(String),
    /// Print these lines above the live area; they stay in the terminal's scrollback.
    Scrollback(Vec<Line<'static>>),
    Quit,
    /// Append a sent prompt to the history file.
    Remember(String),
    /// List the workspace's files for `@path` completion; they come back as [`Input::Files`].
    IndexFiles,
    /// Run a `!command` in the workspace's sandbox; the output comes back as
    /// [`Input::ShellDone`] and is never sent to the model.
    Shell(String),
    /// Esc-Esc: fork the session from just before its last prompt and edit that prompt.
    Rewind,
    /// Search this workspace's sessions; the hits come back as [`Input::SearchHits`].
    SearchSessions(String),
    /// Fork stored `session` through the turn holding event `seq` and continue in it.
    ForkAt {
        session: String,
        seq: u64,
    },
    /// List the workspace's sessions for `@session` completion; they come back as
    /// [`Input::SessionRefs`].
    ListSessionRefs,
}

/// One open approval question.
#[derive(Clone, Debug)]
struct Asked {
    ticket: u64,
    session: SessionId,
    call_id: String,
    prompt: ApprovalPrompt,
}

/// What was printed last, to decide on a separating blank line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Printed {
    Nothing,
    Tool,
    Other,
}

/// The interactive UI's state. See the module docs.
#[derive(Debug)]
pub struct InteractiveState {
    width: u16,
    session: Option<SessionId>,
    transcript: Transcript,
    /// The next seq expected from the log; older events were folded already.
    next_seq: u64,
    /// Entries before this index are in scrollback.
    flushed: usize,
    /// Bytes of the streaming answer at `flushed` already printed: its finished markdown
    /// blocks, committed while the rest still streams.
    streamed: usize,
    printed: Printed,
    pending: PendingInput,
    input: InputBox,
    approvals: VecDeque<Asked>,
    questions: VecDeque<questions::OpenQuestion>,
    /// Prompts sent, in this UI and earlier ones (Up, Down and Ctrl-R recall them).
    history: History,
    /// A Ctrl-R search under way.
    search: Option<HistorySearch>,
    /// The open picker, which has the keys while it is open.
    picker: Option<Picker>,
    /// The workspace's files once listed (`None` before the first `@`).
    files: Option<FileIndex>,
    /// The files were asked for.
    files_asked: bool,
    /// The highlighted `@path` completion.
    file_choice: usize,
    /// The workspace's sessions once listed, for `@session` completion.
    session_refs: Option<Vec<SessionListing>>,
    /// They were asked for since the last session switch.
    session_refs_asked: bool,
    /// A first Esc on an empty, idle input: a second one rewinds.
    esc_armed: bool,
    /// A `!command` is running.
    shell: Option<String>,
    /// Ticks left in which a second Ctrl-C quits.
    quit_armed: u32,
    quitting: bool,
    /// A `/compact` is under way (the agent stays idle meanwhile).
    compacting: bool,
    /// Live background jobs, for the status line.
    jobs: usize,
    /// Working subagents, for the status line.
    agents: usize,
    /// Working subagents, one live line each.
    children: Vec<LiveChild>,
    /// The session's permission preset (sandbox and approval), for the status line.
    permission: Option<&'static str>,
    /// The goal line above the input.
    goal_line: Option<String>,
    commands: CommandDirectory,
    /// A `#` note line shown as a diff, written when submitted again unchanged.
    pending_note: Option<String>,
}

impl InteractiveState {
    /// An empty UI `width` columns wide; feed it [`Input::Opened`] first.
    pub fn new(width: u16) -> Self {
        Self {
            width: width.max(1),
            session: None,
            transcript: Transcript::new(),
            next_seq: 0,
            flushed: 0,
            streamed: 0,
            printed: Printed::Nothing,
            pending: PendingInput::default(),
            input: InputBox::new(),
            approvals: VecDeque::new(),
            questions: VecDeque::new(),
            history: History::default(),
            search: None,
            picker: None,
            files: None,
            files_asked: false,
            file_choice: 0,
            session_refs: None,
            session_refs_asked: false,
            esc_armed: false,
            shell: None,
            quit_armed: 0,
            quitting: false,
            compacting: false,
            jobs: 0,
            agents: 0,
            children: Vec::new(),
            permission: None,
            goal_line: None,
            commands: CommandDirectory::builtins(),
            pending_note: None,
        }
    }

    /// Live background jobs (the status line's `1 job`).
    pub fn jobs(&self) -> usize {
        self.jobs
    }

    /// Working subagents (the status line's `2 agents`).
    pub fn agents(&self) -> usize {
        self.agents
    }

    /// The subagents working now (the live list above the input).
    pub fn children(&self) -> &[LiveChild] {
        &self.children
    }

    /// The goal line shown above the input, if the session has a goal.
    pub fn goal_line(&self) -> Option<&str> {
        self.goal_line.as_deref()
    }

    pub fn session(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Index of the first transcript entry not yet in scrollback (the live ones follow).
    pub fn first_live_entry(&self) -> usize {
        self.flushed
    }

    pub fn input(&self) -> &InputBox {
        &self.input
    }

    /// The slash commands `/help` lists and the input completes.
    pub fn commands(&self) -> &CommandDirectory {
        &self.commands
    }

    /// The completions for what is typed (shown under the input).
    pub fn completions(&self) -> Vec<&CommandEntry> {
        if !self.approvals.is_empty() || !self.questions.is_empty() {
            return Vec::new();
        }
        self.commands.completions(self.input.text())
    }

    /// The approval question on screen, if any.
    pub fn approval(&self) -> Option<&ApprovalPrompt> {
        self.approvals.front().map(|a| &a.prompt)
    }

    /// The session's permission preset as the status line shows it.
    pub fn permission(&self) -> Option<&'static str> {
        self.permission
    }

    pub fn set_permission(&mut self, preset: &'static str) {
        self.permission = Some(preset);
    }

    /// Messages typed while the agent works and not yet taken: follow-ups and steering.
    pub fn queued(&self) -> usize {
        self.pending.follow_ups().len() + self.pending.steering().len()
    }

    pub fn is_running(&self) -> bool {
        !matches!(self.transcript.run_state(), RunState::Idle)
    }

    /// Whether a `/compact` is under way.
    pub fn is_compacting(&self) -> bool {
        self.compacting
    }

    /// Whether [`Effect::Quit`] was issued.
    pub fn is_quitting(&self) -> bool {
        self.quitting
    }

    /// A note that replaces the run state in the status line.
    pub fn status_note(&self) -> Option<&'static str> {
        if self.quit_armed > 0 {
            Some("press Ctrl-C again to quit")
        } else if self.esc_armed {
            Some("press Esc again to edit your previous message (in a fork)")
        } else if self.shell.is_some() {
            Some("running a shell command (Esc stops it)")
        } else if !self.approvals.is_empty() {
            Some("waiting for your approval")
        } else if !self.questions.is_empty() {
            Some("waiting for your answer")
        } else if self.compacting {
            Some("compacting history (Esc cancels)")
        } else {
            None
        }
    }

    pub fn width(&self) -> u16 {
        self.width
    }

    /// Folds one input in and returns what the runner must do, in order.
    pub fn reduce(&mut self, input: Input) -> Vec<Effect> {
        let mut effects = Vec::new();
        match input {
            Input::Key(key) => self.key(key, &mut effects),
            Input::Paste(text) => {
                if self.questions.is_empty() {
                    self.paste(&text, &mut effects);
                }
            }
            Input::Resize { width } => self.width = width.max(1),
            Input::Commands(directory) => self.commands = directory,
            Input::Tick => self.quit_armed = self.quit_armed.saturating_sub(1),
            Input::Session { session, event } => {
                if self.session.as_ref() == Some(&session) {
                    self.session_event(&event);
                }
            }
            Input::ApprovalAsked { ticket, request } => {
                let mut prompt = ApprovalPrompt::new(
                    request.tool.clone(),
                    request.summary.clone(),
                    request.reason.clone(),
                );
                if let Some(grant) = &request.grant {
                    prompt.set_grant(grant.to_string());
                }
                if let Some(escalation) = &request.escalation {
                    prompt.set_escalation(EscalationLine {
                        from: escalation.from.to_string(),
                        to: escalation.mode.to_string(),
                        justification: escalation.justification.clone(),
                    });
                }
                self.approvals.push_back(Asked {
                    ticket,
                    session: request.session_id.clone(),
                    call_id: request.call_id.to_string(),
                    prompt,
                });
            }
            Input::ApprovalWithdrawn { ticket } => self.approvals.retain(|a| a.ticket != ticket),
            Input::QuestionAsked { ticket, request } => {
                self.question_asked(ticket, request, &mut effects);
            }
            Input::QuestionWithdrawn { ticket } => self.question_withdrawn(ticket),
            Input::Opened(opened) => self.open(opened, &mut effects),
            Input::Notice(lines) => {
                let lines = lines
                    .iter()
                    .flat_map(|line| self.wrapped(line, Style::new()))
                    .collect();
                self.note(lines, &mut effects);
            }
            Input::Failed(text) => self.error(text, &mut effects),
            Input::Compacted(outcome) => {
                self.compacting = false;
                match outcome {
                    Ok(text) => {
                        let lines = self.wrapped(&text, Style::new());
                        self.note(lines, &mut effects);
                    }
                    Err(text) => self.error(text, &mut effects),
                }
            }
            Input::Context(fill) => self.transcript.set_context_fill(fill),
            Input::Quit => self.quit(&mut effects),
            Input::Jobs(count) => self.jobs = count,
            Input::Agents(count) => self.agents = count,
            Input::Children(children) => self.children = children,
            Input::AgentTranscript(view) => {
                let lines = child_transcript_lines(&view, self.width);
                self.note(lines, &mut effects);
            }
            Input::History(entries) => self.history = History::new(entries),
            Input::Files(index) => self.files = Some(index),
            Input::Pick(picker) => self.picker = Some(picker),
            Input::ShellDone { command, output } => self.shell_done(command, output, &mut effects),
            Input::Edit(text) => self.input.set_text(&text),
            Input::GoalLine(line) => self.goal_line = line,
            Input::SearchHits { query, hits } => self.search_hits(&query, hits),
            Input::SessionRefs(sessions) => self.set_session_refs(sessions),
        }
        self.flush(&mut effects);
        self.sync_queue();
        effects
    }

    fn session_event(&mut self, event: &SessionEvent) {
        if event.seq < self.next_seq {
            return;
        }
        self.next_seq = event.seq + 1;
        self.transcript.apply(event);
        self.pending.apply(event);
        if let Some(Ok(decided)) = event.decode::<ApprovalDecided>() {
            let session = self.session.clone();
            self.approvals
                .retain(|a| Some(&a.session) != session.as_ref() || a.call_id != decided.call_id);
        }
    }

    fn open(&mut self, opened: OpenedSession, effects: &mut Vec<Effect>) {
        // Questions from the previous session cannot be answered any more.
        for asked in self.approvals.drain(..) {
            effects.push(Effect::Answer {
                ticket: asked.ticket,
                decision: ApprovalDecision::Deny { feedback: None },
            });
        }
        self.dismiss_questions(effects);
        self.flush(effects);
        let mut transcript = Transcript::new();
        transcript.set_route(
            opened.provider.clone(),
            opened.model.clone(),
            opened.context_window,
        );
        transcript.set_reasoning_expanded(self.transcript.reasoning_expanded());
        transcript.set_compaction_expanded(self.transcript.compaction_expanded());
        for event in &opened.events {
            transcript.apply(event);
        }
        self.transcript = transcript;
        self.pending = PendingInput::from_events(&opened.events);
        self.next_seq = opened.events.last().map_or(0, |e| e.seq + 1);
        self.session = Some(opened.id.clone());
        self.compacting = false;
        // The session left is one to offer now.
        self.session_refs_asked = false;
        let (note, replay) = match &opened.how {
            OpenedHow::New => (format!("new session {}", opened.id), false),
            OpenedHow::Resumed => (format!("resumed session {}", opened.id), true),
            OpenedHow::Forked { parent } => {
                (format!("forked session {parent} into {}", opened.id), false)
            }
            OpenedHow::Rewound { parent } => (
                format!(
                    "forked session {parent} from before its last prompt into {}; \
                     edit the prompt and send it",
                    opened.id
                ),
                true,
            ),
        };
        let mut header = Vec::new();
        if self.printed != Printed::Nothing {
            header.push(Line::default());
        }
        header.extend(self.wrapped(&note, dim()));
        self.printed = Printed::Other;
        push_scrollback(effects, header);
        // A resumed session's history is printed by the next flush; a fork's is already on
        // screen, and a new session has none.
        self.flushed = if replay { 0 } else { self.settled_prefix() };
        self.streamed = 0;
    }

    fn sync_queue(&mut self) {
        self.input
            .set_pending(self.pending.follow_ups(), self.pending.steering());
    }
}

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}
