//! What `dsh run` prints while a session runs, folded from its session events.
//!
//! - Human mode: the answer's text deltas go to stdout as they arrive; one line per tool
//!   call, failed tool result, retry and approval goes to stderr.
//! - JSON mode (`--json`): JSON Lines on stdout: a `session` line, every session event
//!   exactly as the log stores it, and a final `result` line.
//!
//! Output errors (a closed pipe) never stop the run: the log is the record, not the screen.

use crate::tui::args_summary;
use dsh_protocol::{StreamChunk, TokenUsage};
use dsh_session::{EventData, SessionEvent, TurnEndCancelCause, TurnEndReason};
use dsh_tools_builtin::approval::{ApprovalAsked, ApprovalDecided};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Mutex, PoisonError};

/// Where the run's output goes and in which form.
pub struct RunOutput {
    json: bool,
    state: Mutex<State>,
}

impl std::fmt::Debug for RunOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOutput")
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

struct State {
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    /// Whether stdout ends with a newline (or nothing was written).
    at_line_start: bool,
    /// The reason of the latest `turn/end` seen.
    last_end: Option<TurnEndReason>,
    usage: TokenUsage,
}

/// Sums token counts; optional counts stay absent until some message reports them.
fn add_usage(total: &mut TokenUsage, usage: &TokenUsage) {
    let add = |a: &mut Option<u64>, b: Option<u64>| {
        if let Some(b) = b {
            *a = Some(a.unwrap_or(0) + b);
        }
    };
    total.input_tokens += usage.input_tokens;
    total.output_tokens += usage.output_tokens;
    add(&mut total.cache_read_tokens, usage.cache_read_tokens);
    add(&mut total.cache_write_tokens, usage.cache_write_tokens);
    add(&mut total.reasoning_tokens, usage.reasoning_tokens);
}

/// The exit status a turn-end reason stands for.
pub fn exit_status(reason: Option<&TurnEndReason>) -> u8 {
    match reason {
        Some(TurnEndReason::Completed) => super::exit::SUCCESS,
        Some(TurnEndReason::Aborted {
            reason: TurnEndCancelCause::User,
        }) => super::exit::INTERRUPTED,
        _ => super::exit::FAILURE,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

impl RunOutput {
    pub fn new(json: bool, out: Box<dyn Write + Send>, err: Box<dyn Write + Send>) -> Self {
        Self {
            json,
            state: Mutex::new(State {
                out,
                err,
                at_line_start: true,
                last_end: None,
                usage: TokenUsage::default(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first JSON line, before any event.
    pub fn session(&self, id: &str, resumed: bool) {
        if self.json {
            let line = json!({
                "type": "session",
                "id": id,
                "version": dsh_session::SESSION_FORMAT_VERSION,
                "resumed": resumed,
            });
            self.state().json_line(&line);
        }
    }

    /// One appended event.
    pub fn event(&self, event: &SessionEvent) {
        let mut state = self.state();
        match &event.data {
            EventData::TurnEnd(end) => state.last_end = Some(end.reason.clone()),
            EventData::AssistantMessage(message) => {
                if let Some(usage) = &message.usage {
                    add_usage(&mut state.usage, usage);
                }
            }
            _ => {}
        }
        if self.json {
            match serde_json::to_value(event) {
                Ok(value) => state.json_line(&value),
                Err(error) => {
                    state.note(&format!("dsh: cannot print event {}: {error}", event.seq))
                }
            }
        } else {
            state.human(event);
        }
    }

    /// The reason of the last `turn/end` seen.
    pub fn outcome(&self) -> Option<TurnEndReason> {
        self.state().last_end.clone()
    }

    /// A progress or diagnostic line for stderr (human mode), after the answer's partial
    /// line is ended.
    pub fn note(&self, text: &str) {
        self.state().note(text);
    }

    /// The last line: the `result` object, or the outcome and session id on stderr.
    pub fn finish(&self, session_id: &str, stopped_by_cap: Option<u64>) {
        let mut state = self.state();
        let reason = state.last_end.clone();
        if self.json {
            let line = json!({
                "type": "result",
                "session": session_id,
                "outcome": reason.as_ref().map_or(Value::Null, |r| serde_json::to_value(r).unwrap_or(Value::Null)),
                "usage": serde_json::to_value(&state.usage).unwrap_or(Value::Null),
            });
            state.json_line(&line);
            return;
        }
        match &reason {
            Some(TurnEndReason::Completed) | None => {}
            Some(TurnEndReason::Error { error }) => {
                state.note(&format!(
                    "dsh: the turn failed: {} ({})",
                    error.message, error.code
                ));
            }
            Some(TurnEndReason::MaxTokens) => {
                state.note("dsh: the answer was cut off at the model's output limit (max-tokens)");
            }
            Some(TurnEndReason::Blocked) => match stopped_by_cap {
                Some(cap) => state.note(&format!(
                    "dsh: stopped after {cap} model requests (--max-turns {cap})"
                )),
                None => state.note("dsh: the turn was blocked before the next model request"),
            },
            Some(TurnEndReason::Aborted { reason }) => {
                let cause = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "unknown".into());
                state.note(&format!("dsh: interrupted ({cause})"));
            }
            Some(other) => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "unknown".into());
                state.note(&format!("dsh: the turn ended: {kind}"));
            }
        }
        state.note(&format!("session: {session_id}"));
    }
}

impl State {
    fn json_line(&mut self, value: &Value) {
        let mut line = value.to_string();
        line.push('\n');
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.flush();
    }

    fn end_partial_line(&mut self) {
        if !self.at_line_start {
            let _ = self.out.write_all(b"\n");
            let _ = self.out.flush();
            self.at_line_start = true;
        }
    }

    fn note(&mut self, text: &str) {
        self.end_partial_line();
        let _ = writeln!(self.err, "{text}");
        let _ = self.err.flush();
    }

    fn human(&mut self, event: &SessionEvent) {
        match &event.data {
            EventData::AssistantChunk(chunk) => {
                if let StreamChunk::TextDelta { text, .. } = &chunk.chunk {
                    if text.is_empty() {
                        return;
                    }
                    let _ = self.out.write_all(text.as_bytes());
                    let _ = self.out.flush();
                    self.at_line_start = text.ends_with('\n');
                }
            }
            EventData::AssistantMessage(_) => self.end_partial_line(),
            EventData::ToolCall(call) => {
                let summary = args_summary(&call.name, &call.arguments);
                self.note(&format!("→ {} {summary}", call.name));
            }
            EventData::ToolResult(result) => {
                if let Some(error) = &result.error {
                    let text = result.message.text();
                    self.note(&format!("  ✗ {} ({})", first_line(&text), error.code));
                }
            }
            EventData::LlmRetry(retry) => {
                let of = retry.max_retries.map_or(String::new(), |m| format!("/{m}"));
                self.note(&format!(
                    "retrying the model request ({}{of}) in {:.1}s after {}: {}",
                    retry.retry,
                    retry.delay_ms / 1000.0,
                    retry.failure.code,
                    first_line(&retry.failure.message)
                ));
            }
            EventData::Other { .. } => {
                if let Some(Ok(asked)) = event.decode::<ApprovalAsked>() {
                    self.note(&format!(
                        "approval asked: {} {}",
                        asked.tool,
                        first_line(&asked.summary)
                    ));
                } else if let Some(Ok(decided)) = event.decode::<ApprovalDecided>() {
                    self.note(&format!("approval: {}", decided.decision.as_str()));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
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

    fn turn() -> Vec<SessionEvent> {
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
            event(
                3,
                "tool/call",
                json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash",
                       "arguments": "{\"command\":\"ls -la\"}"}),
            ),
            event(
                4,
                "llm/retry",
                json!({"retryId": "r1", "turn": 1, "step": 2, "provider": "p", "mode": "normal",
                       "policyKey": "k", "retry": 1, "maxRetries": 3, "delayMs": 1500,
                       "failure": {"message": "busy\nmore", "code": "RATE_LIMITED", "status": 429}}),
            ),
            chunk(
                5,
                json!({"type": "text-delta", "index": 0, "text": "Done.\n"}),
            ),
            event(
                6,
                "turn/end",
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
        ]
    }

    #[test]
    fn human_mode_streams_text_to_stdout_and_progress_to_stderr() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let output = RunOutput::new(false, Box::new(out.clone()), Box::new(err.clone()));
        output.session("session-1", false);
        for event in turn() {
            output.event(&event);
        }
        output.finish("session-1", None);
        assert_eq!(out.text(), "Let me check.\nDone.\n");
        assert_eq!(
            err.text(),
            "→ bash ls -la\n\
             retrying the model request (1/3) in 1.5s after RATE_LIMITED: busy\n\
             session: session-1\n"
        );
        assert_eq!(exit_status(output.outcome().as_ref()), exit::SUCCESS);
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
}
