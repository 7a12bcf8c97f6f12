//! The real terminal: raw mode, bracketed paste, an inline viewport at the bottom of the
//! screen, and a thread that turns crossterm events into [`Input`]s.

use super::driver::{AgentDriver, Answers, OpenedSession};
use super::modes::TerminalModes;
use super::runner::Runner;
use super::state::Input;
use super::viewport::KnownCursor;
use crossterm::event::{self, Event};
use crossterm::terminal;
use ratatui::{Terminal, TerminalOptions, Viewport};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Rows of the live area when the UI starts: the input box and the status line. The
/// viewport then grows with what it shows (see `viewport.rs`).
pub fn viewport_height(rows: u16) -> u16 {
    4.min(rows)
}

/// Stops the key reader thread when dropped.
struct KeyReader {
    stop: Arc<AtomicBool>,
}

impl KeyReader {
    fn spawn(inputs: mpsc::UnboundedSender<Input>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                // Polling with a timeout lets the thread notice `stop` without a key press.
                match event::poll(Duration::from_millis(100)) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(_) => break,
                }
                let input = match event::read() {
                    Ok(Event::Key(key)) => Input::Key(key),
                    Ok(Event::Paste(text)) => Input::Paste(text),
                    Ok(Event::Resize(width, _)) => Input::Resize { width },
                    Ok(_) => continue,
                    Err(_) => break,
                };
                if inputs.send(input).is_err() {
                    break;
                }
            }
        });
        Self { stop }
    }
}

impl Drop for KeyReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Runs the interactive UI on the process's terminal until the person quits.
///
/// `inputs` is the channel the application feeds session events and approval questions
/// into (its sender was handed to the application and to [`super::TuiAnswerer`]); key
/// presses join it here. `opened` is the session shown first.
pub async fn run_terminal(
    driver: Arc<dyn AgentDriver>,
    answers: Answers,
    sender: mpsc::UnboundedSender<Input>,
    mut inputs: mpsc::UnboundedReceiver<Input>,
    opened: OpenedSession,
) -> io::Result<()> {
    // Raw mode, bracketed paste and the kitty keyboard flags, undone on every exit.
    let raw = TerminalModes::enter()?;
    let rows = terminal::size()?.1;
    // The palette was chosen from `[ui] theme` and `NO_COLOR` before the UI started.
    let backend = KnownCursor::stdout(crate::tui::theme::current().colour);
    let terminal = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Inline(viewport_height(rows)),
        },
    )?;
    let mut runner = Runner::new(terminal, driver, answers)?;
    runner.handle(Input::Opened(opened)).await?;
    let keys = KeyReader::spawn(sender.clone());
    #[cfg(unix)]
    spawn_terminate_watch(sender);
    let result = runner.run(&mut inputs).await;
    drop(keys);
    let cleared = leave(runner.terminal_mut());
    drop(raw);
    result.and(cleared)
}

/// Clears the live area so the shell prompt follows the scrollback directly.
fn leave(terminal: &mut Terminal<KnownCursor>) -> io::Result<()> {
    terminal.clear()?;
    let top = terminal.get_frame().area().y;
    terminal.set_cursor_position((0, top))?;
    terminal.show_cursor()
}

/// SIGTERM and SIGHUP (the terminal was closed) quit like `/quit`: the driver shuts down,
/// which cancels a running turn, stops its commands and flushes the session. Without a
/// handler SIGHUP would kill dsh on the spot, the turn left open and its command running.
#[cfg(unix)]
fn spawn_terminate_watch(sender: mpsc::UnboundedSender<Input>) {
    use tokio::signal::unix::{signal, SignalKind};
    for kind in [SignalKind::terminate(), SignalKind::hangup()] {
        let Ok(mut stop) = signal(kind) else {
            continue;
        };
        let sender = sender.clone();
        tokio::spawn(async move {
            if stop.recv().await.is_some() {
                let _ = sender.send(Input::Quit);
            }
        });
    }
}
