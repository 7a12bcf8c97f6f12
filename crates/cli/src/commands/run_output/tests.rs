use super::*;
use crate::commands::exit;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn event(seq: u64, type_name: &str, data: Value) -> SessionEvent {
    SessionEvent::from_value(&json!({"type": type_name, "seq": seq, "time": 1, "data": data}))
        .unwrap()
}

fn chunk(seq: u64, chunk: Value) -> SessionEvent {
    event(
        seq,
        "assistant/chunk",
        json!({"turn": 1, "step": 1, "chunk": chunk}),
    )
}

fn message(seq: u64, step: u64, content: Value) -> SessionEvent {
    event(
        seq,
        "assistant/message",
        json!({"turn": 1, "step": step, "message": {"id": format!("a{seq}"), "role": "assistant",
            "content": content, "source": {"kind": "model", "provider": "p", "model": "m"}}}),
    )
}

fn finish(seq: u64, step: u64, reason: Value) -> SessionEvent {
    event(
        seq,
        "assistant/chunk",
        json!({"turn": 1, "step": step, "chunk": {"type": "finish", "reason": reason}}),
    )
}

fn turn() -> Vec<SessionEvent> {
    let call = json!({"type": "tool-call", "id": "c1", "name": "bash",
        "arguments": "{\"command\":\"ls -la\"}"});
    vec![
        event(0, "turn/start", json!({"turn": 1})),
        chunk(
            1,
            json!({"type": "text-delta", "index": 0, "text": "Let me "}),
        ),
        chunk(
            2,
            json!({"type": "text-delta", "index": 0, "text": "check."}),
        ),
        finish(3, 1, json!({"kind": "tool-calls"})),
        message(
            4,
            1,
            json!([{"type": "text", "text": "Let me check."}, call]),
        ),
        event(
            5,
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash",
                   "arguments": "{\"command\":\"ls -la\"}"}),
        ),
        event(
            6,
            "llm/retry",
            json!({"retryId": "r1", "turn": 1, "step": 2, "provider": "p", "mode": "normal",
                   "policyKey": "k", "retry": 1, "maxRetries": 3, "delayMs": 1500,
                   "failure": {"message": "busy\nmore", "code": "RATE_LIMITED", "status": 429}}),
        ),
        chunk(
            7,
            json!({"type": "text-delta", "index": 0, "text": "Done.\n"}),
        ),
        finish(8, 2, json!({"kind": "stop"})),
        message(9, 2, json!([{"type": "text", "text": "Done.\n"}])),
        event(
            10,
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]
}

/// Folds `events` with stdout and stderr as terminals (`terminal`) or as pipes; what
/// each received.
fn human(events: &[SessionEvent], terminal: bool) -> (String, String) {
    let (out, err) = (Buffer::default(), Buffer::default());
    let output = RunOutput::new(false, Box::new(out.clone()), Box::new(err.clone()))
        .with_terminals(terminal, terminal);
    output.session("session-1", false);
    for event in events {
        output.event(event);
    }
    output.finish("session-1", None);
    (out.text(), err.text())
}

#[test]
fn human_mode_streams_text_to_stdout_and_progress_to_stderr() {
    for terminal in [true, false] {
        let (out, err) = human(&turn(), terminal);
        assert_eq!(out, "Let me check.\nDone.\n", "terminal: {terminal}");
        assert_eq!(
            err,
            "→ bash ls -la\n\
             retrying the model request (1/3) in 1.5s after RATE_LIMITED: busy\n\
             session: session-1\n",
            "terminal: {terminal}"
        );
    }
    let (out, err) = (Buffer::default(), Buffer::default());
    let output = RunOutput::new(false, Box::new(out.clone()), Box::new(err.clone()));
    for event in turn() {
        output.event(&event);
    }
    assert_eq!(exit_status(output.outcome().as_ref()), exit::SUCCESS);
}

/// A stream reset after "Hel", retried, then the whole answer.
fn retried_turn() -> Vec<SessionEvent> {
    let failure = json!({"message": "reading the model API response failed", "code": "TRANSPORT"});
    vec![
        event(0, "turn/start", json!({"turn": 1})),
        chunk(1, json!({"type": "text-delta", "index": 0, "text": "Hel"})),
        finish(2, 1, json!({"kind": "error", "failure": failure})),
        event(
            3,
            "llm/retry",
            json!({"retryId": "r1", "turn": 1, "step": 1, "provider": "p", "mode": "normal",
                   "policyKey": "k", "retry": 1, "maxRetries": 5, "delayMs": 500,
                   "failure": failure}),
        ),
        chunk(
            4,
            json!({"type": "text-delta", "index": 0, "text": "Hello!"}),
        ),
        finish(5, 1, json!({"kind": "stop"})),
        message(6, 1, json!([{"type": "text", "text": "Hello!"}])),
        event(
            7,
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]
}

#[test]
fn a_pipe_gets_only_the_text_the_log_keeps() {
    let (out, _) = human(&retried_turn(), false);
    assert_eq!(out, "Hello!\n");
}

#[test]
fn a_terminal_sees_the_discarded_attempt_marked() {
    let (out, err) = human(&retried_turn(), true);
    assert_eq!(
        out,
        "Hel\n[the answer above broke off (TRANSPORT) and is discarded]\nHello!\n"
    );
    assert_eq!(
        err,
        "retrying the model request (1/5) in 0.5s after TRANSPORT: reading the model API response failed\n\
         session: session-1\n"
    );
    // An attempt that failed before showing anything needs no marker.
    let mut quiet = retried_turn();
    quiet.remove(1);
    let (out, _) = human(&quiet, true);
    assert_eq!(out, "Hello!\n");
}

/// A turn whose answer, command and tool error carry terminal escape sequences.
fn hostile_turn() -> Vec<SessionEvent> {
    let command = "{\"command\":\"echo \\u001b]0;PWNED\\u0007hi\"}";
    let answer = "Done\u{1b}]52;c;cm0gLXJm\u{7}. \u{1b}[31mred\u{1b}[0m 漢字\n";
    vec![
        event(0, "turn/start", json!({"turn": 1})),
        event(
            1,
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": command}),
        ),
        event(
            2,
            "tool/result",
            json!({"turn": 1, "step": 1, "message": {"id": "r1", "role": "user",
                "source": {"kind": "tool", "callId": "c1"},
                "content": [{"type": "tool-result", "toolCallId": "c1",
                    "content": [{"type": "text", "text": "no \u{1b}[2Jway"}], "isError": true}]},
                "error": {"name": "ToolError", "code": "EXIT_1"}}),
        ),
        // Split inside the OSC sequence, as a stream may cut it.
        chunk(
            3,
            json!({"type": "text-delta", "index": 0, "text": &answer[..9]}),
        ),
        chunk(
            4,
            json!({"type": "text-delta", "index": 0, "text": &answer[9..]}),
        ),
        finish(5, 2, json!({"kind": "stop"})),
        message(6, 2, json!([{"type": "text", "text": answer}])),
        event(
            7,
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]
}

#[test]
fn a_terminal_never_receives_escape_sequences_from_the_model_or_tools() {
    let (out, err) = human(&hostile_turn(), true);
    assert_eq!(out, "Done. red 漢字\n");
    assert_eq!(
        err,
        "→ bash echo hi\n  ✗ no way (EXIT_1)\nsession: session-1\n"
    );
    assert!(!out.contains('\u{1b}') && !err.contains('\u{1b}'));
}

#[test]
fn a_pipe_receives_the_bytes_exactly() {
    let (out, err) = human(&hostile_turn(), false);
    assert_eq!(
        out,
        "Done\u{1b}]52;c;cm0gLXJm\u{7}. \u{1b}[31mred\u{1b}[0m 漢字\n"
    );
    assert_eq!(
        err,
        "→ bash echo \u{1b}]0;PWNED\u{7}hi\n  ✗ no \u{1b}[2Jway (EXIT_1)\nsession: session-1\n"
    );
}

#[test]
fn human_mode_notes_approval_questions_and_answers() {
    let (out, err) = (Buffer::default(), Buffer::default());
    let output = RunOutput::new(false, Box::new(out.clone()), Box::new(err.clone()));
    let plugin = |seq, data: EventData| SessionEvent {
        seq,
        time: 1,
        data,
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    };
    let asked = ApprovalAsked {
        call_id: "c1".into(),
        tool: "bash".into(),
        summary: "cargo publish\n--dry-run".into(),
        reason: None,
        escalation: None,
    };
    let decided = ApprovalDecided {
        call_id: "c1".into(),
        decision: dsh_tools_builtin::approval::DecisionKind::Deny,
        remembered: None,
        feedback: None,
    };
    output.event(&plugin(0, EventData::plugin(&asked).unwrap()));
    output.event(&plugin(1, EventData::plugin(&decided).unwrap()));
    // Another plugin type, and an approval record shaped by another writer, print nothing.
    output.event(&event(2, "session/title", json!({"title": "t"})));
    output.event(&event(
        3,
        "approval/decided",
        json!({"outcome": "rejected"}),
    ));
    assert_eq!(out.text(), "");
    assert_eq!(
        err.text(),
        "approval asked: bash cargo publish\napproval: deny\n"
    );
}

#[test]
fn json_mode_prints_envelopes_between_session_and_result_lines() {
    let (out, err) = (Buffer::default(), Buffer::default());
    let output = RunOutput::new(true, Box::new(out.clone()), Box::new(err.clone()));
    output.session("session-1", true);
    let events = turn();
    for event in &events {
        output.event(event);
    }
    output.finish("session-1", None);
    let lines: Vec<Value> = out
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), events.len() + 2);
    assert_eq!(
        lines[0],
        json!({"type": "session", "id": "session-1", "version": 0, "resumed": true})
    );
    for (line, event) in lines[1..].iter().zip(&events) {
        assert_eq!(line, &serde_json::to_value(event).unwrap());
    }
    assert_eq!(
        lines.last().unwrap(),
        &json!({"type": "result", "session": "session-1", "outcome": {"kind": "completed"},
                "usage": {"inputTokens": 0, "outputTokens": 0}})
    );
    assert_eq!(err.text(), "");
}

#[test]
fn exit_statuses_follow_the_turn_end() {
    let reason = |value: Value| serde_json::from_value::<TurnEndReason>(value).unwrap();
    let cases = [
        (json!({"kind": "completed"}), exit::SUCCESS),
        (
            json!({"kind": "aborted", "reason": {"kind": "user"}}),
            exit::INTERRUPTED,
        ),
        (
            json!({"kind": "aborted", "reason": {"kind": "disposed"}}),
            exit::FAILURE,
        ),
        (json!({"kind": "blocked"}), exit::FAILURE),
        (json!({"kind": "max-tokens"}), exit::FAILURE),
        (
            json!({"kind": "error", "error": {"message": "no", "code": "X"}}),
            exit::FAILURE,
        ),
    ];
    for (value, status) in cases {
        assert_eq!(exit_status(Some(&reason(value.clone()))), status, "{value}");
    }
    assert_eq!(exit_status(None), exit::FAILURE);
}

/// A landed compaction (start, summary, the replacing checkpoint, end), then a failed one.
fn compactions() -> Vec<SessionEvent> {
    crate::app::register_event_types().unwrap();
    let checkpoint = json!({"role": "user", "id": "u9",
        "content": [{"type": "text", "text": "Checkpoint.\n\n<compacted-summary>"},
                    {"type": "text", "text": "## Current Work\n- reading notes"},
                    {"type": "text", "text": "</compacted-summary>"}],
        "source": {"kind": "plugin", "plugin": "compact", "compactionId": "c1"}});
    let replace = SessionEvent::from_value(&json!({"type": "user/message", "seq": 7, "time": 1,
        "data": checkpoint, "surfaceOp": {"op": "replace", "start": 1, "end": 3},
        "sourceEventSeqs": [5, 6, 1, 2, 3]}))
    .unwrap();
    vec![
        event(
            5,
            "compaction/start",
            json!({"compactionId": "c1", "turn": 1}),
        ),
        event(
            6,
            "compaction/summary",
            json!({"compactionId": "c1",
            "summary": [{"type": "text", "text": "## Current Work\n- reading notes"}],
            "shadowedRange": {"start": 1, "end": 3}, "shadowedSeqs": [1, 2, 3],
            "shadowedTokenCount": 1234, "provider": "p", "model": "m", "llmStreamCall": true,
            "rawOutput": [{"type": "text", "text": "## Current Work\n- reading notes"}]}),
        ),
        replace,
        event(
            8,
            "compaction/end",
            json!({"compactionId": "c1", "turn": 1}),
        ),
        event(
            9,
            "compaction/start",
            json!({"compactionId": "c2", "turn": 1}),
        ),
        event(
            10,
            "compaction/end",
            json!({"compactionId": "c2", "turn": 1,
            "error": "summary is not smaller than the shadowed content (90 estimated framed tokens >= 80)\nmore"}),
        ),
    ]
}

#[test]
fn human_mode_reports_a_landed_compaction_and_a_failed_one() {
    let events = compactions();
    let dsh_session::EventData::UserMessage(checkpoint) = &events[2].data else {
        panic!("not a user message");
    };
    let summary_tokens = dsh_compaction::estimate_message(checkpoint);
    let (out, err) = human(&events, false);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "compacted: 3 messages (~1234 tokens) → summary (~{summary_tokens} tokens)\n\
             compaction failed: summary is not smaller than the shadowed content (90 estimated \
             framed tokens >= 80); the conversation is unchanged\n\
             session: session-1\n"
        )
    );
    // A replace with no summary before it (the pruner's tool-result rewrite is another
    // type; a hand-made log might do this) is not reported as a compaction.
    let (_, err) = human(&events[2..4], false);
    assert_eq!(err, "session: session-1\n");
}

#[test]
fn json_mode_streams_compaction_events_like_any_other() {
    let (out, err) = (Buffer::default(), Buffer::default());
    let output = RunOutput::new(true, Box::new(out.clone()), Box::new(err.clone()));
    let events = compactions();
    for event in &events {
        output.event(event);
    }
    let lines: Vec<Value> = out
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(lines, expected);
    assert_eq!(lines[1]["type"], "compaction/summary");
    assert_eq!(lines[1]["data"]["shadowedTokenCount"], 1234);
    assert_eq!(err.text(), "");
}
