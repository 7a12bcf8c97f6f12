//! Code blocks highlighted by language with a trimmed syntax set ([`super::syntaxes`]) and
//! syntect's bundled themes, on its pure-Rust regex engine. The syntax set loads on the
//! first code block (never at start-up), and code too big for a regex highlighter to go
//! through quickly stays plain.

use super::super::theme::Theme;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::SyntaxSet;

/// Blocks longer than this many lines, or with a line longer than [`MAX_LINE`] bytes, are
/// shown plain: highlighting is a backtracking regex walk per line.
const MAX_LINES: usize = 2_000;
const MAX_LINE: usize = 1_000;

struct Highlighter {
    /// `None` when the embedded dump does not load: code is shown plain.
    syntaxes: Option<SyntaxSet>,
    themes: ThemeSet,
}

fn highlighter() -> &'static Highlighter {
    static HIGHLIGHTER: OnceLock<Highlighter> = OnceLock::new();
    HIGHLIGHTER.get_or_init(|| Highlighter {
        syntaxes: super::syntaxes::load(),
        themes: ThemeSet::load_defaults(),
    })
}

/// The lines of `code`, highlighted as `lang` when the language is known and the theme
/// has colours.
pub fn highlight(lang: &str, code: &str, theme: &Theme) -> Vec<Line<'static>> {
    let code = code.strip_suffix('\n').unwrap_or(code);
    let plain = || -> Vec<Line<'static>> {
        code.split('\n')
            .map(|line| Line::from(Span::styled(line.to_owned(), theme.code)))
            .collect()
    };
    let Some(theme_name) = theme.syntax_theme else {
        return plain();
    };
    let too_big = code.lines().count() > MAX_LINES || code.lines().any(|l| l.len() > MAX_LINE);
    if lang.is_empty() || too_big {
        return plain();
    }
    let h = highlighter();
    let Some(syntaxes) = &h.syntaxes else {
        return plain();
    };
    let lang = super::syntaxes::canonical(lang);
    let Some(syntax) = syntaxes
        .find_syntax_by_token(&lang)
        .or_else(|| syntaxes.find_syntax_by_extension(&lang))
    else {
        return plain();
    };
    let Some(syntect_theme) = h.themes.themes.get(theme_name) else {
        return plain();
    };
    let mut lines = HighlightLines::new(syntax, syntect_theme);
    let mut out = Vec::new();
    for line in code.split('\n') {
        let with_newline = format!("{line}\n");
        let Ok(regions) = lines.highlight_line(&with_newline, syntaxes) else {
            return plain();
        };
        let spans: Vec<Span<'static>> = regions
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches('\n');
                (!text.is_empty()).then(|| Span::styled(text.to_owned(), convert(style)))
            })
            .collect();
        out.push(Line::from(spans));
    }
    out
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}
