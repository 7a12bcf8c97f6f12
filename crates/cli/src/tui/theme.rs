//! The TUI's colours: one palette for dark terminals, one for light ones, and none at all
//! under `NO_COLOR` (emphasis then rests on bold, italic, underline and dim alone).
//!
//! Chosen once at start-up ([`set`], from `[ui] theme` and `NO_COLOR`) and read by the
//! pure renderers through [`current`]; until set it is the dark palette, which is what
//! tests render with.

use ratatui::style::{Color, Modifier, Style};
use std::sync::OnceLock;

dsh_protocol::word_enum! {
    /// `[ui] theme`.
    #[derive(Default)]
    pub enum ThemeChoice {
        /// Dark unless the terminal says its background is light (`COLORFGBG`).
        #[default]
        Auto = "auto",
        Dark = "dark",
        Light = "light",
    }
}

/// The styles the renderers use.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub dim: Style,
    pub inline_code: Style,
    /// Code block text when it is not highlighted.
    pub code: Style,
    pub code_gutter: Style,
    pub link: Style,
    pub quote: Style,
    pub quote_text: Style,
    pub list_marker: Style,
    pub headings: [Style; 4],
    pub added: Style,
    pub removed: Style,
    pub error: Style,
    /// The syntect theme for code blocks; `None` leaves code plain.
    pub syntax_theme: Option<&'static str>,
    /// Whether any colour is shown at all.
    pub colour: bool,
}

impl Theme {
    pub fn dark() -> Self {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Self {
            dim: Style::new().add_modifier(Modifier::DIM),
            inline_code: Style::new().fg(Color::Cyan),
            code: Style::new(),
            code_gutter: Style::new(),
            link: Style::new()
                .fg(Color::Blue)
                .add_modifier(Modifier::UNDERLINED),
            quote: Style::new().fg(Color::Green),
            quote_text: Style::new().add_modifier(Modifier::ITALIC),
            list_marker: Style::new().fg(Color::Cyan),
            headings: [
                bold.fg(Color::Magenta).add_modifier(Modifier::UNDERLINED),
                bold.fg(Color::Magenta),
                bold.fg(Color::Cyan),
                bold,
            ],
            added: Style::new().fg(Color::Green),
            removed: Style::new().fg(Color::Red),
            error: Style::new().fg(Color::Red),
            syntax_theme: Some("base16-ocean.dark"),
            colour: true,
        }
    }

    pub fn light() -> Self {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Self {
            inline_code: Style::new().fg(Color::Blue),
            list_marker: Style::new().fg(Color::Blue),
            headings: [
                bold.fg(Color::Magenta).add_modifier(Modifier::UNDERLINED),
                bold.fg(Color::Magenta),
                bold.fg(Color::Blue),
                bold,
            ],
            syntax_theme: Some("InspiredGitHub"),
            ..Self::dark()
        }
    }

    /// No colour (`NO_COLOR`): modifiers only.
    pub fn plain() -> Self {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Self {
            dim: Style::new().add_modifier(Modifier::DIM),
            inline_code: bold,
            code: Style::new(),
            code_gutter: Style::new(),
            link: Style::new().add_modifier(Modifier::UNDERLINED),
            quote: Style::new().add_modifier(Modifier::DIM),
            quote_text: Style::new().add_modifier(Modifier::ITALIC),
            list_marker: Style::new(),
            headings: [bold.add_modifier(Modifier::UNDERLINED), bold, bold, bold],
            added: Style::new(),
            removed: Style::new().add_modifier(Modifier::DIM),
            error: bold,
            syntax_theme: None,
            colour: false,
        }
    }

    /// The palette for `choice` in an environment read through `var`.
    pub fn choose(choice: ThemeChoice, var: impl Fn(&str) -> Option<String>) -> Self {
        if var("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return Self::plain();
        }
        let light = match choice {
            ThemeChoice::Dark => false,
            ThemeChoice::Light => true,
            ThemeChoice::Auto => var("COLORFGBG").is_some_and(|v| light_background(&v)),
        };
        if light {
            Self::light()
        } else {
            Self::dark()
        }
    }

    /// The style of a heading of `rank` (1 for `#`).
    pub fn heading(&self, rank: u8) -> Style {
        let i = usize::from(rank.clamp(1, 4)) - 1;
        self.headings[i]
    }
}

/// `COLORFGBG` is `fg;bg` (sometimes `fg;default;bg`) in ANSI colour numbers: 7 and 9–15
/// are light backgrounds.
fn light_background(value: &str) -> bool {
    value
        .rsplit(';')
        .next()
        .and_then(|bg| bg.parse::<u8>().ok())
        .is_some_and(|bg| bg == 7 || (9..=15).contains(&bg))
}

static THEME: OnceLock<Theme> = OnceLock::new();

/// Sets the process's palette; the first call wins.
pub fn set(theme: Theme) {
    let _ = THEME.set(theme);
}

/// The process's palette.
pub fn current() -> &'static Theme {
    THEME.get_or_init(Theme::dark)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn no_color_wins_and_auto_reads_the_background() {
        let plain = Theme::choose(ThemeChoice::Light, env(&[("NO_COLOR", "1")]));
        assert!(!plain.colour && plain.syntax_theme.is_none());
        assert_eq!(
            Theme::choose(ThemeChoice::Auto, env(&[("COLORFGBG", "0;15")])),
            Theme::light()
        );
        assert_eq!(
            Theme::choose(ThemeChoice::Auto, env(&[("COLORFGBG", "15;0")])),
            Theme::dark()
        );
        assert_eq!(Theme::choose(ThemeChoice::Auto, env(&[])), Theme::dark());
        assert_eq!(
            Theme::choose(ThemeChoice::Light, env(&[("NO_COLOR", "")])),
            Theme::light()
        );
    }
}
