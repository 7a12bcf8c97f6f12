//! Plan mode over whole logs: the refusal, exit_plan_mode approved and rejected, a late
//! approval after a cancel, and a mid-turn switch.

use super::plan_support::*;
use dsh_agent::{AgentCancelCause, CancelOptions};
use dsh_modes::plan::tool::{APPROVE, KEEP_PLANNING};
use dsh_modes::plan::{PlanMode, SetOutcome, PLAN_POLICY};
use dsh_modes::question::QuestionIntent;
use dsh_testkit::harness::{Harness, ScriptedTool};
use dsh_testkit::scripted::{text_response, tool_call_response};
use std::sync::Arc;

fn builder() -> dsh_testkit::harness::HarnessBuilder {
    Harness::builder().scripted_tools([ScriptedTool::new("write"), ScriptedTool::new("bash")])
}

const PLAN: &str = "# Add the flag\\n\\n1. Parse it.\\n2. Test it.";

#[tokio::test]
async fn plan_mode_refuses_a_write_and_a_non_read_only_command_whatever_else_allows_them() {
    let h = mount(
        builder().script([
            tool_call_response(&[
                ("c1", "write", r#"{"text":"x","path":"a.rs"}"#),
                (
                    "c2",
                    "bash",
                    r#"{"command":"cargo fmt && git commit -am x"}"#,
                ),
                ("c3", "bash", r#"{"command":"git status --short"}"#),
            ])
            .into(),
            text_response("I will plan instead.").into(),
        ]),
        None,
    );
    let agent = h.create_agent().await.agent().clone();
    let plan = h.ctx().require::<PlanMode>().unwrap();
    assert_eq!(
        plan.set(agent.as_ref(), true).unwrap(),
        SetOutcome::Committed
    );
    assert_eq!(plan.set(agent.as_ref(), true).unwrap(), SetOutcome::Noop);
    run(&agent, "add a --verbose flag").await;
    let write_refused = "tool/result ERR Error: plan mode is on: `write` changes files, so it is refused until the user approves a plan. Explore with read-only tools, then present the complete plan with exit_plan_mode. [TOOL_DENIED]";
    let bash_refused = "tool/result ERR Error: plan mode is on: this command is not a read-only command, so it is refused until the user approves a plan. Read-only commands (ls, cat, head, tail, wc, pwd, grep, rg, find, git status/log/diff/show, one command with no chaining or redirection) run; present the complete plan with exit_plan_mode. [TOOL_DENIED]";
    assert_eq!(
        lines(&agent.session().events()),
        [
            "plan/mode {\"active\":true}",
            "splice next-turn @0 -0 +[\"add a --verbose flag\"]",
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "step/start 1.1",
            "user: add a --verbose flag",
            "request/header initial",
            "request/context scripted/scripted-model",
            "assistant: <call c1 write> <call c2 bash> <call c3 bash> +usage",
            "tool/call c1 write {\"text\":\"x\",\"path\":\"a.rs\"}",
            write_refused,
            "tool/call c2 bash {\"command\":\"cargo fmt && git commit -am x\"}",
            bash_refused,
            "tool/call c3 bash {\"command\":\"git status --short\"}",
            "tool/result bash:",
            "step/end 1.1",
            "step/start 1.2",
            "assistant: I will plan instead. +usage",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    // Only the read-only command ran; the guidance was in the prompt; the catalogue keeps
    // exit_plan_mode in both modes.
    assert_eq!(h.probe().journal(), ["start c3", "end c3"]);
    let request = &h.adapter().requests()[0];
    assert!(request.system.as_deref().unwrap().contains(PLAN_POLICY));
    let names: Vec<String> = request
        .tools
        .iter()
        .flatten()
        .map(|t| t.name.clone())
        .collect();
    assert!(names.contains(&"exit_plan_mode".to_owned()), "{names:?}");
    h.finish().await;
}

#[tokio::test]
async fn an_approved_plan_leaves_plan_mode_silently_and_the_turn_goes_on() {
    let h = mount(
        builder().script([
            tool_call_response(&[("c1", "exit_plan_mode", &format!(r#"{{"plan":"{PLAN}"}}"#))])
                .into(),
            tool_call_response(&[("c2", "write", r#"{"text":"done"}"#)]).into(),
            text_response("Implemented.").into(),
        ]),
        None,
    );
    let person = ScriptedPerson::install(&h, vec![answer("plan-review", &[APPROVE], None)]);
    let agent = h.create_agent().await.agent().clone();
    let plan = h.ctx().require::<PlanMode>().unwrap();
    plan.set(agent.as_ref(), true).unwrap();
    run(&agent, "plan the flag").await;
    let log = lines(&agent.session().events());
    assert_eq!(
        log[7..],
        [
            "request/context scripted/scripted-model",
            "assistant: <call c1 exit_plan_mode> +usage",
            &format!("tool/call c1 exit_plan_mode {{\"plan\":\"{PLAN}\"}}"),
            "tool/result Plan approved — plan mode exited; carry out the plan starting with your next step.",
            "step/end 1.1",
            // Logged at the next accepted pre-step, silently (no notice to the model); the
            // prompt loses its plan section, so the header changes.
            "plan/mode {\"active\":false}",
            "step/start 1.2",
            "request/header change",
            "assistant: <call c2 write> +usage",
            "tool/call c2 write {\"text\":\"done\"}",
            "tool/result write:done",
            "step/end 1.2",
            "step/start 1.3",
            "assistant: Implemented. +usage",
            "step/end 1.3",
            "turn/end 1 completed",
        ]
    );
    let asked = person.asked.lock().unwrap().clone();
    let question = &asked[0].questions[0];
    assert_eq!(question.id, "plan-review");
    assert_eq!(
        question.detail.as_deref(),
        Some("# Add the flag\n\n1. Parse it.\n2. Test it.")
    );
    assert_eq!(
        question.intent,
        Some(QuestionIntent::PlanReview {
            approve: APPROVE.into()
        })
    );
    assert_eq!(asked[0].session_id.as_ref(), Some(agent.id()));
    let requests = h.adapter().requests();
    assert!(requests[0].system.as_deref().unwrap().contains(PLAN_POLICY));
    assert!(!requests[1].system.as_deref().unwrap().contains(PLAN_POLICY));
    h.finish().await;
}

#[tokio::test]
async fn keep_planning_with_feedback_stays_in_plan_mode_and_tells_the_model() {
    let h = mount(
        builder().script([
            tool_call_response(&[("c1", "exit_plan_mode", &format!(r#"{{"plan":"{PLAN}"}}"#))])
                .into(),
            tool_call_response(&[("c2", "exit_plan_mode", &format!(r#"{{"plan":"{PLAN}"}}"#))])
                .into(),
            text_response("Revised.").into(),
        ]),
        None,
    );
    ScriptedPerson::install(
        &h,
        vec![
            answer("plan-review", &[], Some("Add a test for --quiet too")),
            answer("plan-review", &[KEEP_PLANNING], None),
        ],
    );
    let agent = h.create_agent().await.agent().clone();
    h.ctx()
        .require::<PlanMode>()
        .unwrap()
        .set(agent.as_ref(), true)
        .unwrap();
    run(&agent, "plan the flag").await;
    let results: Vec<String> = lines(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result") || l.starts_with("plan/mode"))
        .collect();
    assert_eq!(
        results,
        [
            "plan/mode {\"active\":true}",
            "tool/result ERR Error: The user chose to keep planning; their feedback: Add a test for --quiet too [PLAN_NOT_APPROVED]",
            "tool/result ERR Error: The user chose to keep planning; revise the plan and present it again. [PLAN_NOT_APPROVED]",
        ]
    );
    let requests = h.adapter().requests();
    assert!(requests[2].system.as_deref().unwrap().contains(PLAN_POLICY));
    h.finish().await;
}

#[tokio::test]
async fn exit_plan_mode_outside_plan_mode_or_without_a_heading_asks_nobody() {
    let h = mount(
        builder().script([
            tool_call_response(&[("c1", "exit_plan_mode", &format!(r#"{{"plan":"{PLAN}"}}"#))])
                .into(),
            text_response("ok").into(),
        ]),
        None,
    );
    let person = ScriptedPerson::install(&h, vec![]);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, "go").await;
    assert!(lines(&agent.session().events()).contains(
        &"tool/result ERR Error: exit_plan_mode is only available in plan mode [NOT_IN_PLAN_MODE]"
            .to_owned()
    ));
    assert!(person.asked.lock().unwrap().is_empty());
    h.finish().await;
}

#[tokio::test]
async fn an_approval_arriving_after_a_cancel_is_ignored_and_plan_mode_stays_on() {
    let h = mount(
        builder().script([tool_call_response(&[(
            "c1",
            "exit_plan_mode",
            &format!(r#"{{"plan":"{PLAN}"}}"#),
        )])
        .into()]),
        None,
    );
    // Nothing queued: the person has not answered when the turn is cancelled.
    let person = ScriptedPerson::install(&h, vec![]);
    let agent = h.create_agent().await.agent().clone();
    let plan = h.ctx().require::<PlanMode>().unwrap();
    plan.set(agent.as_ref(), true).unwrap();
    agent
        .followup(dsh_testkit::harness::msg("plan it"))
        .unwrap();
    person.seen.notified().await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;
    // The answer now has nowhere to go.
    person
        .outcomes
        .lock()
        .unwrap()
        .push(answer("plan-review", &[APPROVE], None));
    let log = lines(&agent.session().events());
    let tail: Vec<&str> = log.iter().rev().take(3).rev().map(String::as_str).collect();
    assert!(tail[0].starts_with("tool/result ERR"), "{log:#?}");
    assert_eq!(tail[2], "turn/end 1 aborted user");
    assert!(!log.contains(&"plan/mode {\"active\":false}".to_owned()));
    assert!(plan.state(agent.session()).active);
    assert_eq!(plan.state(agent.session()).pending, None);
    h.finish().await;
}

#[tokio::test]
async fn a_switch_inside_a_turn_waits_for_the_next_step_and_is_narrated() {
    let h = mount(
        Harness::builder()
            .scripted_tools([ScriptedTool::new("slow").held()])
            .script([
                tool_call_response(&[("c1", "slow", "{}")]).into(),
                text_response("planning now").into(),
            ]),
        None,
    );
    let agent = h.create_agent().await.agent().clone();
    let plan = h.ctx().require::<PlanMode>().unwrap();
    agent.followup(dsh_testkit::harness::msg("work")).unwrap();
    h.probe().wait_for("start c1").await;
    assert_eq!(plan.set(agent.as_ref(), true).unwrap(), SetOutcome::Queued);
    assert!(!lines(&agent.session().events())
        .iter()
        .any(|l| l.starts_with("plan/mode")));
    h.probe().release("c1");
    agent.when_idle().await;
    let log = lines(&agent.session().events());
    let at = log.iter().position(|l| l == "step/end 1.1").unwrap();
    assert_eq!(
        log[at..at + 5],
        [
            "step/end 1.1",
            "plan/mode {\"active\":true}",
            "step/start 1.2",
            "user: The user switched this session to plan mode.",
            "request/header change",
        ]
    );
    assert!(h.adapter().requests()[1]
        .system
        .as_deref()
        .unwrap()
        .contains(PLAN_POLICY));
    let _ = Arc::clone(&plan);
    h.finish().await;
}
