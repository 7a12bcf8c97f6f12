//! Asks the workspace trust question on the real terminal, before the UI starts: an inline
//! frame, one key (`y` yes; `n`, Esc, Enter or Ctrl-C no), then the frame is cleared.

use crate::tui::TrustPrompt;
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};
use std::io;

/// `true` when the person trusts the workspace.
pub fn ask_trust(prompt: &TrustPrompt) -> io::Result<bool> {
    terminal::enable_raw_mode()?;
    let answer = ask(prompt);
    let _ = terminal::disable_raw_mode();
    answer
}

fn ask(prompt: &TrustPrompt) -> io::Result<bool> {
    let (columns, rows) = terminal::size()?;
    let height = prompt.height(columns).min(rows);
    let mut terminal = Terminal::with_options(
        CrosstermBackend::new(io::stdout()),
        TerminalOptions {
            viewport: Viewport::Inline(height),
        },
    )?;
    terminal.draw(|frame| frame.render_widget(prompt, frame.area()))?;
    let answer = loop {
        if let Event::Key(key) = event::read()? {
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Char('y' | 'Y') => break true,
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => break false,
                KeyCode::Char('n' | 'N') | KeyCode::Esc | KeyCode::Enter => break false,
                _ => {}
            }
        }
    };
    terminal.clear()?;
    let top = terminal.get_frame().area().y;
    terminal.set_cursor_position((0, top))?;
    Ok(answer)
}
