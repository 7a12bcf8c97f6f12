#![allow(clippy::unwrap_used)]

use super::*;
use crate::tui::transcript::{ToolCard, ToolState};
use dsh_protocol::CallId;
use serde_json::json;

fn text(lines: &[Line<'_>]) -> String {
    let rows: Vec<String> = lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect();
    rows.join("\n")
}

fn card(name: &str, summary: &str, state: ToolState, meta: serde_json::Value) -> ToolCard {
    ToolCard {
        call_id: CallId::new("c1"),
        name: name.into(),
        summary: summary.into(),
        state,
        meta: Some(meta),
        started_ms: 1_000,
        duration_ms: Some(1_500),
    }
}

fn done(output: &str) -> ToolState {
    ToolState::Done {
        output: output.into(),
    }
}

#[test]
fn an_edit_shows_a_numbered_coloured_diff() {
    let old: String = (1..=20).map(|n| format!("line {n}\n")).collect();
    let new = old.replace("line 10\n", "line ten\nline ten and a half\n");
    let tool = card(
        "edit",
        "notes.txt",
        done("The file notes.txt has been updated successfully."),
        json!({"diffs": [{"path": "notes.txt", "oldText": old, "newText": new}]}),
    );
    let theme = Theme::dark();
    let lines = tool_card(&tool, &theme).lines(60, false, &theme);
    assert_eq!(
        text(&lines),
        "✓ edit  notes.txt  +2 -1\n  \
           └  7   line 7\n     \
               8   line 8\n     \
               9   line 9\n    \
              10 - line 10\n    \
              10 + line ten\n    \
              11 + line ten and a half\n    \
              12   line 11\n    \
              13   line 12\n    \
              14   line 13"
    );
    let removed = lines
        .iter()
        .find(|l| text(&[(*l).clone()]).contains("- line 10"))
        .unwrap();
    assert_eq!(removed.spans[2].style, theme.removed);
}

#[test]
fn a_long_diff_is_clipped_then_expanded() {
    let new: String = (1..=40).map(|n| format!("row {n}\n")).collect();
    let tool = card(
        "write",
        "big.txt",
        done("The file big.txt has been created successfully."),
        json!({"diffs": [{"path": "big.txt", "oldText": "", "newText": new}]}),
    );
    let theme = Theme::dark();
    let built = tool_card(&tool, &theme);
    assert!(built.is_clipped());
    let collapsed = text(&built.lines(60, false, &theme));
    assert!(
        collapsed.starts_with("✓ write  big.txt  +40 lines\n"),
        "{collapsed}"
    );
    assert!(
        collapsed.ends_with("… 28 more lines (Ctrl-O expands)"),
        "{collapsed}"
    );
    let expanded = built.lines(60, true, &theme);
    assert_eq!(expanded.len(), 41);
}

#[test]
fn bash_shows_exit_code_duration_and_the_tail() {
    let output: String = (1..=10).map(|n| format!("out {n}\n")).collect();
    let tool = card(
        "bash",
        "make test",
        done(&output),
        json!({"exitCode": 0, "signal": null, "spillPath": "/tmp/spill/bash-1.txt"}),
    );
    let theme = Theme::dark();
    assert_eq!(
        text(&tool_card(&tool, &theme).lines(80, false, &theme)),
        "✓ bash  make test  exit 0 · 1.5s · full output: /tmp/spill/bash-1.txt\n    \
             … 4 more lines (Ctrl-O expands)\n    \
             out 5\n    \
             out 6\n    \
             out 7\n    \
             out 8\n    \
             out 9\n    \
             out 10"
    );
}

#[test]
fn searches_show_counts_and_errors_their_code() {
    let theme = Theme::dark();
    let grep = card(
        "grep",
        "fn main in src",
        done("Found 3 matches in 2 files\nsrc/a.rs:1: fn main"),
        json!({"matches": 3, "files": 2, "truncated": false, "spillPath": null}),
    );
    let shown = text(&tool_card(&grep, &theme).lines(80, false, &theme));
    assert!(
        shown.starts_with("✓ grep  fn main in src  3 matches in 2 files\n"),
        "{shown}"
    );
    let read = card(
        "read",
        "src/a.rs",
        done("1\tfn main() {}"),
        json!({"lines": [{"number": 1, "text": "fn main() {}"}], "totalLines": 1}),
    );
    assert_eq!(
        text(&tool_card(&read, &theme).lines(80, false, &theme)),
        "✓ read  src/a.rs  1 line of 1"
    );
    let failed = card(
        "read",
        "nope.rs",
        ToolState::Failed {
            output: "File not found: nope.rs".into(),
            code: Some("FILE_NOT_FOUND".into()),
        },
        json!(null),
    );
    let lines = tool_card(&failed, &theme).lines(80, false, &theme);
    assert_eq!(lines[0].spans[0].style, theme.error);
    assert_eq!(
        text(&lines),
        "✗ read  nope.rs\n  \
           └ error (FILE_NOT_FOUND)\n    \
             File not found: nope.rs"
    );
    assert_eq!(lines[1].spans[1].style, theme.error);
    assert_eq!(lines[2].spans[1].style, theme.error);
}

#[test]
fn hostile_file_contents_in_a_diff_are_sanitized_and_bounded() {
    let theme = Theme::dark();
    let new = format!("a\x1b]0;pwned\x07b\x1b[2J\n{}\n", "y".repeat(10_000));
    let tool = card(
        "write",
        "x",
        done("ok"),
        json!({"diffs": [{"path": "x", "oldText": "", "newText": new}]}),
    );
    let lines = tool_card(&tool, &theme).lines(80, true, &theme);
    let shown = text(&lines);
    assert!(shown.contains("+ ab\n"), "{shown}");
    assert!(!shown.contains('\x1b') && !shown.contains("pwned"));
    assert!(lines.iter().all(|l| l.width() <= 80));
}
