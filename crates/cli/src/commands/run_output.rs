//! What `dsh run` prints while a session runs, folded from its session events.
//!
//! - Human mode: the answer goes to stdout; one line per tool call, failed tool result,
//!   retry, approval and compaction goes to stderr. A compaction that lands reads
//!   `compacted: N messages (~T tokens) → summary (~S tokens)` (N shadowed history items of
//!   T estimated tokens replaced by a checkpoint of S); one that fails says why and that the
//!   turn goes on.
//!   - stdout on a terminal: text deltas are shown as they arrive. When an attempt that
//!     showed text fails (a stream reset, say), a marker line says the text above it is
//!     discarded; a retry's answer follows.
//!   - stdout a pipe or a file: exactly the answer text the log keeps (the text blocks of
//!     each `assistant/message`), written when the model finishes each step, so a retried
//!     attempt's partial text never reaches a program reading it.
//!
//!   Everything from a model or a tool (the answer, commands, paths, error messages) goes
//!   through [`crate::sanitize`] on its way to a terminal; to a pipe or a file it is exact.
//! - JSON mode (`--json`): JSON Lines on stdout: a `session` line, every session event
//!   exactly as the log stores it, and a final `result` line.
//!
//! Output errors (a closed pipe, a full disk) never stop the run: the log is the record, not
//! the screen. A failure to write stdout is remembered ([`RunOutput::stdout_failure`]) so
//! that the run can report it and exit 1 at the end.

use super::write_check::{CheckedWrite, WriteFailure};
use crate::sanitize::{for_terminal, TerminalSanitizer};
use crate::tui::args_summary;
use dsh_compaction::{CompactionEnd, CompactionSummary};
use dsh_protocol::{ContentBlock, FinishReason, StreamChunk, TokenUsage};
use dsh_session::{EventData, SessionEvent, SurfaceOp, TurnEndCancelCause, TurnEndReason};
use dsh_tools_builtin::approval::{ApprovalAsked, ApprovalDecided};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Mutex, PoisonError};

/// Where the run's output goes and in which form.
pub struct RunOutput {
    json: bool,
    state: Mutex<State>,
    stdout_failure: WriteFailure,
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
    /// Whether stdout and stderr are terminals (see the module docs).
    out_terminal: bool,
    err_terminal: bool,
    /// Continues sequences across the answer's deltas on a terminal.
    sanitizer: TerminalSanitizer,
    /// Whether the model attempt in flight has shown text on the terminal.
    attempt_shown: bool,
    /// Whether stdout ends with a newline (or nothing was written).
    at_line_start: bool,
    /// The reason of the latest `turn/end` seen.
    last_end: Option<TurnEndReason>,
    usage: TokenUsage,
    /// The latest `compaction/summary` (shadowed items, their tokens), until its checkpoint
    /// message lands.
    compaction: Option<(usize, u64)>,
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

/// The text a tool result carries (inside its tool-result block).
fn result_text(message: &dsh_protocol::Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => out.push_str(text),
            ContentBlock::ToolResult { content, .. } => {
                for text in content.iter().filter_map(ContentBlock::as_text) {
                    out.push_str(text);
                    out.push('\n');
                }
            }
            _ => {}
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

impl RunOutput {
    pub fn new(json: bool, out: Box<dyn Write + Send>, err: Box<dyn Write + Send>) -> Self {
        let stdout_failure = WriteFailure::default();
        let out = Box::new(CheckedWrite::new(out, stdout_failure.clone()));
        Self {
            json,
            stdout_failure,
            state: Mutex::new(State {
                out,
                err,
                out_terminal: false,
                err_terminal: false,
                sanitizer: TerminalSanitizer::new(),
                attempt_shown: false,
                at_line_start: true,
                last_end: None,
                usage: TokenUsage::default(),
                compaction: None,
            }),
        }
    }

    /// Says which of stdout and stderr are terminals (both are taken as pipes otherwise):
    /// text bound for a terminal is sanitized, and stdout streams the answer only to one.
    pub fn with_terminals(self, stdout: bool, stderr: bool) -> Self {
        {
            let mut state = self.state();
            state.out_terminal = stdout;
            state.err_terminal = stderr;
        }
        self
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

    /// A child of the run's tree started (`ended` false) or ended: a `child` JSON line, or a
    /// note on stderr.
    pub fn child(&self, lifecycle: &dsh_subagents::ChildLifecycle, ended: bool) {
        let mut state = self.state();
        if self.json {
            let mut line = json!({
                "type": "child",
                "session": lifecycle.id.as_str(),
                "event": if ended { "end" } else { "start" },
                "parent": lifecycle.parent.as_str(),
                "label": lifecycle.label,
                "mode": lifecycle.mode,
                "runId": lifecycle.run_id,
            });
            if let Some(stop) = lifecycle.stop {
                line["stopReason"] = json!(stop.as_str());
            }
            state.json_line(&line);
            return;
        }
        let text = match (ended, lifecycle.stop) {
            (false, _) => format!(
                "dsh: subagent started: {} ({})",
                lifecycle.label, lifecycle.id
            ),
            (true, Some(stop)) => format!(
                "dsh: subagent {}: {} ({})",
                stop.as_str(),
                lifecycle.label,
                lifecycle.id
            ),
            (true, None) => format!(
                "dsh: subagent ended: {} ({})",
                lifecycle.label, lifecycle.id
            ),
        };
        state.note(&text);
    }

    /// Why writing stdout failed, if it did (a closed pipe does not count).
    pub fn stdout_failure(&self) -> Option<String> {
        self.stdout_failure.get()
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

    /// The plan a `dsh run --plan` turn presented: on stdout after the answer (a `plan` line
    /// in JSON mode).
    pub fn plan(&self, plan: &str) {
        let mut state = self.state();
        if self.json {
            state.json_line(&json!({"type": "plan", "plan": plan}));
            return;
        }
        state.end_partial_line();
        let text = for_terminal(plan, state.out_terminal).into_owned();
        state.answer(&text);
        state.end_partial_line();
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
            Some(TurnEndReason::Aborted {
                reason: TurnEndCancelCause::Hook { reason },
            }) => state.note(&format!("dsh: stopped by a hook: {reason}")),
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
        let text = for_terminal(text, self.err_terminal);
        let _ = writeln!(self.err, "{text}");
        let _ = self.err.flush();
    }

    /// Writes answer text to stdout (already sanitized when stdout is a terminal).
    fn answer(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
        self.at_line_start = text.ends_with('\n');
    }

    fn chunk(&mut self, chunk: &StreamChunk) {
        if !self.out_terminal {
            return; // a pipe gets the logged message instead
        }
        match chunk {
            StreamChunk::TextDelta { text, .. } => {
                let shown = self.sanitizer.clean(text);
                self.attempt_shown |= !shown.is_empty();
                self.answer(&shown);
            }
            StreamChunk::Finish { reason, .. } => {
                self.sanitizer.reset();
                let shown = std::mem::take(&mut self.attempt_shown);
                if let (true, FinishReason::Error { failure }) = (shown, reason) {
                    // What is on screen cannot be taken back; say that the log does not keep it.
                    self.end_partial_line();
                    let code = for_terminal(&failure.code, true).into_owned();
                    self.answer(&format!(
                        "[the answer above broke off ({code}) and is discarded]\n"
                    ));
                }
            }
            _ => {}
        }
    }

    fn human(&mut self, event: &SessionEvent) {
        let pending = self.compaction.take();
        match &event.data {
            EventData::UserMessage(message)
                if matches!(event.surface_op, Some(SurfaceOp::Replace { .. })) =>
            {
                if let Some((messages, tokens)) = pending {
                    let summary = dsh_compaction::estimate_message(message);
                    self.note(&format!(
                        "compacted: {messages} messages (~{tokens} tokens) → summary (~{summary} tokens)"
                    ));
                }
            }
            // An `@session` reference that could not be read: the turn went on without it.
            EventData::UserMessage(message) => {
                for error in dsh_memory::reference_errors(message) {
                    self.note(&format!("session reference skipped: {error}"));
                }
            }
            EventData::AssistantChunk(chunk) => self.chunk(&chunk.chunk),
            EventData::AssistantMessage(message) => {
                if !self.out_terminal {
                    for block in &message.message.content {
                        if let ContentBlock::Text { text } = block {
                            self.answer(text);
                        }
                    }
                }
                self.end_partial_line();
            }
            EventData::ToolCall(call) => {
                let summary = args_summary(&call.name, &call.arguments);
                self.note(&format!("→ {} {summary}", call.name));
            }
            EventData::ToolResult(result) => {
                if let Some(error) = &result.error {
                    let text = result_text(&result.message);
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
                } else if let Some(Ok(summary)) = event.decode::<CompactionSummary>() {
                    self.compaction =
                        Some((summary.shadowed_seqs.len(), summary.shadowed_token_count));
                } else if let Some(Ok(end)) = event.decode::<CompactionEnd>() {
                    if let Some(error) = &end.error {
                        self.note(&format!(
                            "compaction failed: {}; the conversation is unchanged",
                            first_line(error)
                        ));
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
