//! `Session::append`: accepted events, refused events, surface rules and projections.

use super::common::*;
use dsh_protocol::{CallId, ContentBlock, EpochHeader, LlmCallConfig, LlmFailure, MessageId};
use dsh_session::*;
use serde_json::json;
use std::sync::Arc;

#[test]
fn a_turn_is_logged_exactly_as_appended() {
    let session = session("s");
    session.append(turn_start(1), log_only()).unwrap();
    session.append(user("u1", "hi"), surface()).unwrap();
    let event = session
        .append(
            assistant(1, 1, "a1", vec![ContentBlock::text("hello")]),
            surface().sources(vec![]),
        )
        .unwrap();
    assert_eq!(event.seq, 2);
    assert!(
        Arc::ptr_eq(&event, &session.events()[2]),
        "the returned event is the logged one"
    );
    session.append(turn_end(1), log_only()).unwrap();
    assert_eq!(
        log_json(&session),
        json!([
            {"type": "turn/start", "seq": 0, "time": TIME, "data": {"turn": 1}},
            {"type": "user/message", "seq": 1, "time": TIME, "surfaceOp": "append",
             "data": {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}},
            {"type": "assistant/message", "seq": 2, "time": TIME, "surfaceOp": "append", "sourceEventSeqs": [],
             "data": {"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant",
                "content": [{"type": "text", "text": "hello"}], "source": {"kind": "model", "provider": "p", "model": "m"}}}},
            {"type": "turn/end", "seq": 3, "time": TIME, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ])
    );
}

#[test]
fn the_wall_clock_stamps_epoch_milliseconds() {
    let session = Session::new(header("s")).unwrap();
    let event = session.append(turn_start(1), log_only()).unwrap();
    // 2020-09-13 in epoch ms; a seconds or microseconds clock would miss this range.
    assert!(event.time > 1_600_000_000_000 && event.time < 100_000_000_000_000);
}

/// Appends `data` to a session holding one closed turn and asserts the refusal leaves the
/// log unchanged.
fn refused(data: EventData, opts: AppendOptions) -> SessionError {
    let session = session("s");
    tool_turn(&session, 1);
    let before = log_json(&session);
    let history = history_json(&session);
    let err = session.append(data, opts).unwrap_err();
    assert_eq!(
        log_json(&session),
        before,
        "a refused append changed the log"
    );
    assert_eq!(history_json(&session), history);
    err
}

fn violation(err: SessionError) -> SurfaceViolation {
    match err {
        SessionError::InvalidSurface { violation, .. } => violation,
        other => panic!("expected a surface violation, got {other:?}"),
    }
}

fn header_event(provider: &str, temperature: Option<f64>) -> EventData {
    EventData::RequestHeader(Box::new(RequestHeader {
        header: EpochHeader {
            config: LlmCallConfig {
                provider: provider.into(),
                model: "m".into(),
                temperature,
                ..Default::default()
            },
            ..Default::default()
        },
        reason: HeaderReason::Initial,
    }))
}

#[test]
fn invalid_data_is_refused_with_a_typed_error() {
    let not_lossless = EventData::other("session/title", json!({"title": "t", "weight": -0.0}));
    assert_eq!(
        refused(not_lossless, log_only()).code(),
        "INVALID_EVENT_DATA"
    );
    assert_eq!(
        refused(header_event("p", Some(f64::NAN)), log_only()).code(),
        "INVALID_EVENT_DATA"
    );
    assert_eq!(
        refused(header_event("", None), log_only()).code(),
        "INVALID_EVENT_DATA"
    );
    let retry = EventData::LlmRetry(Box::new(LlmRetry {
        retry_id: "r".into(),
        turn: 1,
        step: 1,
        provider: "p".into(),
        mode: "normal".into(),
        policy_key: "k".into(),
        retry: 1,
        max_retries: None,
        delay_ms: f64::INFINITY,
        failure: LlmFailure::new("SERVER", "m"),
    }));
    assert_eq!(refused(retry, log_only()).code(), "INVALID_EVENT_DATA");

    // Message shapes: a user/message with the assistant role, an anonymous message, a tool
    // result whose block names another call.
    let mut wrong_role = user_message("x", "t");
    wrong_role.role = dsh_protocol::Role::Assistant;
    let err = refused(EventData::UserMessage(Arc::new(wrong_role)), surface());
    assert_eq!(err.code(), "INVALID_EVENT_DATA");
    let anonymous = user_message("", "t");
    assert_eq!(
        refused(EventData::UserMessage(Arc::new(anonymous)), surface()).code(),
        "INVALID_EVENT_DATA"
    );
    let EventData::ToolResult(mut result) = tool_result(1, 1, "call-1", "x") else {
        unreachable!()
    };
    let mut message = (*result.message).clone();
    message.source = dsh_protocol::MessageSource::Tool {
        call_id: CallId::from("other"),
    };
    result.message = Arc::new(message);
    assert_eq!(
        refused(EventData::ToolResult(result), surface()).code(),
        "INVALID_EVENT_DATA"
    );
}

#[test]
fn reserved_legacy_and_unknown_types_are_refused() {
    let reserved = EventData::other("turn/start", json!({"turn": 2}));
    assert_eq!(refused(reserved, log_only()).code(), "INVALID_EVENT_DATA");
    let legacy = EventData::other("request/header-delta", json!({}));
    assert_eq!(refused(legacy, log_only()).code(), "LEGACY_FORMAT");
    let unknown = EventData::other("future/required", json!({}));
    assert!(matches!(
        refused(unknown.clone(), log_only()),
        SessionError::UnknownEventType { type_name } if type_name == "future/required"
    ));
    // The same type marked ignorable, and a known plugin type, are accepted verbatim.
    let session = session("s");
    let event = session.append(unknown, log_only().ignorable()).unwrap();
    assert_eq!(
        serde_json::to_value(&*event).unwrap(),
        json!({"type": "future/required", "seq": 0, "time": TIME, "data": {}, "ignorable": true})
    );
    session
        .append(
            EventData::other("sandbox/mode", json!({"mode": "read-only"})),
            log_only(),
        )
        .unwrap();
    assert_eq!(session.len(), 2);
}

#[test]
fn surface_metadata_must_match_the_type() {
    assert_eq!(
        violation(refused(user("u9", "x"), log_only())),
        SurfaceViolation::MissingSurfaceOp
    );
    assert_eq!(
        violation(refused(turn_start(2), surface())),
        SurfaceViolation::UnexpectedSurfaceOp
    );
    assert_eq!(
        violation(refused(turn_start(2), log_only().sources(vec![0]))),
        SurfaceViolation::UnexpectedSourceSeqs
    );
    assert_eq!(
        violation(refused(user("u9", "x"), surface().sources(vec![]))),
        SurfaceViolation::EmptySourceSeqs
    );
    assert_eq!(
        violation(refused(user("u9", "x"), surface().sources(vec![3, 1, 3]))),
        SurfaceViolation::DuplicateSourceSeq(3)
    );
    // The tool turn has 11 events, so the candidate's seq is 11.
    assert_eq!(
        violation(refused(user("u9", "x"), surface().sources(vec![2, 11]))),
        SurfaceViolation::ForwardSourceSeq {
            source_seq: 11,
            seq: 11
        }
    );
    assert_eq!(
        violation(refused(user("u9", "x"), surface().sources(vec![40]))),
        SurfaceViolation::ForwardSourceSeq {
            source_seq: 40,
            seq: 11
        }
    );
}

#[test]
fn replace_rules_are_enforced() {
    // Surface of the tool turn: [2 user, 3 assistant, 5 tool result, 8 assistant].
    let summary = || user("sum", "summary");
    let replace = AppendOptions::surface_replace;
    assert_eq!(
        violation(refused(summary(), replace(1, 3).sources(vec![1, 3]))),
        SurfaceViolation::ReplaceStartNotFound(1)
    );
    assert_eq!(
        violation(refused(summary(), replace(2, 4).sources(vec![2]))),
        SurfaceViolation::ReplaceEndNotFound(4)
    );
    assert_eq!(
        violation(refused(summary(), replace(5, 2).sources(vec![2, 5]))),
        SurfaceViolation::ReplaceRangeInverted { start: 5, end: 2 }
    );
    assert_eq!(
        violation(refused(summary(), replace(2, 5).sources(vec![2, 5]))),
        SurfaceViolation::ShadowedNotCited(vec![3])
    );
    let pruned = || tool_result(1, 1, "call-1", "[pruned]");
    assert_eq!(
        violation(refused(pruned(), replace(3, 5).sources(vec![3, 5]))),
        SurfaceViolation::ToolResultReplaceCount(2)
    );
    assert_eq!(
        violation(refused(pruned(), replace(3, 3).sources(vec![3]))),
        SurfaceViolation::ToolResultReplaceTarget
    );
    let EventData::ToolResult(mut more) = pruned() else {
        unreachable!()
    };
    more.error = Some(ToolErrorInfo {
        name: "E".into(),
        code: "E".into(),
    });
    assert_eq!(
        violation(refused(
            EventData::ToolResult(more),
            replace(5, 5).sources(vec![5])
        )),
        SurfaceViolation::ToolResultReplaceChangedMore
    );
    let EventData::ToolResult(mut renamed) = pruned() else {
        unreachable!()
    };
    let mut message = (*renamed.message).clone();
    message.id = MessageId::new("another-id");
    renamed.message = Arc::new(message);
    assert_eq!(
        violation(refused(
            EventData::ToolResult(renamed),
            replace(5, 5).sources(vec![5])
        )),
        SurfaceViolation::ToolResultReplaceChangedMore
    );
}

#[test]
fn replaces_shadow_nodes_in_the_derived_history() {
    let session = session("s");
    tool_turn(&session, 1);
    let history = session.derive_messages();
    assert_eq!(
        history.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["u1", "a1", "result-call-1", "b1"]
    );
    // The pruner rewrites only the inner content of the tool result.
    session
        .append(
            tool_result(1, 1, "call-1", "[pruned]"),
            AppendOptions::surface_replace(5, 5).sources(vec![5]),
        )
        .unwrap();
    assert_eq!(
        session.surface(),
        Surface {
            nodes: vec![2, 3, 11, 8],
            replace_generation: 1
        }
    );
    let history = session.derive_messages();
    assert_eq!(
        history[2].content,
        session.events()[11].message().unwrap().content
    );
    // Compaction replaces the first three nodes with a summary.
    session
        .append(
            user("sum", "summary"),
            AppendOptions::surface_replace(2, 11).sources(vec![2, 3, 11]),
        )
        .unwrap();
    assert_eq!(
        session.surface(),
        Surface {
            nodes: vec![12, 8],
            replace_generation: 2
        }
    );
    assert_eq!(
        session
            .derive_messages()
            .iter()
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>(),
        ["sum", "b1"]
    );
    // The derived history is the pure fold of the log.
    assert_eq!(
        session.derive_messages(),
        derive_messages(&session.events()).unwrap()
    );
}

#[test]
fn empty_assistant_messages_derive_nothing() {
    let session = session("s");
    session.append(user("u1", "hi"), surface()).unwrap();
    session
        .append(
            assistant(1, 1, "a-empty", vec![]),
            surface().sources(vec![]),
        )
        .unwrap();
    assert_eq!(session.surface().nodes, vec![0, 1]);
    assert_eq!(
        history_json(&session),
        json!([
            {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
        ])
    );
}

#[test]
fn header_and_context_folds_follow_the_latest_records() {
    let session = session("s");
    assert!(session.request_header().is_none() && session.request_context().is_none());
    let mut first = header_event("p", None);
    if let EventData::RequestHeader(h) = &mut first {
        h.header.system = Some("".into());
        h.header.tools = Some(vec![]);
    }
    session.append(first, log_only()).unwrap();
    // Canonical: the empty system prompt and tool list are absent.
    assert_eq!(
        serde_json::to_value(&*session.request_header().unwrap()).unwrap(),
        json!({"config": {"provider": "p", "model": "m"}})
    );
    session
        .append(header_event("q", Some(0.5)), log_only())
        .unwrap();
    assert_eq!(session.request_header().unwrap().config.provider, "q");
    let context = RequestContext {
        provider: "q".into(),
        model: "m".into(),
        context_window: Some(64),
    };
    session
        .append(EventData::RequestContext(context.clone()), log_only())
        .unwrap();
    assert_eq!(session.request_context(), Some(context));
    assert_eq!(
        fold_request_header(&session.events(), None).map(|h| h.config.provider),
        Some("q".to_owned())
    );
}
