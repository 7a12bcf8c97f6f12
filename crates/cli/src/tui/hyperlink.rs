//! Clickable links (OSC 8) where the terminal is known to support them.
//!
//! A rendered line is ratatui spans, and a span carries only a style, so the markdown
//! renderer marks a link's cells through the one style field nothing else here uses: the
//! underline colour holds the link's number in a small process-wide table ([`link_style`]).
//! The terminal backend turns the marks back into OSC 8 sequences around each run of
//! marked cells when hyperlinks are on, and always drops the marks, so they never reach
//! the terminal as a colour. Wrapping happens after ratatui diffed the frame, so a cell's
//! width (what the diff and the layout count) never includes the escape sequence.
//!
//! The link's target stays written after its text (`text (https://…)`), links on or off:
//! it can be copied from scrollback and read where OSC 8 is not shown.

use ratatui::buffer::Cell;
use ratatui::style::{Color, Style};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use unicode_width::UnicodeWidthStr;

/// Distinct link targets remembered; later ones are shown without a hyperlink.
const MAX_LINKS: usize = 4_096;
/// Longer targets are shown without a hyperlink (terminals cap them too; kitty at 2,083).
const MAX_URL_BYTES: usize = 2_048;

dsh_protocol::word_enum! {
    /// `[ui] hyperlinks`.
    #[derive(Default)]
    pub enum HyperlinkChoice {
        /// On in terminals known to support OSC 8, off elsewhere (tmux and screen included).
        #[default]
        Auto = "auto",
        On = "on",
        Off = "off",
    }
}

/// Whether to emit OSC 8, from the setting and the environment (`env(name)`).
///
/// `auto` is conservative: a terminal that does not understand OSC 8 may print it, so only
/// terminals known to support it get links, and never through tmux or screen (which drop
/// or mangle it unless configured to pass it through: say `on` then).
pub fn enabled(choice: HyperlinkChoice, env: impl Fn(&str) -> Option<String>) -> bool {
    match choice {
        HyperlinkChoice::On => return true,
        HyperlinkChoice::Off => return false,
        HyperlinkChoice::Auto => {}
    }
    let term = env("TERM").unwrap_or_default();
    if env("TMUX").is_some_and(|v| !v.is_empty())
        || term.starts_with("screen")
        || term.starts_with("tmux")
        || term == "dumb"
    {
        return false;
    }
    let program = env("TERM_PROGRAM").unwrap_or_default();
    let known_program = ["iTerm.app", "WezTerm", "vscode", "ghostty"].contains(&program.as_str());
    let known_term = [
        "xterm-kitty",
        "xterm-ghostty",
        "wezterm",
        "foot",
        "foot-extra",
    ]
    .contains(&term.as_str());
    // VTE 0.50 (GNOME Terminal and friends) added OSC 8.
    let vte = env("VTE_VERSION")
        .and_then(|v| v.parse::<u32>().ok())
        .is_some_and(|v| v >= 5_000);
    let kitty = env("KITTY_WINDOW_ID").is_some();
    let windows_terminal = env("WT_SESSION").is_some();
    known_program || known_term || vte || kitty || windows_terminal
}

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns OSC 8 output on or off for the process (set once, before the UI starts).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the terminal gets OSC 8 sequences.
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

#[derive(Default)]
struct Links {
    ids: HashMap<String, u32>,
    urls: Vec<String>,
}

static LINKS: Mutex<Option<Links>> = Mutex::new(None);

/// `style` marked as a link to `url`; `style` itself when the target cannot be a
/// hyperlink (not http, https or mailto, too long, not printable ASCII, or the table full).
pub fn link_style(style: Style, url: &str) -> Style {
    match link_id(url) {
        Some(id) => style.underline_color(encode(id)),
        None => style,
    }
}

fn link_id(url: &str) -> Option<u32> {
    let linkable = ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| url.starts_with(scheme))
        && url.len() <= MAX_URL_BYTES
        // Nothing that could end the OSC sequence or reach the terminal as a control.
        && url.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if !linkable {
        return None;
    }
    let mut guard = LINKS.lock().ok()?;
    let links = guard.get_or_insert_with(Links::default);
    if let Some(id) = links.ids.get(url) {
        return Some(*id);
    }
    if links.urls.len() >= MAX_LINKS {
        return None;
    }
    links.urls.push(url.to_owned());
    let id = u32::try_from(links.urls.len()).ok()?;
    links.ids.insert(url.to_owned(), id);
    Some(id)
}

fn encode(id: u32) -> Color {
    let [_, r, g, b] = id.to_be_bytes();
    Color::Rgb(r, g, b)
}

/// The link target a cell is marked with.
fn url_of(cell: &Cell) -> Option<String> {
    let Color::Rgb(r, g, b) = cell.underline_color else {
        return None;
    };
    let id = usize::try_from(u32::from_be_bytes([0, r, g, b])).ok()?;
    let guard = LINKS.lock().ok()?;
    let links = guard.as_ref()?;
    links.urls.get(id.checked_sub(1)?).cloned()
}

/// The cells of a draw call as the terminal should get them: link marks removed, and when
/// `on`, each run of cells of one link (adjacent on a row) wrapped in OSC 8, opened before
/// its first cell and closed after its last, so a link never stays open across a cursor
/// move. `None` when no cell is marked (the caller draws the cells as they are).
pub fn prepare(cells: &[(u16, u16, &Cell)], on: bool) -> Option<Vec<(u16, u16, Cell)>> {
    let urls: Vec<Option<String>> = cells.iter().map(|(_, _, cell)| url_of(cell)).collect();
    if urls.iter().all(Option::is_none) {
        return None;
    }
    let mut out: Vec<(u16, u16, Cell)> = Vec::with_capacity(cells.len());
    for (i, ((x, y, cell), url)) in cells.iter().zip(&urls).enumerate() {
        let mut cell = (*cell).clone();
        if url.is_some() {
            cell.underline_color = Color::Reset;
        }
        if let (true, Some(url)) = (on, url) {
            let continues = |a: usize, b: usize| {
                let (ax, ay, a_cell) = cells[a];
                let (bx, by, _) = cells[b];
                let width = u16::try_from(a_cell.symbol().width().max(1)).unwrap_or(1);
                ay == by && ax.saturating_add(width) == bx && urls[a] == urls[b]
            };
            let mut symbol = String::new();
            if i == 0 || !continues(i - 1, i) {
                symbol.push_str(&open(url));
            }
            symbol.push_str(cell.symbol());
            if i + 1 == cells.len() || !continues(i, i + 1) {
                symbol.push_str(CLOSE);
            }
            cell.set_symbol(&symbol);
        }
        out.push((*x, *y, cell));
    }
    Some(out)
}

/// OSC 8 with no parameters, ended by ST.
fn open(url: &str) -> String {
    format!("\x1b]8;;{url}\x1b\\")
}

const CLOSE: &str = "\x1b]8;;\x1b\\";

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::{Backend, CrosstermBackend};
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::text::{Line, Span};

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn only_known_terminals_outside_tmux_get_links_unless_forced() {
        let auto = HyperlinkChoice::Auto;
        assert!(enabled(auto, env(&[("TERM_PROGRAM", "iTerm.app")])));
        assert!(enabled(auto, env(&[("TERM", "xterm-kitty")])));
        assert!(enabled(
            auto,
            env(&[("VTE_VERSION", "7200"), ("TERM", "xterm-256color")])
        ));
        assert!(!enabled(auto, env(&[("VTE_VERSION", "4800")])));
        assert!(!enabled(auto, env(&[("TERM", "xterm-256color")])));
        assert!(!enabled(auto, env(&[])));
        // tmux passes OSC 8 through only when configured to: never by default.
        let in_tmux = [
            ("TERM_PROGRAM", "iTerm.app"),
            ("TMUX", "/tmp/tmux-0/default,1,0"),
        ];
        assert!(!enabled(auto, env(&in_tmux)));
        assert!(!enabled(
            auto,
            env(&[("TERM", "tmux-256color"), ("KITTY_WINDOW_ID", "1")])
        ));
        assert!(!enabled(
            auto,
            env(&[("TERM", "screen"), ("WT_SESSION", "x")])
        ));
        assert!(enabled(HyperlinkChoice::On, env(&in_tmux)));
        assert!(!enabled(
            HyperlinkChoice::Off,
            env(&[("TERM_PROGRAM", "WezTerm")])
        ));
    }

    #[test]
    fn unsafe_or_odd_targets_are_not_linked() {
        let base = Style::new();
        assert_eq!(link_style(base, "javascript:alert(1)"), base);
        assert_eq!(link_style(base, "https://example.com/\x1b]8;;x"), base);
        assert_eq!(link_style(base, "https://example.com/a b"), base);
        assert_eq!(
            link_style(base, &format!("https://x/{}", "a".repeat(3_000))),
            base
        );
        assert_ne!(link_style(base, "https://example.com/ok"), base);
        // One target, one number.
        assert_eq!(
            link_style(base, "https://example.com/ok"),
            link_style(base, "https://example.com/ok")
        );
    }

    /// Draws `line` on a one-row buffer and returns what a crossterm terminal receives.
    fn bytes_of(line: &Line<'_>, on: bool) -> String {
        let mut buf = Buffer::empty(Rect::new(0, 0, 24, 1));
        buf.set_line(0, 0, line, 24);
        let cells: Vec<(u16, u16, &Cell)> = buf
            .content
            .iter()
            .enumerate()
            .map(|(i, c)| (u16::try_from(i).unwrap(), 0, c))
            .collect();
        let mut out = Vec::<u8>::new();
        {
            let mut backend = CrosstermBackend::new(&mut out);
            match prepare(&cells, on) {
                Some(owned) => backend
                    .draw(owned.iter().map(|(x, y, c)| (*x, *y, c)))
                    .unwrap(),
                None => backend.draw(cells.into_iter()).unwrap(),
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_link_run_is_wrapped_once_and_closed_and_marks_never_reach_the_terminal() {
        let url = "https://example.com/docs";
        let line = Line::from(vec![
            Span::raw("see "),
            Span::styled("the docs", link_style(Style::new(), url)),
            Span::raw(" now"),
        ]);
        let on = bytes_of(&line, true);
        let open = format!("\x1b]8;;{url}\x1b\\");
        assert_eq!(on.matches(&open).count(), 1, "{on:?}");
        assert_eq!(on.matches("\x1b]8;;\x1b\\").count(), 1, "{on:?}");
        let start = on.find(&open).unwrap() + open.len();
        let end = on.find("\x1b]8;;\x1b\\").unwrap();
        assert_eq!(&on[start..end], "the docs", "{on:?}");
        // The mark is not sent as an underline colour (SGR 58).
        assert!(!on.contains("\x1b[58"), "{on:?}");

        let off = bytes_of(&line, false);
        assert!(!off.contains("\x1b]8"), "{off:?}");
        assert!(!off.contains("\x1b[58"), "{off:?}");
        assert!(off.contains("see the docs now"), "{off:?}");
        assert_eq!(
            bytes_of(&Line::from("plain text"), true)
                .matches("\x1b]")
                .count(),
            0
        );
    }

    #[test]
    fn two_links_side_by_side_are_two_runs() {
        let a = link_style(Style::new(), "https://a.example/");
        let b = link_style(Style::new(), "https://b.example/");
        let line = Line::from(vec![Span::styled("aa", a), Span::styled("bb", b)]);
        let on = bytes_of(&line, true);
        assert_eq!(on.matches("\x1b]8;;https://").count(), 2, "{on:?}");
        assert_eq!(on.matches("\x1b]8;;\x1b\\").count(), 2, "{on:?}");
    }
}
