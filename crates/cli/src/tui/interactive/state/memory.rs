//! Memory in the UI: the `/search` picker's keys and results, and `@session` completion
//! (sessions of the workspace by title, newest first, offered beside `@path` files).

use super::{Effect, InteractiveState};
use crate::tui::complete::{at_token, complete_at, MAX_MATCHES};
use crate::tui::interactive::driver::{SearchHit, SessionListing};
use crate::tui::interactive::search_picker::{parse_hit, search_picker, show_hits};
use crate::tui::picker::PickerKind;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What `@session:` completes to.
const SESSION_PREFIX: &str = "session:";
/// Sessions offered beside files while `@s`, `@se` … is typed (`@session:` shows only
/// sessions).
const SESSIONS_BESIDE_FILES: usize = 3;

/// One `@` completion: a workspace file, or a session to reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtCompletion<'a> {
    File(&'a str),
    Session(&'a SessionListing),
}

impl InteractiveState {
    // --- /search ------------------------------------------------------------------------

    /// `/search [WORDS]`: opens the picker, and searches when words came with the command.
    pub(super) fn open_search(&mut self, query: &str, effects: &mut Vec<Effect>) {
        let query = query.trim();
        self.picker = Some(search_picker(query));
        if !query.is_empty() {
            effects.push(Effect::SearchSessions(query.to_owned()));
        }
    }

    /// The search picker's own keys: typing searches again, Enter resumes the hit's
    /// session, Ctrl-F forks from the hit. `false` for the keys every picker shares.
    pub(super) fn search_picker_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) -> bool {
        let Some(picker) = self
            .picker
            .as_mut()
            .filter(|p| p.kind == PickerKind::SearchHit)
        else {
            return false;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('f') if ctrl => {
                let Some((session, seq)) = picker.selected().and_then(|r| parse_hit(&r.value))
                else {
                    return true;
                };
                if self.refuse_busy(effects) {
                    return true;
                }
                self.picker = None;
                effects.push(Effect::ForkAt { session, seq });
            }
            KeyCode::Enter => {
                let Some((session, seq)) = picker.selected().and_then(|r| parse_hit(&r.value))
                else {
                    return true;
                };
                if self.session().map(|s| s.as_str()) == Some(session.as_str()) {
                    self.picker = None;
                    self.error(
                        format!(
                            "that hit (seq {seq}) is in this session; Ctrl-F on it forks from there"
                        ),
                        effects,
                    );
                    return true;
                }
                if self.refuse_busy(effects) {
                    return true;
                }
                self.picker = None;
                effects.push(Effect::Resume(session));
            }
            KeyCode::Backspace => {
                picker.backspace();
                search_again(picker.query(), effects);
            }
            KeyCode::Char(ch) if !ctrl => {
                picker.type_char(ch);
                search_again(picker.query(), effects);
            }
            _ => return false,
        }
        true
    }

    fn refuse_busy(&mut self, effects: &mut Vec<Effect>) -> bool {
        if self.is_running() || self.compacting {
            self.error(
                "the agent is busy; press Esc to cancel the turn first".into(),
                effects,
            );
            return true;
        }
        false
    }

    /// A search's answer, shown if the picker still asks that query.
    pub(super) fn search_hits(&mut self, query: &str, hits: Result<Vec<SearchHit>, String>) {
        if let Some(picker) = &mut self.picker {
            show_hits(picker, query, hits);
        }
    }

    // --- @session completion ------------------------------------------------------------

    /// Asks for the workspace's sessions once `@s…` is typed (again after a session
    /// switch, which makes a new one to offer).
    pub(super) fn ask_session_refs(&mut self, effects: &mut Vec<Effect>) {
        if self.session_refs_asked {
            return;
        }
        let wants = at_token(self.input.text(), self.input.cursor())
            .is_some_and(|(_, query)| names_sessions(query).is_some());
        if wants {
            self.session_refs_asked = true;
            effects.push(Effect::ListSessionRefs);
        }
    }

    /// The sessions `@session` can complete to (the one on screen left out).
    pub(super) fn set_session_refs(&mut self, sessions: Vec<SessionListing>) {
        self.session_refs = Some(sessions);
    }

    /// What the `@` word at the cursor completes to: files as `@path` always did, and
    /// sessions whose title (or id) holds what follows `@session:`, newest first.
    pub fn at_completions(&self) -> Vec<AtCompletion<'_>> {
        if !self.approvals.is_empty() || self.picker.is_some() || self.search.is_some() {
            return Vec::new();
        }
        let Some((_, query)) = at_token(self.input.text(), self.input.cursor()) else {
            return Vec::new();
        };
        let sessions: Vec<AtCompletion<'_>> = match (names_sessions(query), &self.session_refs) {
            (Some(words), Some(sessions)) => sessions
                .iter()
                .filter(|s| Some(&s.id) != self.session.as_ref())
                .filter(|s| {
                    let words = words.to_lowercase();
                    s.title.to_lowercase().contains(&words) || s.id.as_str().contains(&words)
                })
                .map(AtCompletion::Session)
                .take(MAX_MATCHES)
                .collect(),
            _ => Vec::new(),
        };
        if query.starts_with(SESSION_PREFIX) {
            return sessions;
        }
        let files = self.file_completions();
        let beside = sessions.len().min(SESSIONS_BESIDE_FILES);
        files
            .into_iter()
            .take(MAX_MATCHES - beside)
            .map(AtCompletion::File)
            .chain(sessions.into_iter().take(beside))
            .collect()
    }

    /// Inserts the chosen `@` completion: a file's path, or `@session:ID`.
    pub(super) fn insert_at_completion(&mut self, choice: usize) {
        let completions = self.at_completions();
        let Some(chosen) = completions.get(choice.min(completions.len().saturating_sub(1))) else {
            return;
        };
        let text = match chosen {
            AtCompletion::File(path) => (*path).to_owned(),
            AtCompletion::Session(session) => format!("@{SESSION_PREFIX}{}", session.id),
        };
        let cursor = self.input.cursor();
        if let Some((start, _)) = at_token(self.input.text(), cursor) {
            let (line, at) = complete_at(self.input.text(), start, cursor, &text);
            let editor = self.input.editor_mut();
            editor.set_text(&line);
            editor.set_cursor(at);
        }
    }
}

pub(super) fn search_again(query: &str, effects: &mut Vec<Effect>) {
    // A query without a word would be refused; the picker waits for one.
    if query.chars().any(char::is_alphanumeric) {
        effects.push(Effect::SearchSessions(query.to_owned()));
    }
}

/// The title words after `@session:` (`""` while only a start of `session` is typed: every
/// session); `None` when the `@` word is not about sessions.
fn names_sessions(query: &str) -> Option<&str> {
    if let Some(words) = query.strip_prefix(SESSION_PREFIX) {
        return Some(words);
    }
    (!query.is_empty() && SESSION_PREFIX.starts_with(query)).then_some("")
}

#[cfg(test)]
mod tests {
    use super::names_sessions;

    #[test]
    fn the_at_word_names_sessions_from_its_first_letter() {
        assert_eq!(names_sessions("s"), Some(""));
        assert_eq!(names_sessions("session"), Some(""));
        assert_eq!(names_sessions("session:flaky"), Some("flaky"));
        assert_eq!(names_sessions(""), None);
        assert_eq!(names_sessions("src/"), None);
        assert_eq!(names_sessions("sessions.rs"), None);
    }
}
