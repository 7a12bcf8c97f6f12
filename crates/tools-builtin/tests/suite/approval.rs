//! Approval flows through the real pipeline: asks, answers, grants, rules, headless runs and
//! cancellation, with the logged events checked whole.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use dsh_protocol::{CallId, SessionId};
use dsh_tools::{PreExecute, PreExecuteDecision};
use dsh_tools_builtin::approval::{GrantScope, SessionGrant};
use dsh_tools_builtin::{ApprovalDecision, ApprovalQuestion, SandboxMode};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::harness::{asked, decided, text, Harness, ScriptedAnswerer};
use super::support::eventually;

const ASK_COMMANDS: &str = "shell commands need approval under the untrusted policy";
const ASK_FILES: &str = "file changes need approval under the untrusted policy";

fn bash(command: &str) -> serde_json::Value {
    json!({"command": command, "description": "test"})
}

/// The policy that asks before every command and file change.
fn untrusted() -> serde_json::Value {
    json!({"policy": "untrusted"})
}

#[tokio::test]
async fn allow_once_runs_the_call_and_asks_again_next_time() {
    let h = Harness::new(untrusted());
    let answerer =
        ScriptedAnswerer::new([ApprovalDecision::AllowOnce, ApprovalDecision::AllowOnce]);
    h.answer_with(&answerer);
    let first = h.run("bash", bash("echo hi")).await;
    assert_eq!(text(&first), "hi\n");
    let second = h.run("bash", bash("echo hi")).await;
    assert_eq!(text(&second), "hi\n");
    assert_eq!(
        answerer.asked()[0],
        ApprovalQuestion {
            session_id: SessionId::from("s1"),
            call_id: CallId::from("call-1"),
            tool: "bash".into(),
            summary: "echo hi".into(),
            reason: Some(ASK_COMMANDS.into()),
            grant: Some(SessionGrant {
                tool: "bash".into(),
                scope: GrantScope::CommandPrefix("echo".into())
            }),
            escalation: None,
        }
    );
    assert_eq!(
        h.approval_events(),
        [
            asked("call-1", "bash", "echo hi", ASK_COMMANDS),
            decided("call-1", json!({"decision": "allow-once"})),
            asked("call-2", "bash", "echo hi", ASK_COMMANDS),
            decided("call-2", json!({"decision": "allow-once"})),
        ]
    );
}

#[tokio::test]
async fn allow_for_session_covers_the_same_prefix_only() {
    let h = Harness::new(untrusted());
    let answerer = ScriptedAnswerer::new([
        ApprovalDecision::AllowForSession,
        ApprovalDecision::AllowOnce,
        ApprovalDecision::Deny { feedback: None },
    ]);
    h.answer_with(&answerer);
    assert_eq!(text(&h.run("bash", bash("echo one")).await), "one\n");
    assert_eq!(text(&h.run("bash", bash("echo two")).await), "two\n");
    assert_eq!(answerer.asked().len(), 1, "the grant covers `echo two`");
    assert_eq!(text(&h.run("bash", bash("printf x")).await), "x");
    assert_eq!(answerer.asked().len(), 2, "a different command asks");
    // A chained command never rides on a prefix grant.
    h.run("bash", bash("echo a && printf b")).await;
    assert_eq!(answerer.asked().len(), 3);
    assert_eq!(
        h.approval_events()[..4],
        [
            asked("call-1", "bash", "echo one", ASK_COMMANDS),
            decided(
                "call-1",
                json!({"decision": "allow-session", "remembered": {"tool": "bash", "commandPrefix": "echo"}})
            ),
            asked("call-3", "bash", "printf x", ASK_COMMANDS),
            decided("call-3", json!({"decision": "allow-once"})),
        ]
    );
    assert_eq!(
        h.approvals.grants(&h.session),
        [SessionGrant {
            tool: "bash".into(),
            scope: GrantScope::CommandPrefix("echo".into())
        }]
    );
}

#[tokio::test]
async fn file_grants_are_per_tool_and_path() {
    let h = Harness::new(untrusted());
    let answerer = ScriptedAnswerer::new([
        ApprovalDecision::AllowForSession,
        ApprovalDecision::AllowOnce,
    ]);
    h.answer_with(&answerer);
    let write = |path: &str, content: &str| json!({"file_path": path, "content": content});
    assert!(!h.run("write", write("src/a.txt", "1\n")).await.is_error());
    assert!(!h.run("write", write("src/a.txt", "2\n")).await.is_error());
    assert_eq!(answerer.asked().len(), 1);
    assert!(!h.run("write", write("src/b.txt", "3\n")).await.is_error());
    assert_eq!(answerer.asked().len(), 2);
    assert_eq!(
        h.approval_events()[..2],
        [
            asked("call-1", "write", "create src/a.txt (1 lines)", ASK_FILES),
            decided(
                "call-1",
                json!({"decision": "allow-session", "remembered": {"tool": "write", "path": "src/a.txt"}})
            ),
        ]
    );
}

#[tokio::test]
async fn deny_feedback_reaches_the_model_and_the_call_does_not_run() {
    let h = Harness::new(untrusted());
    let answerer = ScriptedAnswerer::new([ApprovalDecision::Deny {
        feedback: Some("put it in docs/ instead".into()),
    }]);
    h.answer_with(&answerer);
    h.fx.write("a.txt", "old\n");
    h.run("read", json!({"file_path": "a.txt"})).await;
    let result = h
        .run(
            "edit",
            json!({"file_path": "a.txt", "old_string": "old", "new_string": "new"}),
        )
        .await;
    assert_eq!(
        text(&result),
        "Error: the user rejected this tool call: put it in docs/ instead"
    );
    assert_eq!(result.error_info().unwrap().code, "TOOL_DENIED");
    assert_eq!(
        std::fs::read_to_string(h.fx.ws().join("a.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(
        h.approval_events(),
        [
            asked(
                "call-2",
                "edit",
                "edit a.txt: -1 +1 lines\n- old\n+ new",
                ASK_FILES
            ),
            decided(
                "call-2",
                json!({"decision": "deny", "feedback": "put it in docs/ instead"})
            ),
        ]
    );
}

#[tokio::test]
async fn headless_runs_refuse_with_a_way_to_allow_and_never_wait() {
    let h = Harness::new(untrusted());
    let result = h.run("bash", bash("git push origin main")).await;
    assert_eq!(result.error_info().unwrap().code, "TOOL_DENIED");
    assert_eq!(
        text(&result),
        "Error: this bash call was not run: shell commands need approval under the untrusted \
         policy, and no one can answer approval prompts in this session (a headless run). Tell \
         the user what you wanted to do. To let calls like this run they can rerun with \
         `--approval ask` (commands and file changes then run inside the sandbox without a \
         prompt), or add an allow rule to settings.toml: [[approval.rules]] action = \"allow\", \
         tool = \"bash\", command_prefix = \"git push\""
    );
    let unconfined = Harness::in_mode(SandboxMode::DangerFullAccess, json!({"policy": "ask"}));
    let result = unconfined.run("bash", bash("make deploy")).await;
    assert_eq!(
        text(&result),
        "Error: this bash call was not run: shell commands need approval while the sandbox is \
         off (danger-full-access), and no one can answer approval prompts in this session (a \
         headless run). Tell the user what you wanted to do. To let calls like this run they can \
         rerun inside the sandbox (`--sandbox workspace-write`), rerun with `--approval never`, \
         or add an allow rule to settings.toml: [[approval.rules]] action = \"allow\", tool = \
         \"bash\", command_prefix = \"make deploy\""
    );
    assert!(h.approval_events().is_empty(), "nothing was asked");
    assert!(unconfined.approval_events().is_empty(), "nothing was asked");
}

#[tokio::test]
async fn ask_runs_commands_and_file_changes_inside_the_sandbox_without_a_prompt() {
    let h = Harness::new(json!({"policy": "ask"}));
    let answerer = ScriptedAnswerer::new([]);
    h.answer_with(&answerer);
    // Without `description` too: models other than DeepSeek often leave it out.
    let command = h
        .run("bash", json!({"command": "echo ok > f.txt && cat f.txt"}))
        .await;
    assert_eq!(text(&command), "ok\n");
    let write = h
        .run("write", json!({"file_path": "g.txt", "content": "x"}))
        .await;
    assert!(!write.is_error(), "{write:?}");
    assert!(answerer.asked().is_empty());
    assert!(h.approval_events().is_empty());
}

#[tokio::test]
async fn policy_never_runs_everything_without_asking() {
    let h = Harness::new(json!({"policy": "never"}));
    let answerer = ScriptedAnswerer::new([]);
    h.answer_with(&answerer);
    assert_eq!(text(&h.run("bash", bash("echo ok")).await), "ok\n");
    let write = h
        .run("write", json!({"file_path": "n.txt", "content": "x"}))
        .await;
    assert!(!write.is_error());
    assert!(answerer.asked().is_empty());
    assert!(h.approval_events().is_empty());
}

#[tokio::test]
async fn allow_rules_spare_the_asks_of_untrusted_and_read_only_commands_need_none() {
    let h = Harness::new(json!({"policy": "untrusted", "rules": [
        {"action": "allow", "tool": "bash", "command_prefix": "echo"},
        {"action": "allow", "tool": "write", "path": "notes/**"},
    ]}));
    let answerer = ScriptedAnswerer::new([ApprovalDecision::Deny { feedback: None }]);
    h.answer_with(&answerer);
    assert_eq!(text(&h.run("bash", bash("echo ruled")).await), "ruled\n");
    let note = h
        .run(
            "write",
            json!({"file_path": "notes/today.md", "content": "x"}),
        )
        .await;
    assert!(!note.is_error(), "{note:?}");
    let listing = h.run("bash", bash("ls notes")).await;
    assert_eq!(text(&listing), "today.md\n");
    assert!(answerer.asked().is_empty());
    let other = h.run("bash", bash("printf x")).await;
    assert_eq!(text(&other), "Error: the user rejected this tool call");
    assert_eq!(
        h.approval_events(),
        [
            asked("call-4", "bash", "printf x", ASK_COMMANDS),
            decided("call-4", json!({"decision": "deny"})),
        ]
    );
}

#[tokio::test]
async fn ask_rules_ask_under_ask_even_in_the_sandbox_and_refuse_under_never() {
    let rules = json!([
        {"action": "allow", "tool": "bash"},
        {"action": "ask", "tool": "bash", "command_prefix": "git push"},
    ]);
    let h = Harness::new(json!({"policy": "ask", "rules": rules}));
    let answerer = ScriptedAnswerer::new([ApprovalDecision::Deny { feedback: None }]);
    h.answer_with(&answerer);
    let push = h.run("bash", bash("git status && git push")).await;
    assert_eq!(text(&push), "Error: the user rejected this tool call");
    assert_eq!(text(&h.run("bash", bash("echo fine")).await), "fine\n");
    assert_eq!(
        h.approval_events(),
        [
            asked(
                "call-1",
                "bash",
                "git status && git push",
                "an ask rule in the approval settings matches this call"
            ),
            decided("call-1", json!({"decision": "deny"})),
        ]
    );

    let never = Harness::new(json!({"policy": "never", "rules": rules}));
    never.answer_with(&answerer);
    let push = never.run("bash", bash("git push")).await;
    assert_eq!(
        text(&push),
        "Error: this bash call was not run: the user's settings send it to approval, and \
         approval prompts are off in this session (approval policy never). Do not retry it; \
         tell the user what you wanted to do."
    );
    assert!(never.approval_events().is_empty());
    assert_eq!(answerer.asked().len(), 1);
}

#[tokio::test]
async fn deny_rules_beat_allow_rules_and_apply_under_every_policy() {
    let rules = json!([
        {"action": "allow", "tool": "bash", "command_prefix": "git"},
        {"action": "deny", "tool": "bash", "command_prefix": "git push"},
        {"action": "deny", "tool": "read", "path": "*.env"},
    ]);
    for policy in ["untrusted", "ask", "never"] {
        let h = Harness::new(json!({"policy": policy, "rules": rules}));
        let answerer = ScriptedAnswerer::new([]);
        h.answer_with(&answerer);
        let push = h.run("bash", bash("git push --force")).await;
        assert_eq!(
            text(&push),
            "Error: this bash call is refused by the user's approval rules (git push --force). \
             Do not retry it; find another way or ask the user."
        );
        let chained = h.run("bash", bash("git status; git push")).await;
        assert_eq!(
            chained.error_info().unwrap().code,
            "TOOL_DENIED",
            "{policy}"
        );
        h.fx.write("prod.env", "KEY=1\n");
        let secret = h.run("read", json!({"file_path": "prod.env"})).await;
        assert_eq!(secret.error_info().unwrap().code, "TOOL_DENIED");
        assert!(answerer.asked().is_empty());
        assert!(h.approval_events().is_empty());
    }
}

#[tokio::test]
async fn read_only_tools_never_ask() {
    let h = Harness::new(untrusted());
    let answerer = ScriptedAnswerer::new([]);
    h.answer_with(&answerer);
    h.fx.write("a.txt", "needle\n");
    for (tool, args) in [
        ("read", json!({"file_path": "a.txt"})),
        ("glob", json!({"pattern": "*.txt"})),
        ("grep", json!({"pattern": "needle"})),
        ("todo_write", json!({"todos": []})),
    ] {
        let result = h.run(tool, args).await;
        assert!(!result.is_error(), "{tool}: {result:?}");
    }
    assert!(answerer.asked().is_empty());
    assert!(h.approval_events().is_empty());
}

#[tokio::test]
async fn a_hook_that_asks_goes_to_the_same_answerer() {
    let h = Harness::new(untrusted());
    let answerer = ScriptedAnswerer::new([ApprovalDecision::AllowOnce]);
    h.answer_with(&answerer);
    h.root
        .on_waterfall::<PreExecute, _, _>(|_args, _next| async {
            Ok::<_, dsh_kernel::BoxError>(PreExecuteDecision::Ask {
                reason: Some("a hook wants a look".into()),
            })
        })
        .unwrap()
        .forget();
    let result = h.run("glob", json!({"pattern": "*"})).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(
        h.approval_events(),
        [
            asked(
                "call-1",
                "glob",
                "glob {\"pattern\":\"*\"}",
                "a hook wants a look"
            ),
            decided("call-1", json!({"decision": "allow-once"})),
        ]
    );
}

#[tokio::test]
async fn a_hook_that_asks_is_refused_under_never() {
    let h = Harness::new(json!({"policy": "never"}));
    let answerer = ScriptedAnswerer::new([]);
    h.answer_with(&answerer);
    h.root
        .on_waterfall::<PreExecute, _, _>(|_args, _next| async {
            Ok::<_, dsh_kernel::BoxError>(PreExecuteDecision::Ask { reason: None })
        })
        .unwrap()
        .forget();
    let result = h.run("glob", json!({"pattern": "*"})).await;
    assert_eq!(result.error_info().unwrap().code, "TOOL_DENIED");
    assert!(text(&result).contains("approval prompts are off in this session"));
    assert!(answerer.asked().is_empty());
    assert!(h.approval_events().is_empty());
}

#[tokio::test]
async fn cancelling_the_turn_resolves_a_pending_ask_as_cancelled() {
    let h = Arc::new(Harness::new(untrusted()));
    let answerer = ScriptedAnswerer::silent();
    h.answer_with(&answerer);
    let signal = CancellationToken::new();
    let running = {
        let h = h.clone();
        let signal = signal.clone();
        tokio::spawn(async move {
            h.run_with(
                "write",
                json!({"file_path": "x.txt", "content": "x"}),
                signal,
            )
            .await
        })
    };
    assert!(eventually(|| answerer.asked().len() == 1).await);
    signal.cancel();
    let result = running.await.unwrap();
    assert_eq!(result.error_info().unwrap().code, "ABORTED_BEFORE_DISPATCH");
    assert!(answerer.dropped_unanswered.load(Ordering::SeqCst));
    assert!(!h.fx.ws().join("x.txt").exists());
    assert_eq!(
        h.approval_events(),
        [
            asked("call-1", "write", "create x.txt (1 lines)", ASK_FILES),
            decided("call-1", json!({"decision": "cancelled"})),
        ]
    );
}

#[tokio::test]
async fn a_call_without_an_agent_has_no_session_to_ask_in() {
    let h = Harness::new(untrusted());
    let answerer = ScriptedAnswerer::new([]);
    h.answer_with(&answerer);
    let call =
        dsh_tools::ToolInvocation::new(CallId::from("c"), "bash", bash("echo x").to_string())
            .extensions(dsh_tools::Extensions::new().with(h.fx.env.clone()));
    let result = h.tools.execute(call).await;
    assert_eq!(
        text(&result),
        "Error: this bash call needs approval, but it has no session to ask in"
    );
    assert!(answerer.asked().is_empty());
}
