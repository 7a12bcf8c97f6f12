//! The event loop: feeds inputs to the state machine, carries out its effects against the
//! [`AgentDriver`], prints settled lines into scrollback and redraws the live area.
//!
//! [`Runner`] works on any ratatui backend (tests use `TestBackend` with an inline
//! viewport); [`run_terminal`] sets up the real terminal around it.

use super::driver::{AgentDriver, AgentListing, Answers};
use super::pickers::{model_picker, permission_picker, session_picker};
use super::state::{Effect, Input, InteractiveState};
use super::view::LiveView;
use super::viewport::{fit_viewport, io_error, LiveBackend};
use crate::tui::complete::FileIndex;
use crate::tui::history::HistoryFile;
use ratatui::buffer::Buffer;
use ratatui::text::Line;
use ratatui::Terminal;
use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use tokio::sync::mpsc;

/// How often [`Input::Tick`] arrives, in milliseconds.
pub const TICK_MS: u64 = 250;

/// The most lines handed to one `insert_before` call (its height is a `u16`).
const INSERT_CHUNK: usize = 1000;

/// Drives one [`InteractiveState`] on one terminal.
pub struct Runner<B: LiveBackend> {
    terminal: Terminal<B>,
    state: InteractiveState,
    driver: Arc<dyn AgentDriver>,
    answers: Answers,
    /// Session events arrived since the context was last measured.
    context_stale: bool,
    /// Where sent prompts are appended (none: history lasts this UI only).
    history: Option<HistoryFile>,
    /// The permission preset may have changed since it was last read (it is folded from
    /// the whole log, so it is read only when it can have changed).
    permission_stale: bool,
}

impl<B: LiveBackend> std::fmt::Debug for Runner<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl<B> Runner<B>
where
    B: LiveBackend,
    B::Error: Send + Sync + 'static,
{
    /// A runner over `terminal` (normally an inline viewport), sized to its width.
    pub fn new(
        terminal: Terminal<B>,
        driver: Arc<dyn AgentDriver>,
        answers: Answers,
    ) -> io::Result<Self> {
        let width = terminal.size().map_err(io_error)?.width;
        let history = driver.history_file();
        let mut state = InteractiveState::new(width);
        if let Some(file) = &history {
            // A history that cannot be read is not worth refusing to start over.
            match file.load() {
                Ok(entries) => {
                    state.reduce(Input::History(entries));
                }
                Err(error) => {
                    tracing::warn!(%error, path = %file.path().display(), "the prompt history cannot be read")
                }
            }
        }
        Ok(Self {
            terminal,
            state,
            driver,
            answers,
            context_stale: true,
            history,
            permission_stale: true,
        })
    }

    pub fn state(&self) -> &InteractiveState {
        &self.state
    }

    pub fn terminal(&self) -> &Terminal<B> {
        &self.terminal
    }

    pub fn terminal_mut(&mut self) -> &mut Terminal<B> {
        &mut self.terminal
    }

    /// Folds `input` in and carries out everything it leads to, including the inputs that
    /// effects produce (a resumed session, a listing). Does not redraw.
    pub async fn handle(&mut self, input: Input) -> io::Result<()> {
        let mut inputs = VecDeque::from([input]);
        if matches!(inputs.front(), Some(Input::Tick)) {
            for ticket in self.answers.take_withdrawn() {
                inputs.push_back(Input::ApprovalWithdrawn { ticket });
            }
            if let Some(slots) = self.driver.question_slots() {
                for ticket in slots.take_withdrawn() {
                    inputs.push_back(Input::QuestionWithdrawn { ticket });
                }
            }
        }
        while let Some(input) = inputs.pop_front() {
            if matches!(input, Input::Session { .. } | Input::Opened(_)) {
                self.context_stale = true;
            }
            match &input {
                Input::Opened(_) => self.permission_stale = true,
                Input::Session { event, .. } if event.type_name() == "permission/preset" => {
                    self.permission_stale = true;
                }
                _ => {}
            }
            if matches!(input, Input::Resize { .. }) {
                self.terminal.backend_mut().resized();
                // Let ratatui take the new size before the viewport may be reopened taller
                // for it: on a narrower screen it clears the rows the terminal has just
                // re-wrapped (the old live area among them), which a reopen would skip,
                // leaving the old input and rules above the new ones.
                self.terminal.autoresize().map_err(io_error)?;
            }
            for effect in self.state.reduce(input) {
                self.execute(effect, &mut inputs).await?;
            }
        }
        Ok(())
    }

    /// Measures the context again if events arrived since the last measurement (once per
    /// redraw at most, however many events a burst held).
    pub async fn refresh_context(&mut self) -> io::Result<()> {
        if self.permission_stale {
            self.permission_stale = false;
            self.state.set_permission(self.driver.permission().as_str());
        }
        if !self.context_stale {
            return Ok(());
        }
        self.context_stale = false;
        let fill = self.driver.context().await;
        self.handle(Input::Context(fill)).await?;
        let goal = self.driver.goal_line().await;
        self.handle(Input::GoalLine(goal)).await
    }

    /// Draws the live area, first growing the viewport to what it shows (and shrinking it
    /// while no turn runs, so the rows it gives back are not left blank for long).
    pub fn draw(&mut self) -> io::Result<()> {
        self.fit(!self.state.is_running())?;
        let state = &self.state;
        self.terminal
            .draw(|frame| {
                let area = frame.area();
                let view = LiveView::new(state);
                if let Some(cursor) = view.cursor(area) {
                    frame.set_cursor_position(cursor);
                }
                frame.render_widget(view, area);
            })
            .map_err(io_error)?;
        Ok(())
    }

    /// Gives the viewport the height of the live view: always when it must grow, when it
    /// may shrink only if `shrink`.
    fn fit(&mut self, shrink: bool) -> io::Result<()> {
        let width = self.terminal.size().map_err(io_error)?.width;
        let wanted = LiveView::new(&self.state).height(width);
        let current = self.terminal.get_frame().area().height;
        if wanted > current || (shrink && wanted < current) {
            fit_viewport(&mut self.terminal, wanted)?;
        }
        Ok(())
    }

    /// Draws a burst of changes as one synchronized update: lines printed into scrollback,
    /// a viewport reopened at a new height and the redraw show at once.
    fn draw_synchronized(&mut self) -> io::Result<()> {
        self.terminal.backend_mut().synchronized(true)?;
        let drawn = self.draw();
        let ended = self.terminal.backend_mut().synchronized(false);
        drawn.and(ended)
    }

    /// Runs until the person quits or `inputs` closes, then shuts the driver down. The
    /// driver is shut down on an error too: a terminal that went away (SIGHUP) fails the
    /// next redraw, and the session must still be closed and flushed.
    pub async fn run(&mut self, inputs: &mut mpsc::UnboundedReceiver<Input>) -> io::Result<()> {
        let result = self.run_until_quit(inputs).await;
        self.driver.shutdown().await;
        result
    }

    async fn run_until_quit(
        &mut self,
        inputs: &mut mpsc::UnboundedReceiver<Input>,
    ) -> io::Result<()> {
        let mut ticks = tokio::time::interval(std::time::Duration::from_millis(TICK_MS));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        self.refresh_context().await?;
        self.draw()?;
        while !self.state.is_quitting() {
            let input = tokio::select! {
                input = inputs.recv() => match input {
                    Some(input) => input,
                    None => break,
                },
                _ = ticks.tick() => Input::Tick,
            };
            self.terminal.backend_mut().synchronized(true)?;
            self.handle(input).await?;
            // Coalesce a burst (streamed chunks) into one redraw.
            while !self.state.is_quitting() {
                match inputs.try_recv() {
                    Ok(input) => self.handle(input).await?,
                    Err(_) => break,
                }
            }
            self.refresh_context().await?;
            self.draw_synchronized()?;
        }
        Ok(())
    }

    async fn execute(&mut self, effect: Effect, inputs: &mut VecDeque<Input>) -> io::Result<()> {
        let driver = self.driver.clone();
        let outcome = match effect {
            Effect::PreviewNote(scope, note) => Ok(Some(Input::Notice(super::notes::preview(
                driver.note_dirs(),
                scope,
                &note,
            )))),
            Effect::WriteNote(scope, note) => Ok(Some(Input::Notice(super::notes::write(
                driver.note_dirs(),
                scope,
                &note,
            )))),
            Effect::Scrollback(lines) => return self.print(&lines),
            Effect::Quit => return Ok(()),
            Effect::Answer { ticket, decision } => {
                self.answers.answer(ticket, decision);
                return Ok(());
            }
            Effect::AnswerQuestion { ticket, outcome } => {
                if let Some(slots) = driver.question_slots() {
                    slots.answer(ticket, outcome);
                }
                return Ok(());
            }
            Effect::SetPlan(on) => driver
                .set_plan(on)
                .await
                .map(|note| Some(Input::Notice(vec![note]))),
            Effect::Steer(text) => driver.steer(&text).await.map(|()| None),
            Effect::FollowUp(text) => driver.follow_up(&text).await.map(|()| None),
            Effect::Cancel => driver.cancel().map(|()| None),
            Effect::SendQueued => driver.send_queued().map(|()| None),
            Effect::ShowModel => Ok(Some(Input::Pick(model_picker(&driver.model())))),
            Effect::SetModel(model) => driver
                .set_model(&model)
                .map(|note| Some(Input::Notice(vec![note]))),
            Effect::ListAgents => Ok(Some(Input::Notice(agent_lines(&driver.list_agents())))),
            Effect::ViewAgent(id) => driver
                .agent_transcript(&id)
                .await
                .map(|view| Some(Input::AgentTranscript(view))),
            Effect::ListSessions => driver
                .list_sessions()
                .await
                .map(|sessions| Some(Input::Pick(session_picker(&sessions, self.state.session())))),
            Effect::Resume(id) => driver.resume(&id).await.map(|o| Some(Input::Opened(o))),
            Effect::Fork => driver.fork().await.map(|o| Some(Input::Opened(o))),
            Effect::NewSession => driver.new_session().await.map(|o| Some(Input::Opened(o))),
            Effect::ShowPermission => Ok(Some(Input::Pick(permission_picker(driver.permission())))),
            Effect::Remember(text) => {
                if let Some(file) = &self.history {
                    if let Err(error) = file.append(&text) {
                        tracing::warn!(%error, "the prompt could not be added to the history file");
                    }
                }
                return Ok(());
            }
            Effect::IndexFiles => match driver.workspace() {
                Some(root) => {
                    let index = tokio::task::spawn_blocking(move || FileIndex::walk(&root))
                        .await
                        .unwrap_or_default();
                    Ok(Some(Input::Files(index)))
                }
                None => Ok(None),
            },
            Effect::Shell(command) => match driver.shell(&command) {
                Ok(()) => Ok(None),
                Err(error) => Ok(Some(Input::ShellDone {
                    command,
                    output: Err(error.to_string()),
                })),
            },
            Effect::Rewind => match driver.rewind().await {
                Ok((opened, text)) => {
                    inputs.push_back(Input::Opened(opened));
                    Ok(Some(Input::Edit(text)))
                }
                Err(error) => Err(error),
            },
            Effect::SearchSessions(query) => match driver.search_sessions(&query) {
                Ok(()) => Ok(None),
                Err(error) => Ok(Some(Input::SearchHits {
                    query,
                    hits: Err(error.to_string()),
                })),
            },
            Effect::ForkAt { session, seq } => driver
                .fork_at(&session, seq)
                .await
                .map(|o| Some(Input::Opened(o))),
            Effect::ListSessionRefs => driver
                .list_sessions()
                .await
                .map(|sessions| Some(Input::SessionRefs(sessions))),
            Effect::Compact => driver
                .compact()
                .map(|()| None)
                .or_else(|error| Ok(Some(Input::Compacted(Err(error.to_string()))))),
            Effect::SetPermission(preset) => {
                self.permission_stale = true;
                driver
                    .set_permission(preset)
                    .await
                    .map(|note| Some(Input::Notice(vec![note])))
            }
            Effect::Goal(raw) => {
                self.context_stale = true;
                driver
                    .goal(&raw)
                    .await
                    .map(|lines| Some(Input::Notice(lines)))
            }
        };
        match outcome {
            Ok(Some(input)) => inputs.push_back(input),
            Ok(None) => {}
            Err(error) => inputs.push_back(Input::Failed(error.to_string())),
        }
        Ok(())
    }

    /// Prints `lines` above the viewport, where they scroll into the terminal's history.
    fn print(&mut self, lines: &[Line<'static>]) -> io::Result<()> {
        // Give back the rows the printed lines leave, so they land where they were shown.
        self.fit(true)?;
        for chunk in lines.chunks(INSERT_CHUNK) {
            let height = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
            self.terminal
                .insert_before(height, |buf: &mut Buffer| {
                    let area = buf.area;
                    for (y, line) in (area.y..).zip(chunk) {
                        buf.set_line(area.x, y, line, area.width);
                    }
                })
                .map_err(io_error)?;
        }
        Ok(())
    }
}

/// The `/agents` listing: one line per subagent, indented by depth.
pub fn agent_lines(agents: &[AgentListing]) -> Vec<String> {
    if agents.is_empty() {
        return vec!["no subagents in this session".into()];
    }
    let id_width = agents
        .iter()
        .map(|a| a.id.as_str().len() + 2 * a.depth.saturating_sub(1) as usize)
        .max()
        .unwrap_or(0);
    let mut lines = vec!["subagents (/agents ID shows one's transcript):".to_owned()];
    for agent in agents {
        let indent = "  ".repeat(agent.depth.saturating_sub(1) as usize);
        let id = format!("{indent}{}", agent.id.as_str());
        lines.push(format!(
            "  {id:<id_width$}  {:<11}  {}",
            agent.status,
            crate::tui::text::one_line(&crate::sanitize::sanitize(&agent.label))
        ));
    }
    lines
}
