//! Rendering a scripted reply into chat-completions wire JSON: stream chunks, the
//! non-stream completion object, usage and error bodies.

use serde_json::{json, Map, Value};

use super::script::{CacheField, Reply};

/// `created` timestamp on every object; fixed so rendered payloads are reproducible.
pub const CREATED: u64 = 1_700_000_000;

/// Per-request facts the rendering needs.
#[derive(Debug, Clone)]
pub(crate) struct RenderContext {
    /// Echoed as `model` (the request's model, or `mock-model`).
    pub model: String,
    /// The completion id (`chatcmpl-mock-<request number>`).
    pub completion_id: String,
    /// Whether the request asked for a usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Characters of the request's messages and tools, for the prompt token estimate.
    pub prompt_chars: usize,
    /// Which scripted entry answers; part of default tool-call ids.
    pub entry_index: usize,
    /// The newest `role: tool` message's content, parsed as JSON when it is JSON: what
    /// `{{last-tool-result:/json/pointer}}` in scripted tool-call arguments reads.
    pub last_tool_result: Option<Value>,
}

impl RenderContext {
    pub fn from_request(body: &Value, request_number: u64, entry_index: usize) -> Self {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model")
            .to_string();
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let prompt_chars = ["messages", "tools"]
            .iter()
            .filter_map(|key| body.get(key))
            .map(json_chars)
            .sum();
        let last_tool_result = body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|messages| {
                messages
                    .iter()
                    .rev()
                    .find(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            })
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .and_then(|text| serde_json::from_str(text).ok());
        Self {
            model,
            completion_id: format!("chatcmpl-mock-{request_number}"),
            include_usage,
            prompt_chars,
            entry_index,
            last_tool_result,
        }
    }
}

/// How many characters `value`'s compact JSON text has, counted as it is written rather
/// than by building the text (a request's tools alone are tens of kilobytes).
fn json_chars(value: &Value) -> usize {
    struct Chars(usize);
    impl std::io::Write for Chars {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            // Serialized JSON is UTF-8; every character has exactly one leading byte.
            self.0 += bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut chars = Chars(0);
    match serde_json::to_writer(&mut chars, value) {
        Ok(()) => chars.0,
        Err(_) => value.to_string().chars().count(),
    }
}

/// Fills `{{last-tool-result:/json/pointer}}` placeholders from the request's newest tool
/// result (a string value without its quotes, anything else as JSON), so a script can pass
/// on an id only the harness knows (a goal id). A placeholder that finds nothing stays.
pub(crate) fn fill_placeholders(arguments: &str, ctx: &RenderContext) -> String {
    const OPEN: &str = "{{last-tool-result:";
    let Some(result) = &ctx.last_tool_result else {
        return arguments.to_owned();
    };
    let mut out = String::new();
    let mut rest = arguments;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        let Some(close) = after.find("}}") else {
            break;
        };
        let found = result.pointer(&after[..close]).map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        });
        out.push_str(&rest[..at]);
        match found {
            Some(text) => out.push_str(&text),
            None => out.push_str(&rest[at..at + OPEN.len() + close + 2]),
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// Splits `text` into at most `n` pieces of nearly equal character counts, longer pieces
/// first (the original fake server's split). Never yields empty pieces.
pub fn split_chars(text: &str, n: usize) -> Vec<&str> {
    let total = text.chars().count();
    let n = n.max(1).min(total);
    if n == 0 {
        return Vec::new();
    }
    let (base, extra) = (total / n, total % n);
    let mut pieces = Vec::with_capacity(n);
    let mut rest = text;
    for i in 0..n {
        let len = base + usize::from(i < extra);
        let cut = rest
            .char_indices()
            .nth(len)
            .map_or(rest.len(), |(at, _)| at);
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Serializes a JSON value with `", "` and `": "` separators (Python's `json.dumps`
/// default), which is what tool arguments looked like from the original fake server.
pub fn python_style_json(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(python_style_json).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), python_style_json(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// The wire argument string of a scripted tool call.
pub fn wire_arguments(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        Value::Null => "{}".to_string(),
        other => python_style_json(other),
    }
}

/// A deterministic call id shaped like the original's `call_<entry>_<index>_<hex8>`.
pub fn default_call_id(entry: usize, index: usize, name: &str, arguments: &str) -> String {
    // FNV-1a: stable across runs and platforms, unlike the std hasher.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in format!("{entry}/{index}/{name}/{arguments}").bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("call_{entry}_{index}_{hash:08x}")
}

/// A tool call as it goes on the wire.
struct WireCall {
    id: String,
    name: String,
    arguments: String,
}

fn wire_calls(reply: &Reply, ctx: &RenderContext) -> Vec<WireCall> {
    reply
        .all_tool_calls()
        .enumerate()
        .map(|(i, call)| {
            let arguments = fill_placeholders(&wire_arguments(&call.arguments), ctx);
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| default_call_id(ctx.entry_index, i, &call.name, &arguments));
            WireCall {
                id,
                name: call.name.clone(),
                arguments,
            }
        })
        .collect()
}

fn finish_reason(reply: &Reply, has_calls: bool) -> String {
    match &reply.finish_reason {
        Some(reason) => reason.clone(),
        None if has_calls => "tool_calls".to_string(),
        None => "stop".to_string(),
    }
}

fn quarter(text: &str) -> u64 {
    u64::try_from(text.chars().count() / 4).unwrap_or(u64::MAX)
}

/// The `usage` object: overrides from the script, the rest estimated at four characters per
/// token (the estimate the original fake server used for completions).
pub(crate) fn usage_json(reply: &Reply, ctx: &RenderContext) -> Value {
    let spec = reply.usage.clone().unwrap_or_default();
    let reasoning_estimate = quarter(reply.reasoning.as_deref().unwrap_or(""));
    let completion_estimate = reasoning_estimate
        + quarter(reply.text.as_deref().unwrap_or(""))
        + wire_calls(reply, ctx)
            .iter()
            .map(|c| quarter(&c.arguments))
            .sum::<u64>();
    let prompt = spec.prompt_tokens.unwrap_or_else(|| {
        u64::try_from(ctx.prompt_chars / 4)
            .unwrap_or(u64::MAX)
            .max(1)
    });
    let completion = spec.completion_tokens.unwrap_or(completion_estimate);
    let reasoning = spec.reasoning_tokens.unwrap_or(reasoning_estimate);
    let cached = spec.cached_tokens.unwrap_or(0).min(prompt);
    let mut usage = Map::new();
    usage.insert("prompt_tokens".into(), prompt.into());
    usage.insert("completion_tokens".into(), completion.into());
    usage.insert(
        "total_tokens".into(),
        prompt.saturating_add(completion).into(),
    );
    if spec.cache_field != CacheField::Deepseek {
        usage.insert(
            "prompt_tokens_details".into(),
            json!({"cached_tokens": cached}),
        );
    }
    if spec.cache_field != CacheField::Openai {
        usage.insert("prompt_cache_hit_tokens".into(), cached.into());
        usage.insert("prompt_cache_miss_tokens".into(), (prompt - cached).into());
    }
    usage.insert(
        "completion_tokens_details".into(),
        json!({"reasoning_tokens": reasoning}),
    );
    Value::Object(usage)
}

fn chunk_envelope(ctx: &RenderContext, choices: Value) -> Map<String, Value> {
    let mut chunk = Map::new();
    chunk.insert("id".into(), ctx.completion_id.clone().into());
    chunk.insert("object".into(), "chat.completion.chunk".into());
    chunk.insert("created".into(), CREATED.into());
    chunk.insert("model".into(), ctx.model.clone().into());
    chunk.insert("choices".into(), choices);
    chunk
}

fn delta_chunk(ctx: &RenderContext, delta: Value) -> Value {
    Value::Object(chunk_envelope(
        ctx,
        json!([{"index": 0, "delta": delta, "finish_reason": null}]),
    ))
}

/// The `data:` payloads of a streamed reply, in order, without the final `[DONE]`:
/// reasoning deltas, text deltas, tool-call deltas (id, type and name on each call's first
/// delta only, as OpenAI sends them), the finish chunk, then the usage chunk if requested.
/// The first delta also carries `role: assistant`.
pub(crate) fn stream_payloads(reply: &Reply, ctx: &RenderContext) -> Vec<Value> {
    let chunks = reply.chunks.unwrap_or(1);
    let mut deltas: Vec<Map<String, Value>> = Vec::new();
    for (field, text) in [
        ("reasoning_content", &reply.reasoning),
        ("content", &reply.text),
    ] {
        for piece in split_chars(text.as_deref().unwrap_or(""), chunks) {
            let mut delta = Map::new();
            delta.insert(field.into(), piece.into());
            deltas.push(delta);
        }
    }
    let calls = wire_calls(reply, ctx);
    for (i, call) in calls.iter().enumerate() {
        let mut pieces = split_chars(&call.arguments, reply.arg_chunks.unwrap_or(1));
        if pieces.is_empty() {
            pieces.push("");
        }
        for (j, piece) in pieces.into_iter().enumerate() {
            let entry = if j == 0 {
                json!({"index": i, "id": call.id, "type": "function",
                       "function": {"name": call.name, "arguments": piece}})
            } else {
                json!({"index": i, "function": {"arguments": piece}})
            };
            let mut delta = Map::new();
            delta.insert("tool_calls".into(), json!([entry]));
            deltas.push(delta);
        }
    }
    let mut payloads = Vec::with_capacity(deltas.len() + 2);
    for (i, delta) in deltas.into_iter().enumerate() {
        let delta = if i == 0 {
            let mut with_role = Map::new();
            with_role.insert("role".into(), "assistant".into());
            with_role.extend(delta);
            with_role
        } else {
            delta
        };
        payloads.push(delta_chunk(ctx, Value::Object(delta)));
    }
    let reason = finish_reason(reply, !calls.is_empty());
    payloads.push(Value::Object(chunk_envelope(
        ctx,
        json!([{"index": 0, "delta": {}, "finish_reason": reason}]),
    )));
    if ctx.include_usage {
        let mut usage_chunk = chunk_envelope(ctx, json!([]));
        usage_chunk.insert("usage".into(), usage_json(reply, ctx));
        payloads.push(Value::Object(usage_chunk));
    }
    payloads
}

/// The non-stream `chat.completion` object for a reply.
pub(crate) fn completion_json(reply: &Reply, ctx: &RenderContext) -> Value {
    let calls = wire_calls(reply, ctx);
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let content = match reply.text.as_deref() {
        Some(text) if !text.is_empty() => Value::from(text),
        _ if calls.is_empty() => Value::from(""),
        _ => Value::Null,
    };
    message.insert("content".into(), content);
    if let Some(reasoning) = reply.reasoning.as_deref().filter(|r| !r.is_empty()) {
        message.insert("reasoning_content".into(), reasoning.into());
    }
    if !calls.is_empty() {
        let wire: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(wire));
    }
    let reason = finish_reason(reply, !calls.is_empty());
    let mut completion = Map::new();
    completion.insert("id".into(), ctx.completion_id.clone().into());
    completion.insert("object".into(), "chat.completion".into());
    completion.insert("created".into(), CREATED.into());
    completion.insert("model".into(), ctx.model.clone().into());
    completion.insert(
        "choices".into(),
        json!([{"index": 0, "message": message, "finish_reason": reason}]),
    );
    completion.insert("usage".into(), usage_json(reply, ctx));
    Value::Object(completion)
}

/// An OpenAI-style error body.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "code": code}})
}

/// The error body of a scripted HTTP error, with defaults derived from the status.
pub(crate) fn scripted_error_body(reply: &Reply, status: u16) -> Value {
    let default_type = match status {
        401 | 403 => "authentication_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    };
    let message = reply
        .error_message
        .clone()
        .unwrap_or_else(|| format!("mock error {status}"));
    error_body(
        &message,
        reply.error_type.as_deref().unwrap_or(default_type),
        reply.error_code.as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> RenderContext {
        RenderContext::from_request(
            &json!({"model": "m", "stream_options": {"include_usage": true}, "messages": []}),
            7,
            0,
        )
    }

    #[test]
    fn placeholders_read_the_newest_tool_result() {
        let ctx = RenderContext::from_request(
            &json!({"messages": [
                {"role": "tool", "tool_call_id": "a", "content": "{\"goal\":{\"id\":\"old\"}}"},
                {"role": "tool", "tool_call_id": "b", "content": "{\"goal\":{\"id\":\"goal-1\",\"revision\":2}}"}
            ]}),
            1,
            0,
        );
        assert_eq!(
            fill_placeholders(
                r#"{"goal_id":"{{last-tool-result:/goal/id}}","revision":{{last-tool-result:/goal/revision}},"x":"{{last-tool-result:/nope}}"}"#,
                &ctx
            ),
            r#"{"goal_id":"goal-1","revision":2,"x":"{{last-tool-result:/nope}}"}"#
        );
        assert_eq!(
            fill_placeholders("{{last-tool-result:/goal/id}}", &super::tests::ctx()),
            "{{last-tool-result:/goal/id}}"
        );
    }

    #[test]
    fn split_matches_the_fixture_pieces() {
        assert_eq!(
            split_chars("Let me print the file.", 3),
            vec!["Let me p", "rint th", "e file."]
        );
        assert_eq!(split_chars("ab", 5), vec!["a", "b"]);
        assert_eq!(split_chars("", 3), Vec::<&str>::new());
        assert_eq!(split_chars("héllo", 2), vec!["hél", "lo"]);
    }

    #[test]
    fn arguments_serialize_like_the_original() {
        let args = json!({"command": "cat notes.txt", "description": "Show the notes file"});
        assert_eq!(
            wire_arguments(&args),
            r#"{"command": "cat notes.txt", "description": "Show the notes file"}"#
        );
        assert_eq!(
            python_style_json(&json!({"a": [1, {"b": null}], "c": "\"q\""})),
            r#"{"a": [1, {"b": null}], "c": "\"q\""}"#
        );
        assert_eq!(wire_arguments(&json!("{not json")), "{not json");
    }

    #[test]
    fn call_ids_are_stable_and_distinct() {
        let a = default_call_id(0, 0, "read", "{}");
        assert_eq!(a, default_call_id(0, 0, "read", "{}"));
        assert_ne!(a, default_call_id(0, 1, "read", "{}"));
        assert!(a.starts_with("call_0_0_") && a.len() == "call_0_0_".len() + 8);
    }

    #[test]
    fn usage_estimates_like_the_fixtures() {
        // bash fixture, step 1: 60 reasoning chars, 22 text chars, 66 argument chars -> 36.
        let reply = Reply::text("Let me print the file.")
            .with_reasoning("The user asks what notes.txt says. I will print it with cat.")
            .with_tool_call(
                "bash",
                json!({"command": "cat notes.txt", "description": "Show the notes file"}),
            );
        let usage = usage_json(&reply, &ctx());
        assert_eq!(usage["completion_tokens"], json!(36));
        assert_eq!(
            usage["completion_tokens_details"],
            json!({"reasoning_tokens": 15})
        );
    }

    #[test]
    fn usage_overrides_and_cache_fields() {
        let reply = Reply::text("x").usage(crate::mock_llm::UsageSpec {
            prompt_tokens: Some(100),
            completion_tokens: Some(7),
            cached_tokens: Some(40),
            reasoning_tokens: Some(3),
            cache_field: CacheField::Deepseek,
        });
        assert_eq!(
            usage_json(&reply, &ctx()),
            json!({"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
                   "prompt_cache_hit_tokens": 40, "prompt_cache_miss_tokens": 60,
                   "completion_tokens_details": {"reasoning_tokens": 3}})
        );
    }

    #[test]
    fn non_stream_completion_carries_everything() {
        let reply = Reply::tool_call("read", json!({"p": 1})).with_reasoning("why");
        let body = completion_json(&reply, &ctx());
        let id = default_call_id(0, 0, "read", r#"{"p": 1}"#);
        assert_eq!(
            body["choices"],
            json!([{"index": 0, "message": {"role": "assistant", "content": null,
                "reasoning_content": "why",
                "tool_calls": [{"id": id, "type": "function",
                                "function": {"name": "read", "arguments": "{\"p\": 1}"}}]},
                "finish_reason": "tool_calls"}])
        );
    }
}
