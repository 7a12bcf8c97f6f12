//! Decoding one hook's output and merging N hooks.

use dsh_hooks::codec::{decode, RawDecision};
use dsh_hooks::merge::merge;
use dsh_hooks::{Decision, HookEvent};

#[test]
fn exit_2_blocks_with_stderr_and_ignores_stdout() {
    let out = decode(
        HookEvent::PreToolUse,
        Some(2),
        r#"{"decision":"approve"}"#,
        "  no rm  \n",
    );
    assert_eq!(out.decision, Some(RawDecision::Block));
    assert_eq!(out.reason.as_deref(), Some("no rm"));
}

#[test]
fn json_on_exit_0_is_a_decision_and_a_mismatched_event_drops_only_its_block() {
    let json = r#"{"continue":false,"stopReason":"halt","decision":"block","reason":"top",
        "hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask",
        "permissionDecisionReason":"why","additionalContext":"ctx"}}"#;
    let out = decode(HookEvent::PreToolUse, Some(0), json, "");
    assert_eq!(out.decision, Some(RawDecision::Ask));
    assert_eq!(out.reason.as_deref(), Some("why"));
    assert_eq!(out.additional_context.as_deref(), Some("ctx"));
    assert!(out.stop);
    assert_eq!(out.stop_reason.as_deref(), Some("halt"));
    assert_eq!(out.record_decision(), "ask");

    let other = decode(HookEvent::PostToolUse, Some(0), json, "");
    assert_eq!(other.decision, Some(RawDecision::Block));
    assert_eq!(other.reason.as_deref(), Some("top"));
    assert_eq!(other.additional_context, None);
    assert_eq!(other.hook_event_name.as_deref(), Some("PreToolUse"));
}

#[test]
fn a_top_level_deny_is_ignored_and_garbage_or_other_exits_pass() {
    let deny = decode(HookEvent::PreToolUse, Some(0), r#"{"decision":"deny"}"#, "");
    assert_eq!(deny.decision, None);
    assert_eq!(deny.record_decision(), "pass");
    for (code, stdout) in [
        (Some(0), "{not json"),
        (Some(0), "[1,2]"),
        (Some(1), r#"{"decision":"block"}"#),
        (Some(137), ""),
        (None, ""),
    ] {
        let out = decode(HookEvent::PreToolUse, code, stdout, "noise");
        assert_eq!(out.decision, None, "{code:?} {stdout}");
        assert_eq!(out.additional_context, None);
    }
    let stop = decode(HookEvent::Stop, Some(0), r#"{"continue":false}"#, "");
    assert_eq!(stop.record_decision(), "stop");
}

#[test]
fn plain_stdout_is_context_only_for_prompt_and_session_start() {
    let prompt = decode(HookEvent::UserPromptSubmit, Some(0), " be brief \n", "");
    assert_eq!(prompt.additional_context.as_deref(), Some("be brief"));
    let start = decode(HookEvent::SessionStart, Some(0), "hello", "");
    assert_eq!(start.additional_context.as_deref(), Some("hello"));
    let tool = decode(HookEvent::PreToolUse, Some(0), "hello", "");
    assert_eq!(tool.additional_context, None);
}

#[test]
fn merge_ranks_deny_over_ask_over_allow_and_keeps_the_winners_reasons() {
    let allow = decode(
        HookEvent::PreToolUse,
        Some(0),
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"fine","additionalContext":"a"}}"#,
        "",
    );
    let ask = decode(
        HookEvent::PreToolUse,
        Some(0),
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"unsure"}}"#,
        "",
    );
    let deny = decode(HookEvent::PreToolUse, Some(2), "", "no");
    let block = decode(HookEvent::PreToolUse, Some(2), "", "never");
    let stop = decode(
        HookEvent::PreToolUse,
        Some(0),
        r#"{"continue":false,"stopReason":"first","hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"b"}}"#,
        "",
    );
    let merged = merge([&allow, &ask, &deny, &stop, &block]);
    assert_eq!(merged.decision, Decision::Deny);
    assert_eq!(merged.reason.as_deref(), Some("no\n\nnever"));
    assert!(merged.stop);
    assert_eq!(merged.stop_reason.as_deref(), Some("first"));
    assert_eq!(merged.contexts, ["a", "b"]);

    let merged = merge([&allow, &ask]);
    assert_eq!(merged.decision, Decision::Ask);
    assert_eq!(merged.reason.as_deref(), Some("unsure"));
    assert_eq!(merge([&allow]).decision, Decision::Allow);
    assert_eq!(merge([]).decision, Decision::None);
}
