//! What approval writes to the log and reads back: session-start safety events, policy
//! changes, pending asks after a crash, and grants and policy rebuilt on resume.

use std::sync::Arc;

use dsh_session::{SeedSource, Session, SessionEvent};
use dsh_tools_builtin::approval::{
    close_pending_approvals, fold_session_grants, fold_session_safety, pending_approvals,
    ApprovalAsked, GrantScope, PendingApproval, SafetyFold, SessionGrant,
};
use dsh_tools_builtin::{
    ApprovalDecision, ApprovalPolicy, ApprovalSettings, Approvals, PermissionPreset, SandboxMode,
    SessionSafety,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::harness::{Harness, ScriptedAnswerer};
use super::support::eventually;

/// The session as a restarted process would load it from disk.
fn bash(command: &str) -> serde_json::Value {
    json!({"command": command, "description": "test"})
}

fn reloaded(session: &Session, events: &[Arc<SessionEvent>]) -> Session {
    Session::builder(session.header().clone())
        .seed(events.iter().cloned(), SeedSource::Persistence)
        .build()
        .unwrap()
}

#[tokio::test]
async fn session_start_logs_preset_sandbox_and_policy_in_order() {
    let h = Harness::new(json!({}));
    let safety = SessionSafety::from_preset(PermissionPreset::WorkspaceWrite);
    h.approvals.start_session(&h.session, &safety).unwrap();
    let logged: Vec<_> = h
        .session
        .events()
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect();
    assert_eq!(
        logged,
        [
            json!({"type": "permission/preset", "seq": 0, "time": 7, "data": {"preset": "workspace-write"}}),
            json!({"type": "sandbox/mode", "seq": 1, "time": 7, "data": {"mode": "workspace-write"}}),
            json!({"type": "approval/policy", "seq": 2, "time": 7, "data": {"policy": "ask"}}),
        ]
    );
    assert_eq!(
        fold_session_safety(&h.session.events()),
        SafetyFold {
            preset: Some(PermissionPreset::WorkspaceWrite),
            sandbox: Some(SandboxMode::WorkspaceWrite),
            policy: Some(ApprovalPolicy::Ask),
        }
    );
}

#[tokio::test]
async fn policy_changes_are_logged_once_each() {
    let h = Harness::new(json!({"policy": "ask"}));
    assert_eq!(h.approvals.policy(&h.session), ApprovalPolicy::Ask);
    h.approvals
        .set_policy(&h.session, ApprovalPolicy::Ask)
        .unwrap();
    h.approvals
        .set_policy(&h.session, ApprovalPolicy::Ask)
        .unwrap();
    h.approvals
        .set_policy(&h.session, ApprovalPolicy::Never)
        .unwrap();
    assert_eq!(h.approvals.policy(&h.session), ApprovalPolicy::Never);
    assert_eq!(
        h.approval_events(),
        [
            json!({"type": "approval/policy", "data": {"policy": "ask"}}),
            json!({"type": "approval/policy", "data": {"policy": "never"}}),
        ]
    );
    // Under `never` nothing asks, even with nobody to answer.
    let result = h.run("bash", bash("echo ok")).await;
    assert!(!result.is_error(), "{result:?}");
}

#[tokio::test]
async fn a_crash_during_an_ask_leaves_it_pending_in_the_log() {
    let h = Arc::new(Harness::new(json!({"policy": "untrusted"})));
    let answerer = ScriptedAnswerer::silent();
    h.answer_with(&answerer);
    let signal = CancellationToken::new();
    let running = {
        let h = h.clone();
        let signal = signal.clone();
        tokio::spawn(async move { h.run_with("bash", bash("make deploy"), signal).await })
    };
    assert!(eventually(|| answerer.asked().len() == 1).await);
    // What is on disk when the process dies now: the ask, with no answer.
    let at_crash = h.session.events();
    let resumed = reloaded(&h.session, &at_crash);
    assert_eq!(
        pending_approvals(&resumed.events()),
        [PendingApproval {
            seq: 0,
            asked: ApprovalAsked {
                call_id: "call-1".into(),
                tool: "bash".into(),
                summary: "make deploy".into(),
                reason: Some("shell commands need approval under the untrusted policy".into()),
                escalation: None,
            }
        }]
    );
    // The resumed process shows the question, then closes it: the call will not run again.
    let closed = close_pending_approvals(&resumed).unwrap();
    assert_eq!(closed.len(), 1);
    assert!(pending_approvals(&resumed.events()).is_empty());
    assert_eq!(
        resumed.last_event().unwrap().data.to_value(),
        json!({"callId": "call-1", "decision": "cancelled"})
    );
    signal.cancel();
    running.await.unwrap();
    assert!(pending_approvals(&h.session.events()).is_empty());
}

#[test]
fn pending_asks_are_those_without_an_answer() {
    let session = Session::builder(dsh_session::SessionHeader::new("p".into(), 1))
        .clock(Arc::new(|| 7))
        .build()
        .unwrap();
    let ask = |id: &str| {
        dsh_session::EventData::other(
            "approval/asked",
            json!({"callId": id, "tool": "bash", "summary": "ls"}),
        )
    };
    let answer = |id: &str| {
        dsh_session::EventData::other(
            "approval/decided",
            json!({"callId": id, "decision": "allow-once"}),
        )
    };
    let log = dsh_session::AppendOptions::log_only;
    session.append(ask("a"), log()).unwrap();
    session.append(ask("b"), log()).unwrap();
    session.append(answer("a"), log()).unwrap();
    session.append(ask("c"), log()).unwrap();
    let pending: Vec<_> = pending_approvals(&session.events())
        .into_iter()
        .map(|p| (p.seq, p.asked.call_id))
        .collect();
    assert_eq!(pending, [(1, "b".to_string()), (3, "c".to_string())]);
}

#[tokio::test]
async fn resume_rebuilds_grants_and_policy_from_the_log() {
    let h = Harness::new(json!({"policy": "ask"}));
    let answerer = ScriptedAnswerer::new([ApprovalDecision::AllowForSession]);
    h.answer_with(&answerer);
    h.approvals
        .set_policy(&h.session, ApprovalPolicy::Untrusted)
        .unwrap();
    h.run("bash", bash("cargo --version")).await;
    let grant = SessionGrant {
        tool: "bash".into(),
        scope: GrantScope::CommandPrefix("cargo".into()),
    };
    assert_eq!(
        fold_session_grants(&h.session.events()),
        std::slice::from_ref(&grant)
    );

    let resumed = reloaded(&h.session, &h.session.events());
    let fresh = Approvals::new(ApprovalSettings::default());
    assert_eq!(fresh.grants(&resumed), [grant]);
    assert_eq!(fresh.policy(&resumed), ApprovalPolicy::Untrusted);
}

#[tokio::test]
async fn a_resumed_session_does_not_ask_again_for_a_granted_prefix() {
    let h = Harness::new(json!({"policy": "untrusted"}));
    let answerer = ScriptedAnswerer::new([ApprovalDecision::AllowForSession]);
    h.answer_with(&answerer);
    h.run("bash", bash("echo first")).await;
    // A new process: fresh approval state, same log.
    h.approvals.forget(h.session.id());
    let result = h.run("bash", bash("echo again")).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(answerer.asked().len(), 1);
}

fn bare_session(id: &str) -> Session {
    Session::builder(dsh_session::SessionHeader::new(id.into(), 1))
        .clock(Arc::new(|| 7))
        .build()
        .unwrap()
}

/// Registered as the binary registers them, the declarations check raw appends of their
/// types too: the data must decode and pass the hook, or the log stays as it was.
#[test]
fn raw_approval_records_are_checked_against_their_declarations() {
    dsh_session::register_event_types(dsh_tools_builtin::approval::EVENT_TYPES).unwrap();
    let session = bare_session("raw");
    let log = dsh_session::AppendOptions::log_only;
    let raw = |type_name: &str, data| dsh_session::EventData::other(type_name, data);
    session
        .append(
            raw("approval/policy", json!({"policy": "untrusted"})),
            log(),
        )
        .unwrap();
    let before: Vec<_> = session.events().to_vec();
    for (type_name, data) in [
        ("approval/policy", json!({"policy": "sometimes"})),
        // `auto` was dropped: allow rules cover it.
        ("approval/policy", json!({"policy": "auto"})),
        ("sandbox/mode", json!({})),
        ("permission/preset", json!({"preset": 3})),
        ("approval/asked", json!({"callId": "c", "tool": "bash"})),
        (
            "approval/decided",
            json!({"callId": "c", "decision": "maybe"}),
        ),
        // The hook: a grant only with allow-session, and allow-session names its grant.
        (
            "approval/decided",
            json!({"callId": "c", "decision": "allow-session"}),
        ),
        (
            "approval/decided",
            json!({"callId": "c", "decision": "deny", "remembered": {"tool": "bash", "command": "ls"}}),
        ),
    ] {
        let err = session
            .append(raw(type_name, data.clone()), log())
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_EVENT_DATA", "{type_name} {data}");
    }
    assert_eq!(session.events().to_vec(), before);
    assert_eq!(
        fold_session_safety(&session.events()).policy,
        Some(ApprovalPolicy::Untrusted)
    );
}

/// The original writes these names too, with its own shapes: a delegated child's policy and
/// mode carry a `source`, and its answers use other words. Such logs still load (stored
/// records are not re-checked); the folds read what decodes and skip what does not.
#[test]
fn records_the_original_shaped_differently_load_and_fold_leniently() {
    dsh_session::register_event_types(dsh_tools_builtin::approval::EVENT_TYPES).unwrap();
    let stored = [
        json!({"type": "sandbox/mode", "seq": 0, "time": 1,
            "data": {"mode": "read-only", "source": "delegation"}}),
        json!({"type": "approval/policy", "seq": 1, "time": 1,
            "data": {"policy": "never", "source": "delegation"}}),
        json!({"type": "approval/asked", "seq": 2, "time": 1,
            "data": {"callId": "c1", "tool": "bash", "summary": "ls"}}),
        json!({"type": "approval/decided", "seq": 3, "time": 1,
            "data": {"callId": "c1", "outcome": "rejected"}}),
    ];
    let seed: Vec<SessionEvent> = stored
        .iter()
        .map(|v| SessionEvent::from_value(v).unwrap())
        .collect();
    let session = Session::with_seed(
        dsh_session::SessionHeader::new("original".into(), 1),
        seed,
        SeedSource::Persistence,
    )
    .unwrap();
    let events = session.events();
    let kept: Vec<_> = events[..4]
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect();
    assert_eq!(kept, stored);
    assert_eq!(
        fold_session_safety(&events),
        SafetyFold {
            preset: None,
            sandbox: Some(SandboxMode::ReadOnly),
            policy: Some(ApprovalPolicy::Never),
        }
    );
    // The answer in the original's words does not decode, so the ask still looks open.
    assert!(events[3]
        .decode::<dsh_tools_builtin::approval::ApprovalDecided>()
        .unwrap()
        .is_err());
    let pending: Vec<_> = pending_approvals(&events)
        .into_iter()
        .map(|p| p.asked.call_id)
        .collect();
    assert_eq!(pending, ["c1"]);
    assert!(fold_session_grants(&events).is_empty());
}
