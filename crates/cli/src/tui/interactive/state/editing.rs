//! The input editor's keys (cursor, words, kills, history, Ctrl-R), pastes, `@path`
//! completion, the pickers, `!command` and Esc-Esc.

use super::{dim, Effect, InteractiveState};
use crate::tui::complete::{at_token, MAX_MATCHES};
use crate::tui::editor::MAX_INPUT_BYTES;
use crate::tui::history::HistorySearch;
use crate::tui::picker::{PickerKind, PickerOutcome};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_tools_builtin::PermissionPreset;
use ratatui::style::{Color, Style};
use ratatui::text::Line;

/// The most output lines of a `!command` printed; the rest is counted.
pub const SHELL_PRINT_LINES: usize = 200;

/// The command of a `!command` line (`None` for other text, and for a lone `!`).
pub(super) fn shell_command(text: &str) -> Option<&str> {
    let command = text.trim_start().strip_prefix('!')?.trim();
    (!command.is_empty()).then_some(command)
}

impl InteractiveState {
    /// The keys that edit the text (everything [`Self::key`] does not claim first).
    pub(super) fn edit_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let editor = self.input.editor_mut();
        let mut edited = true;
        match key.code {
            KeyCode::Char('a') if ctrl => editor.home(),
            KeyCode::Char('e') if ctrl => editor.end(),
            KeyCode::Char('b') if ctrl => editor.left(),
            KeyCode::Char('f') if ctrl => editor.right(),
            KeyCode::Char('u') if ctrl => editor.kill_to_line_start(),
            KeyCode::Char('k') if ctrl => editor.kill_to_line_end(),
            KeyCode::Char('w') if ctrl => editor.delete_word_back(),
            KeyCode::Char('h') if ctrl => editor.backspace(),
            KeyCode::Char('b') if alt => editor.word_left(),
            KeyCode::Char('f') if alt => editor.word_right(),
            KeyCode::Char('d') if alt => editor.delete_word_forward(),
            KeyCode::Backspace if alt || ctrl => editor.delete_word_back(),
            KeyCode::Left if alt || ctrl => editor.word_left(),
            KeyCode::Right if alt || ctrl => editor.word_right(),
            KeyCode::Char(ch) if !ctrl && !alt => {
                editor.insert(ch);
                if ch == '@' {
                    self.ask_files(effects);
                }
            }
            KeyCode::Backspace => editor.backspace(),
            KeyCode::Delete => editor.delete(),
            KeyCode::Left => editor.left(),
            KeyCode::Right => editor.right(),
            KeyCode::Home => editor.home(),
            KeyCode::End => editor.end(),
            KeyCode::Up => {
                edited = false;
                if !editor.up() {
                    self.recall(true);
                }
            }
            KeyCode::Down => {
                edited = false;
                if !editor.down() {
                    self.recall(false);
                }
            }
            _ => edited = false,
        }
        if edited {
            self.history.reset();
            self.file_choice = 0;
            self.ask_session_refs(effects);
        }
    }

    /// A bracketed paste: one insertion however many lines it has (it is never sent by its
    /// newlines), cut at the input's limit with a note.
    pub(super) fn paste(&mut self, text: &str, effects: &mut Vec<Effect>) {
        if !self.approvals.is_empty() {
            return;
        }
        if let Some(picker) = &mut self.picker {
            text.chars()
                .filter(|c| *c != '\n')
                .for_each(|c| picker.type_char(c));
            if picker.kind == PickerKind::SearchHit {
                super::memory::search_again(picker.query(), effects);
            }
            return;
        }
        if self.search.is_some() {
            // Pasted into the search query, one line of it.
            let line = text.lines().next().unwrap_or_default();
            for ch in line.chars() {
                self.search_key(KeyEvent::new(KeyCode::Char(ch), KeyModifiers::NONE));
            }
            return;
        }
        self.history.reset();
        if let Some(cut) = self.input.insert_str(text) {
            self.error(
                format!(
                    "the paste was cut to the input's limit of {} KiB ({} KiB left out); \
                     for big inputs, save them to a file and mention its path",
                    MAX_INPUT_BYTES / 1024,
                    cut.dropped.div_ceil(1024)
                ),
                effects,
            );
        }
    }

    // --- history search ------------------------------------------------------------------

    pub(super) fn start_search(&mut self) {
        self.search = Some(HistorySearch {
            original: self.input.text().to_owned(),
            ..HistorySearch::default()
        });
    }

    /// The search under way, for the view.
    pub fn history_search(&self) -> Option<&HistorySearch> {
        self.search.as_ref()
    }

    pub(super) fn search_key(&mut self, key: KeyEvent) {
        let Some(mut search) = self.search.take() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            // Older matches of the same query.
            KeyCode::Char('r') if ctrl => {
                if let Some((at, _)) = self.history.search(&search.query, search.found) {
                    search.found = Some(at);
                }
            }
            // Esc (or readline's Ctrl-G) gives back what was typed before the search.
            KeyCode::Esc => {
                self.input.set_text(&search.original);
                return;
            }
            KeyCode::Char('g') if ctrl => {
                self.input.set_text(&search.original);
                return;
            }
            // Accept: the match stays in the box to edit or send.
            KeyCode::Enter | KeyCode::Left | KeyCode::Right | KeyCode::Tab => return,
            KeyCode::Backspace => {
                search.query.pop();
                search.found = self.history.search(&search.query, None).map(|(at, _)| at);
            }
            KeyCode::Char(ch) if !ctrl => {
                search.query.push(ch);
                search.found = self.history.search(&search.query, None).map(|(at, _)| at);
            }
            _ => {}
        }
        let shown = match search.found {
            Some(at) => self.history.entries()[at].clone(),
            None => search.original.clone(),
        };
        self.input.set_text(&shown);
        self.search = Some(search);
    }

    // --- @path completion ---------------------------------------------------------------

    fn ask_files(&mut self, effects: &mut Vec<Effect>) {
        if !self.files_asked {
            self.files_asked = true;
            effects.push(Effect::IndexFiles);
        }
    }

    /// The workspace files matching the `@query` at the cursor, best first.
    pub fn file_completions(&self) -> Vec<&str> {
        if !self.approvals.is_empty() || self.picker.is_some() || self.search.is_some() {
            return Vec::new();
        }
        let Some(files) = &self.files else {
            return Vec::new();
        };
        match at_token(self.input.text(), self.input.cursor()) {
            Some((_, query)) => files.matches(query),
            None => Vec::new(),
        }
    }

    /// The highlighted `@path` completion's position in [`Self::file_completions`].
    pub fn file_choice(&self) -> usize {
        self.file_choice
    }

    /// Tab or Enter inserts the highlighted file, Up and Down move the highlight, while
    /// `@path` completions are shown; `false` when the key is not theirs.
    pub(super) fn file_completion_key(&mut self, key: KeyEvent) -> bool {
        let matches = self.at_completions();
        if matches.is_empty() || !key.modifiers.difference(KeyModifiers::SHIFT).is_empty() {
            return false;
        }
        let count = matches.len().min(MAX_MATCHES);
        match key.code {
            KeyCode::Tab | KeyCode::Enter => {
                self.insert_at_completion(self.file_choice.min(count - 1));
                self.file_choice = 0;
            }
            KeyCode::Down => self.file_choice = (self.file_choice + 1) % count,
            KeyCode::Up => self.file_choice = (self.file_choice + count - 1) % count,
            _ => return false,
        }
        true
    }

    // --- pickers ------------------------------------------------------------------------

    /// The open picker, for the view.
    pub fn picker(&self) -> Option<&crate::tui::picker::Picker> {
        self.picker.as_ref()
    }

    pub(super) fn picker_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        if self.search_picker_key(key, effects) {
            return;
        }
        let Some(picker) = &mut self.picker else {
            return;
        };
        let outcome = match key.code {
            KeyCode::Esc => PickerOutcome::Closed,
            KeyCode::Enter => picker.choose(),
            KeyCode::Up => {
                picker.move_by(-1);
                PickerOutcome::Open
            }
            KeyCode::Down | KeyCode::Tab => {
                picker.move_by(1);
                PickerOutcome::Open
            }
            KeyCode::PageUp => {
                picker.move_by(-10);
                PickerOutcome::Open
            }
            KeyCode::PageDown => {
                picker.move_by(10);
                PickerOutcome::Open
            }
            KeyCode::Backspace => {
                picker.backspace();
                PickerOutcome::Open
            }
            KeyCode::Char(ch) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                picker.type_char(ch);
                PickerOutcome::Open
            }
            _ => PickerOutcome::Open,
        };
        let kind = picker.kind;
        match outcome {
            PickerOutcome::Open => {}
            PickerOutcome::Closed => self.picker = None,
            PickerOutcome::Chosen(value) => {
                self.picker = None;
                let effect = match kind {
                    PickerKind::Session if self.session().map(|s| s.as_str()) == Some(&value) => {
                        return;
                    }
                    PickerKind::Session if self.is_running() || self.compacting => {
                        self.error(
                            "the agent is busy; press Esc to cancel the turn first".into(),
                            effects,
                        );
                        return;
                    }
                    PickerKind::Session => Effect::Resume(value),
                    // Chosen by the search picker's own keys.
                    PickerKind::SearchHit => return,
                    PickerKind::Model => Effect::SetModel(value),
                    PickerKind::Permission => match value.parse::<PermissionPreset>() {
                        Ok(preset) => Effect::SetPermission(preset),
                        Err(_) => return,
                    },
                };
                effects.push(effect);
            }
        }
    }

    // --- !command -----------------------------------------------------------------------

    pub(super) fn run_shell(&mut self, command: &str, typed: &str, effects: &mut Vec<Effect>) {
        if self.shell.is_some() {
            self.input.set_text(typed);
            self.error(
                "a shell command is already running; Esc stops it".into(),
                effects,
            );
            return;
        }
        // The command and its output are printed together when it finishes.
        self.shell = Some(command.to_owned());
        effects.push(Effect::Shell(command.to_owned()));
    }

    pub(super) fn shell_done(
        &mut self,
        command: String,
        output: Result<String, String>,
        effects: &mut Vec<Effect>,
    ) {
        self.shell = None;
        let mut lines = self.wrapped(&format!("! {command}"), dim());
        let text = match output {
            Ok(text) => text,
            Err(error) => {
                lines.extend(self.wrapped(&format!("✗ {error}"), Style::new().fg(Color::Red)));
                self.note(lines, effects);
                return;
            }
        };
        let all: Vec<&str> = text.lines().collect();
        lines.extend(
            all.iter()
                .take(SHELL_PRINT_LINES)
                .flat_map(|line| self.wrapped(line, Style::new())),
        );
        if all.len() > SHELL_PRINT_LINES {
            lines.push(Line::styled(
                format!("… {} more lines", all.len() - SHELL_PRINT_LINES),
                dim(),
            ));
        }
        if let Some(last) = lines.last_mut() {
            if last.to_string().starts_with("[exit code") {
                *last = last.clone().style(Style::new().fg(Color::Red));
            }
        }
        self.note(lines, effects);
    }

    /// Whether a `!command` is running.
    pub fn shell_running(&self) -> bool {
        self.shell.is_some()
    }

    // --- Esc-Esc ------------------------------------------------------------------------

    /// Esc on an empty input of an idle agent arms; a second Esc right after rewinds.
    /// `false` when the Esc is not theirs.
    pub(super) fn rewind_key(&mut self, armed: bool, effects: &mut Vec<Effect>) -> bool {
        let idle = !self.is_running() && !self.compacting && self.shell.is_none();
        if !idle || !self.input.text().is_empty() {
            return false;
        }
        let prompted = self
            .transcript
            .entries()
            .iter()
            .any(|e| matches!(e, crate::tui::Entry::User { .. }));
        if !prompted {
            return false;
        }
        if armed {
            effects.push(Effect::Rewind);
        } else {
            self.esc_armed = true;
        }
        true
    }
}
