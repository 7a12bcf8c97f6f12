//! A created agent's session header carries the caller's metadata, typed as given.

use dsh_agent::{CreateAgentOptions, SessionMeta};
use dsh_protocol::SessionId;
use dsh_session::SessionOrigin;
use dsh_testkit::harness::{agent_options, Harness};
use serde_json::json;

#[tokio::test]
async fn a_delegated_child_is_recorded_with_its_origin_and_depth() {
    let h = Harness::builder().build();
    let parent = h.create_agent().await.agent().clone();
    let child = h
        .create_agent_with(CreateAgentOptions {
            session_id: Some(SessionId::from("child")),
            meta: SessionMeta {
                cwd: Some("/work".into()),
                parent_session: Some(parent.id().clone()),
                origin: Some(SessionOrigin::Subagent),
                delegation_depth: Some(1),
                ..Default::default()
            },
            agent_options: agent_options(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut header = serde_json::to_value(child.agent().session().header()).unwrap();
    header["createdAt"] = json!("<time>");
    assert_eq!(
        header,
        json!({"type": "session", "version": 0, "id": "child", "createdAt": "<time>",
               "cwd": "/work", "parentSession": parent.id().as_str(),
               "origin": "subagent", "delegationDepth": 1})
    );
    h.finish().await;
}
