//! After a crash, the resumed parent learns from its own log which children finished,
//! which were interrupted, and what they last reported.

use super::*;
use dsh_agent::ResumeAgentOptions;
use dsh_protocol::SessionId;
use dsh_testkit::harness::{agent_options, msg, until};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

fn route(req: &LlmRequest) -> Vec<StreamChunk> {
    if for_session(req, "agent-1") {
        if last(req) == "go" {
            return tool_call_response(&[
                (
                    "c1",
                    "subagent",
                    r#"{"description":"quick","prompt":"quick task"}"#,
                ),
                (
                    "c2",
                    "subagent",
                    r#"{"description":"slow","prompt":"slow task"}"#,
                ),
            ]);
        }
        return text_response("ok");
    }
    let gate = if mentions(req, "quick task") {
        "quick"
    } else {
        "slow"
    };
    let last = last(req);
    if last == format!("{gate} opened") {
        return text_response(&format!("{gate} closing"));
    }
    if mentions(req, "report accepted") {
        return tool_call_response(&[("g1", "gate", &format!(r#"{{"name":"{gate}"}}"#))]);
    }
    tool_call_response(&[(
        "r1",
        "report",
        &format!(r#"{{"output":"{gate} progress"}}"#),
    )])
}

#[tokio::test]
async fn a_resumed_parent_is_told_which_children_finished_and_which_were_interrupted() {
    let t = Tree::build(route);
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let children = t.subagents.children(&SessionId::from("agent-1"));
    let id_of = |label: &str| {
        children
            .iter()
            .find(|c| c.label == label)
            .unwrap()
            .id
            .clone()
    };
    let (quick, slow) = (id_of("quick"), id_of("slow"));
    t.gates.open("quick");
    until(|| t.subagents.get(&quick).is_some_and(|c| !c.working)).await;
    until(|| {
        t.subagents
            .get(&slow)
            .is_some_and(|c| c.last_report.is_some())
    })
    .await;
    parent.when_idle().await;
    // The process "ends" here: the slow child is still at its gate.
    let stored = parent.session().events().to_vec();
    t.gates.open("slow");
    until(|| t.subagents.get(&slow).is_some_and(|c| !c.working)).await;
    parent.when_idle().await;
    t.h.finish().await;

    let t = Tree::build(route);
    let source = t.h.mount_memory_source();
    source.save(&SessionId::from("agent-1"), stored);
    let mut options = ResumeAgentOptions::new(SessionId::from("agent-1"));
    options.agent_options = agent_options();
    let resumed = t.h.resume_agent(options).await.unwrap().agent().clone();
    let notice = outline(&resumed.session().events()).pop().unwrap();
    assert_eq!(
        notice.replace(quick.as_str(), "<quick>").replace(slow.as_str(), "<slow>"),
        "splice next-step @0 -0 +[\"This session was resumed. The background subagents you started earlier:\
\\n- <quick> (quick) finished its last piece of work. Last report: quick progress Closing message: quick closing\
\\n- <slow> (slow) was interrupted before it finished (the process ended). Last report: slow progress\
\\nEach is stored; send_message continues any of them in its own conversation.\"]"
    );
    let known: Vec<(String, &str)> = t
        .subagents
        .children(&SessionId::from("agent-1"))
        .into_iter()
        .map(|c| (c.label, c.status))
        .collect();
    assert_eq!(
        known,
        [("quick".to_owned(), "ready"), ("slow".to_owned(), "ready")]
    );
    t.h.finish().await;
}
