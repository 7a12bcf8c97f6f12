//! The plugin on a real agent loop: the catalog in the system prompt, a skill added between
//! turns recorded in the log, the `/name` gesture and command expansion.

use super::support::*;
use dsh_skills::{SkillsPlugin, EVENT_TYPES};
use dsh_testkit::expect::of_types;
use dsh_testkit::harness::{run_followup, Harness, ScriptedTool};
use dsh_testkit::scripted::{text_response, tool_call_response};
use serde_json::{json, Value};

fn types(log: &Value) -> Vec<String> {
    log.as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_skill_added_mid_session_is_listed_and_recorded_at_the_next_turn() {
    dsh_session::register_event_types(EVENT_TYPES).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (project, user, config) = roots(dir.path());
    write(&project.join("alpha.md"), &skill("alpha", "First skill."));
    let h = Harness::builder()
        .script([
            text_response("one").into(),
            text_response("two").into(),
            text_response("three").into(),
        ])
        .build();
    h.ctx().plugin::<SkillsPlugin>(config).unwrap();
    let agent = h.create_agent().await.agent().clone();
    run_followup(&agent, "a").await;
    write(&user.join("beta/SKILL.md"), &skill("beta", "Second skill."));
    run_followup(&agent, "b").await;
    run_followup(&agent, "c").await;

    let requests = h.adapter().requests();
    let system = |i: usize| requests[i].system.clone().unwrap_or_default();
    assert!(
        system(0).contains("- `alpha`: First skill.\n</available_skills>"),
        "{}",
        system(0)
    );
    assert!(!system(0).contains("beta"));
    assert!(
        system(1).contains("- `alpha`: First skill.\n- `beta`: Second skill.\n</available_skills>"),
        "{}",
        system(1)
    );
    let log = h.log_json();
    // Every event of the log, in order (the chunks of each answer left out): the catalog is
    // recorded before the first step, and again before the step after the change, whose
    // system prompt (in a new `request/header`) lists the new skill; the third turn, with
    // nothing changed, records nothing.
    let turn = |extra: &[&str]| -> Vec<String> {
        let mut events = vec!["agent/inbox/spliced", "turn/start", "agent/inbox/spliced"];
        events.extend_from_slice(extra);
        events.extend(["assistant/message", "step/end", "turn/end"]);
        events.into_iter().map(str::to_owned).collect()
    };
    let expected: Vec<String> = [
        turn(&[
            "skills/catalog",
            "step/start",
            "user/message",
            "request/header",
            "request/context",
        ]),
        turn(&[
            "skills/catalog",
            "step/start",
            "user/message",
            "request/header",
        ]),
        turn(&["step/start", "user/message"]),
    ]
    .concat();
    let actual: Vec<String> = types(&log)
        .into_iter()
        .filter(|t| t != "assistant/chunk")
        .collect();
    assert_eq!(actual, expected);
    let records: Vec<Value> = of_types(&log, &["skills/catalog"])
        .into_iter()
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(
        records,
        [
            json!({"entries": [{"name": "alpha", "description": "First skill."}],
                   "added": ["alpha"], "removed": [], "changed": [], "update": false}),
            json!({"entries": [{"name": "alpha", "description": "First skill."},
                               {"name": "beta", "description": "Second skill."}],
                   "added": ["beta"], "removed": [], "changed": [], "update": true}),
        ]
    );
    h.finish().await;
}

/// The catalog looks at the roots once per turn: an edit made while a turn runs shows from
/// the next turn on (with its `skills/catalog` record), never in a later step of the same
/// turn.
#[tokio::test]
async fn an_edited_skill_applies_at_the_next_turn_not_within_the_running_one() {
    dsh_session::register_event_types(EVENT_TYPES).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    let file = project.join("alpha/SKILL.md");
    write(&file, &skill("alpha", "First words."));
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("wait").held()])
        .script([
            tool_call_response(&[("w1", "wait", "{}")]).into(),
            text_response("one").into(),
            text_response("two").into(),
        ])
        .build();
    h.ctx().plugin::<SkillsPlugin>(config).unwrap();
    let agent = h.create_agent().await.agent().clone();
    agent
        .followup(dsh_protocol::Message::user_text("a"))
        .unwrap();
    h.probe().wait_for("start w1").await;
    write(&file, &skill("alpha", "Edited words, longer."));
    h.probe().release("w1");
    agent.when_idle().await;
    run_followup(&agent, "b").await;

    let requests = h.adapter().requests();
    let catalog = |i: usize| {
        let system = requests[i].system.as_deref().unwrap_or_default().to_owned();
        assert!(system.contains("</available_skills>"), "{system}");
        system
    };
    assert!(catalog(0).contains("- `alpha`: First words.\n"));
    assert!(
        catalog(1).contains("- `alpha`: First words.\n"),
        "the same turn"
    );
    assert!(
        catalog(2).contains("- `alpha`: Edited words, longer.\n"),
        "the next turn"
    );
    let records: Vec<Value> = of_types(&h.log_json(), &["skills/catalog"])
        .into_iter()
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(
        records,
        [
            json!({"entries": [{"name": "alpha", "description": "First words."}],
                   "added": ["alpha"], "removed": [], "changed": [], "update": false}),
            json!({"entries": [{"name": "alpha", "description": "Edited words, longer."}],
                   "added": [], "removed": [], "changed": ["alpha"], "update": true}),
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn gestures_and_commands_shape_what_the_step_enters() {
    dsh_session::register_event_types(EVENT_TYPES).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    write(
        &project.join("deploy/SKILL.md"),
        &skill("deploy", "Ship it."),
    );
    write(
        &project.join("manual.md"),
        "---\nname: manual\ndescription: Hand only.\nuser-invocable: false\n---\nx\n",
    );
    write(
        &config.command_roots[0].path.join("fix.md"),
        "Fix #$1 ($ARGUMENTS).\n",
    );
    let h = Harness::builder()
        .script([text_response("ok").into(), text_response("ok").into()])
        .build();
    h.ctx().plugin::<SkillsPlugin>(config).unwrap();
    let agent = h.create_agent().await.agent().clone();
    run_followup(
        &agent,
        "please /deploy and /deploy again, not /manual or /a/b or 5/8",
    )
    .await;
    run_followup(&agent, "/fix 7 soon").await;
    let log = h.log_json();
    let users: Vec<(Value, String)> = of_types(&log, &["user/message"])
        .into_iter()
        .filter(|e| e["data"]["source"]["plugin"].is_null())
        .map(|e| {
            let text = e["data"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (e["data"]["source"].clone(), text)
        })
        .collect();
    assert_eq!(users.len(), 3, "{users:#?}");
    assert_eq!(
        users[0].1,
        "please /deploy and /deploy again, not /manual or /a/b or 5/8"
    );
    assert_eq!(
        users[1].0,
        json!({"kind": "skill-invocation", "name": "deploy", "form": "instructions"})
    );
    assert!(
        users[1]
            .1
            .contains("<skill_instructions>\nThe deploy steps.\n"),
        "{}",
        users[1].1
    );
    assert_eq!(
        users[2],
        (
            json!({"kind": "user", "command": {"name": "fix", "args": "7 soon"}}),
            "Fix #7 (7 soon).".to_owned()
        )
    );
    // What the model saw is what the log says (the harness's reconstruction check).
    h.finish().await;
}
