//! Payloads of the core event types (spec §5.2) and the plugin-owned types the core reads.
//!
//! Each payload serializes to the exact `data` object the original writes. Optional fields
//! are omitted when absent, and flags the original writes only when set (`interrupted`,
//! `removedCount`) are omitted when unset, so a parsed event re-serializes unchanged.

use dsh_protocol::{CallId, EpochHeader, LlmFailure, Message, RawJson, StreamChunk, TokenUsage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// `turn/start`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnStart {
    pub turn: u64,
}

/// `turn/end`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnEnd {
    pub turn: u64,
    pub reason: TurnEndReason,
}

/// `step/start` and `step/end`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepBoundary {
    pub turn: u64,
    pub step: u64,
}

/// Why a turn closed. Merge-extensible: kinds this build does not know are kept verbatim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TurnEndReason {
    /// Nothing was owed any more.
    Completed,
    /// A pre-step decision rejected the proposed step.
    Blocked,
    /// The turn's signal was aborted with this cause.
    Aborted { reason: TurnEndCancelCause },
    /// A non-abort failure.
    Error { error: LlmFailure },
    /// A step hit the output cap.
    MaxTokens,
    /// Closed by crash repair on reload; the loop never writes it.
    Interrupted,
    /// A kind this build does not know.
    #[serde(untagged)]
    Other(Map<String, Value>),
}

/// The durable form of a cancel cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TurnEndCancelCause {
    User,
    Parent,
    Hook {
        reason: String,
    },
    Disposed,
    /// Only produced when importing logs of older builds.
    Legacy,
}

/// `assistant/chunk`: one stream chunk, verbatim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantChunk {
    pub turn: u64,
    pub step: u64,
    pub chunk: StreamChunk,
}

/// `assistant/message`: the assembled answer of one model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub turn: u64,
    pub step: u64,
    pub message: Arc<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Set when the stream was cancelled after visible text streamed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// `tool/call`: a call the loop is about to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub turn: u64,
    pub step: u64,
    pub call_id: CallId,
    pub name: String,
    /// The raw JSON text the model produced.
    pub arguments: String,
}

/// `tool/result`: the result message of one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub turn: u64,
    pub step: u64,
    pub message: Arc<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolErrorInfo>,
    /// Presentation data of the tool (diffs, spill paths, subagent links), free-form; kept
    /// as JSON text, parsed by the readers that use it ([`RawJson::to_value`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RawJson>,
}

/// The error class of a failed tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolErrorInfo {
    pub name: String,
    pub code: String,
}

/// `todo/write`: the whole todo list after a write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoWrite {
    pub todos: Vec<Todo>,
}

/// One todo item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
}

/// Progress of a todo item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// `request/header`: what the model saw besides messages, logged when it changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestHeader {
    pub header: EpochHeader,
    pub reason: HeaderReason,
}

/// Why a header was logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeaderReason {
    /// First request of a loop on a log without a header.
    Initial,
    /// First request of a loop on a log that already has one.
    Resume,
    /// A later request whose header differs from the previous one.
    Change,
}

/// `request/context`: the route and its context window, logged when it changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestContext {
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// `agent/inbox/spliced`: one durable inbox mutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxSplice {
    pub target: InboxTarget,
    pub start: u64,
    /// Omitted on the wire when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub removed_count: u64,
    pub inserted: Vec<Arc<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SpliceOutcome>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which inbox list a splice edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InboxTarget {
    NextTurn,
    NextStep,
}

/// Set on splices that discarded pending input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpliceOutcome {
    Canceled,
}

/// `llm/retry`: the retry policy scheduled another attempt of a failed request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetry {
    pub retry_id: String,
    pub turn: u64,
    pub step: u64,
    pub provider: String,
    pub mode: String,
    pub policy_key: String,
    /// 1-based attempt number of the retry.
    pub retry: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u64>,
    /// Planned delay (jittered, so usually fractional); written like JavaScript writes
    /// numbers, so whole values have no fraction.
    #[serde(with = "js_number")]
    pub delay_ms: f64,
    pub failure: LlmFailure,
}

/// `llm/retry-started`: the scheduled retry began.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetryStarted {
    pub retry_id: String,
    pub turn: u64,
    pub step: u64,
    pub retry: u64,
}

/// `f64` written the way JavaScript's `JSON.stringify` writes it: whole values as integers.
mod js_number {
    use serde::{Deserialize, Deserializer, Serializer};

    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        let v = *value;
        if v.fract() == 0.0 && v.abs() <= MAX_SAFE && !(v == 0.0 && v.is_sign_negative()) {
            // Exact: |v| <= 2^53 and whole, so the cast loses nothing.
            serializer.serialize_i64(v as i64)
        } else {
            serializer.serialize_f64(v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        f64::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(raw: Value) -> T {
        let parsed: T = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), raw);
        parsed
    }

    #[test]
    fn turn_end_reasons_match_the_wire() {
        let r: TurnEnd = round_trip(
            json!({"turn": 2, "reason": {"kind": "aborted", "reason": {"kind": "hook", "reason": "stop"}}}),
        );
        assert_eq!(
            r.reason,
            TurnEndReason::Aborted {
                reason: TurnEndCancelCause::Hook {
                    reason: "stop".into()
                }
            }
        );
        let r: TurnEnd = round_trip(json!({"turn": 1, "reason": {"kind": "max-tokens"}}));
        assert_eq!(r.reason, TurnEndReason::MaxTokens);
        let r: TurnEnd = round_trip(
            json!({"turn": 1, "reason": {"kind": "error", "error": {"message": "m", "code": "SERVER", "status": 500}}}),
        );
        assert!(matches!(r.reason, TurnEndReason::Error { .. }));
        let r: TurnEnd = round_trip(json!({"turn": 1, "reason": {"kind": "future", "x": 1}}));
        assert!(matches!(r.reason, TurnEndReason::Other(_)));
    }

    #[test]
    fn retry_delay_is_written_like_javascript() {
        let retry: LlmRetry = round_trip(
            json!({"retryId": "r", "turn": 1, "step": 1, "provider": "p",
            "mode": "normal", "policyKey": "k", "retry": 1, "maxRetries": 5, "delayMs": 500,
            "failure": {"message": "m", "code": "SERVER"}}),
        );
        assert_eq!(retry.delay_ms, 500.0);
        let _: LlmRetry = round_trip(
            json!({"retryId": "r", "turn": 1, "step": 1, "provider": "p",
            "mode": "normal", "policyKey": "k", "retry": 1, "delayMs": 459.86271468051063,
            "failure": {"message": "m", "code": "SERVER"}}),
        );
    }

    #[test]
    fn splices_omit_zero_counts_and_absent_outcomes() {
        let splice: InboxSplice = round_trip(
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
        );
        assert_eq!(splice.removed_count, 1);
        let splice: InboxSplice = round_trip(
            json!({"target": "next-step", "start": 3, "inserted": [], "outcome": "canceled"}),
        );
        assert_eq!(splice.outcome, Some(SpliceOutcome::Canceled));
    }

    #[test]
    fn tool_result_meta_is_kept_as_written() {
        let text = r#"{"turn":1,"step":2,"message":{"id":"m","role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"1\tx"}],"isError":false}],"source":{"kind":"tool","callId":"c"}},"meta":{"path":"a.rs","lines":[{"n":1,"text":"x"}],"ratio":1.0}}"#;
        let result: ToolResult = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&result).unwrap(), text);
        let meta = result.meta.as_ref().unwrap();
        assert_eq!(meta.to_value()["lines"][0]["text"], "x");
        // The general reader (from a `Value`) reads the same payload.
        let value: Value = serde_json::from_str(text).unwrap();
        let general = ToolResult::deserialize(&value).unwrap();
        assert_eq!(general, result);
        assert_eq!(serde_json::to_value(&general).unwrap(), value);
    }

    #[test]
    fn todos_use_snake_case_status() {
        let todos: TodoWrite =
            round_trip(json!({"todos": [{"content": "a", "status": "in_progress"}]}));
        assert_eq!(todos.todos[0].status, TodoStatus::InProgress);
    }
}
