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
    let h = Arc::new(Harness::new(json!({"policy": "ask"})));
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
                reason: Some("shell commands need approval under the ask policy".into()),
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
        .set_policy(&h.session, ApprovalPolicy::Auto)
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
    assert_eq!(fresh.policy(&resumed), ApprovalPolicy::Auto);
}

#[tokio::test]
async fn a_resumed_session_does_not_ask_again_for_a_granted_prefix() {
    let h = Harness::new(json!({"policy": "ask"}));
    let answerer = ScriptedAnswerer::new([ApprovalDecision::AllowForSession]);
    h.answer_with(&answerer);
    h.run("bash", bash("echo first")).await;
    // A new process: fresh approval state, same log.
    h.approvals.forget(h.session.id());
    let result = h.run("bash", bash("echo again")).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(answerer.asked().len(), 1);
}
