//! Making text from a model or a tool safe to show on a terminal.
//!
//! A terminal obeys the control sequences in what it prints: `ESC ]0;…BEL` retitles the
//! window, `ESC ]52;c;…` writes the clipboard, CSI sequences move the cursor and can hide or
//! rewrite what is already on screen. The model's answer, its reasoning, a command it runs, a
//! path it names and a tool's output can all carry them (a web page or a file the model read
//! is enough), so everything of theirs goes through [`TerminalSanitizer`] before it reaches a
//! terminal. Bytes written to a pipe or a file are left exact; that is the caller's choice.
//!
//! What comes out never holds a control character other than `\n` and `\t`: no ESC, no C1
//! control (U+0080–U+009F), no other C0 control, no DEL. Whole sequences are removed, not
//! only their ESC, so nothing like `]0;title` is left on screen: CSI (`ESC [` or U+009B, up
//! to its final byte), the control strings OSC, DCS, SOS, PM and APC (up to BEL or ST, or the
//! next line break, so a stray opener cannot swallow the rest of an answer), two-byte and
//! `ESC ( B`-style escapes, and a lone ESC. Every other character is kept, so wide and
//! combining characters survive. The sanitizer keeps its place between calls: a sequence
//! split across two stream deltas is removed just the same.

use std::borrow::Cow;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
const CSI_C1: char = '\u{9b}';
const ST_C1: char = '\u{9c}';

/// Where the sanitizer is inside a control sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (`ESC ( B`), before the final byte.
    EscapeIntermediate,
    /// Inside a control sequence, before its final byte.
    Csi,
    /// Inside a control string (OSC, DCS, SOS, PM, APC), before its terminator.
    ControlString,
    /// Inside a control string, after ESC (the first half of ST, `ESC \`).
    ControlStringEscape,
}

/// Removes control and escape sequences from a stream of text; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct TerminalSanitizer {
    state: State,
}

impl TerminalSanitizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the displayable part of `input` to `out`, continuing any sequence an earlier
    /// call left open.
    pub fn push(&mut self, input: &str, out: &mut String) {
        for c in input.chars() {
            self.char(c, out);
        }
    }

    /// `input` made safe, continuing any sequence an earlier call left open.
    pub fn clean(&mut self, input: &str) -> String {
        let mut out = String::with_capacity(input.len());
        self.push(input, &mut out);
        out
    }

    /// Forgets an unfinished sequence (the text that would have ended it will not come).
    pub fn reset(&mut self) {
        self.state = State::Text;
    }

    fn char(&mut self, c: char, out: &mut String) {
        let state = self.state;
        self.state = match state {
            State::Text => match c {
                ESC => State::Escape,
                CSI_C1 => State::Csi,
                // DCS, SOS, OSC, PM, APC as C1 controls.
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => State::ControlString,
                _ => {
                    if is_displayable(c) {
                        out.push(c);
                    }
                    State::Text
                }
            },
            State::Escape => match c {
                '[' => State::Csi,
                ']' | 'P' | 'X' | '^' | '_' => State::ControlString,
                ESC => State::Escape,
                '\u{20}'..='\u{2f}' => State::EscapeIntermediate,
                '\u{30}'..='\u{7e}' => State::Text,
                // A lone ESC: dropped, and the character judged on its own.
                _ => return self.again(c, out),
            },
            State::EscapeIntermediate => match c {
                '\u{20}'..='\u{2f}' => State::EscapeIntermediate,
                '\u{30}'..='\u{7e}' => State::Text,
                ESC => State::Escape,
                _ => return self.again(c, out),
            },
            State::Csi => match c {
                // Parameter and intermediate bytes, then one final byte.
                '\u{20}'..='\u{3f}' => State::Csi,
                '\u{40}'..='\u{7e}' => State::Text,
                ESC => State::Escape,
                // Not a well-formed sequence any more: it ends here.
                _ => return self.again(c, out),
            },
            State::ControlString => match c {
                BEL | ST_C1 => State::Text,
                ESC => State::ControlStringEscape,
                '\n' => return self.again(c, out),
                _ => State::ControlString,
            },
            State::ControlStringEscape => match c {
                '\\' => State::Text,
                // ESC inside a string ends it and starts a new escape.
                _ => {
                    self.state = State::Escape;
                    return self.char(c, out);
                }
            },
        };
    }

    /// Ends the current sequence and handles `c` as text.
    fn again(&mut self, c: char, out: &mut String) {
        self.state = State::Text;
        self.char(c, out);
    }
}

/// Whether `c` may reach a terminal as is: anything but a control character, and of those
/// only line feed and tab.
pub fn is_displayable(c: char) -> bool {
    c == '\n' || c == '\t' || !c.is_control()
}

/// `text` without control and escape sequences; borrowed when there was nothing to remove.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if text.chars().all(is_displayable) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(TerminalSanitizer::new().clean(text))
    }
}

/// [`sanitize`] when `terminal` is set (the text is going to a terminal), else `text` as is.
pub fn for_terminal(text: &str, terminal: bool) -> Cow<'_, str> {
    if terminal {
        sanitize(text)
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests;
