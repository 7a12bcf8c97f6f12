//! The terminal modes the UI turns on, and turns off again on every way out: a normal exit,
//! an error, and a panic (whose message would otherwise print into a raw terminal).
//!
//! - bracketed paste, so a pasted newline is text, not Enter;
//! - the kitty keyboard protocol's first level (`CSI > 1 u`, disambiguate escape codes),
//!   so terminals that speak it (kitty, WezTerm, foot, ghostty, iTerm2, Alacritty, ...)
//!   report Shift-Enter apart from Enter. It is pushed without asking the terminal first
//!   (a query costs a round trip at start-up): a terminal that does not know the sequence
//!   ignores it, as private CSI sequences are, and keeps sending plain keys, for which
//!   Ctrl-J and Alt-Enter stay newlines. tmux does not forward the protocol.
//!
//! The UI has no suspend (in raw mode Ctrl-Z is a key, not a signal), so leaving is the only
//! way the modes need undoing.

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// What the UI pushes onto the terminal's keyboard-enhancement stack.
pub const KEYBOARD_FLAGS: KeyboardEnhancementFlags =
    KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;

/// Writes the sequences that turn the modes on.
pub fn enter(out: &mut impl Write) -> io::Result<()> {
    crossterm::queue!(
        out,
        EnableBracketedPaste,
        PushKeyboardEnhancementFlags(KEYBOARD_FLAGS)
    )?;
    out.flush()
}

/// Writes the sequences that turn them off, in reverse order: exactly one pop for the push.
pub fn leave(out: &mut impl Write) -> io::Result<()> {
    crossterm::queue!(out, PopKeyboardEnhancementFlags, DisableBracketedPaste)?;
    out.flush()
}

/// Whether the modes are on (so they are undone once, by whichever exit comes first).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Raw mode and the modes above, undone when dropped (also while unwinding) and by a panic
/// hook that runs before the panic's message is printed.
pub struct TerminalModes {
    _private: (),
}

impl TerminalModes {
    pub fn enter() -> io::Result<Self> {
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let guard = Self { _private: () };
        enter(&mut io::stdout())?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        Ok(guard)
    }
}

/// Turns everything off if it is still on.
fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = leave(&mut io::stdout());
        let _ = terminal::disable_raw_mode();
    }
}

impl Drop for TerminalModes {
    fn drop(&mut self) {
        restore();
        // The hook stays installed; with the modes off it only forwards to the one before.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(write: fn(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_keyboard_flags_pushed_on_entry_are_popped_on_exit() {
        let on = bytes(enter);
        let off = bytes(leave);
        // Disambiguate escape codes is flag 1; the pop takes one entry off the stack.
        assert_eq!(on, "\x1b[?2004h\x1b[>1u");
        assert_eq!(off, "\x1b[<1u\x1b[?2004l");
        let session = format!("{on}{off}");
        assert_eq!(session.matches("\x1b[>").count(), 1);
        assert_eq!(session.matches("\x1b[<1u").count(), 1);
        assert_eq!(
            session.matches("?2004h").count(),
            session.matches("?2004l").count()
        );
    }
}
