//! The script that drives the mock server: what to answer, in which order, with which faults.
//!
//! The JSON shape is a superset of the `script.json` files the original's fake server used
//! (see the dsh 0.1.0 fixtures), so those files load unchanged. Unknown fields are kept aside
//! instead of rejected, so a newer script still loads; [`Script::warnings`] lists them so a typo
//! does not go unnoticed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::MockError;

/// A complete script: fallback rules plus the ordered list of scripted replies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// How a chat request picks its entry in `responses`.
    #[serde(default, skip_serializing_if = "IndexBy::is_order")]
    pub index_by: IndexBy,
    /// Checked first, in order; a matching rule answers without consuming a response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// The scripted replies.
    #[serde(default)]
    pub responses: Vec<Reply>,
    /// Model ids listed by `GET /models`; `None` lists the DeepSeek defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    #[serde(flatten, skip_serializing)]
    unknown: BTreeMap<String, Value>,
}

/// How a chat request is mapped to an entry of [`Script::responses`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexBy {
    /// The n-th chat request not answered by a rule gets `responses[n]`.
    #[default]
    #[serde(alias = "request_order", alias = "requests")]
    Order,
    /// The index is the number of assistant messages in the request, so a retried or resumed
    /// conversation gets the same reply again and one script serves several processes.
    AssistantTurns,
}

impl IndexBy {
    fn is_order(&self) -> bool {
        *self == IndexBy::Order
    }
}

/// A reusable answer for requests matching a predicate (e.g. the session-title request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// The predicate; every given condition must hold.
    #[serde(rename = "match", default)]
    pub matcher: RuleMatch,
    /// The answer.
    pub response: Reply,
}

/// Conditions on the request (its body and headers); unset fields are not checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleMatch {
    /// `true`: the request has no (or an empty) `tools` list; `false`: it has tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_tools: Option<bool>,
    /// The request sets `max_tokens` (or `max_completion_tokens`) to at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_le: Option<u64>,
    /// The request's `model` equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Request headers that must be present with exactly these values; names are
    /// case-insensitive (`{"x-deepseek-harness-compact": "1"}` picks out a DeepSeek-route
    /// compaction request, as in the fixtures' scripts).
    #[serde(default, alias = "headers", skip_serializing_if = "BTreeMap::is_empty")]
    pub header: BTreeMap<String, String>,
    /// The text of some message (string content, or the `text` of its content parts)
    /// contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_contains: Option<String>,
    /// The text of the last message contains this (a summarisation request ends with its
    /// instruction; a turn request ends with the prompt or a tool result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_contains: Option<String>,
    /// Each of these is in some non-system message's text (how a rule tells whose request
    /// it is when several agents share the server). A string or an array of strings.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub contains: Vec<String>,
    /// None of these is in any non-system message's text. A string or an array of strings.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub lacks: Vec<String>,
    /// The request offers no tool of this name (e.g. a background tool that has not appeared yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lacks_tool: Option<String>,
    #[serde(flatten, skip_serializing)]
    unknown: BTreeMap<String, Value>,
}

/// One scripted answer: a streamed (or JSON) completion, an HTTP error, or a fault.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Reasoning text, streamed as `delta.reasoning_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Answer text, streamed as `delta.content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// How many deltas the reasoning and the text are each split into (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<usize>,
    /// A single tool call (the fixtures' short form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCallSpec>,
    /// Parallel tool calls, streamed one after another with wire indexes 0, 1, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallSpec>,
    /// How many deltas each tool call's argument string is split into (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg_chunks: Option<usize>,
    /// Overrides the wire `finish_reason` (e.g. `length`, `content_filter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Overrides parts of the reported usage; unset parts are estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageSpec>,
    /// Pause before each streamed `data:` event, `[DONE]` included (the fixtures' meaning:
    /// it paces the stream). Streams only.
    #[serde(
        default,
        alias = "chunk_delay_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay_ms: Option<u64>,
    /// Pause after reading the request, before the response head (any reply kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_delay_ms: Option<u64>,
    /// Answer with this HTTP status; non-2xx statuses send an OpenAI-style error body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `error.message` of the error body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// `error.type` of the error body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// `error.code` of the error body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Value of a `Retry-After` header (seconds or an HTTP date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    /// Extra response headers (e.g. `x-request-id`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Send exactly this body instead of a rendered one (with `status`, default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Content type for `body` (default `application/json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// A transport or framing fault to inject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    #[serde(flatten, skip_serializing)]
    unknown: BTreeMap<String, Value>,
}

/// A tool call the model "makes".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallSpec {
    /// Function name.
    pub name: String,
    /// Arguments: a JSON string is sent verbatim (so invalid JSON can be scripted); any other
    /// value is serialized the way the original fake server did (`", "` and `": "` separators).
    #[serde(default)]
    pub arguments: Value,
    /// Call id; default `call_<response>_<index>_<8 hex digits>`, derived deterministically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Usage numbers to report; unset ones are estimated from the reply and the request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageSpec {
    /// `usage.prompt_tokens` (includes cached tokens, as on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens` (includes reasoning tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Cached prompt tokens (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// `completion_tokens_details.reasoning_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Which wire field(s) carry the cached count.
    #[serde(default)]
    pub cache_field: CacheField,
}

/// Where the cached prompt token count appears in `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheField {
    /// Both `prompt_tokens_details.cached_tokens` and DeepSeek's `prompt_cache_hit_tokens`
    /// (plus `prompt_cache_miss_tokens`), as the DeepSeek API sends them.
    #[default]
    Both,
    /// Only `prompt_tokens_details.cached_tokens`.
    Openai,
    /// Only `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`.
    Deepseek,
}

/// A fault injected into the response. `after_chunks` counts streamed `data:` events
/// (deltas, the finish event, the usage event); `None` means "after all of them" (before
/// `[DONE]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// Reset the connection (TCP RST) without sending anything.
    ResetBeforeResponse,
    /// Read the request, then send nothing while keeping the connection open.
    StallBeforeResponse,
    /// Reset the connection (TCP RST) after this many events.
    Reset {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
    },
    /// Stop sending after this many events but keep the connection open.
    Stall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
    },
    /// End the body cleanly after this many events, without `[DONE]`.
    EofWithoutDone {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
    },
    /// Insert a `data:` line that is not valid JSON after this many events, then carry on.
    MalformedJson {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
    },
    /// After this many events, a `data:` line that never ends: bytes without a line break,
    /// sent until the client closes the connection (a broken or hostile server).
    EndlessLine {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
    },
    /// After this many events, valid text deltas without end, until the client closes the
    /// connection.
    EndlessStream {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
    },
    /// After this many events, an error reported in the stream: `data: {"error": <error>}`
    /// (preceded by `event: error` when `sse_event` is set), then `data: [DONE]`, the way
    /// vLLM ends a generation that failed.
    ErrorEvent {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_chunks: Option<usize>,
        /// The `error` member, for example `{"message": "...", "type": "...", "code": 500}`.
        error: Value,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sse_event: bool,
    },
    /// A 200 event stream holding only `data: [DONE]`.
    EmptyStream,
    /// A 200 response with an empty body.
    MissingBody,
}

impl Script {
    /// An empty script (every chat request is answered "script exhausted").
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a script from JSON text and validates it.
    pub fn from_json(text: &str) -> Result<Self, MockError> {
        let script: Script = serde_json::from_str(text).map_err(MockError::ScriptParse)?;
        script.validate()?;
        Ok(script)
    }

    /// Reads, parses and validates a script file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, MockError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| MockError::ScriptRead {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// Appends a scripted reply.
    pub fn respond(mut self, reply: Reply) -> Self {
        self.responses.push(reply);
        self
    }

    /// Appends a rule answering every matching request with `reply`.
    pub fn rule(mut self, matcher: RuleMatch, reply: Reply) -> Self {
        self.rules.push(Rule {
            matcher,
            response: reply,
        });
        self
    }

    /// Sets how requests map to responses.
    pub fn index_by(mut self, index_by: IndexBy) -> Self {
        self.index_by = index_by;
        self
    }

    /// Sets the model ids listed by `GET /models`.
    pub fn models<I: IntoIterator<Item = S>, S: Into<String>>(mut self, ids: I) -> Self {
        self.models = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// Fields this build does not understand, as `"<where>: <field>"` (likely typos).
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .unknown
            .keys()
            .map(|k| format!("script: {k}"))
            .collect();
        for (i, rule) in self.rules.iter().enumerate() {
            out.extend(
                rule.matcher
                    .unknown
                    .keys()
                    .map(|k| format!("rules[{i}].match: {k}")),
            );
            out.extend(
                rule.response
                    .unknown
                    .keys()
                    .map(|k| format!("rules[{i}].response: {k}")),
            );
        }
        for (i, reply) in self.responses.iter().enumerate() {
            out.extend(reply.unknown.keys().map(|k| format!("responses[{i}]: {k}")));
        }
        out
    }

    /// Rejects values that cannot be served faithfully (zero chunk counts, invalid statuses,
    /// header text that would break HTTP framing).
    pub fn validate(&self) -> Result<(), MockError> {
        for (i, rule) in self.rules.iter().enumerate() {
            rule.response.validate(&format!("rules[{i}].response"))?;
        }
        for (i, reply) in self.responses.iter().enumerate() {
            reply.validate(&format!("responses[{i}]"))?;
        }
        Ok(())
    }
}

impl RuleMatch {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Requires a request without tools.
    pub fn no_tools(mut self) -> Self {
        self.no_tools = Some(true);
        self
    }

    /// Requires `max_tokens <= limit`.
    pub fn max_tokens_le(mut self, limit: u64) -> Self {
        self.max_tokens_le = Some(limit);
        self
    }

    /// Requires this model id.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Requires header `name` (any case) with exactly `value`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.header.insert(name.into(), value.into());
        self
    }

    /// Requires some message's text to contain `text`.
    pub fn message_contains(mut self, text: impl Into<String>) -> Self {
        self.message_contains = Some(text.into());
        self
    }

    /// Requires the last message's text to contain `text`.
    pub fn last_message_contains(mut self, text: impl Into<String>) -> Self {
        self.last_message_contains = Some(text.into());
        self
    }
    /// Also requires a non-system message containing `text`.
    pub fn contains(mut self, text: impl Into<String>) -> Self {
        self.contains.push(text.into());
        self
    }

    /// Also requires that no non-system message contains `text`.
    pub fn lacks(mut self, text: impl Into<String>) -> Self {
        self.lacks.push(text.into());
        self
    }

    /// Requires that the request offers no tool named `name`.
    pub fn lacks_tool(mut self, name: impl Into<String>) -> Self {
        self.lacks_tool = Some(name.into());
        self
    }
}

/// A string or an array of strings, as a list.
fn one_or_many<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(text) => vec![text],
        OneOrMany::Many(texts) => texts,
    })
}

impl Reply {
    /// A reply with nothing set: streams no deltas and finishes with `stop`.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().with_text(text)
    }

    /// A reply with one tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(name, arguments)
    }

    /// An HTTP error with an OpenAI-style error body.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self {
            status: Some(status),
            error_message: Some(message.into()),
            ..Self::default()
        }
    }

    /// A reply that injects `fault` (content can still be added for partial streams).
    pub fn fault(fault: Fault) -> Self {
        Self::default().with_fault(fault)
    }

    /// Sets the answer text.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets the reasoning text.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Adds a tool call (several calls are streamed as parallel calls).
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ToolCallSpec {
            name: name.into(),
            arguments,
            id: None,
        });
        self
    }

    /// Splits reasoning and text into `n` deltas each.
    pub fn chunks(mut self, n: usize) -> Self {
        self.chunks = Some(n);
        self
    }

    /// Splits each tool call's arguments into `n` deltas.
    pub fn arg_chunks(mut self, n: usize) -> Self {
        self.arg_chunks = Some(n);
        self
    }

    /// Overrides the wire finish reason.
    pub fn finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// Overrides usage numbers.
    pub fn usage(mut self, usage: UsageSpec) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Pauses before each streamed event.
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = Some(ms);
        self
    }

    /// Pauses before the response head.
    pub fn head_delay_ms(mut self, ms: u64) -> Self {
        self.head_delay_ms = Some(ms);
        self
    }

    /// Sets `error.type`.
    pub fn error_type(mut self, kind: impl Into<String>) -> Self {
        self.error_type = Some(kind.into());
        self
    }

    /// Sets `error.code`.
    pub fn error_code(mut self, code: impl Into<String>) -> Self {
        self.error_code = Some(code.into());
        self
    }

    /// Adds a `Retry-After` header.
    pub fn retry_after(mut self, value: impl Into<String>) -> Self {
        self.retry_after = Some(value.into());
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sends `body` verbatim.
    pub fn raw_body(mut self, body: impl Into<String>, content_type: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self.content_type = Some(content_type.into());
        self
    }

    /// Sets the HTTP status.
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Injects a fault.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// All tool calls, the single `tool_call` first.
    pub fn all_tool_calls(&self) -> impl Iterator<Item = &ToolCallSpec> {
        self.tool_call.iter().chain(self.tool_calls.iter())
    }

    /// Whether this reply is an HTTP error (a non-2xx status without a verbatim body).
    pub fn is_http_error(&self) -> bool {
        self.body.is_none() && self.status.is_some_and(|s| !(200..300).contains(&s))
    }

    fn validate(&self, at: &str) -> Result<(), MockError> {
        let invalid = |reason: String| Err(MockError::ScriptInvalid(format!("{at}: {reason}")));
        if self.chunks == Some(0) || self.arg_chunks == Some(0) {
            return invalid("chunks and arg_chunks must be at least 1".into());
        }
        if let Some(status) = self.status {
            if !(100..=599).contains(&status) {
                return invalid(format!("status {status} is not an HTTP status"));
            }
        }
        let header_texts = self
            .headers
            .iter()
            .flat_map(|(k, v)| [k.as_str(), v.as_str()])
            .chain(self.retry_after.as_deref())
            .chain(self.content_type.as_deref())
            .chain(self.finish_reason.as_deref());
        for text in header_texts {
            if text.contains(['\r', '\n']) {
                return invalid(format!("{text:?} contains a line break"));
            }
        }
        if self
            .headers
            .keys()
            .any(|k| k.is_empty() || k.contains([':', ' ']))
        {
            return invalid("header names must be non-empty tokens".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fixture_shape_round_trips_through_the_builder() {
        let text = r#"{
          "index_by": "assistant_turns",
          "rules": [{"match": {"no_tools": true, "max_tokens_le": 64}, "response": {"text": "Title"}}],
          "responses": [
            {"reasoning": "r", "text": "t", "chunks": 3,
             "tool_call": {"name": "bash", "arguments": {"command": "ls"}}, "arg_chunks": 2},
            {"status": 500, "error_message": "boom", "error_type": "server_error", "error_code": "internal_error"}
          ]
        }"#;
        let parsed = Script::from_json(text).unwrap();
        let mut first = Reply::text("t").with_reasoning("r").chunks(3).arg_chunks(2);
        first.tool_call = Some(ToolCallSpec {
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
            id: None,
        });
        let built = Script::new()
            .index_by(IndexBy::AssistantTurns)
            .rule(
                RuleMatch::any().no_tools().max_tokens_le(64),
                Reply::text("Title"),
            )
            .respond(first)
            .respond(
                Reply::error(500, "boom")
                    .error_type("server_error")
                    .error_code("internal_error"),
            );
        assert_eq!(parsed, built);
        assert!(parsed.warnings().is_empty());
        let again = Script::from_json(&serde_json::to_string(&built).unwrap()).unwrap();
        assert_eq!(again, built);
    }

    #[test]
    fn unknown_fields_are_reported_not_rejected() {
        let script =
            Script::from_json(r#"{"responses": [{"txt": "typo"}], "rules": [{"match": {"x": 1}, "response": {}}], "seed": 3}"#)
                .unwrap();
        assert_eq!(
            script.warnings(),
            vec!["script: seed", "rules[0].match: x", "responses[0]: txt"]
        );
    }

    #[test]
    fn faults_use_a_kind_tag() {
        let script = Script::from_json(
            r#"{"responses": [{"fault": {"kind": "reset", "after_chunks": 2}}, {"fault": {"kind": "empty_stream"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            script.responses[0].fault,
            Some(Fault::Reset {
                after_chunks: Some(2)
            })
        );
        assert_eq!(script.responses[1].fault, Some(Fault::EmptyStream));
        let script = Script::from_json(
            r#"{"responses": [{"fault": {"kind": "endless_line"}}, {"fault": {"kind": "endless_stream", "after_chunks": 1}},
                {"fault": {"kind": "error_event", "error": {"message": "boom", "code": 500}, "sse_event": true}}]}"#,
        )
        .unwrap();
        assert_eq!(
            script.responses[0].fault,
            Some(Fault::EndlessLine { after_chunks: None })
        );
        assert_eq!(
            script.responses[1].fault,
            Some(Fault::EndlessStream {
                after_chunks: Some(1)
            })
        );
        assert_eq!(
            script.responses[2].fault,
            Some(Fault::ErrorEvent {
                after_chunks: None,
                error: json!({"message": "boom", "code": 500}),
                sse_event: true
            })
        );
    }

    #[test]
    fn invalid_values_are_rejected_with_their_location() {
        let err = Script::from_json(r#"{"responses": [{}, {"chunks": 0}]}"#).unwrap_err();
        assert_eq!(err.code(), "MOCK_SCRIPT_INVALID");
        assert!(err.to_string().contains("responses[1]"), "{err}");
        let err = Script::new()
            .respond(Reply::text("x").header("x-a", "b\r\nc"))
            .validate()
            .unwrap_err();
        assert_eq!(err.code(), "MOCK_SCRIPT_INVALID");
        let err = Script::from_json(r#"{"responses": [{"status": 1000}]}"#).unwrap_err();
        assert_eq!(err.code(), "MOCK_SCRIPT_INVALID");
        let err = Script::from_json("{").unwrap_err();
        assert_eq!(err.code(), "MOCK_SCRIPT_PARSE");
    }
}
