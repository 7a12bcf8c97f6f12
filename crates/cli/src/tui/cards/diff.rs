//! A file change as a coloured unified diff with line numbers (the `similar` crate).

use super::super::text::plural;
use super::super::theme::Theme;
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};
use std::time::Duration;

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// A diff that takes longer than this falls back to a coarser one (still correct).
const DIFF_TIMEOUT: Duration = Duration::from_millis(100);

/// What changed between `old` and `new`: `+a -r` counts and the diff lines, numbered by
/// the new file's lines (removed lines by the old file's).
pub fn diff_lines(old: &str, new: &str, theme: &Theme) -> (String, Vec<Line<'static>>) {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    let mut lines = Vec::new();
    let last_line = old.lines().count().max(new.lines().count()).max(1);
    let number_width = last_line.to_string().len();
    for (i, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
        if i > 0 {
            lines.push(Line::styled(format!("{:>number_width$} ⋮", ""), theme.dim));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = change
                    .value()
                    .trim_end_matches(['\n', '\r'])
                    .replace('\t', "    ");
                let (sign, number, style) = match change.tag() {
                    ChangeTag::Delete => {
                        removed += 1;
                        ("-", change.old_index(), theme.removed)
                    }
                    ChangeTag::Insert => {
                        added += 1;
                        ("+", change.new_index(), theme.added)
                    }
                    ChangeTag::Equal => (" ", change.new_index(), theme.dim),
                };
                let number = number.map_or(String::new(), |n| (n + 1).to_string());
                lines.push(Line::from(vec![
                    Span::styled(format!("{number:>number_width$} "), theme.dim),
                    Span::styled(format!("{sign} {text}"), style),
                ]));
            }
        }
    }
    let summary = match (added, removed) {
        (0, 0) => "no changes".to_owned(),
        (a, 0) => format!("+{}", plural(a, "line")),
        (0, r) => format!("-{}", plural(r, "line")),
        (a, r) => format!("+{a} -{r}"),
    };
    (summary, lines)
}
