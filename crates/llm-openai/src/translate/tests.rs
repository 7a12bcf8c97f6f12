use super::*;
use dsh_protocol::LlmFailure;
use serde_json::{json, Value};

fn sse(payloads: &[Value]) -> Vec<u8> {
    let mut body = Vec::new();
    for payload in payloads {
        body.extend_from_slice(format!("data: {payload}\n\n").as_bytes());
    }
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

/// Decodes `body` fed in pieces of `piece` bytes; the result as JSON or the error code.
fn decode(body: &[u8], piece: usize) -> Result<Value, String> {
    let mut decoder = StreamDecoder::new();
    let mut out = Vec::new();
    for part in body.chunks(piece.max(1)) {
        decoder
            .push(part, &mut out)
            .map_err(|e| e.code().to_string())?;
    }
    decoder.end(&mut out).map_err(|e| e.code().to_string())?;
    Ok(serde_json::to_value(out).unwrap())
}

/// Decodes at every piece size and checks they all agree.
fn decode_all_splits(body: &[u8]) -> Result<Value, String> {
    let whole = decode(body, body.len());
    for piece in [1, 2, 3, 5, 7, 13, 64] {
        assert_eq!(decode(body, piece), whole, "piece size {piece}");
    }
    whole
}

fn delta(delta: Value) -> Value {
    json!({"choices":[{"index":0,"delta":delta,"finish_reason":null}]})
}

#[test]
fn reasoning_text_and_interleaved_tool_calls() {
    let body = sse(&[
        delta(json!({"role":"assistant","reasoning_content":""})),
        delta(json!({"reasoning_content":"Think"})),
        delta(json!({"reasoning_content":"ing"})),
        delta(json!({"content":"Reading."})),
        delta(
            json!({"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}),
        ),
        delta(
            json!({"tool_calls":[{"index":1,"id":"call_b","function":{"name":"bash","arguments":"{\"c"}}]}),
        ),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"p\":1}"}}]})),
        delta(json!({"tool_calls":[{"index":1,"function":{"arguments":"\":2}"}}]})),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,
            "prompt_tokens_details":{"cached_tokens":60},"prompt_cache_hit_tokens":1,
            "completion_tokens_details":{"reasoning_tokens":5}}}),
    ]);
    assert_eq!(
        decode_all_splits(&body),
        Ok(json!([
            {"type":"block-start","index":0,"blockType":"reasoning"},
            {"type":"reasoning-delta","index":0,"text":"Think"},
            {"type":"reasoning-delta","index":0,"text":"ing"},
            {"type":"block-start","index":1,"blockType":"text"},
            {"type":"text-delta","index":1,"text":"Reading."},
            {"type":"block-start","index":2,"blockType":"tool-call"},
            {"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":""},
            {"type":"block-start","index":3,"blockType":"tool-call"},
            {"type":"tool-call-delta","index":3,"id":"call_b","name":"bash","argumentsDelta":"{\"c"},
            {"type":"tool-call-delta","index":2,"id":"call_a","name":"read","argumentsDelta":"{\"p\":1}"},
            {"type":"tool-call-delta","index":3,"id":"call_b","name":"bash","argumentsDelta":"\":2}"},
            {"type":"block-end","index":0,"block":{"type":"reasoning","text":"Thinking"}},
            {"type":"block-end","index":1,"block":{"type":"text","text":"Reading."}},
            {"type":"block-end","index":2,"block":{"type":"tool-call","id":"call_a","name":"read","arguments":"{\"p\":1}"}},
            {"type":"block-end","index":3,"block":{"type":"tool-call","id":"call_b","name":"bash","arguments":"{\"c\":2}"}},
            {"type":"usage","usage":{"inputTokens":40,"outputTokens":20,"cacheReadTokens":60,"reasoningTokens":5}},
            {"type":"finish","reason":{"kind":"tool-calls"}},
        ]))
    );
}

#[test]
fn finish_reasons_map_and_usage_keeps_latest() {
    let cases = [
        ("stop", json!({"kind":"stop"})),
        ("length", json!({"kind":"max-tokens"})),
        (
            "content_filter",
            json!({"kind":"error","failure":{"message":"model stopped: content_filter","code":"CONTENT_FILTER"}}),
        ),
    ];
    for (reason, expected) in cases {
        let body = sse(&[
            delta(json!({"content":"x"})),
            json!({"choices":[{"delta":{},"finish_reason":reason}],"usage":{"prompt_tokens":9,"completion_tokens":1}}),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":4}}),
        ]);
        let chunks = decode_all_splits(&body).unwrap();
        let chunks = chunks.as_array().unwrap();
        assert_eq!(
            chunks[chunks.len() - 1],
            json!({"type":"finish","reason":expected})
        );
        assert_eq!(
            chunks[chunks.len() - 2],
            json!({"type":"usage","usage":{"inputTokens":6,"outputTokens":2,"cacheReadTokens":4}})
        );
    }
}

#[test]
fn stop_without_blocks_is_an_empty_response() {
    let body = sse(&[
        delta(json!({"role":"assistant","content":""})),
        json!({"choices":[{"delta":{},"finish_reason":"stop"}]}),
    ]);
    assert_eq!(
        decode_all_splits(&body),
        Ok(json!([{"type":"finish","reason":{"kind":"error","failure":{
            "message":"the model returned an empty response","code":"EMPTY_RESPONSE"}}}]))
    );
}

#[test]
fn eof_without_done_is_stream_closed() {
    let mut body = sse(&[delta(json!({"content":"cut"}))]);
    body.truncate(body.len() - b"data: [DONE]\n\n".len());
    assert_eq!(decode_all_splits(&body), Err("STREAM_CLOSED".to_string()));
    // A truncated [DONE] line is not [DONE].
    let partial = b"data: [DON".to_vec();
    assert_eq!(
        decode_all_splits(&partial),
        Err("STREAM_CLOSED".to_string())
    );
}

#[test]
fn invalid_json_is_malformed() {
    let body = b"data: {\"choices\": [\n\ndata: [DONE]\n\n".to_vec();
    assert_eq!(
        decode_all_splits(&body),
        Err("MALFORMED_RESPONSE".to_string())
    );
}

#[test]
fn crlf_comments_and_done_without_blank_line() {
    let body = b": keep-alive\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]";
    assert_eq!(
        decode_all_splits(body),
        Ok(json!([
            {"type":"block-start","index":0,"blockType":"text"},
            {"type":"text-delta","index":0,"text":"hi"},
            {"type":"block-end","index":0,"block":{"type":"text","text":"hi"}},
            {"type":"finish","reason":{"kind":"stop"}},
        ]))
    );
}

#[test]
fn nothing_after_done_is_translated() {
    let mut body = sse(&[delta(json!({"content":"a"}))]);
    body.extend_from_slice(b"data: not json at all\n\n");
    let chunks = decode_all_splits(&body).unwrap();
    assert_eq!(chunks.as_array().unwrap().len(), 4);
}

#[test]
fn tool_call_without_id_or_name_closes_with_empty_fields() {
    let body = sse(&[
        delta(json!({"tool_calls":[{"index":5,"function":{"arguments":"{}"}}]})),
        json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
    ]);
    assert_eq!(
        decode_all_splits(&body),
        Ok(json!([
            {"type":"block-start","index":0,"blockType":"tool-call"},
            {"type":"tool-call-delta","index":0,"id":"","argumentsDelta":"{}"},
            {"type":"block-end","index":0,"block":{"type":"tool-call","id":"","name":"","arguments":"{}"}},
            {"type":"finish","reason":{"kind":"tool-calls"}},
        ]))
    );
}

/// Decodes `body` in pieces of `piece` bytes with `decoder`: the chunks produced and the
/// failure that ended it, if any.
fn decode_with(
    mut decoder: StreamDecoder,
    body: &[u8],
    piece: usize,
) -> (Value, Option<LlmFailure>) {
    let mut out = Vec::new();
    let mut result = Ok(());
    for part in body.chunks(piece.max(1)) {
        result = decoder.push(part, &mut out);
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = decoder.end(&mut out);
    }
    (
        serde_json::to_value(out).unwrap(),
        result.err().map(|e| e.failure),
    )
}

fn decode_failing(body: &[u8]) -> (Value, Option<LlmFailure>) {
    let whole = decode_with(StreamDecoder::new(), body, body.len());
    for piece in [1, 2, 3, 7, 64] {
        assert_eq!(
            decode_with(StreamDecoder::new(), body, piece),
            whole,
            "piece size {piece}"
        );
    }
    whole
}

#[test]
fn an_error_payload_mid_stream_ends_the_response_with_its_failure() {
    // vLLM: deltas, then the error, then `[DONE]` as if nothing happened.
    let body = sse(&[
        delta(json!({"content":"Half an ans"})),
        json!({"error":{"object":"error","message":"engine died","type":"InternalServerError","param":null,"code":500}}),
    ]);
    let decoder = StreamDecoder::new().with_request_id(Some("req-7".into()));
    let (chunks, failure) = decode_with(decoder, &body, 5);
    assert_eq!(
        chunks,
        json!([
            {"type":"block-start","index":0,"blockType":"text"},
            {"type":"text-delta","index":0,"text":"Half an ans"},
        ])
    );
    assert_eq!(
        failure,
        Some(LlmFailure {
            status: Some(500),
            request_id: Some("req-7".into()),
            ..LlmFailure::new(
                "SERVER",
                "the model API reported an error mid-stream: engine died"
            )
        })
    );
}

#[test]
fn an_error_event_fails_whatever_its_data() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\ndata: [DONE]\n\n";
    let (_, failure) = decode_failing(body);
    assert_eq!(
        failure,
        Some(LlmFailure::new(
            "SERVER",
            "the model API reported an error mid-stream: Overloaded"
        ))
    );
    // Not JSON at all, and the body ends right after it: the server's words, not STREAM_CLOSED.
    let (_, failure) = decode_failing(b"event: error\ndata: upstream went away");
    assert_eq!(
        failure,
        Some(LlmFailure::new(
            "STREAM_ERROR",
            "the model API reported an error mid-stream: upstream went away"
        ))
    );
}

#[test]
fn a_null_error_member_is_no_error() {
    let body = sse(&[
        json!({"choices":[{"delta":{"content":"fine"},"finish_reason":"stop"}],"error":null}),
    ]);
    let (chunks, failure) = decode_failing(&body);
    assert_eq!(failure, None);
    assert_eq!(chunks.as_array().unwrap().len(), 4);
}

#[test]
fn a_line_over_the_limit_is_response_too_large_naming_the_setting() {
    let setting = "max_sse_line_bytes of provider route 'r'";
    let mut body = sse(&[delta(json!({"content":"ok"}))]);
    body.truncate(body.len() - b"data: [DONE]\n\n".len());
    body.extend_from_slice(b"data: ");
    body.extend_from_slice(&[b'a'; 200]);
    for piece in [1, 16, 1000] {
        let decoder = StreamDecoder::with_limits(100, setting);
        let (chunks, failure) = decode_with(decoder, &body, piece);
        // What came before the long line was translated.
        assert_eq!(chunks.as_array().unwrap().len(), 2, "piece size {piece}");
        assert_eq!(
            failure,
            Some(LlmFailure::new(
                "RESPONSE_TOO_LARGE",
                "the model API sent an event-stream line or event longer than 100 bytes \
                 (max_sse_line_bytes of provider route 'r'); the rest of the response was not read"
            )),
            "piece size {piece}"
        );
    }
    // A line at the limit is read (here: a torn end, not an oversized one).
    let decoder = StreamDecoder::with_limits(8, setting);
    let (_, failure) = decode_with(decoder, b"data: 12", 100);
    assert_eq!(failure.map(|f| f.code), Some("STREAM_CLOSED".into()));
}
