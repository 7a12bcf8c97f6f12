//! Subagents in the terminal UI: the start, settlement and report cards printed into
//! scrollback from the parent's log, and the live list of working children above the input.

use super::tui_support::*;
use dsh_cli::tui::interactive::{Input, OpenedHow};
use dsh_cli::tui::LiveChild;
use dsh_session::SessionEvent;
use serde_json::{json, Value};
use std::sync::Arc;

const CHILD: &str = "session-child-1";

/// A parent turn that starts a background child (`subagent`, with the durable link).
fn start_child(log: &mut Log) -> Vec<Arc<SessionEvent>> {
    let mut events = log.turn_start(1);
    events.push(log.user("Scan the API"));
    events.push(log.add(
        "tool/call",
        json!({"turn": 1, "step": 1, "callId": "c1", "name": "subagent",
            "arguments": "{\"description\": \"find callers\", \"prompt\": \"grep it\"}"}),
    ));
    events.push(log.add(
        "tool/result",
        json!({"turn": 1, "step": 1, "meta": {"subagent": {"id": CHILD, "label": "find callers", "event": "started"}},
            "message": {"id": "r1", "role": "user", "source": {"kind": "tool", "callId": "c1"},
            "content": [{"type": "tool-result", "toolCallId": "c1",
                "content": [{"type": "text", "text": format!("started subagent {CHILD}")}]}]}}),
    ));
    events.push(log.assistant("Started it; I will wait."));
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    events
}

fn notice(id: &str, kind: &str, content: Value) -> Value {
    json!({"id": id, "role": "user", "content": content,
        "source": {"kind": kind, "form": if kind == "subagent-settled" { "notice" } else { "relay" },
            "senderSessionId": CHILD}})
}

/// The child's settlement notice queued for the parent (its own next turn).
fn settled(log: &mut Log, id: &str, summary: &str, closing: &str) -> Arc<SessionEvent> {
    let content = json!([{"type": "text", "text": summary}, {"type": "text", "text": "Its closing message:"},
        {"type": "text", "text": closing}]);
    log.add(
        "agent/inbox/spliced",
        json!({"target": "next-turn", "start": 0, "inserted": [notice(id, "subagent-settled", content)]}),
    )
}

fn reported(log: &mut Log, id: &str, text: &str) -> Arc<SessionEvent> {
    let content = json!([{"type": "text", "text": format!("Background subagent {CHILD} reported:")},
        {"type": "text", "text": text}]);
    log.add(
        "agent/inbox/spliced",
        json!({"target": "next-step", "start": 0, "inserted": [notice(id, "subagent-report", content)]}),
    )
}

#[test]
fn a_background_child_gets_a_start_card_then_its_report_and_settlement_cards() {
    let mut state = new_state(60);
    let mut log = Log::default();
    let events = start_child(&mut log);
    // The card comes right after the tool card and before the assistant's answer.
    assert_eq!(
        scrollback(&feed(&mut state, &events)),
        [
            "",
            "› Scan the API",
            "",
            "✓ subagent  find callers",
            "  └ started subagent session-child-1",
            "",
            "◆ subagent started  find callers",
            "  session-child-1 · background",
            "",
            "• Started it; I will wait.",
            "",
            "─ turn 1 completed",
        ]
    );

    let report = reported(&mut log, "n1", "found 3 callers so far");
    assert_eq!(
        scrollback(&state.reduce(session_input(&report))),
        [
            "",
            "◆ subagent reported  find callers",
            "  session-child-1",
            "  │ found 3 callers so far",
        ]
    );
    let closing: Vec<String> = (1..=9).map(|n| format!("caller {n}")).collect();
    let settle = settled(
        &mut log,
        "n2",
        &format!("Background subagent {CHILD} finished and will do no further work unless you send it more."),
        &closing.join("\n"),
    );
    assert_eq!(
        scrollback(&state.reduce(session_input(&settle))),
        [
            "",
            "◆ subagent done  find callers",
            "  session-child-1",
            "  │ caller 1",
            "  │ caller 2",
            "  │ caller 3",
            "  │ caller 4",
            "  │ caller 5",
            "  │ caller 6",
            "  … 3 more lines",
        ]
    );
    // The notice re-queued (a cancel keeps the inbox) is not shown twice.
    let again = log.add(
        "agent/inbox/spliced",
        json!({"target": "next-turn", "start": 0, "removedCount": 1,
            "inserted": [notice("n2", "subagent-settled", json!([{"type": "text", "text": "Background subagent x finished"}]))]}),
    );
    assert_eq!(
        scrollback(&state.reduce(session_input(&again))),
        Vec::<String>::new()
    );
    // When the parent reads the notice, it is not printed as a prompt either.
    let mut read = log.turn_start(2);
    read.push(log.add(
        "user/message",
        notice(
            "n2",
            "subagent-settled",
            json!([{"type": "text", "text": "Background subagent x finished"}]),
        ),
    ));
    let printed = scrollback(&feed(&mut state, &read));
    assert!(
        printed.iter().all(|l| !l.contains("finished")),
        "{printed:#?}"
    );
}

#[test]
fn settlement_cards_say_how_the_epoch_ended() {
    let cases = [
        (
            "was stopped before it finished.",
            "◆ subagent interrupted  find callers",
        ),
        (
            "ran out of room before it finished.",
            "◆ subagent stopped early  find callers",
        ),
        (
            "declined the task.",
            "◆ subagent stopped early  find callers",
        ),
        (
            "failed before it finished.",
            "◆ subagent failed  find callers",
        ),
    ];
    for (tail, head) in cases {
        let mut state = new_state(60);
        let mut log = Log::default();
        feed(&mut state, &start_child(&mut log));
        let event = settled(
            &mut log,
            "n",
            &format!("Background subagent {CHILD} {tail}"),
            "partial",
        );
        let printed = scrollback(&state.reduce(session_input(&event)));
        assert_eq!(printed[1], head, "{tail}");
    }
}

#[test]
fn a_resumed_parent_shows_its_children_cards_again() {
    let mut log = Log::default();
    start_child(&mut log);
    settled(
        &mut log,
        "n1",
        &format!("Background subagent {CHILD} finished and will do no further work unless you send it more."),
        "all done",
    );
    let mut state = dsh_cli::tui::interactive::InteractiveState::new(60);
    let printed = scrollback(&state.reduce(Input::Opened(opened(
        log.events.clone(),
        OpenedHow::Resumed,
    ))));
    let cards: Vec<&String> = printed.iter().filter(|l| l.starts_with('◆')).collect();
    assert_eq!(
        cards,
        [
            "◆ subagent started  find callers",
            "◆ subagent done  find callers"
        ]
    );
    assert!(printed.contains(&"  │ all done".to_owned()), "{printed:#?}");
}

#[test]
fn working_children_are_listed_above_the_input_until_they_settle() {
    let mut state = new_state(70);
    let children = vec![
        LiveChild {
            id: "session-a".into(),
            label: "find callers".into(),
            background: true,
        },
        LiveChild {
            id: "session-b".into(),
            label: "review the diff".into(),
            background: false,
        },
    ];
    assert_eq!(
        scrollback(&state.reduce(Input::Children(children))),
        Vec::<String>::new()
    );
    let shown = screen(&state, 8);
    assert!(
        shown.contains("◇ find callers  session-a · background · working\n◇ review the diff  session-b · one-shot · working"),
        "{shown}"
    );
    assert_eq!(state.children().len(), 2);
    state.reduce(Input::Children(Vec::new()));
    assert!(!screen(&state, 8).contains('◇'));
}

#[test]
fn agents_id_prints_the_childs_conversation_between_labelled_rules() {
    use dsh_cli::tui::interactive::{AgentTranscript, Effect};
    use dsh_protocol::SessionId;
    let mut state = new_state(60);
    assert_eq!(type_text(&mut state, "/agents child"), Vec::<Effect>::new());
    let effects = state.reduce(key(crossterm::event::KeyCode::Enter));
    assert_eq!(actions(effects), [Effect::ViewAgent("child".into())]);

    let mut child = Log::default();
    let mut events = child.turn_start(1);
    events.push(child.user("grep it"));
    events.push(child.assistant("3 callers"));
    events.extend(child.turn_end(1, json!({"kind": "completed"})));
    let printed = scrollback(&state.reduce(Input::AgentTranscript(AgentTranscript {
        id: SessionId::new("c-1"),
        label: "find callers".into(),
        events,
        seeded: 2,
    })));
    assert_eq!(
        printed,
        [
            "",
            "── subagent c-1 · find callers · read-only ─────────────────",
            "(it started from 2 events of its parent's history, not shown)",
            "› grep it",
            "",
            "• 3 callers",
            "",
            "─ turn 1 completed",
            "── end of subagent c-1 (read-only) ─────────────────────────",
        ]
    );
    // The session on screen is unchanged.
    assert_eq!(state.session().map(|s| s.as_str()), Some(SESSION));
}
