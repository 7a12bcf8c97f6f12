//! `#` and `##` input lines: notes for AGENTS.md. The first Enter shows the diff and puts
//! the line back in the input box; Enter on it unchanged writes the note, any edit previews
//! again, clearing the line drops it.

use super::{Effect, InteractiveState};
use dsh_memory::parse_note_line;

impl InteractiveState {
    /// Handles a submitted line if it is a note; `false` for every other input.
    pub(super) fn note_line(&mut self, text: &str, effects: &mut Vec<Effect>) -> bool {
        let Some((scope, note)) = parse_note_line(text.trim()) else {
            self.pending_note = None;
            return false;
        };
        if self.pending_note.as_deref() == Some(text) {
            self.pending_note = None;
            effects.push(Effect::WriteNote(scope, note));
        } else {
            self.pending_note = Some(text.to_owned());
            self.input.set_text(text);
            effects.push(Effect::PreviewNote(scope, note));
        }
        true
    }
}
