//! Turning a scripted reply into a byte-level response plan, with its faults applied.
//!
//! The plan is plain data so the HTTP writer stays a dumb interpreter and every fault is
//! visible (and unit-testable) here.

use std::time::Duration;

use serde_json::Value;

use super::script::{Fault, Reply};
use super::sse::{self, RenderContext};

/// A `data:` payload that is not valid JSON, for [`Fault::MalformedJson`].
pub const MALFORMED_PAYLOAD: &str =
    r#"{"choices": [{"index": 0, "delta": {"content": "unterminated"#;

/// How an endless line of [`Fault::EndlessLine`] starts; `a`s follow without end.
pub const ENDLESS_LINE_START: &str = r#"data: {"choices": [{"index": 0, "delta": {"content": ""#;

/// The delta [`Fault::EndlessStream`] repeats without end.
pub const ENDLESS_DELTA: &str = r#"{"choices": [{"index": 0, "delta": {"content": "more "}}]}"#;

/// Bytes per write of an endless body: large enough to be fast, small enough that the
/// server's own memory stays flat.
const ENDLESS_PIECE: usize = 64 * 1024;

/// What to do with one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// Reset the connection without answering.
    Reset,
    /// Answer nothing and keep the connection open.
    Stall,
    /// A response with a `Content-Length` body. With `cut_at`, only that many body bytes are
    /// sent before the connection is closed (a truncated body).
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        cut_at: Option<usize>,
    },
    /// A chunked `text/event-stream` response.
    Stream {
        headers: Vec<(String, String)>,
        steps: Vec<StreamStep>,
    },
}

/// One step of a streamed body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamStep {
    /// Send `data: <payload>\n\n` as one HTTP chunk.
    Event(String),
    /// Send these bytes as one HTTP chunk.
    Raw(Vec<u8>),
    /// Send these bytes as HTTP chunks again and again until the peer goes away.
    Forever(Vec<u8>),
    Sleep(Duration),
    /// Reset the connection here.
    Reset,
    /// Stop sending but keep the connection open.
    Stall,
    /// Terminate the chunked body cleanly.
    End,
}

impl Plan {
    /// A JSON response.
    pub fn json(status: u16, body: &Value, extra: Vec<(String, String)>) -> Plan {
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        headers.extend(extra);
        Plan::Full {
            status,
            headers,
            body: body.to_string().into_bytes(),
            cut_at: None,
        }
    }
}

/// The plan for a chat request answered by `reply`.
pub(crate) fn plan_reply(reply: &Reply, ctx: &RenderContext, stream: bool) -> Plan {
    match reply.fault {
        Some(Fault::ResetBeforeResponse) => return Plan::Reset,
        Some(Fault::StallBeforeResponse) => return Plan::Stall,
        _ => {}
    }
    let mut extra: Vec<(String, String)> = reply
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(retry_after) = &reply.retry_after {
        extra.push(("retry-after".to_string(), retry_after.clone()));
    }
    if let Some(body) = &reply.body {
        let content_type = reply.content_type.as_deref().unwrap_or("application/json");
        let mut headers = vec![("content-type".to_string(), content_type.to_string())];
        headers.extend(extra);
        return Plan::Full {
            status: reply.status.unwrap_or(200),
            headers,
            body: body.clone().into_bytes(),
            cut_at: None,
        };
    }
    if let Some(status) = reply.status.filter(|_| reply.is_http_error()) {
        return Plan::json(status, &sse::scripted_error_body(reply, status), extra);
    }
    if reply.fault == Some(Fault::MissingBody) {
        let content_type = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut headers = vec![("content-type".to_string(), content_type.to_string())];
        headers.extend(extra);
        return Plan::Full {
            status: reply.status.unwrap_or(200),
            headers,
            body: Vec::new(),
            cut_at: None,
        };
    }
    if stream {
        let mut headers = vec![
            ("content-type".to_string(), "text/event-stream".to_string()),
            ("cache-control".to_string(), "no-cache".to_string()),
        ];
        headers.extend(extra);
        Plan::Stream {
            headers,
            steps: stream_steps(reply, ctx),
        }
    } else {
        plan_non_stream(reply, ctx, extra)
    }
}

fn plan_non_stream(reply: &Reply, ctx: &RenderContext, extra: Vec<(String, String)>) -> Plan {
    let status = reply.status.unwrap_or(200);
    let body = match reply.fault {
        Some(Fault::EmptyStream) => {
            let mut empty = sse::completion_json(reply, ctx);
            empty["choices"] = Value::Array(Vec::new());
            empty
        }
        _ => sse::completion_json(reply, ctx),
    };
    match reply.fault {
        Some(Fault::Reset { .. }) => Plan::Reset,
        Some(Fault::Stall { .. }) => Plan::Stall,
        Some(Fault::MalformedJson { .. }) => Plan::Full {
            status,
            headers: content_type_json(extra),
            body: MALFORMED_PAYLOAD.as_bytes().to_vec(),
            cut_at: None,
        },
        Some(Fault::EofWithoutDone { .. }) => {
            let bytes = body.to_string().into_bytes();
            let half = bytes.len() / 2;
            Plan::Full {
                status,
                headers: content_type_json(extra),
                body: bytes,
                cut_at: Some(half),
            }
        }
        _ => Plan::json(status, &body, extra),
    }
}

fn content_type_json(extra: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    headers.extend(extra);
    headers
}

/// The streamed body: events with optional per-event delays, the fault spliced in at its
/// position, then `[DONE]` unless the fault ends the stream first.
fn stream_steps(reply: &Reply, ctx: &RenderContext) -> Vec<StreamStep> {
    let payloads: Vec<String> = match reply.fault {
        Some(Fault::EmptyStream) => Vec::new(),
        _ => sse::stream_payloads(reply, ctx)
            .iter()
            .map(Value::to_string)
            .collect(),
    };
    let fault_at = match reply.fault {
        Some(
            Fault::Reset { after_chunks }
            | Fault::Stall { after_chunks }
            | Fault::EofWithoutDone { after_chunks }
            | Fault::MalformedJson { after_chunks }
            | Fault::EndlessLine { after_chunks }
            | Fault::EndlessStream { after_chunks }
            | Fault::ErrorEvent { after_chunks, .. },
        ) => Some(after_chunks.unwrap_or(payloads.len()).min(payloads.len())),
        _ => None,
    };
    let delay = reply
        .delay_ms
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis);
    let mut steps = Vec::new();
    let push_event = |steps: &mut Vec<StreamStep>, payload: String| {
        if let Some(delay) = delay {
            steps.push(StreamStep::Sleep(delay));
        }
        steps.push(StreamStep::Event(payload));
    };
    for i in 0..=payloads.len() {
        if fault_at == Some(i) {
            match reply.fault {
                Some(Fault::Reset { .. }) => {
                    steps.push(StreamStep::Reset);
                    return steps;
                }
                Some(Fault::Stall { .. }) => {
                    steps.push(StreamStep::Stall);
                    return steps;
                }
                Some(Fault::EofWithoutDone { .. }) => {
                    steps.push(StreamStep::End);
                    return steps;
                }
                Some(Fault::MalformedJson { .. }) => {
                    push_event(&mut steps, MALFORMED_PAYLOAD.to_string());
                }
                Some(Fault::EndlessLine { .. }) => {
                    steps.push(StreamStep::Raw(ENDLESS_LINE_START.as_bytes().to_vec()));
                    steps.push(StreamStep::Forever(vec![b'a'; ENDLESS_PIECE]));
                    return steps;
                }
                Some(Fault::EndlessStream { .. }) => {
                    let event = format!("data: {ENDLESS_DELTA}\n\n");
                    let repeats = (ENDLESS_PIECE / event.len()).max(1);
                    steps.push(StreamStep::Forever(event.repeat(repeats).into_bytes()));
                    return steps;
                }
                Some(Fault::ErrorEvent {
                    ref error,
                    sse_event,
                    ..
                }) => {
                    let name = if sse_event { "event: error\n" } else { "" };
                    let payload = serde_json::json!({ "error": error });
                    steps.push(StreamStep::Raw(
                        format!("{name}data: {payload}\n\n").into_bytes(),
                    ));
                    push_event(&mut steps, "[DONE]".to_string());
                    steps.push(StreamStep::End);
                    return steps;
                }
                _ => {}
            }
        }
        if let Some(payload) = payloads.get(i) {
            push_event(&mut steps, payload.clone());
        }
    }
    push_event(&mut steps, "[DONE]".to_string());
    steps.push(StreamStep::End);
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> RenderContext {
        RenderContext::from_request(&json!({"model": "m"}), 1, 0)
    }

    fn kinds(plan: &Plan) -> Vec<String> {
        let Plan::Stream { steps, .. } = plan else {
            return vec![format!("{plan:?}")];
        };
        steps
            .iter()
            .map(|s| match s {
                StreamStep::Event(p) if p == "[DONE]" => "done".to_string(),
                StreamStep::Event(p) if p == MALFORMED_PAYLOAD => "bad".to_string(),
                StreamStep::Event(_) => "ev".to_string(),
                StreamStep::Raw(bytes) => format!("raw:{}", String::from_utf8_lossy(bytes)),
                StreamStep::Forever(bytes) => format!("forever:{}", bytes.len()),
                StreamStep::Sleep(d) => format!("sleep{}", d.as_millis()),
                StreamStep::Reset => "reset".to_string(),
                StreamStep::Stall => "stall".to_string(),
                StreamStep::End => "end".to_string(),
            })
            .collect()
    }

    #[test]
    fn faults_land_after_the_given_event_count() {
        let base = Reply::text("abcd").chunks(2);
        let plan = |fault| plan_reply(&base.clone().with_fault(fault), &ctx(), true);
        assert_eq!(
            kinds(&plan(Fault::Reset {
                after_chunks: Some(1)
            })),
            ["ev", "reset"]
        );
        assert_eq!(
            kinds(&plan(Fault::Stall { after_chunks: None })),
            ["ev", "ev", "ev", "stall"]
        );
        assert_eq!(
            kinds(&plan(Fault::EofWithoutDone {
                after_chunks: Some(99)
            })),
            ["ev", "ev", "ev", "end"]
        );
        assert_eq!(
            kinds(&plan(Fault::MalformedJson {
                after_chunks: Some(0)
            })),
            ["bad", "ev", "ev", "ev", "done", "end"]
        );
        assert_eq!(kinds(&plan(Fault::EmptyStream)), ["done", "end"]);
        assert_eq!(
            kinds(&plan(Fault::EndlessLine {
                after_chunks: Some(1)
            })),
            [
                "ev".to_string(),
                format!("raw:{ENDLESS_LINE_START}"),
                "forever:65536".into()
            ]
        );
        let endless = plan(Fault::EndlessStream { after_chunks: None });
        let kinds_of_endless = kinds(&endless);
        assert_eq!(kinds_of_endless[..3], ["ev", "ev", "ev"]);
        assert_eq!(kinds_of_endless.len(), 4);
        let Plan::Stream { steps, .. } = &endless else {
            panic!("expected a stream");
        };
        let StreamStep::Forever(bytes) = &steps[3] else {
            panic!("expected an endless step");
        };
        // Whole events only, so the stream stays valid however long it runs.
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .all(|e| e == format!("data: {ENDLESS_DELTA}")));
        assert_eq!(
            kinds(&plan(Fault::ErrorEvent {
                after_chunks: Some(1),
                error: json!({"message": "boom", "code": 500}),
                sse_event: true,
            })),
            [
                "ev",
                "raw:event: error\ndata: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n",
                "done",
                "end"
            ]
        );
    }

    #[test]
    fn delay_paces_every_event() {
        let plan = plan_reply(&Reply::text("ab").delay_ms(5), &ctx(), true);
        assert_eq!(
            kinds(&plan),
            ["sleep5", "ev", "sleep5", "ev", "sleep5", "done", "end"]
        );
    }

    #[test]
    fn non_stream_faults() {
        let reply = |fault| Reply::text("hello").with_fault(fault);
        assert_eq!(
            plan_reply(&reply(Fault::ResetBeforeResponse), &ctx(), false),
            Plan::Reset
        );
        assert_eq!(
            plan_reply(&reply(Fault::Stall { after_chunks: None }), &ctx(), false),
            Plan::Stall
        );
        let Plan::Full { body, cut_at, .. } = plan_reply(
            &reply(Fault::EofWithoutDone { after_chunks: None }),
            &ctx(),
            false,
        ) else {
            panic!("expected a full response");
        };
        assert_eq!(cut_at, Some(body.len() / 2));
    }

    #[test]
    fn http_errors_carry_retry_after_and_extra_headers() {
        let reply = Reply::error(429, "slow down")
            .retry_after("3")
            .header("x-request-id", "req-1");
        assert_eq!(
            plan_reply(&reply, &ctx(), true),
            Plan::Full {
                status: 429,
                headers: vec![
                    ("content-type".into(), "application/json".into()),
                    ("x-request-id".into(), "req-1".into()),
                    ("retry-after".into(), "3".into()),
                ],
                body: json!({"error": {"message": "slow down", "type": "rate_limit_error", "code": null}})
                    .to_string()
                    .into_bytes(),
                cut_at: None,
            }
        );
    }
}
