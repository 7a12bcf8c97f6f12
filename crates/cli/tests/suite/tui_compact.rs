//! `/compact`, the compaction card and the context fill in the interactive UI: the state
//! machine driven by keys and session events, and the runner over a fake driver.

use super::tui_support::*;
use crossterm::event::KeyCode;
use dsh_cli::tui::interactive::{Answers, Effect, Input, InteractiveState, OpenedHow, Runner};
use dsh_cli::tui::ContextFill;
use ratatui::backend::TestBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::json;
use std::sync::Arc;

const RULE: &str = "────────────────────────────────────────────────────────────";

fn running_state() -> (InteractiveState, Log) {
    let mut state = new_state(60);
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("refactor the parser"));
    feed(&mut state, &events);
    (state, log)
}

/// A finished first turn: prompt, answer, end.
fn idle_state() -> (InteractiveState, Log) {
    let (mut state, mut log) = running_state();
    let mut events = vec![log.assistant("Done: the parser is split in two.")];
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    feed(&mut state, &events);
    (state, log)
}

/// The events of a manual compaction of seqs 3 and 4 (prompt and answer).
fn compaction_events(log: &mut Log, id: &str) -> Vec<Arc<dsh_session::SessionEvent>> {
    let start = log.events.len() as u64;
    let mut events = vec![
        log.add(
            "compaction/start",
            json!({"compactionId": id, "turn": null}),
        ),
        log.add(
            "compaction/summary",
            json!({"compactionId": id,
                "summary": [{"type": "text", "text": "## Current Work\n- split the parser"}],
                "shadowedRange": {"start": 3, "end": 4}, "shadowedSeqs": [3, 4],
                "shadowedTokenCount": 1234, "provider": "deepseek-official",
                "model": "deepseek-v4-flash"}),
        ),
    ];
    let checkpoint = json!({"type": "user/message", "seq": log.events.len(), "time": 0,
        "surfaceOp": {"op": "replace", "start": 3, "end": 4},
        "sourceEventSeqs": [start, start + 1, 3, 4],
        "data": {"id": "k", "role": "user",
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": id},
            "content": [{"type": "text", "text": "Checkpoint.\n\n<compacted-summary>"},
                {"type": "text", "text": "## Current Work\n- split the parser"},
                {"type": "text", "text": "</compacted-summary>"}]}});
    let checkpoint = Arc::new(dsh_session::SessionEvent::from_value(&checkpoint).unwrap());
    log.events.push(checkpoint.clone());
    events.push(checkpoint);
    events.push(log.add("compaction/end", json!({"compactionId": id, "turn": null})));
    events
}

#[test]
fn compact_while_idle_runs_shows_progress_and_its_result() {
    let (mut state, mut log) = idle_state();
    type_text(&mut state, "/compact");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(scrollback(&effects), ["", "› /compact"]);
    assert_eq!(actions(effects), [Effect::Compact]);
    assert!(state.is_compacting());
    assert_eq!(state.input().text(), "");

    // The engine's bracket opens: a live line, and the status says how to stop it.
    let events = compaction_events(&mut log, "k1");
    assert_eq!(
        scrollback(&feed(&mut state, &events[..1])),
        [] as [String; 0]
    );
    assert_eq!(
        screen(&state, 5),
        format!(
            "\n\
             ⟳ compacting older history (/compact; Esc cancels)…\n\
             {RULE}\n\
             › type a task; Enter sends\n\
             compacting history (Esc cancels) · deepseek-v4-flash (deeps…"
        )
    );
    // Esc cancels a compaction as it cancels a turn.
    assert_eq!(state.reduce(key(KeyCode::Esc)), [Effect::Cancel]);

    // The bracket closes: the card goes to scrollback, collapsed.
    let effects = feed(&mut state, &events[1..]);
    assert_eq!(
        scrollback(&effects),
        [
            "",
            // At 60 columns the Ctrl-O hint does not fit and is left off.
            "▸ compacted 2 messages (~1.2k tokens) → summary (~38 tokens)"
        ]
    );
    let effects = state.reduce(Input::Compacted(Ok(
        "Compacted 2 history items (~1234 tokens).".into(),
    )));
    assert_eq!(
        scrollback(&effects),
        ["", "Compacted 2 history items (~1234 tokens)."]
    );
    assert!(!state.is_compacting());
    assert_eq!(state.status_note(), None);

    // Ctrl-O: the card in scrollback cannot open there, so it is printed again, opened.
    let effects = state.reduce(ctrl('o'));
    assert_eq!(
        scrollback(&effects),
        [
            "",
            "▾ compacted 2 messages (~1.2k tokens) → summary (~38 tokens)",
            "  ## Current Work",
            "  - split the parser"
        ]
    );
    assert_eq!(actions(effects), []);
    // And back: nothing to print.
    assert_eq!(state.reduce(ctrl('o')), []);
}

#[test]
fn compact_while_running_is_refused_and_the_line_stays_typed() {
    let (mut state, mut log) = running_state();
    type_text(&mut state, "/compact");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(
        scrollback(&effects),
        [
            "",
            "✗ /compact needs an idle agent: let the turn finish (or",
            "press Esc to stop it), then press Enter again"
        ]
    );
    assert_eq!(actions(effects), []);
    assert_eq!(state.input().text(), "/compact");
    assert!(!state.is_compacting());
    // Tab completes the command name (nothing is queued: a command is not a prompt).
    assert_eq!(actions(state.reduce(key(KeyCode::Tab))), []);
    assert_eq!(state.input().text(), "/compact ");
    // Once the turn is over, Enter on the kept line compacts.
    feed(&mut state, &log.turn_end(1, json!({"kind": "completed"})));
    assert_eq!(
        actions(state.reduce(key(KeyCode::Enter))),
        [Effect::Compact]
    );
}

#[test]
fn compact_with_an_argument_prints_its_usage() {
    let (mut state, _log) = idle_state();
    type_text(&mut state, "/compact everything please");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(
        scrollback(&effects),
        ["", "✗ Usage: /compact (no arguments)"]
    );
    assert_eq!(actions(effects), []);
}

#[test]
fn session_switches_wait_for_a_compaction_too() {
    let (mut state, _log) = idle_state();
    type_text(&mut state, "/compact");
    state.reduce(key(KeyCode::Enter));
    type_text(&mut state, "/clear");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(actions(effects.clone()), []);
    assert_eq!(
        scrollback(&effects)[2..],
        [
            "",
            "✗ the agent is busy; press Esc to cancel the turn first"
        ]
    );
    type_text(&mut state, "/compact");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(
        scrollback(&effects),
        ["", "✗ a compaction is already under way; Esc cancels it"]
    );
    assert_eq!(state.input().text(), "/compact");
    // A failed compaction ends the busy state with its reason.
    let effects = state.reduce(Input::Compacted(Err("Compaction cancelled.".into())));
    assert_eq!(scrollback(&effects), ["", "✗ Compaction cancelled."]);
    assert!(!state.is_compacting());
}

fn runner(driver: Arc<FakeDriver>) -> Runner<TestBackend> {
    let terminal = Terminal::with_options(
        TestBackend::new(60, 12),
        TerminalOptions {
            viewport: Viewport::Inline(4),
        },
    )
    .unwrap();
    Runner::new(terminal, driver, Answers::new()).unwrap()
}

fn status_row(runner: &mut Runner<TestBackend>) -> String {
    runner.draw().unwrap();
    let text = buffer_text(runner.terminal().backend().buffer());
    text.lines()
        .find(|line| line.starts_with("idle") || line.starts_with("running"))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_status_line_follows_the_meter_after_events_arrive() {
    let driver = Arc::new(FakeDriver::default());
    *driver.context.lock().unwrap() = Some(ContextFill {
        tokens: 420_000,
        window: Some(1_000_000),
        window_guessed: false,
    });
    let mut runner = runner(driver.clone());
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    runner.refresh_context().await.unwrap();
    assert_eq!(
        status_row(&mut runner),
        "idle · deepseek-v4-flash (deepseek-official) · 0 in / 0 out…"
    );
    assert!(runner.state().transcript().context_fill().status_text() == "ctx 42% (420k/1M)");
    // The meter moved, but no event arrived: no new measurement is taken.
    *driver.context.lock().unwrap() = Some(ContextFill {
        tokens: 840_000,
        window: Some(1_000_000),
        window_guessed: false,
    });
    runner.refresh_context().await.unwrap();
    assert_eq!(runner.state().transcript().context_fill().tokens, 420_000);
    let mut log = Log::default();
    for event in log.turn_start(1) {
        runner.handle(session_input(&event)).await.unwrap();
    }
    runner.refresh_context().await.unwrap();
    assert_eq!(
        runner.state().transcript().context_fill().status_text(),
        "ctx 84% (840k/1M)"
    );
}

#[tokio::test]
async fn a_compaction_that_cannot_start_says_why() {
    let driver = Arc::new(FakeDriver {
        compact_refusal: Some("compaction is not configured in this composition".into()),
        ..FakeDriver::default()
    });
    let mut runner = runner(driver.clone());
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    for ch in "/compact".chars() {
        runner.handle(key(KeyCode::Char(ch))).await.unwrap();
    }
    runner.handle(key(KeyCode::Enter)).await.unwrap();
    assert_eq!(driver.calls(), ["compact"]);
    assert!(!runner.state().is_compacting());
    let text = buffer_text(runner.terminal().backend().buffer());
    assert!(
        text.contains("✗ compaction is not configured in this composition"),
        "{text}"
    );
}
