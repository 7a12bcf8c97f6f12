//! The workspace trust question the interactive UI asks once at startup, when the workspace
//! brings configuration that would run programs (`.mcp.json` servers, `.claude` hooks) and is
//! not trusted yet. Pure rendering; the terminal side is
//! [`ask_trust`](super::interactive::ask_trust).

use super::text::truncate;
use crate::sanitize::sanitize;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

/// Most "would run" lines shown; the rest are counted.
const MAX_RUN_LINES: usize = 8;

/// What the question shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustPrompt {
    pub workspace: String,
    /// The files trusting would enable.
    pub files: Vec<String>,
    /// What would run: server command lines, hook commands.
    pub would_run: Vec<String>,
}

impl TrustPrompt {
    /// The lines inside the frame.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width.saturating_sub(4)).max(10);
        let mut lines = vec![
            Line::from(Span::styled(
                truncate(&format!("Trust {}?", sanitize(&self.workspace)), width),
                Style::default().add_modifier(Modifier::BOLD),
            )),
            Line::from(truncate(
                &format!("It brings {}.", sanitize(&self.files.join(", "))),
                width,
            )),
            Line::from(truncate(
                "These would run on your machine, outside the sandbox:",
                width,
            )),
        ];
        for line in self.would_run.iter().take(MAX_RUN_LINES) {
            lines.push(Line::from(Span::styled(
                truncate(&format!("  {}", sanitize(line)), width),
                Style::default().fg(Color::Yellow),
            )));
        }
        if self.would_run.len() > MAX_RUN_LINES {
            lines.push(Line::from(format!(
                "  … and {} more",
                self.would_run.len() - MAX_RUN_LINES
            )));
        }
        lines.push(Line::from(""));
        lines.push(Line::from(vec![
            Span::styled("y", Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(" yes, trust it (remembered)   "),
            Span::styled("n", Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(" no, ignore them this session"),
        ]));
        lines
    }

    /// Rows the framed prompt needs.
    pub fn height(&self, width: u16) -> u16 {
        u16::try_from(self.lines(width).len() + 2).unwrap_or(u16::MAX)
    }
}

impl Widget for &TrustPrompt {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::default()
            .borders(Borders::ALL)
            .title(" Workspace trust ")
            .border_style(Style::default().fg(Color::Yellow));
        let inner = block.inner(area);
        block.render(area, buf);
        for (row, line) in self.lines(area.width).into_iter().enumerate() {
            let Ok(row) = u16::try_from(row) else { break };
            if row >= inner.height {
                break;
            }
            buf.set_line(inner.x, inner.y + row, &line, inner.width);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn shows_the_files_what_would_run_and_the_two_answers() {
        let prompt = TrustPrompt {
            workspace: "/repo".into(),
            files: vec![".mcp.json".into(), ".claude/settings.json".into()],
            would_run: vec![
                "MCP server fs: npx -y srv".into(),
                "hook: ./guard.sh".into(),
            ],
        };
        let area = Rect::new(0, 0, 90, prompt.height(90));
        let mut buf = Buffer::empty(area);
        (&prompt).render(area, &mut buf);
        let rows: Vec<String> = (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect();
        let inner: Vec<&str> = rows[1..rows.len() - 1]
            .iter()
            .map(|r| r.trim_start_matches('│').trim_end_matches('│').trim_end())
            .collect();
        assert_eq!(
            inner,
            [
                "Trust /repo?",
                "It brings .mcp.json, .claude/settings.json.",
                "These would run on your machine, outside the sandbox:",
                "  MCP server fs: npx -y srv",
                "  hook: ./guard.sh",
                "",
                "y yes, trust it (remembered)   n no, ignore them this session",
            ]
        );
    }
}
