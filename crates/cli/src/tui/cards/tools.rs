//! The card of a tool call: what each built-in tool's result shows.

use super::diff::diff_lines;
use super::{Card, CardState, Keep};
use crate::sanitize::sanitize;
use crate::tui::lines::RESULT_PREVIEW_LINES;
use crate::tui::text::{plural, seconds};
use crate::tui::theme::Theme;
use crate::tui::transcript::{ToolCard, ToolState};
use ratatui::style::Style;
use ratatui::text::Line;
use serde_json::Value;

/// Body lines of a collapsed diff card.
const DIFF_PREVIEW_LINES: usize = 12;
/// Output lines of a collapsed `bash` card (its last ones).
const BASH_PREVIEW_LINES: usize = 6;

/// The card of `tool`.
pub fn tool_card(tool: &ToolCard, theme: &Theme) -> Card {
    let state = match tool.state {
        ToolState::Running => CardState::Running,
        ToolState::Done { .. } => CardState::Done,
        ToolState::Failed { .. } => CardState::Failed,
    };
    let mut card = Card::new(state, tool.name.clone(), tool.summary.clone());
    card.clip = RESULT_PREVIEW_LINES;
    if let Some(ms) = tool.duration_ms.filter(|ms| tool.name == "bash" && *ms > 0) {
        card.facts.push(if ms < 1_000 {
            format!("{ms}ms")
        } else {
            seconds(ms as f64)
        });
    }
    let meta = tool.meta.as_ref();
    let (output, code) = match &tool.state {
        ToolState::Running => return card,
        ToolState::Done { output } => (output, None),
        ToolState::Failed { output, code } => (output, Some(code.as_deref())),
    };
    if let Some(code) = code {
        let mut body = vec![Line::styled(
            match code {
                Some(code) => format!("error ({code})"),
                None => "error".to_owned(),
            },
            theme.error,
        )];
        body.extend(text_lines(output, theme.error));
        card.body = body;
        card.clip = card.clip.max(RESULT_PREVIEW_LINES);
        return card;
    }
    let field = |name: &str| meta.and_then(|m| m.get(name));
    let count = |name: &str| field(name).and_then(Value::as_u64);
    match tool.name.as_str() {
        "edit" | "write" => {
            if let Some((old, new)) = file_change(meta) {
                let (summary, lines) = diff_lines(&old, &new, theme);
                card.facts.push(summary);
                card.body = lines;
                card.clip = DIFF_PREVIEW_LINES;
                return card;
            }
        }
        "bash" => {
            match (count("exitCode"), field("signal").and_then(Value::as_str)) {
                (_, Some(signal)) => card.facts.insert(0, format!("signal {signal}")),
                (Some(code), None) => card.facts.insert(0, format!("exit {code}")),
                _ => {}
            }
            if field("timedOut").and_then(Value::as_bool) == Some(true) {
                card.facts.push("timed out".into());
            }
            card.keep = Keep::Tail;
            card.clip = BASH_PREVIEW_LINES;
        }
        "read" => {
            if let Some(lines) = field("lines").and_then(Value::as_array) {
                let total = count("totalLines").unwrap_or(lines.len() as u64);
                card.facts
                    .push(format!("{} of {total}", plural(lines.len(), "line")));
                card.body = spill_lines(meta, theme);
                return card;
            }
        }
        "grep" => {
            if let (Some(matches), Some(files)) = (count("matches"), count("files")) {
                let matches = if matches == 1 {
                    "1 match".to_owned()
                } else {
                    format!("{matches} matches")
                };
                card.facts
                    .push(format!("{matches} in {}", plural(files as usize, "file")));
            }
        }
        "glob" => {
            if let Some(found) = count("count") {
                card.facts.push(plural(found as usize, "file"));
            }
        }
        _ => {}
    }
    let mut body = text_lines(output, theme.dim);
    if body.is_empty() {
        body.push(Line::styled("(no output)", theme.dim));
    }
    let spill = spill_lines(meta, theme);
    if card.keep == Keep::Tail {
        // A clipped tail would drop a path listed first; the header keeps it.
        if let Some(path) = spill_path(meta) {
            card.facts.push(format!("full output: {path}"));
        }
    } else {
        body.extend(spill);
    }
    card.body = body;
    card
}

fn text_lines(text: &str, style: Style) -> Vec<Line<'static>> {
    text.trim_end()
        .lines()
        .map(|line| Line::styled(line.replace('\t', "    "), style))
        .collect()
}

fn spill_path(meta: Option<&Value>) -> Option<String> {
    meta?
        .get("spillPath")
        .and_then(Value::as_str)
        .map(|path| sanitize(path).into_owned())
}

fn spill_lines(meta: Option<&Value>, theme: &Theme) -> Vec<Line<'static>> {
    spill_path(meta)
        .map(|path| vec![Line::styled(format!("full output: {path}"), theme.dim)])
        .unwrap_or_default()
}

/// The old and new text of the first file an `edit` or `write` changed, terminal-safe.
fn file_change(meta: Option<&Value>) -> Option<(String, String)> {
    let first = meta?.get("diffs")?.as_array()?.first()?;
    let text = |name: &str| {
        first
            .get(name)
            .and_then(Value::as_str)
            .map(|t| sanitize(t).into_owned())
    };
    Some((text("oldText").unwrap_or_default(), text("newText")?))
}
