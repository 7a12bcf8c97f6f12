//! Replays the session logs written by dsh 0.1.0 through the transcript and checks what a
//! person would see.

use super::*;
use dsh_session::SessionEvent;
use std::path::{Path, PathBuf};

const FIXTURES: &str = "/work/shared/fixtures/dsh-0.1.0";

/// The plain-JSONL log of a scenario.
fn log_path(scenario: &str) -> PathBuf {
    fn find(dir: &Path) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()? {
            let path = entry.ok()?.path();
            if path.is_dir() {
                if let Some(found) = find(&path) {
                    return Some(found);
                }
            } else if path.file_name().is_some_and(|n| n == "session.jsonl") {
                return Some(path);
            }
        }
        None
    }
    let dir = Path::new(FIXTURES).join(scenario).join("jsonl");
    find(&dir).unwrap_or_else(|| panic!("no session.jsonl under {}", dir.display()))
}

fn replay(scenario: &str) -> Transcript {
    let text = std::fs::read_to_string(log_path(scenario)).unwrap();
    let events: Vec<SessionEvent> = text
        .lines()
        .skip(1) // the header
        .map(|line| SessionEvent::from_json(line).unwrap())
        .collect();
    Transcript::from_events(&events)
}

fn screen_lines(transcript: &Transcript) -> Vec<String> {
    transcript_lines(transcript, 200)
        .iter()
        .map(|line| {
            line.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect()
}

/// Asserts `expected` appear as whole lines, in this order.
fn assert_lines_in_order(scenario: &str, expected: &[&str]) -> Transcript {
    let transcript = replay(scenario);
    let lines = screen_lines(&transcript);
    let mut from = 0;
    for want in expected {
        match lines[from..].iter().position(|line| line == want) {
            Some(at) => from += at + 1,
            None => panic!(
                "{scenario}: missing {want:?} after line {from} in:\n{}",
                lines.join("\n")
            ),
        }
    }
    assert_eq!(transcript.run_state(), RunState::Idle, "{scenario}");
    transcript
}

#[test]
fn text_fixture() {
    let transcript = assert_lines_in_order(
        "text",
        &[
            "› Say hello and describe this workspace in one sentence.",
            "• Hello! This workspace holds a small Rust project with a README and some notes.",
            "─ turn 1 completed",
        ],
    );
    let lines = screen_lines(&transcript);
    assert!(
        lines.iter().any(|l| l.starts_with("▸ thinking: ")),
        "{lines:?}"
    );
    // Runtime-context snapshots are plugin messages, not something the person typed.
    assert!(!lines.iter().any(|l| l.contains("Current runtime context")));
}

#[test]
fn bash_fixture() {
    let transcript = assert_lines_in_order(
        "bash",
        &[
            "› What does notes.txt say?",
            "• Let me print the file.",
            "✓ bash  cat notes.txt  78ms",
            "  └ TODO: write more tests",
            "    status: draft",
            "    owner: nobody",
            "• notes.txt has three lines: a TODO to write more tests, status: draft, and owner: nobody.",
            "─ turn 1 completed",
        ],
    );
    assert_eq!(
        StatusLine::new(&transcript).text(),
        "idle · deepseek-v4-flash (deepseek-official) · 16.1k in / 67 out · ctx 0.8% (8.1k/1M)"
    );
}

#[test]
fn read_edit_fixture() {
    assert_lines_in_order(
        "read-edit",
        &[
            "› In notes.txt, change the status from draft to reviewed.",
            "✓ read  notes.txt  3 lines of 3",
            "• Updating the status line.",
            "✓ edit  notes.txt  +1 -1",
            "  └ 1   TODO: write more tests",
            "    2 - status: draft",
            "    2 + status: reviewed",
            "    3   owner: nobody",
            "• Done: notes.txt now says status: reviewed.",
        ],
    );
}

#[test]
fn multi_turn_fixture() {
    let transcript = assert_lines_in_order(
        "multi-turn",
        &[
            "› Make a plan for reviewing this project.",
            "✓ todo_write  3 items",
            "☰ todos",
            "  [>] List the project files",
            "  [ ] Read the notes",
            "─ turn 1 completed",
            "› Now list the files in the project.",
            "✓ bash  ls -R  37ms",
            "    … 1 more line (Ctrl-O expands)",
            "─ turn 2 completed",
            "› Thanks. Summarise what we did.",
            "─ turn 3 completed",
        ],
    );
    assert_eq!(transcript.todos().len(), 3);
}

#[test]
fn retry_fixture() {
    assert_lines_in_order(
        "retry",
        &[
            "› Are you there?",
            "↻ model request failed (SERVER 500: Internal server error (mock)); retried, attempt 1 of 5",
            "• Yes, I am here and working.",
            "─ turn 1 completed",
        ],
    );
}

#[test]
fn parallel_tools_fixture() {
    let transcript = assert_lines_in_order(
        "parallel-tools",
        &[
            "› Show me README.md and src/main.rs.",
            "• Reading both files.",
            "✓ read  README.md  3 lines of 3",
            "✓ read  src/main.rs  3 lines of 3",
            "• README.md describes the sample project, and src/main.rs prints \"Hello, world!\".",
        ],
    );
    let cards = transcript
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::Tool(card) if matches!(card.state, ToolState::Done { .. })))
        .count();
    assert_eq!(cards, 2);
}

/// The original's compaction fixture: 24 reads under a 10k window, 22 compactions and 22
/// failed attempts (its re-summarise defect), resumed here as a person would see it.
#[test]
fn compaction_fixture() {
    let dir =
        Path::new("/work/shared/fixtures/dsh-0.1.0-compaction/sessions/--home-user-project--");
    let session = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(session.join("session.jsonl.zstd")).unwrap();
    let text = String::from_utf8(zstd::decode_all(bytes.as_slice()).unwrap()).unwrap();
    let events: Vec<SessionEvent> = text
        .lines()
        .skip(1)
        .map(|line| SessionEvent::from_json(line).unwrap())
        .collect();
    let mut transcript = Transcript::from_events(&events);
    assert_eq!(transcript.run_state(), RunState::Idle);
    let lines = screen_lines(&transcript);
    let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count();
    // The checkpoints replace history; none is shown as something the person typed.
    assert_eq!(count("› "), 1, "{lines:#?}");
    assert!(!lines
        .iter()
        .any(|l| l.contains("compacted-summary") || l.contains("checkpoint")));
    assert_eq!(count("▸ compacted "), 22);
    assert_eq!(
        count("· compaction attempt failed, nothing changed: summary is not smaller than"),
        22
    );
    assert_eq!(count("✓ read  note"), 24);
    assert_lines_in_order_of(
        &lines,
        &[
            "› Read all the notes one by one",
            "▸ compacted 2 messages (~139 tokens) → summary (~123 tokens)  (Ctrl-O shows the summary)",
            "· compaction attempt failed, nothing changed: summary is not smaller than the shadowed content (123 estimated framed tokens >= 123)",
            "• all notes read",
            "─ turn 1 completed",
        ],
    );
    transcript.set_compaction_expanded(true);
    let lines = screen_lines(&transcript);
    let first = lines
        .iter()
        .position(|l| l.starts_with("▾ compacted "))
        .unwrap();
    assert_eq!(
        lines[first..first + 5],
        [
            "▾ compacted 2 messages (~139 tokens) → summary (~123 tokens)",
            "  ## Primary Request and Intent",
            "  - read notes",
            "  ## Current Work",
            "  - reading notes (summary)",
        ]
    );
}

fn assert_lines_in_order_of(lines: &[String], expected: &[&str]) {
    let mut from = 0;
    for want in expected {
        match lines[from..].iter().position(|line| line == want) {
            Some(at) => from += at + 1,
            None => panic!(
                "missing {want:?} after line {from} in:\n{}",
                lines.join("\n")
            ),
        }
    }
}
