//! Classifying failed HTTP responses, and errors a server reports inside a stream, into
//! stable failure codes.

use dsh_llm::LlmError;
use dsh_protocol::{codes, LlmFailure};
use serde_json::Value;
use std::time::SystemTime;

/// The failure code for an HTTP error status, given the provider's error text (`code`, `type`
/// and `message` joined). Quota exhaustion is told apart from rate limiting by wording, since
/// both can arrive as 429 and only the latter is worth retrying.
pub fn classify(status: u16, detail: &str) -> String {
    let code = match status {
        401 | 403 => codes::AUTH,
        413 => codes::INVALID_REQUEST,
        _ if is_quota_exhausted(detail) => codes::QUOTA,
        429 => codes::RATE_LIMIT,
        400 if is_context_overflow(detail) => codes::CONTEXT_WINDOW_EXCEEDED,
        400 => codes::INVALID_REQUEST,
        500.. => codes::SERVER,
        other => return format!("HTTP_{other}"),
    };
    code.to_string()
}

/// Lower-cased words of `detail`; `_` and `-` separate words too (`insufficient_quota`).
fn words(detail: &str) -> Vec<String> {
    detail
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn any_of(word: &str, options: &[&str]) -> bool {
    options.contains(&word)
}

/// Whether `words` contains `first` followed, within `gap` words, by a word in `second`.
fn followed_by(words: &[String], first: &[&str], gap: usize, second: &[&str]) -> bool {
    words.iter().enumerate().any(|(i, w)| {
        any_of(w, first)
            && words
                .iter()
                .skip(i + 1)
                .take(gap + 1)
                .any(|next| any_of(next, second))
    })
}

/// Wording of an exhausted account quota, balance or budget.
pub fn is_quota_exhausted(detail: &str) -> bool {
    let w = words(detail);
    let pair = |a: &[&str], b: &[&str]| followed_by(&w, a, 0, b);
    pair(
        &["insufficient"],
        &["quota", "balance", "credit", "credits"],
    ) || pair(&["quota"], &["exceeded", "exhausted", "reached"])
        || w.windows(3).any(|t| {
            t[0] == "usage"
                && t[1] == "limit"
                && any_of(&t[2], &["exceeded", "exhausted", "reached"])
        })
        || w.iter().enumerate().any(|(i, word)| {
            any_of(word, &["exceed", "exceeded", "exceeds"])
                && w.iter()
                    .skip(i + 1)
                    .find(|next| !any_of(next, &["your", "the", "current"]))
                    .is_some_and(|next| next == "quota")
        })
        || pair(
            &["balance", "credit", "credits"],
            &["exhausted", "depleted"],
        )
        || w.windows(3).any(|t| {
            t[0] == "out" && t[1] == "of" && any_of(&t[2], &["credit", "credits", "budget"])
        })
}

/// Wording of a request larger than the model's context window.
pub fn is_context_overflow(detail: &str) -> bool {
    let w = words(detail);
    let subjects = ["input", "prompt", "request", "message", "messages"];
    // `context_length_exceeded`, `context window overflow`, `context length limit exceeded`
    let structured = w.windows(3).any(|t| {
        t[0] == "context"
            && any_of(&t[1], &["length", "window"])
            && any_of(
                &t[2],
                &[
                    "exceed",
                    "exceeded",
                    "exceeds",
                    "overflow",
                    "overflowed",
                    "limit",
                ],
            )
    });
    // `maximum context length`, `max allowed context window`
    let maximum = w.iter().enumerate().any(|(i, word)| {
        any_of(word, &["maximum", "max"]) && {
            let rest: Vec<&String> = w
                .iter()
                .skip(i + 1)
                .skip_while(|x| any_of(x, &["allowed", "supported"]))
                .take(2)
                .collect();
            rest.len() == 2 && rest[0] == "context" && any_of(rest[1], &["length", "window"])
        }
    });
    // `prompt is too long for the model('s context)`
    let too_large = w.iter().enumerate().any(|(i, word)| {
        any_of(word, &subjects) && {
            let rest: Vec<&String> = w
                .iter()
                .skip(i + 1)
                .skip_while(|x| any_of(x, &["is", "are"]))
                .take(4)
                .collect();
            rest.len() >= 3
                && rest[0] == "too"
                && any_of(rest[1], &["large", "long"])
                && rest[2] == "for"
                && w.iter()
                    .skip(i + 1)
                    .take(8)
                    .any(|x| any_of(x, &["context", "model", "model's"]))
        }
    });
    // `input exceeds the model's context`, `messages are larger than the context window`
    let exceeds = w.iter().enumerate().any(|(i, word)| {
        any_of(word, &subjects)
            && w.iter().enumerate().skip(i + 1).take(8).any(|(j, verb)| {
                (any_of(
                    verb,
                    &["exceed", "exceeds", "exceeded", "overflow", "overflows"],
                ) || (verb == "larger" && w.get(j + 1).is_some_and(|x| x == "than")))
                    && w.iter().skip(j + 1).take(8).any(|x| x == "context")
            })
    });
    structured || maximum || too_large || exceeds
}

/// `Retry-After` as milliseconds: delta-seconds or an HTTP date; only positive values count.
pub fn retry_after_ms(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = value.parse().ok()?;
        return seconds.checked_mul(1000).filter(|ms| *ms > 0);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    let delay = when.duration_since(now).ok()?;
    u64::try_from(delay.as_millis()).ok().filter(|ms| *ms > 0)
}

/// The failure for a non-success response: the provider's own message when the body has one,
/// the classified code, the status, the retry hint and the request id.
pub fn http_failure(
    status: u16,
    body: &[u8],
    retry_after: Option<&str>,
    request_id: Option<&str>,
    now: SystemTime,
) -> LlmError {
    let error = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| value.get("error").cloned());
    let field = |name: &str| -> Option<String> {
        match error.as_ref()?.get(name)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let message = field("message");
    let detail = [field("code"), field("type"), message.clone()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let detail = if detail.is_empty() {
        String::from_utf8_lossy(&body[..body.len().min(2000)]).into_owned()
    } else {
        detail
    };
    LlmError::from_failure(LlmFailure {
        message: message.unwrap_or_else(|| format!("model API error (HTTP {status})")),
        code: classify(status, &detail),
        status: Some(status).filter(|s| (100..=599).contains(s)),
        provider_retry_after_ms: retry_after.and_then(|v| retry_after_ms(v, now)),
        request_id: request_id.filter(|id| !id.is_empty()).map(str::to_string),
    })
}

/// Longest stretch of a non-JSON error event kept as the failure message.
const MAX_RAW_MESSAGE_CHARS: usize = 500;

/// The failure for an error a server reported inside a `200` event stream: a `data:` payload
/// with an `error` member (vLLM, llama.cpp, OpenRouter and other OpenAI-compatible servers),
/// a payload with `"object": "error"`, or any `event: error` event. `error` is the parsed
/// payload when it is JSON; `raw` is the payload text.
///
/// The code says whether the loop retries it (the route's retry policy lists retryable codes),
/// so it follows what the server says:
///
/// | the error object says | code |
/// |---|---|
/// | a status (`status`, `status_code`, or a numeric `code`) of 400–599 | as for an HTTP error of that status ([`classify`]): 429 `RATE_LIMIT`, 5xx `SERVER`, 401/403 `AUTH`, 400 `INVALID_REQUEST` or `CONTEXT_WINDOW_EXCEEDED`, quota wording `QUOTA` |
/// | no status; quota wording | `QUOTA` |
/// | `type`/`code` of rate limiting (`rate_limit_exceeded`, `too_many_requests`) | `RATE_LIMIT` |
/// | `type`/`code` of a server fault (`server_error`, `internal_error`, `overloaded_error`, `service_unavailable`, `api_error`, `InternalServerError`) | `SERVER` |
/// | `type`/`code` of a timeout | `TIMEOUT` |
/// | context-overflow wording | `CONTEXT_WINDOW_EXCEEDED` |
/// | `type`/`code` of a bad request (`invalid_request_error`, `BadRequestError`) | `INVALID_REQUEST` |
/// | `type`/`code` of refused credentials (`authentication_error`, `permission_error`, `invalid_api_key`) | `AUTH` |
/// | nothing dsh recognizes | `STREAM_ERROR` |
///
/// With the default policy `RATE_LIMIT`, `SERVER` and `TIMEOUT` are retried; the others end
/// the turn. `STREAM_ERROR` is not retried: an error the server does not explain may well
/// recur, and the person should see it.
pub fn stream_failure(error: Option<&Value>, raw: &str, request_id: Option<&str>) -> LlmError {
    let object = error.map(error_object);
    let field = |name: &str| -> Option<String> {
        match object?.get(name)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let text_field = |name: &str| match object?.get(name)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    };
    let message = match object {
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        _ => text_field("message").or_else(|| text_field("detail")),
    }
    .or_else(|| {
        // Not JSON (or JSON without a message): the text itself, bounded.
        (error.is_none() && !raw.trim().is_empty())
            .then(|| raw.trim().chars().take(MAX_RAW_MESSAGE_CHARS).collect())
    });
    let status = ["status", "status_code", "code"]
        .iter()
        .filter_map(|name| field(name))
        .find_map(|value| value.parse::<u16>().ok())
        .filter(|status| (400..=599).contains(status));
    let kinds: Vec<String> = [text_field("code"), text_field("type")]
        .into_iter()
        .flatten()
        .collect();
    let detail = kinds
        .iter()
        .cloned()
        .chain(message.clone())
        .collect::<Vec<_>>()
        .join(" ");
    let code = match status {
        Some(status) => classify(status, &detail),
        None => classify_unstated(&kinds, &detail).to_owned(),
    };
    let message = match message {
        Some(text) => format!("the model API reported an error mid-stream: {text}"),
        None => "the model API reported an error mid-stream".to_owned(),
    };
    LlmError::from_failure(LlmFailure {
        message,
        code,
        status,
        provider_retry_after_ms: None,
        request_id: request_id.filter(|id| !id.is_empty()).map(str::to_string),
    })
}

/// The object describing the error: the payload's `error` member (one level of a nested
/// `error.error` too, as some servers wrap it), or the payload itself.
fn error_object(payload: &Value) -> &Value {
    match payload.get("error") {
        Some(inner) => match inner.get("error") {
            Some(nested) if nested.is_object() => nested,
            _ => inner,
        },
        None => payload,
    }
}

/// The code for a stream error with no status, from its `type`/`code` words and wording.
fn classify_unstated(kinds: &[String], detail: &str) -> &'static str {
    // `rate_limit_exceeded`, `RateLimitError` and `rate-limit` all become `ratelimit...`.
    let squashed: Vec<String> = kinds
        .iter()
        .map(|kind| {
            kind.chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
                .to_ascii_lowercase()
        })
        .collect();
    let is = |words: &[&str]| squashed.iter().any(|kind| words.contains(&kind.as_str()));
    let has = |part: &str| squashed.iter().any(|kind| kind.contains(part));
    if is_quota_exhausted(detail) {
        codes::QUOTA
    } else if has("ratelimit") || is(&["toomanyrequests"]) {
        codes::RATE_LIMIT
    } else if is(&[
        "servererror",
        "internalerror",
        "internalservererror",
        "internal",
        "overloaded",
        "overloadederror",
        "serviceunavailable",
        "serviceunavailableerror",
        "unavailable",
        "apierror",
        "badgateway",
        "enginebusy",
    ]) {
        codes::SERVER
    } else if has("timeout") || is(&["timedout", "deadlineexceeded"]) {
        codes::TIMEOUT
    } else if is_context_overflow(detail) {
        codes::CONTEXT_WINDOW_EXCEEDED
    } else if is(&[
        "invalidrequest",
        "invalidrequesterror",
        "badrequest",
        "badrequesterror",
        "validationerror",
    ]) {
        codes::INVALID_REQUEST
    } else if is(&[
        "authenticationerror",
        "permissionerror",
        "permissiondenied",
        "invalidapikey",
        "unauthorized",
        "forbidden",
    ]) {
        codes::AUTH
    } else {
        codes::STREAM_ERROR
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn statuses_map_to_codes() {
        let cases = [
            (401, "", "AUTH"),
            (403, "insufficient_quota", "AUTH"),
            (413, "", "INVALID_REQUEST"),
            (429, "Rate limit reached", "RATE_LIMIT"),
            (
                429,
                "insufficient_quota You exceeded your current quota",
                "QUOTA",
            ),
            (402, "Insufficient Balance", "QUOTA"),
            (
                400,
                "This model's maximum context length is 65536 tokens",
                "CONTEXT_WINDOW_EXCEEDED",
            ),
            (400, "context_length_exceeded", "CONTEXT_WINDOW_EXCEEDED"),
            (
                400,
                "prompt is too long for the model",
                "CONTEXT_WINDOW_EXCEEDED",
            ),
            (
                400,
                "Input exceeds the model's context window",
                "CONTEXT_WINDOW_EXCEEDED",
            ),
            (400, "invalid tool schema", "INVALID_REQUEST"),
            (400, "request exceeds the rate", "INVALID_REQUEST"),
            (500, "", "SERVER"),
            (503, "", "SERVER"),
            (418, "", "HTTP_418"),
        ];
        for (status, detail, code) in cases {
            assert_eq!(classify(status, detail), code, "{status} {detail}");
        }
    }

    #[test]
    fn quota_wording() {
        for yes in [
            "insufficient-credits",
            "quota exhausted",
            "usage_limit_reached",
            "exceeded the quota",
            "credit balance depleted",
            "out of budget",
        ] {
            assert!(is_quota_exhausted(yes), "{yes}");
        }
        for no in ["rate limit exceeded", "too many requests", "quota"] {
            assert!(!is_quota_exhausted(no), "{no}");
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(retry_after_ms("3", now), Some(3000));
        assert_eq!(retry_after_ms("0", now), None);
        assert_eq!(retry_after_ms("soon", now), None);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(retry_after_ms(&later, now), Some(7000));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(retry_after_ms(&past, now), None);
    }

    #[test]
    fn failure_uses_provider_message_and_facts() {
        let body = br#"{"error":{"message":"Internal server error (mock)","type":"server_error","code":"internal_error"}}"#;
        let error = http_failure(500, body, Some("2"), Some("req-1"), SystemTime::now());
        assert_eq!(
            error.failure,
            LlmFailure {
                message: "Internal server error (mock)".into(),
                code: "SERVER".into(),
                status: Some(500),
                provider_retry_after_ms: Some(2000),
                request_id: Some("req-1".into()),
            }
        );
        let plain = http_failure(429, b"<html>busy</html>", None, Some(""), SystemTime::now());
        assert_eq!(
            plain.failure,
            LlmFailure {
                status: Some(429),
                ..LlmFailure::new("RATE_LIMIT", "model API error (HTTP 429)")
            }
        );
    }

    fn mid_stream(payload: &str) -> LlmFailure {
        let value = serde_json::from_str::<Value>(payload).ok();
        stream_failure(value.as_ref(), payload, Some("req-9")).failure
    }

    #[test]
    fn mid_stream_errors_follow_what_the_server_says() {
        let cases = [
            // vLLM: the HTTP status as a numeric code.
            (
                r#"{"error":{"object":"error","message":"engine crashed","type":"InternalServerError","param":null,"code":500}}"#,
                "SERVER",
                Some(500),
            ),
            (
                r#"{"error":{"message":"Too many requests","type":"BadRequestError","code":429}}"#,
                "RATE_LIMIT",
                Some(429),
            ),
            (
                r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","code":400}}"#,
                "CONTEXT_WINDOW_EXCEEDED",
                Some(400),
            ),
            // OpenRouter: a status code and a message.
            (
                r#"{"id":"x","object":"chat.completion.chunk","error":{"code":502,"message":"Provider returned error"},"choices":[]}"#,
                "SERVER",
                Some(502),
            ),
            (
                r#"{"error":{"status":"503","message":"busy"}}"#,
                "SERVER",
                Some(503),
            ),
            // OpenAI / Anthropic style: a type and no status.
            (
                r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
                "SERVER",
                None,
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                "SERVER",
                None,
            ),
            (
                r#"{"error":{"message":"slow down","code":"rate_limit_exceeded"}}"#,
                "RATE_LIMIT",
                None,
            ),
            (
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#,
                "QUOTA",
                None,
            ),
            (
                r#"{"error":{"message":"generation timed out","type":"timeout"}}"#,
                "TIMEOUT",
                None,
            ),
            (
                r#"{"error":{"message":"prompt is too long for the model's context"}}"#,
                "CONTEXT_WINDOW_EXCEEDED",
                None,
            ),
            (
                r#"{"error":{"message":"bad tool schema","type":"invalid_request_error"}}"#,
                "INVALID_REQUEST",
                None,
            ),
            (
                r#"{"error":{"message":"key revoked","type":"authentication_error"}}"#,
                "AUTH",
                None,
            ),
            // Nothing recognizable: not retried.
            (
                r#"{"error":{"message":"something went wrong"}}"#,
                "STREAM_ERROR",
                None,
            ),
            (r#"{"error":"plain words"}"#, "STREAM_ERROR", None),
            (
                r#"{"object":"error","message":"top-level","type":"weird"}"#,
                "STREAM_ERROR",
                None,
            ),
            // A 2xx "status" is no status.
            (
                r#"{"error":{"message":"odd","code":200}}"#,
                "STREAM_ERROR",
                None,
            ),
            ("Internal error", "STREAM_ERROR", None),
        ];
        for (payload, code, status) in cases {
            let failure = mid_stream(payload);
            assert_eq!(
                (failure.code.as_str(), failure.status),
                (code, status),
                "{payload}"
            );
            assert_eq!(failure.request_id.as_deref(), Some("req-9"));
        }
    }

    #[test]
    fn mid_stream_messages_quote_the_server() {
        assert_eq!(
            mid_stream(r#"{"error":{"message":"engine crashed","code":500}}"#).message,
            "the model API reported an error mid-stream: engine crashed"
        );
        assert_eq!(
            mid_stream(r#"{"error":"plain words"}"#).message,
            "the model API reported an error mid-stream: plain words"
        );
        assert_eq!(
            mid_stream(r#"{"error":{"code":500}}"#).message,
            "the model API reported an error mid-stream"
        );
        let long = "x".repeat(10_000);
        let failure = mid_stream(&long);
        assert_eq!(
            failure.message.chars().count(),
            "the model API reported an error mid-stream: ".len() + MAX_RAW_MESSAGE_CHARS
        );
        // Nested `error.error` (a wrapped error response).
        assert_eq!(
            mid_stream(r#"{"error":{"error":{"message":"inner","type":"server_error"}}}"#),
            LlmFailure {
                request_id: Some("req-9".into()),
                ..LlmFailure::new(
                    "SERVER",
                    "the model API reported an error mid-stream: inner"
                )
            }
        );
    }
}
