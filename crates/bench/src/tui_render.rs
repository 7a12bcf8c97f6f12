//! `tui-render`: the terminal UI's cost per streamed chunk of a long markdown answer.
//!
//! A 2,000-line markdown answer (headings, paragraphs, lists, code blocks, tables) streams
//! into the interactive UI's state in ~40-byte chunks; each chunk is one frame as the
//! runner draws it: the state folds the event, finished blocks go to scrollback
//! (`insert_before`), the viewport is fitted and the live view drawn on ratatui's test
//! terminal (100x40). Figures per chunk for the first, middle and last tenth of the answer
//! show whether the cost grows with the answer's length (it must not: only the open block
//! re-renders). At 60 chunks per second a frame has 16.7 ms.

use crate::stats::{report, summarize};
use dsh_cli::tui::interactive::{fit_viewport, Effect, Input, InteractiveState, LiveView};
use dsh_cli::tui::interactive::{OpenedHow, OpenedSession};
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WIDTH: u16 = 100;
const HEIGHT: u16 = 40;
const LINES: usize = 2_000;
const CHUNK_BYTES: usize = 40;

/// A markdown answer of about `lines` lines, in the shapes models write.
fn answer(lines: usize) -> String {
    let mut out = String::new();
    let mut section = 0;
    while out.lines().count() < lines {
        section += 1;
        out.push_str(&format!("## Step {section}: change the parser\n\n"));
        out.push_str("The **parser** keeps its state in `State`; this step moves the cursor handling into its own function so the [tokenizer](https://example.com/t) can reuse it.\n\n");
        out.push_str("1. Move `advance` out of the loop\n2. Give it the cursor\n   - keep the old name\n   - [x] update the callers\n\n");
        out.push_str("```rust\nfn advance(cursor: &mut Cursor, input: &str) -> Option<char> {\n    let ch = input[cursor.offset..].chars().next()?;\n    cursor.offset += ch.len_utf8();\n    Some(ch)\n}\n```\n\n");
        out.push_str("| file | lines | change |\n|------|------:|--------|\n| src/parser.rs | 120 | moved |\n| src/cursor.rs | 40 | new |\n\n");
        out.push_str("> Note: the tests cover both paths.\n\n");
    }
    out
}

fn event(seq: u64, kind: &str, data: Value) -> anyhow::Result<Input> {
    let raw = json!({"type": kind, "seq": seq, "time": 0, "data": data});
    Ok(Input::Session {
        session: SessionId::new("bench"),
        event: Arc::new(SessionEvent::from_value(&raw)?),
    })
}

/// One frame as the runner makes it: effects carried out, viewport fitted, view drawn.
fn frame(
    state: &mut InteractiveState,
    terminal: &mut Terminal<TestBackend>,
    input: Input,
) -> anyhow::Result<()> {
    for effect in state.reduce(input) {
        if let Effect::Scrollback(lines) = effect {
            for chunk in lines.chunks(1000) {
                let height = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
                terminal.insert_before(height, |buf: &mut Buffer| {
                    for (y, line) in (buf.area.y..).zip(chunk) {
                        buf.set_line(buf.area.x, y, line, buf.area.width);
                    }
                })?;
            }
        }
    }
    let wanted = LiveView::new(state).height(WIDTH);
    if wanted > terminal.get_frame().area().height {
        fit_viewport(terminal, wanted)?;
    }
    terminal.draw(|f| f.render_widget(LiveView::new(state), f.area()))?;
    Ok(())
}

/// What highlighting costs: the first code block loads syntect's syntax set.
fn highlighting() {
    let theme = dsh_cli::tui::theme::Theme::dark();
    let block = "```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n";
    let start = Instant::now();
    dsh_cli::tui::markdown::render(block, 80, &theme);
    let first = start.elapsed();
    let start = Instant::now();
    dsh_cli::tui::markdown::render(block, 80, &theme);
    println!(
        "first code block (loads the syntax set): {first:.3?}; the next one: {:.3?}",
        start.elapsed()
    );
}

pub fn run() -> anyhow::Result<()> {
    highlighting();
    let text = answer(LINES);
    let mut state = InteractiveState::new(WIDTH);
    let mut terminal = Terminal::with_options(
        TestBackend::new(WIDTH, HEIGHT),
        TerminalOptions {
            viewport: Viewport::Inline(4),
        },
    )?;
    state.reduce(Input::Opened(OpenedSession {
        id: SessionId::new("bench"),
        how: OpenedHow::New,
        events: Vec::new(),
        provider: "deepseek-official".into(),
        model: "deepseek-v4-flash".into(),
        context_window: Some(1_000_000),
    }));
    let mut seq = 0;
    let mut next = |kind: &str, data: Value| {
        let input = event(seq, kind, data);
        seq += 1;
        input
    };
    for (kind, data) in [
        ("turn/start", json!({"turn": 1})),
        ("step/start", json!({"turn": 1, "step": 1})),
        (
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}),
        ),
    ] {
        frame(&mut state, &mut terminal, next(kind, data)?)?;
    }
    let mut pieces = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let mut cut = CHUNK_BYTES.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        pieces.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    let mut samples: Vec<Duration> = Vec::with_capacity(pieces.len());
    for piece in &pieces {
        let input = next(
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": piece}}),
        )?;
        let start = Instant::now();
        frame(&mut state, &mut terminal, input)?;
        samples.push(start.elapsed());
    }
    let tenth = samples.len() / 10;
    println!(
        "answer: {} lines, {} bytes, {} chunks of {CHUNK_BYTES} bytes; terminal {WIDTH}x{HEIGHT}",
        text.lines().count(),
        text.len(),
        pieces.len()
    );
    report(
        "tui-render",
        "frame per chunk, first tenth of the answer",
        &summarize(samples[..tenth].to_vec()),
    );
    report(
        "tui-render",
        "frame per chunk, middle tenth",
        &summarize(samples[tenth * 45 / 10..tenth * 55 / 10].to_vec()),
    );
    report(
        "tui-render",
        "frame per chunk, last tenth",
        &summarize(samples[samples.len() - tenth..].to_vec()),
    );
    let all = summarize(samples.clone());
    report("tui-render", "frame per chunk, whole answer", &all);
    let budget = Duration::from_micros(16_667);
    let over = samples.iter().filter(|s| **s > budget).count();
    println!(
        "at 60 chunks/s: median frame uses {:.1}% of the 16.7 ms frame; {over} of {} frames over it",
        all.median.as_secs_f64() * 100.0 / budget.as_secs_f64(),
        samples.len()
    );
    // The settled answer printed whole once the message arrives.
    let settle = next(
        "assistant/message",
        json!({"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}}}),
    )?;
    let start = Instant::now();
    frame(&mut state, &mut terminal, settle)?;
    println!("settling the whole answer: {:.3?}", start.elapsed());
    start_up()?;
    Ok(())
}

/// `dsh --version` from process start to exit, when the `dsh` binary sits beside this one.
fn start_up() -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let Some(dsh) = exe
        .parent()
        .map(|dir| dir.join("dsh"))
        .filter(|p| p.exists())
    else {
        println!("dsh --version: skipped (no dsh binary beside dsh-bench; build -p dsh-cli too)");
        return Ok(());
    };
    let mut samples = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        let status = std::process::Command::new(&dsh)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .status()?;
        samples.push(start.elapsed());
        anyhow::ensure!(status.success(), "dsh --version failed");
    }
    report(
        "tui-render",
        "dsh --version (process start to exit)",
        &summarize(samples),
    );
    println!("dsh binary: {} bytes", std::fs::metadata(&dsh)?.len());
    Ok(())
}
