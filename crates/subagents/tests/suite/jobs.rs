//! Background one-shot children are `subagent-N` jobs; `job_output` with a continuable
//! child's id answers with its state and latest report instead of "unknown job".

use super::*;
use dsh_protocol::SessionId;
use dsh_testkit::harness::{msg, until};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

fn results(session: &Session) -> Vec<String> {
    outline(&session.events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result"))
        .collect()
}

#[tokio::test]
async fn a_background_fork_is_a_job_whose_output_is_the_childs_answer() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            let last = last(req);
            if last == "go" {
                return tool_call_response(&[(
                    "c1",
                    "subagent_fork",
                    r#"{"description":"summarize","prompt":"summarize","run_in_background":true}"#,
                )]);
            }
            if last.starts_with("started background subagent job") {
                return tool_call_response(&[(
                    "c2",
                    "job_output",
                    r#"{"job_id":"subagent-1","wait":true}"#,
                )]);
            }
            return text_response("collected");
        }
        text_response("the summary")
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    assert_eq!(
        results(parent.session()),
        [
            "tool/result started background subagent job subagent-1 cites [13]",
            "tool/result the summary\n[status: completed] cites [23]",
        ]
    );
    t.h.finish().await;
}

#[tokio::test]
async fn job_output_with_a_continuable_id_says_what_it_is_and_what_it_reported() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            let last = last(req);
            if last == "go" {
                return tool_call_response(&[(
                    "c1",
                    "subagent",
                    r#"{"description":"scan","prompt":"scan the repo"}"#,
                )]);
            }
            if last == "check" {
                let id = req
                    .messages
                    .iter()
                    .find_map(|m| {
                        texts(m)
                            .strip_prefix("started subagent ")
                            .map(str::to_owned)
                    })
                    .unwrap();
                return tool_call_response(&[(
                    "c2",
                    "job_output",
                    &format!(r#"{{"job_id":"{id}"}}"#),
                )]);
            }
            return text_response("ok");
        }
        if last(req).contains("report accepted") {
            return text_response("closing words");
        }
        if last(req) == "child opened" {
            return tool_call_response(&[("r1", "report", r#"{"output":"3 files"}"#)]);
        }
        tool_call_response(&[("g1", "gate", r#"{"name":"child"}"#)])
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let id = t.subagents.children(&SessionId::from("agent-1"))[0]
        .id
        .clone();
    t.gates.open("child");
    until(|| t.subagents.get(&id).is_some_and(|c| !c.working)).await;
    parent.when_idle().await;
    parent.followup(msg("check")).unwrap();
    parent.when_idle().await;
    // (Where the report and the notice landed in the parent's turns is not this test's
    // business, so the citation is left out.)
    let last_result = results(parent.session()).pop().unwrap();
    let last_result = last_result.split(" cites [").next().unwrap();
    assert_eq!(
        last_result.replace(id.as_str(), "<child>"),
        "tool/result <child> is a subagent id, not a job id: subagent <child> (scan) has settled \
(completed). Status: idle.\nLatest report:\n3 files\nClosing message:\nclosing words\nUse \
send_message to give it more work; do not poll it with job_output."
    );
    t.h.finish().await;
}

#[tokio::test]
async fn job_completions_and_child_settlements_spend_one_wake_budget() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            if last(req) == "go" {
                return tool_call_response(&[
                    (
                        "c1",
                        "subagent",
                        r#"{"description":"one","prompt":"task g1"}"#,
                    ),
                    (
                        "c2",
                        "subagent",
                        r#"{"description":"two","prompt":"task g2"}"#,
                    ),
                    (
                        "c3",
                        "subagent_fork",
                        r#"{"description":"three","prompt":"task f1","run_in_background":true}"#,
                    ),
                    (
                        "c4",
                        "subagent_fork",
                        r#"{"description":"four","prompt":"task f2","run_in_background":true}"#,
                    ),
                ]);
            }
            return text_response("noted");
        }
        let gate = ["g1", "g2", "f1", "f2"]
            .into_iter()
            .find(|g| mentions(req, &format!("task {g}")))
            .unwrap();
        if last(req) == format!("{gate} opened") {
            return text_response(&format!("{gate} done"));
        }
        tool_call_response(&[("w1", "gate", &format!(r#"{{"name":"{gate}"}}"#))])
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let turns = || {
        outline(&parent.session().events())
            .iter()
            .filter(|l| l.starts_with("turn/start"))
            .count()
    };
    let heard = |text: &str| {
        outline(&parent.session().events())
            .iter()
            .any(|l| l.contains(text))
    };
    // Alternately a child's settlement and a job's completion, each on an idle parent.
    for (gate, notice) in [
        ("g1", "g1 done"),
        ("f1", "background job subagent-1"),
        ("g2", "g2 done"),
        ("f2", "background job subagent-2"),
    ] {
        t.gates.open(gate);
        until(|| heard(notice)).await;
        parent.when_idle().await;
    }
    // Three wakes in all (turns 2-4); the fourth notice waits for the next turn.
    assert_eq!(turns(), 4, "{:#?}", outline(&parent.session().events()));
    let last_line = outline(&parent.session().events()).pop().unwrap();
    assert!(
        last_line.starts_with("splice next-step @0 -0 +[\"background job subagent-2"),
        "{last_line}"
    );
    t.h.finish().await;
}

#[tokio::test]
async fn a_second_wake_budget_for_children_is_refused_when_jobs_are_mounted() {
    let h = dsh_testkit::harness::Harness::builder().build();
    dsh_session::register_event_types(dsh_subagents::EVENT_TYPES).unwrap();
    h.ctx()
        .plugin::<dsh_jobs::JobsPlugin>(dsh_jobs::JobsConfig::default())
        .unwrap();
    let config = SubagentsConfig {
        max_consecutive_wakes: 5,
        ..SubagentsConfig::default()
    };
    let error = h.ctx().plugin::<SubagentsPlugin>(config).unwrap_err();
    assert!(
        error.to_string().contains(
            "maxConsecutiveWakes (5) differs from the jobs row's (3); jobs and children share one wake budget"
        ),
        "{error}"
    );
    h.finish().await;
}
