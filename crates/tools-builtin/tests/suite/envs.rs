//! Session environments found by scope: calls without a `ToolEnv` in their extensions run in
//! the environment registered for their agent's scope in `ToolEnvs`.

use std::sync::Arc;

use dsh_agent::Agent;
use dsh_protocol::{CallId, SessionId};
use dsh_session::{SessionOptions, SessionStore};
use dsh_tools::{Extensions, ToolInvocation};
use dsh_tools_builtin::{SandboxMode, ToolEnvs};
use serde_json::json;

use super::harness::{running_agent, text, Harness};
use super::support::Fixture;

/// A `read` of `note.txt` as the agent loop plans it, minus the extensions.
fn read_note(agent: &Arc<dyn Agent>, id: &str) -> ToolInvocation {
    ToolInvocation::new(
        CallId::from(id),
        "read",
        json!({"file_path": "note.txt"}).to_string(),
    )
    .scope(agent.scope_key().clone())
    .caller(agent.clone())
}

fn second_agent(h: &Harness) -> Arc<dyn Agent> {
    let store = h.root.require::<SessionStore>().unwrap();
    let session = store
        .create(
            &h.root,
            Some(SessionId::from("s2")),
            SessionOptions::default(),
        )
        .unwrap();
    running_agent(&h.root, session)
}

#[tokio::test]
async fn each_agent_runs_in_the_env_registered_for_its_scope() {
    let h = Harness::new(json!({"policy": "never"}));
    let envs = h.root.require::<ToolEnvs>().unwrap();
    let other = second_agent(&h);
    let other_fx = Fixture::new();
    h.fx.write("note.txt", "first workspace\n");
    other_fx.write("note.txt", "second workspace\n");
    envs.set(h.agent.ctx(), h.fx.env.clone()).unwrap().forget();
    envs.set(other.ctx(), other_fx.env.clone())
        .unwrap()
        .forget();

    let first = h.tools.execute(read_note(&h.agent, "c1")).await;
    let second = h.tools.execute(read_note(&other, "c2")).await;
    assert!(text(&first).contains("first workspace"), "{}", text(&first));
    assert!(
        text(&second).contains("second workspace"),
        "{}",
        text(&second)
    );
}

#[tokio::test]
async fn extensions_win_over_the_scoped_env() {
    let h = Harness::new(json!({"policy": "never"}));
    let envs = h.root.require::<ToolEnvs>().unwrap();
    let scoped_fx = Fixture::new();
    scoped_fx.write("note.txt", "scoped\n");
    h.fx.write("note.txt", "carried\n");
    envs.set(h.agent.ctx(), scoped_fx.env.clone())
        .unwrap()
        .forget();
    let call = read_note(&h.agent, "c1").extensions(Extensions::new().with(h.fx.env.clone()));
    let result = h.tools.execute(call).await;
    assert!(text(&result).contains("carried"), "{}", text(&result));
}

#[tokio::test]
async fn a_replaced_env_takes_effect_and_a_disposed_one_is_gone() {
    let h = Harness::new(json!({"policy": "never"}));
    let envs = h.root.require::<ToolEnvs>().unwrap();
    let write = |id: &str| {
        ToolInvocation::new(
            CallId::from(id),
            "write",
            json!({"file_path": "out.txt", "content": "x"}).to_string(),
        )
        .scope(h.agent.scope_key().clone())
        .caller(h.agent.clone())
    };
    envs.set(h.agent.ctx(), h.fx.env.clone()).unwrap().forget();
    let read_only = h.fx.env.with_sandbox_mode(SandboxMode::ReadOnly);
    let registration = envs.set(h.agent.ctx(), read_only).unwrap();
    let refused = h.tools.execute(write("c1")).await;
    assert_eq!(refused.error_info().unwrap().code, "SANDBOX_DENIED");
    assert!(!h.fx.ws().join("out.txt").exists());

    registration.dispose();
    let missing = h.tools.execute(write("c2")).await;
    assert_eq!(missing.error_info().unwrap().code, "TOOL_ENV_MISSING");
}
