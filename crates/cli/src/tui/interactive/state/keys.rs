//! Keys: editing, sending, steering and queueing, the approval prompt, slash commands,
//! history and quitting.

use super::editing::shell_command;
use super::{dim, Effect, InteractiveState, QUIT_HINT_TICKS};
use crate::tui::interactive::slash::{self, SlashCommand, SlashError, Submitted};
use crate::tui::{ApprovalChoice, InputBox};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use dsh_tools_builtin::approval::ApprovalDecision;
use ratatui::text::Line;

impl InteractiveState {
    pub(super) fn key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.ctrl_c(effects);
            return;
        }
        self.quit_armed = 0;
        if !self.approvals.is_empty() {
            self.approval_key(key, effects);
            return;
        }
        if !self.questions.is_empty() {
            self.question_key(key, effects);
            return;
        }
        if self.picker.is_some() {
            self.picker_key(key, effects);
            return;
        }
        if self.search.is_some() {
            self.search_key(key);
            return;
        }
        let esc_armed = std::mem::take(&mut self.esc_armed);
        if key.code == KeyCode::Esc && self.rewind_key(esc_armed, effects) {
            return;
        }
        if self.file_completion_key(key) {
            return;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if alt || shift => self.input.insert('\n'),
            KeyCode::Char('j') if ctrl => self.input.insert('\n'),
            // A line ending in a backslash continues on the next (as in a shell).
            KeyCode::Enter if self.input.text()[..self.input.cursor()].ends_with('\\') => {
                self.input.backspace();
                self.input.insert('\n');
            }
            KeyCode::Enter => self.submit(false, effects),
            KeyCode::BackTab => effects.push(Effect::SetPlan(None)),
            KeyCode::Tab => match self.commands.complete(self.input.text()) {
                Some(completed) => self.input.set_text(&completed),
                None => self.submit(true, effects),
            },
            KeyCode::Esc if self.is_running() || self.compacting || self.shell.is_some() => {
                effects.push(Effect::Cancel);
            }
            KeyCode::Char('t') if ctrl => {
                let expanded = self.transcript.reasoning_expanded();
                self.transcript.set_reasoning_expanded(!expanded);
            }
            KeyCode::Char('o') if ctrl => self.toggle_compaction(effects),
            KeyCode::Char('d') if ctrl && self.input.text().is_empty() => self.quit(effects),
            KeyCode::Char('r') if ctrl => self.start_search(),
            _ => self.edit_key(key, effects),
        }
    }

    /// Up (`back`) or Down through the history, from the first or last line of the text.
    pub(super) fn recall(&mut self, back: bool) {
        let text = self.input.text().to_owned();
        let recalled = if back {
            self.history.older(&text).map(str::to_owned)
        } else {
            self.history.newer().map(str::to_owned)
        };
        if let Some(line) = recalled {
            self.input.set_text(&line);
        }
    }

    /// A fresh input box keeping the queue (Ctrl-U clears only what is being typed).
    fn input_without_text(&self) -> InputBox {
        let mut input = InputBox::new();
        input.set_pending(self.pending.follow_ups(), self.pending.steering());
        input
    }

    fn ctrl_c(&mut self, effects: &mut Vec<Effect>) {
        if self.quit_armed > 0 {
            self.quit(effects);
            return;
        }
        self.quit_armed = QUIT_HINT_TICKS;
        self.picker = None;
        self.esc_armed = false;
        if let Some(search) = self.search.take() {
            self.input.set_text(&search.original);
        } else if self.is_running() || self.shell.is_some() {
            effects.push(Effect::Cancel);
        } else {
            self.history.reset();
            self.input = self.input_without_text();
        }
    }

    pub(super) fn quit(&mut self, effects: &mut Vec<Effect>) {
        self.quitting = true;
        self.dismiss_questions(effects);
        for asked in self.approvals.drain(..) {
            effects.push(Effect::Answer {
                ticket: asked.ticket,
                decision: ApprovalDecision::Deny {
                    feedback: Some("the user left the session".into()),
                },
            });
        }
        effects.push(Effect::Quit);
    }

    fn approval_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        let Some(asked) = self.approvals.front_mut() else {
            return;
        };
        let choice = match key.code {
            KeyCode::Left | KeyCode::Up | KeyCode::BackTab => {
                asked.prompt.previous();
                return;
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => {
                asked.prompt.next();
                return;
            }
            KeyCode::Enter => asked.prompt.selected(),
            KeyCode::Char('a' | 'y') => ApprovalChoice::AllowOnce,
            KeyCode::Char('s')
                if asked
                    .prompt
                    .choices()
                    .contains(&ApprovalChoice::AllowForSession) =>
            {
                ApprovalChoice::AllowForSession
            }
            KeyCode::Char('d' | 'n') | KeyCode::Esc => ApprovalChoice::Deny,
            _ => return,
        };
        let decision = match choice {
            ApprovalChoice::AllowOnce => ApprovalDecision::AllowOnce,
            ApprovalChoice::AllowForSession => ApprovalDecision::AllowForSession,
            ApprovalChoice::Deny => ApprovalDecision::Deny { feedback: None },
        };
        let ticket = asked.ticket;
        self.approvals.pop_front();
        effects.push(Effect::Answer { ticket, decision });
    }

    /// Enter (`follow_up` false) or Tab (`true`) on the typed text.
    fn submit(&mut self, follow_up: bool, effects: &mut Vec<Effect>) {
        if self.refuse_compact(effects) {
            return;
        }
        let Some(text) = self.input.submit() else {
            // A cancelled turn leaves queued input parked; Enter on an empty line sends it.
            let queued = !self.input.queue().is_empty() || !self.input.steering().is_empty();
            if !follow_up && queued && !self.is_running() {
                effects.push(Effect::SendQueued);
            }
            return;
        };
        // A `#` note is previewed, then written to AGENTS.md: it is not a prompt to recall.
        if self.note_line(&text, effects) {
            return;
        }
        if self.history.push(&text) {
            effects.push(Effect::Remember(text.clone()));
        }
        if let Some(command) = shell_command(&text) {
            self.run_shell(command, &text, effects);
            return;
        }
        let submitted = match slash::classify(&text) {
            // Custom commands and skills are prompts: the agent's side expands them.
            Submitted::Command(Err(SlashError::Unknown(name)))
                if self.commands.sends_prompt(&name) =>
            {
                Submitted::Prompt(text.clone())
            }
            other => other,
        };
        match submitted {
            Submitted::Prompt(prompt) if follow_up => effects.push(Effect::FollowUp(prompt)),
            Submitted::Prompt(prompt) => effects.push(Effect::Steer(prompt)),
            Submitted::Command(Ok(command)) => {
                let echo = Line::styled(format!("› {}", text.trim()), dim());
                self.note(vec![echo], effects);
                self.command(command, effects);
            }
            Submitted::Command(Err(error)) => self.error(error.to_string(), effects),
        }
    }

    /// `/compact` while the agent works (or another compaction runs) is refused with the
    /// line left in the input box, so Enter sends it again once the agent is idle.
    fn refuse_compact(&mut self, effects: &mut Vec<Effect>) -> bool {
        let typed = slash::classify(self.input.text());
        if typed != Submitted::Command(Ok(SlashCommand::Compact)) {
            return false;
        }
        let why = if self.is_running() {
            "/compact needs an idle agent: let the turn finish (or press Esc to stop it), \
             then press Enter again"
        } else if self.compacting {
            "a compaction is already under way; Esc cancels it"
        } else {
            return false;
        };
        self.error(why.into(), effects);
        true
    }

    fn command(&mut self, command: SlashCommand, effects: &mut Vec<Effect>) {
        let needs_idle = matches!(
            command,
            SlashCommand::Resume(_) | SlashCommand::Fork | SlashCommand::Clear
        );
        if needs_idle && (self.is_running() || self.compacting) {
            self.error(
                "the agent is busy; press Esc to cancel the turn first".into(),
                effects,
            );
            return;
        }
        match command {
            SlashCommand::Help => {
                let extensions = self.commands.help_lines().into_iter().map(Line::from);
                let lines = slash::HELP
                    .iter()
                    .map(|l| Line::from(*l))
                    .chain(extensions)
                    .collect();
                self.note(lines, effects);
            }
            SlashCommand::Model(None) => effects.push(Effect::ShowModel),
            SlashCommand::Model(Some(model)) => effects.push(Effect::SetModel(model)),
            SlashCommand::Sessions => effects.push(Effect::ListSessions),
            SlashCommand::Agents => effects.push(Effect::ListAgents),
            SlashCommand::Agent(id) => effects.push(Effect::ViewAgent(id)),
            SlashCommand::Resume(id) => effects.push(Effect::Resume(id)),
            SlashCommand::Fork => effects.push(Effect::Fork),
            SlashCommand::Permission(None) => effects.push(Effect::ShowPermission),
            SlashCommand::Permission(Some(preset)) => effects.push(Effect::SetPermission(preset)),
            SlashCommand::Clear => effects.push(Effect::NewSession),
            SlashCommand::Plan(on) => effects.push(Effect::SetPlan(on)),
            SlashCommand::Compact => {
                self.compacting = true;
                effects.push(Effect::Compact);
            }
            SlashCommand::Goal(raw) => effects.push(Effect::Goal(raw)),
            SlashCommand::Search(query) => self.open_search(&query, effects),
            SlashCommand::Quit => self.quit(effects),
        }
    }
}
