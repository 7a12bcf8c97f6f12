//! Sandbox escalation through the whole agent loop: a scripted model runs a command the
//! sandbox denies, then retries it with `sandbox_permissions`. The retry is judged from the
//! session log (was the last run of this command denied? was an escalation of it rejected in
//! this turn?), so these tests drive the real loop, which logs calls and results.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_agent::Agent;
use dsh_session::{EventData, SessionEvent};
use dsh_testkit::harness::{run_followup, Harness};
use dsh_testkit::scripted::{text_response, tool_call_response, ScriptEntry};
use dsh_tools_builtin::approval::{SandboxEscalation, SessionGrant};
use dsh_tools_builtin::sandbox::{Enforcement, SandboxProbe};
use dsh_tools_builtin::{
    ApprovalDecision, ApprovalPlugin, ApprovalQuestion, ApprovalSettings, Approvals,
    BuiltinToolsConfig, BuiltinToolsPlugin, SandboxMode, ToolEnvs,
};
use serde_json::{json, Value};

use super::harness::ScriptedAnswerer;
use super::support::Fixture;

const JUSTIFICATION: &str = "The user asked for the file next to the workspace.";
const AVAILABLE: &str = "[sandbox: escalation available — retry this exact command once with \
sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval \
prompt asks the user]";

/// The loop with the built-in tools and approval mounted, one workspace-write environment
/// for every agent, and a scripted model (each test pushes its script).
struct Rig {
    h: Harness,
    approvals: Arc<Approvals>,
    /// Kept for its temp dirs.
    _fx: Fixture,
    /// A file outside the workspace (but next to it) that only an escalated run may create.
    target: PathBuf,
}

impl Rig {
    /// `None` (with a printed reason) when the kernel cannot enforce the sandbox.
    fn new(policy: &str) -> Option<Self> {
        let probe = SandboxProbe::current();
        if probe.enforcement(SandboxMode::WorkspaceWrite) != Enforcement::Full {
            eprintln!("skipping: the kernel cannot fully enforce the sandbox: {probe:?}");
            return None;
        }
        let h = Harness::builder().build();
        h.ctx()
            .plugin::<BuiltinToolsPlugin>(BuiltinToolsConfig::default())
            .unwrap();
        let settings: ApprovalSettings =
            serde_json::from_value(json!({ "policy": policy })).unwrap();
        h.ctx().plugin::<ApprovalPlugin>(settings).unwrap();
        let fx = Fixture::new();
        let envs = h.ctx().require::<ToolEnvs>().unwrap();
        envs.set(h.ctx(), fx.env.clone()).unwrap().forget();
        let target = fx.outside().join("escalated.txt");
        Some(Self {
            approvals: h.ctx().require::<Approvals>().unwrap(),
            h,
            _fx: fx,
            target,
        })
    }

    fn touch(&self) -> String {
        format!("touch {}", self.target.display())
    }

    fn answer_with(&self, answerer: &Arc<ScriptedAnswerer>) {
        let answerer: Arc<dyn dsh_tools_builtin::ApprovalAnswerer> = answerer.clone();
        self.approvals.set_answerer(Some(answerer));
    }

    async fn run(&self) -> Arc<dyn Agent> {
        let agent = self.h.create_agent().await.agent().clone();
        run_followup(&agent, "go").await;
        agent
    }

    fn events(&self) -> Vec<Arc<SessionEvent>> {
        self.h.session().events().to_vec()
    }

    /// The `{type, data}` of every approval event.
    fn approval_events(&self) -> Vec<Value> {
        self.events()
            .iter()
            .filter(|e| e.type_name().starts_with("approval/"))
            .map(|e| json!({"type": e.type_name(), "data": e.data.to_value()}))
            .collect()
    }
}

/// A bash call with arguments `args`.
fn bash(id: &str, args: Value) -> ScriptEntry {
    tool_call_response(&[(id, "bash", &args.to_string())]).into()
}

fn plain(command: &str) -> Value {
    json!({"command": command, "description": "create the file"})
}

fn escalated(command: &str, mode: &str) -> Value {
    json!({"command": command, "sandbox_permissions": mode, "justification": JUSTIFICATION})
}

/// One tool result as the log keeps it.
#[derive(Debug)]
struct Outcome {
    call: String,
    text: String,
    code: Option<String>,
    /// The sandbox denied the command (`sandboxDenied` in the result's meta).
    denied: bool,
    meta: Value,
}

fn results(events: &[Arc<SessionEvent>]) -> Vec<Outcome> {
    events
        .iter()
        .filter_map(|e| match &e.data {
            EventData::ToolResult(result) => {
                let message = serde_json::to_value(&*result.message).unwrap();
                let block = &message["content"][0];
                let meta = result.meta.as_ref().map_or(Value::Null, |m| m.to_value());
                Some(Outcome {
                    call: block["toolCallId"].as_str().unwrap().to_owned(),
                    text: block["content"][0]["text"].as_str().unwrap().to_owned(),
                    code: result.error.as_ref().map(|e| e.code.clone()),
                    denied: meta["sandboxDenied"] == json!(true),
                    meta,
                })
            }
            _ => None,
        })
        .collect()
}

fn asked(call: &str, command: &str) -> Value {
    json!({"type": "approval/asked", "data": {
        "callId": call, "tool": "bash", "summary": command,
        "reason": format!("escalate sandbox to danger-full-access: {JUSTIFICATION}"),
        "escalation": {"from": "workspace-write", "mode": "danger-full-access",
                       "justification": JUSTIFICATION},
    }})
}

fn decided(call: &str, decision: &str) -> Value {
    json!({"type": "approval/decided", "data": {"callId": call, "decision": decision}})
}

#[tokio::test]
async fn an_approved_retry_runs_that_one_call_outside_the_sandbox() {
    let Some(rig) = Rig::new("ask") else {
        return;
    };
    let touch = rig.touch();
    for entry in [
        bash("c1", plain(&touch)),
        bash("c2", escalated(&touch, "danger-full-access")),
        bash("c3", plain(&format!("rm {}", rig.target.display()))),
        text_response("done").into(),
    ] {
        rig.h.adapter().push(entry);
    }
    let answerer = ScriptedAnswerer::new([ApprovalDecision::AllowForSession]);
    rig.answer_with(&answerer);
    rig.run().await;
    // The escalated run created the file; the next command was confined again.
    assert!(rig.target.exists());
    let results = results(&rig.events());
    assert_eq!(results.len(), 3);
    assert!(results[0].text.ends_with(&format!(
        "[sandbox: file access denied under workspace-write mode]\n{AVAILABLE}"
    )));
    assert!(results[0].denied);
    assert_eq!(
        (results[1].text.as_str(), &results[1].code),
        ("(no output)", &None)
    );
    assert_eq!(results[1].meta["escalatedTo"], "danger-full-access");
    assert_eq!(results[1].meta["sandbox"], "none");
    assert!(
        results[2].denied,
        "the approval covered one call only: {results:?}"
    );
    assert_eq!(
        answerer.asked(),
        [ApprovalQuestion {
            session_id: rig.h.session().id().clone(),
            call_id: "c2".into(),
            tool: "bash".into(),
            summary: touch.clone(),
            reason: Some(format!(
                "escalate sandbox to danger-full-access: {JUSTIFICATION}"
            )),
            grant: None::<SessionGrant>,
            escalation: Some(SandboxEscalation {
                from: SandboxMode::WorkspaceWrite,
                mode: SandboxMode::DangerFullAccess,
                justification: JUSTIFICATION.into(),
            }),
        }]
    );
    // "Allow for this session" on an escalation is logged as what it was: once.
    assert_eq!(
        rig.approval_events(),
        [asked("c2", &touch), decided("c2", "allow-once")]
    );
    rig.h.finish().await;
}

/// A script: the plain command, then `retries` escalated retries of it, then an answer.
fn denied_then_escalated(rig: &Rig, retries: usize) {
    let touch = rig.touch();
    rig.h.adapter().push(bash("c1", plain(&touch)));
    for n in 0..retries {
        rig.h.adapter().push(bash(
            &format!("r{}", n + 1),
            escalated(&touch, "danger-full-access"),
        ));
    }
    rig.h.adapter().push(text_response("done"));
}

#[tokio::test]
async fn a_rejection_is_final_for_that_command_in_the_turn() {
    let Some(rig) = Rig::new("ask") else {
        return;
    };
    denied_then_escalated(&rig, 2);
    let answerer = ScriptedAnswerer::new([ApprovalDecision::Deny {
        feedback: Some("not outside the repo".into()),
    }]);
    rig.answer_with(&answerer);
    rig.run().await;
    assert!(!rig.target.exists());
    let results = results(&rig.events());
    let refusals: Vec<_> = results[1..]
        .iter()
        .map(|r| (r.call.as_str(), r.text.as_str(), r.code.as_deref()))
        .collect();
    assert_eq!(
        refusals,
        [
            (
                "r1",
                "Error: the user rejected escalating this command to \"danger-full-access\" \
                 (they said: not outside the repo); it was not run. This is final for this \
                 command in this turn: do not retry it or work around it; explain what you \
                 needed.",
                Some("ESCALATION_REJECTED"),
            ),
            (
                "r2",
                "Error: the command was not run: the user already rejected escalating this \
                 command in this turn, and that is final. Do not retry it or work around it; \
                 stop and tell the user what you needed.",
                Some("ESCALATION_REJECTED"),
            ),
        ]
    );
    assert_eq!(answerer.asked().len(), 1, "the second request asked no one");
    let touch = rig.touch();
    assert_eq!(
        rig.approval_events(),
        [
            asked("r1", &touch),
            json!({"type": "approval/decided", "data": {
                "callId": "r1", "decision": "deny", "feedback": "not outside the repo"}}),
        ]
    );
    rig.h.finish().await;
}

#[tokio::test]
async fn a_headless_run_refuses_with_a_message_the_model_reads() {
    let Some(rig) = Rig::new("ask") else {
        return;
    };
    denied_then_escalated(&rig, 1);
    rig.run().await;
    assert!(!rig.target.exists());
    let results = results(&rig.events());
    assert!(results[0].text.ends_with(
        "[sandbox: file access denied under workspace-write mode]\n[sandbox: escalating needs a \
         person's approval and no one can answer approval prompts in this session; do not set \
         sandbox_permissions — tell the user what you needed]"
    ));
    assert_eq!(
        results[1].text,
        "Error: the command was not run: running it in the \"danger-full-access\" sandbox mode \
         needs a person's approval, and no one can answer approval prompts in this session (a \
         headless run). Do not retry it; tell the user what you needed and why (they can rerun \
         with `--sandbox danger-full-access`, or approve it in the interactive UI)."
    );
    assert_eq!(results[1].code.as_deref(), Some("ESCALATION_UNAVAILABLE"));
    assert!(rig.approval_events().is_empty(), "no one was asked");
    rig.h.finish().await;
}

#[tokio::test]
async fn under_never_the_sandbox_is_fixed() {
    let Some(rig) = Rig::new("never") else {
        return;
    };
    denied_then_escalated(&rig, 1);
    let answerer = ScriptedAnswerer::new([]);
    rig.answer_with(&answerer);
    rig.run().await;
    assert!(!rig.target.exists());
    let results = results(&rig.events());
    assert!(results[0].text.ends_with(
        "[sandbox: file access denied under workspace-write mode]\n[sandbox: the sandbox mode is \
         fixed for this session (approval policy never); the denial is final — do not set \
         sandbox_permissions]"
    ));
    assert_eq!(
        results[1].text,
        "Error: the command was not run: approval prompts are off in this session (approval \
         policy never), so its \"workspace-write\" sandbox mode is fixed and the sandbox's denial \
         is final. Do not set sandbox_permissions again; tell the user what you needed and why."
    );
    assert_eq!(results[1].code.as_deref(), Some("ESCALATION_DISABLED"));
    assert!(answerer.asked().is_empty());
    assert!(rig.approval_events().is_empty());
    rig.h.finish().await;
}

const NOT_A_RETRY: &str = "Error: the command was not run: sandbox_permissions is only valid as \
a retry of a command the sandbox just denied in this session, and the last run of this exact \
command was not denied. Run it without sandbox_permissions; escalate only if the sandbox denies \
it. Never escalate speculatively.";

#[tokio::test]
async fn an_escalation_that_is_not_a_retry_asks_no_one() {
    let Some(rig) = Rig::new("ask") else {
        return;
    };
    let touch = rig.touch();
    // Up front, before any denial; then after a run of the command that was not denied.
    rig.h
        .adapter()
        .push(bash("e1", escalated(&touch, "danger-full-access")));
    rig.h.adapter().push(bash("c1", plain("true")));
    rig.h
        .adapter()
        .push(bash("e2", escalated("true", "danger-full-access")));
    rig.h.adapter().push(text_response("done"));
    let answerer = ScriptedAnswerer::new([]);
    rig.answer_with(&answerer);
    rig.run().await;
    let results = results(&rig.events());
    for at in [0, 2] {
        assert_eq!(results[at].text, NOT_A_RETRY);
        assert_eq!(results[at].code.as_deref(), Some("ESCALATION_NOT_A_RETRY"));
    }
    assert!(!rig.target.exists());
    assert!(answerer.asked().is_empty());
    assert!(rig.approval_events().is_empty());
    rig.h.finish().await;
}

#[tokio::test]
async fn an_escalation_of_a_different_command_than_the_denied_one_asks_no_one() {
    let Some(rig) = Rig::new("ask") else {
        return;
    };
    let touch = rig.touch();
    let other = format!("{touch} && echo also");
    rig.h.adapter().push(bash("c1", plain(&touch)));
    rig.h
        .adapter()
        .push(bash("e1", escalated(&other, "danger-full-access")));
    rig.h.adapter().push(text_response("done"));
    let answerer = ScriptedAnswerer::new([]);
    rig.answer_with(&answerer);
    rig.run().await;
    let results = results(&rig.events());
    assert!(results[0].denied, "the first run was denied");
    assert_eq!(results[1].text, NOT_A_RETRY);
    assert!(!rig.target.exists());
    assert!(answerer.asked().is_empty());
    rig.h.finish().await;
}

#[tokio::test]
async fn malformed_or_narrower_requests_are_refused_before_anything_else() {
    let Some(rig) = Rig::new("ask") else {
        return;
    };
    let touch = rig.touch();
    rig.h.adapter().push(bash("c1", plain(&touch)));
    rig.h.adapter().push(bash(
        "e1",
        json!({"command": touch, "sandbox_permissions": "danger-full-access"}),
    ));
    rig.h
        .adapter()
        .push(bash("e2", escalated(&touch, "workspace-write")));
    rig.h.adapter().push(text_response("done"));
    let answerer = ScriptedAnswerer::new([]);
    rig.answer_with(&answerer);
    rig.run().await;
    let results = results(&rig.events());
    assert_eq!(
        results[1].text,
        "Error: invalid arguments for bash: sandbox_permissions requires a justification"
    );
    assert_eq!(
        results[2].text,
        "Error: sandbox escalation to \"workspace-write\" is not wider than this call's current \
         \"workspace-write\" mode; run the command without sandbox_permissions"
    );
    assert_eq!(results[2].code.as_deref(), Some("ESCALATION_INVALID"));
    assert!(answerer.asked().is_empty());
    rig.h.finish().await;
}
