//! The hook events on a real agent loop, with real `sh` processes; whole-log assertions.

use super::support::{harness, log_lines, HookFiles};
use dsh_testkit::harness::msg;
use dsh_testkit::scripted::{text_response, tool_call_response};
use serde_json::{json, Value};

fn request_texts(h: &dsh_testkit::harness::Harness, n: usize) -> Vec<String> {
    h.adapter().requests()[n]
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn pre_tool_use_exit_2_blocks_a_bash_call_matched_by_its_claude_name() {
    let files = HookFiles::new();
    let payload = files.path("payload.json");
    let files = files.claude(&format!(
        r#"{{"hooks":{{"PreToolUse":[
            {{"matcher":"Bash","hooks":[{{"command":"cat > '{}'; echo 'no rm here' >&2; exit 2"}}]}},
            {{"matcher":"Write","hooks":[{{"command":"exit 2"}}]}}
        ]}}}}"#,
        payload.display()
    ));
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "bash", r#"{"command":"rm -rf build"}"#)]).into(),
            text_response("ok").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("clean")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        log_lines(&agent.session().events()),
        [
            "turn/start 1",
            "step/start 1.1",
            "user: clean",
            "assistant: <call c1 bash> +usage",
            "tool/call c1 bash {\"command\":\"rm -rf build\"}",
            r#"hook/invoked {"turn":1,"point":"PreToolUse","dialect":"claude-code","matcher":"Bash","handlerId":"claude-code:PreToolUse:1"}"#,
            r#"hook/result {"turn":1,"point":"PreToolUse","handlerId":"claude-code:PreToolUse:1","decision":"block","exitCode":2,"stderrSummary":"no rm here","durationMs":0}"#,
            "tool/result ERR Error: no rm here [TOOL_DENIED]",
            "step/end 1.1",
            "step/start 1.2",
            "assistant: ok +usage",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    // The tool never ran; the model read the reason.
    assert!(h.probe().journal().is_empty());
    assert!(request_texts(&h, 1)
        .iter()
        .any(|m| m.contains("Error: no rm here")));
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&payload).unwrap()).unwrap();
    let cwd = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(
        sent,
        json!({"session_id": "s1", "transcript_path": "", "cwd": cwd,
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "rm -rf build"}, "tool_use_id": "c1"})
    );
    h.finish().await;
}

#[tokio::test]
async fn json_decisions_merge_deny_over_ask_and_a_non_matching_matcher_leaves_the_tool_alone() {
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"unsure"}}'"#;
    let deny = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"edits are frozen"}}'"#;
    let files = HookFiles::new().claude(&format!(
        r#"{{"hooks":{{"PreToolUse":[
            {{"matcher":"Edit","hooks":[{{"command":{}}},{{"command":{}}}]}},
            {{"matcher":"Read","hooks":[{{"command":"exit 2"}}]}}
        ]}}}}"#,
        Value::from(ask),
        Value::from(deny)
    ));
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "edit", "{}"), ("c2", "bash", "{}")]).into(),
            text_response("ok").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let lines = log_lines(&agent.session().events());
    let results: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("tool/result"))
        .collect();
    assert_eq!(
        results,
        [
            "tool/result ERR Error: edits are frozen [TOOL_DENIED]",
            "tool/result bash:"
        ]
    );
    let decisions: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("hook/result"))
        .collect();
    assert_eq!(decisions.len(), 2);
    assert!(decisions[0].contains(r#""decision":"ask""#));
    assert!(decisions[1].contains(r#""decision":"deny""#));
    h.finish().await;
}

#[tokio::test]
async fn user_prompt_submit_context_reaches_the_model_request() {
    let files = HookFiles::new().claude(
        r#"{"hooks":{"UserPromptSubmit":[{"hooks":[
            {"command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"remember: be brief\"}}'"},
            {"command":"echo plain context"}
        ]}]}}"#,
    );
    let h = harness(&files, files.config(), [text_response("hi").into()]);
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("hello")).unwrap();
    agent.when_idle().await;
    let lines = log_lines(&agent.session().events());
    assert_eq!(
        lines,
        [
            "turn/start 1",
            r#"hook/invoked {"turn":1,"point":"UserPromptSubmit","dialect":"claude-code","handlerId":"claude-code:UserPromptSubmit:1"}"#,
            r#"hook/result {"turn":1,"point":"UserPromptSubmit","handlerId":"claude-code:UserPromptSubmit:1","decision":"pass","exitCode":0,"durationMs":0}"#,
            r#"hook/invoked {"turn":1,"point":"UserPromptSubmit","dialect":"claude-code","handlerId":"claude-code:UserPromptSubmit:2"}"#,
            r#"hook/result {"turn":1,"point":"UserPromptSubmit","handlerId":"claude-code:UserPromptSubmit:2","decision":"pass","exitCode":0,"durationMs":0}"#,
            "step/start 1.1",
            "user: hello",
            "user: remember: be brief plain context",
            "assistant: hi +usage",
            "step/end 1.1",
            "turn/end 1 completed",
        ]
    );
    let request = request_texts(&h, 0);
    let context = request
        .iter()
        .find(|m| m.contains("remember: be brief"))
        .unwrap();
    assert!(
        context.contains(r#""source":{"kind":"plugin","plugin":"hooks-claude-code"}"#),
        "{context}"
    );
    assert!(context.contains("plain context"));
    h.finish().await;
}

#[tokio::test]
async fn user_prompt_submit_exit_2_blocks_the_turn_before_any_request() {
    let files = HookFiles::new().claude(
        r#"{"hooks":{"UserPromptSubmit":[{"matcher":"[","hooks":[{"command":"echo nope >&2; exit 2"}]}]}}"#,
    );
    let h = harness(&files, files.config(), []);
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("hello")).unwrap();
    agent.when_idle().await;
    let lines = log_lines(&agent.session().events());
    let kinds: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        kinds,
        ["turn/start", "hook/invoked", "hook/result", "turn/end"]
    );
    assert!(lines[3].starts_with("turn/end 1 blocked"), "{}", lines[3]);
    assert_eq!(h.adapter().calls(), 0);
    h.finish().await;
}

#[tokio::test]
async fn post_tool_use_sees_the_result_and_can_block_it_with_feedback() {
    let files = HookFiles::new();
    let payload = files.path("post.json");
    let files = files.claude(&format!(
        r#"{{"hooks":{{"PostToolUse":[{{"matcher":"Edit","hooks":[
            {{"command":"cat > '{}'; echo 'lint failed' >&2; exit 2"}}]}}]}}}}"#,
        payload.display()
    ));
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "edit", r#"{"file_path":"a.txt","text":"x"}"#)]).into(),
            text_response("ok").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let lines = log_lines(&agent.session().events());
    assert!(
        lines.contains(&"tool/result ERR Error: lint failed [TOOL_BLOCKED]".to_owned()),
        "{lines:#?}"
    );
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&payload).unwrap()).unwrap();
    let cwd = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(sent["tool_name"], "Edit");
    assert_eq!(sent["tool_input"]["file_path"], format!("{cwd}/a.txt"));
    assert_eq!(sent["tool_response"], "edit:x");
    h.finish().await;
}

#[tokio::test]
async fn a_hanging_hook_times_out_and_garbage_or_odd_exits_never_stop_the_turn() {
    let files = HookFiles::new().claude(
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[
            {"command":"sleep 30","timeout":0.3},
            {"command":"echo '{garbage'; exit 0"},
            {"command":"echo oops >&2; exit 7"},
            {"command":"kill -9 $$"}
        ]}]}}"#,
    );
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "bash", r#"{"text":"x"}"#)]).into(),
            text_response("ok").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let lines = log_lines(&agent.session().events());
    let results: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("hook/result"))
        .collect();
    assert_eq!(
        results,
        [
            r#"hook/result {"turn":1,"point":"PreToolUse","handlerId":"claude-code:PreToolUse:1","decision":"pass","stderrSummary":"hook timed out after 300 ms","durationMs":0}"#,
            r#"hook/result {"turn":1,"point":"PreToolUse","handlerId":"claude-code:PreToolUse:2","decision":"pass","exitCode":0,"durationMs":0}"#,
            r#"hook/result {"turn":1,"point":"PreToolUse","handlerId":"claude-code:PreToolUse:3","decision":"pass","exitCode":7,"stderrSummary":"oops","durationMs":0}"#,
            r#"hook/result {"turn":1,"point":"PreToolUse","handlerId":"claude-code:PreToolUse:4","decision":"pass","durationMs":0}"#,
        ]
    );
    assert!(lines.contains(&"tool/result bash:x".to_owned()));
    assert_eq!(lines.last().unwrap(), "turn/end 1 completed");
    h.finish().await;
}

#[tokio::test]
async fn continue_false_stops_the_turn_with_the_stop_reason() {
    let files = HookFiles::new().claude(
        r#"{"hooks":{"PreToolUse":[{"hooks":[
            {"command":"echo '{\"continue\":false,\"stopReason\":\"budget exhausted\"}'"}
        ]}]}}"#,
    );
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "bash", r#"{"text":"x"}"#)]).into(),
            text_response("never").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let events = agent.session().events();
    let end = serde_json::to_value(events.last().unwrap().as_ref()).unwrap();
    assert_eq!(end["type"], "turn/end");
    assert_eq!(end["data"]["reason"]["kind"], "aborted", "{end}");
    assert_eq!(
        end["data"]["reason"]["reason"],
        json!({"kind": "hook", "reason": "budget exhausted"})
    );
    assert_eq!(h.adapter().calls(), 1);
    assert!(h.probe().journal().is_empty());
    h.finish().await;
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_is_capped() {
    let files = HookFiles::new();
    let seen = files.path("stops.log");
    let files = files.claude(&format!(
        r#"{{"hooks":{{"Stop":[{{"hooks":[{{"command":"cat >> '{}'; echo 'not done yet' >&2; exit 2"}}]}}]}}}}"#,
        seen.display()
    ));
    let mut config = files.config();
    config.max_stop_blocks = 2;
    let h = harness(
        &files,
        config,
        [
            text_response("one").into(),
            text_response("two").into(),
            text_response("three").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    assert_eq!(h.adapter().calls(), 3);
    let lines = log_lines(&agent.session().events());
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("user: not done yet"))
            .count(),
        2,
        "{lines:#?}"
    );
    assert_eq!(lines.last().unwrap(), "turn/end 1 completed");
    let active: Vec<bool> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["stop_hook_active"]
                .as_bool()
                .unwrap()
        })
        .collect();
    assert_eq!(active, [false, true, true]);
    h.finish().await;
}

#[tokio::test]
async fn session_start_context_waits_in_the_inbox_for_the_first_request() {
    let files = HookFiles::new().claude(
        r#"{"hooks":{"SessionStart":[
            {"matcher":"startup","hooks":[{"command":"echo 'branch: main'"}]},
            {"matcher":"resume","hooks":[{"command":"echo 'never on startup'"}]}
        ]}}"#,
    );
    let h = harness(&files, files.config(), [text_response("hi").into()]);
    let agent = h.create_agent_named("s1").await.agent().clone();
    dsh_testkit::harness::until(|| agent.inbox().has_pending()).await;
    agent.followup(msg("hello")).unwrap();
    agent.when_idle().await;
    let request = request_texts(&h, 0);
    assert!(
        request.iter().any(|m| m.contains("branch: main")),
        "{request:?}"
    );
    assert!(!request.iter().any(|m| m.contains("never on startup")));
    // Detached: no turn, so no hook/* records.
    let lines = log_lines(&agent.session().events());
    assert!(!lines.iter().any(|l| l.starts_with("hook/")), "{lines:#?}");
    h.finish().await;
}

#[tokio::test]
async fn codex_hooks_get_the_codex_payload_and_cannot_ask() {
    let files = HookFiles::new();
    let payload = files.path("codex.json");
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'"#;
    let files = files.file(
        "hooks.json",
        dsh_hooks::Dialect::Codex,
        &json!({"PreToolUse": [{"matcher": "^bash$", "hooks": [
            {"command": format!("cat > '{}'", payload.display())},
            {"command": ask}
        ]}]})
        .to_string(),
    );
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "bash", r#"{"command":"ls","text":"y"}"#)]).into(),
            text_response("ok").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let raw = std::fs::read_to_string(&payload).unwrap();
    assert!(!raw.ends_with('\n'));
    let sent: Value = serde_json::from_str(&raw).unwrap();
    let cwd = std::env::current_dir().unwrap().display().to_string();
    assert_eq!(
        sent,
        json!({"session_id": "s1", "transcript_path": null, "cwd": cwd,
            "hook_event_name": "PreToolUse", "model": "scripted-model",
            "permission_mode": "default", "turn_id": "1", "tool_name": "bash",
            "tool_input": {"command": "ls"}, "tool_use_id": "c1"})
    );
    // The ask was dropped: the call ran.
    let lines = log_lines(&agent.session().events());
    assert!(
        lines.contains(&"tool/result bash:y".to_owned()),
        "{lines:#?}"
    );
    h.finish().await;
}

#[tokio::test]
async fn a_pre_tool_use_ask_goes_to_the_approval_seam_and_fails_closed_without_one() {
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check first"}}'"#;
    let files = HookFiles::new().claude(
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": ask}]}]}})
            .to_string(),
    );
    let h = harness(
        &files,
        files.config(),
        [
            tool_call_response(&[("c1", "bash", r#"{"text":"y"}"#)]).into(),
            text_response("ok").into(),
        ],
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let lines = log_lines(&agent.session().events());
    let result = lines.iter().find(|l| l.starts_with("tool/result")).unwrap();
    assert!(
        result.starts_with("tool/result ERR Error: ") && result.contains("approval"),
        "{result}"
    );
    assert!(h.probe().journal().is_empty());
    h.finish().await;
}

#[tokio::test]
async fn subagent_hooks_fire_for_a_child_agent_only() {
    let files = HookFiles::new();
    let starts = files.path("starts.log");
    let stops = files.path("stops.log");
    let files = files.claude(
        &json!({"hooks": {
            "SubagentStart": [{"matcher": "general-purpose", "hooks": [
                {"command": format!("cat >> '{}'; echo", starts.display())}]}],
            "SubagentStop": [{"hooks": [{"command": format!("cat >> '{}'; echo", stops.display())}]}]
        }})
        .to_string(),
    );
    let h = harness(&files, files.config(), []);
    let parent = h.create_agent_named("parent").await.agent().clone();
    let child = h
        .registry()
        .create(
            parent.ctx(),
            dsh_agent::CreateAgentOptions {
                session_id: Some(dsh_protocol::SessionId::from("child")),
                agent_options: dsh_testkit::harness::agent_options(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let read = |path: &std::path::Path| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    dsh_testkit::harness::until(|| !read(&starts).is_empty()).await;
    let started = read(&starts);
    assert_eq!(started.len(), 1, "the parent is no sub-agent: {started:?}");
    assert_eq!(started[0]["session_id"], "child");
    assert_eq!(started[0]["agent_id"], "child");
    assert_eq!(started[0]["agent_type"], "general-purpose");
    assert_eq!(started[0]["hook_event_name"], "SubagentStart");
    child.dispose().await;
    dsh_testkit::harness::until(|| !read(&stops).is_empty()).await;
    let stopped = read(&stops);
    assert_eq!(stopped[0]["agent_id"], "child");
    assert_eq!(stopped[0]["stop_hook_active"], false);
    h.finish().await;
}
