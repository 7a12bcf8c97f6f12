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
