//! The text captures of the main views in docs/tui.md. They are rendered here, by the real
//! UI state and runner on ratatui's test terminal (80 columns), and must match the doc;
//! `scripts/tui-screens.sh` (DSH_UPDATE_SCREENS=1) writes them into it instead.

use super::tui_support::*;
use dsh_cli::tui::interactive::{Answers, Input, OpenedHow, Runner};
use ratatui::backend::TestBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

const START: &str = "<!-- screens:start (scripts/tui-screens.sh writes this part) -->";
const END: &str = "<!-- screens:end -->";

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/tui.md")
}

async fn runner(height: u16) -> Runner<TestBackend> {
    let terminal = Terminal::with_options(
        TestBackend::new(80, height),
        TerminalOptions {
            viewport: Viewport::Inline(4),
        },
    )
    .unwrap();
    let mut runner =
        Runner::new(terminal, Arc::new(FakeDriver::default()), Answers::new()).unwrap();
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    runner
}

fn screen(runner: &mut Runner<TestBackend>) -> String {
    runner.draw().unwrap();
    let backend = runner.terminal().backend();
    let mut text = buffer_text(backend.scrollback());
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&buffer_text(backend.buffer()));
    text.trim_end().to_owned()
}

async fn feed(runner: &mut Runner<TestBackend>, events: &[Arc<dsh_session::SessionEvent>]) {
    for event in events {
        runner.handle(session_input(event)).await.unwrap();
    }
}

const ANSWER: &str = concat!(
    "## What changed\n\n",
    "The parser now keeps the **cursor** in `Cursor`, so the ",
    "[tokenizer](https://example.com/tokenizer) can share it.\n\n",
    "1. `advance` moved out of the loop\n",
    "2. The callers were updated\n",
    "   - [x] `parse_expr`\n",
    "   - [ ] `parse_block` (next)\n\n",
    "```rust\n",
    "fn advance(cursor: &mut Cursor, input: &str) -> Option<char> {\n",
    "    let ch = input[cursor.offset..].chars().next()?;\n",
    "    cursor.offset += ch.len_utf8();\n",
    "    Some(ch)\n",
    "}\n",
    "```\n\n",
    "| file | lines | change |\n",
    "|------|------:|--------|\n",
    "| src/parser.rs | 120 | moved `advance` out |\n",
    "| src/cursor.rs | 40 | new |\n\n",
    "> The tests cover both paths.\n",
);

async fn markdown_answer() -> String {
    let mut runner = runner(40).await;
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("what changed in the parser?"));
    events.push(log.chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})));
    events.push(log.chunk(json!({"type": "text-delta", "index": 0, "text": ANSWER})));
    events.push(log.chunk(
        json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": ANSWER}}),
    ));
    events.push(log.assistant(ANSWER));
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    feed(&mut runner, &events).await;
    screen(&mut runner)
}

async fn tool_cards() -> String {
    let mut runner = runner(40).await;
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("mark the notes reviewed and run the tests"));
    let call = |log: &mut Log, id: &str, name: &str, args: serde_json::Value| {
        log.add(
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": id, "name": name, "arguments": args.to_string()}),
        )
    };
    let result = |log: &mut Log,
                  id: &str,
                  text: &str,
                  meta: serde_json::Value,
                  error: Option<&str>| {
        let mut data = json!({"turn": 1, "step": 1, "meta": meta, "message": {"id": format!("r{id}"), "role": "user",
            "content": [{"type": "tool-result", "toolCallId": id, "isError": error.is_some(),
            "content": [{"type": "text", "text": text}]}], "source": {"kind": "tool", "callId": id}}});
        if let Some(code) = error {
            data["error"] = json!({"name": "read", "code": code});
        }
        log.add("tool/result", data)
    };
    let old = "# Notes\ntitle: parser\nstatus: draft\nowner: nobody\n";
    let new = "# Notes\ntitle: parser\nstatus: reviewed\nreviewer: sam\nowner: nobody\n";
    events.push(call(&mut log, "c1", "edit", json!({"file_path": "notes.md", "old_string": "status: draft", "new_string": "status: reviewed\nreviewer: sam"})));
    events.push(result(
        &mut log,
        "c1",
        "The file notes.md has been updated successfully.",
        json!({"diffs": [{"path": "notes.md", "oldText": old, "newText": new}]}),
        None,
    ));
    let output: String = (1..=12)
        .map(|n| format!("test parser::case_{n} ... ok\n"))
        .collect::<String>()
        + "\ntest result: ok. 12 passed";
    events.push(call(
        &mut log,
        "c2",
        "bash",
        json!({"command": "cargo test -q parser"}),
    ));
    events.push(result(
        &mut log,
        "c2",
        &output,
        json!({"exitCode": 0, "signal": null}),
        None,
    ));
    events.push(call(
        &mut log,
        "c3",
        "grep",
        json!({"pattern": "fn advance", "path": "src"}),
    ));
    events.push(result(
        &mut log,
        "c3",
        "Found 2 matches in 2 files\nsrc/parser.rs:14: fn advance(\nsrc/cursor.rs:3: fn advance(",
        json!({"matches": 2, "files": 2, "truncated": false, "spillPath": null}),
        None,
    ));
    events.push(call(
        &mut log,
        "c4",
        "read",
        json!({"file_path": "src/lexer.rs"}),
    ));
    events.push(result(
        &mut log,
        "c4",
        "File not found: src/lexer.rs",
        json!(null),
        Some("FILE_NOT_FOUND"),
    ));
    events.push(log.assistant("Done: the notes are reviewed and the parser tests pass."));
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    feed(&mut runner, &events).await;
    screen(&mut runner)
}

async fn streaming() -> String {
    let mut runner = runner(24).await;
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("summarise the change"));
    events.push(log.chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})));
    events.push(log.chunk(json!({"type": "text-delta", "index": 0, "text": "## Summary\n\nThe parser shares its **cursor** now.\n\n- `advance` moved\n- callers upd"})));
    feed(&mut runner, &events).await;
    screen(&mut runner)
}

fn section(title: &str, about: &str, capture: &str) -> String {
    format!("### {title}\n\n{about}\n\n```text\n{capture}\n```\n")
}

#[tokio::test]
async fn the_docs_show_the_views_as_rendered() {
    let screens = [
        section(
            "A markdown answer",
            "Headings, emphasis, inline code, nested and task lists, a highlighted code block (colours not shown here), a table fitted to the width, a quote.",
            &markdown_answer().await,
        ),
        section(
            "Tool cards",
            "An edit as a numbered diff, a command with its exit code and the tail of its output (clipped: Ctrl-O expands), a search with its counts, an error with its code.",
            &tool_cards().await,
        ),
        section(
            "While an answer streams",
            "Finished blocks are already in scrollback; the live area holds the open block, the input and the status line (which says the model is writing).",
            &streaming().await,
        ),
    ]
    .join("\n");
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (doc.find(START), doc.find(END)) else {
        panic!("docs/tui.md has no {START} ... {END} section");
    };
    let updated = format!("{}{START}\n\n{screens}\n{}", &doc[..start], &doc[end..]);
    if std::env::var_os("DSH_UPDATE_SCREENS").is_some() {
        std::fs::write(&path, &updated).unwrap();
        return;
    }
    assert!(
        updated == doc,
        "docs/tui.md is out of date with the UI; run scripts/tui-screens.sh\n{screens}"
    );
}
