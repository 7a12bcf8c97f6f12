//! Cross-cutting contracts: model-visible ⇔ recorded, runtime-context snapshots, failure
//! paths that must not kill the loop, and the initiator seen by tools.

use dsh_agent::{
    current_initiator, AgentOptions, AgentRequest, CreateAgentOptions, RequestError,
    RequestErrorAction,
};
use dsh_kernel::ListenOptions;
use dsh_llm::LlmStream;
use dsh_prompt::{ContextEntry, PromptText};
use dsh_protocol::{EpochHeader, SessionId, StreamChunk};
use dsh_testkit::harness::{msg, Harness, ScriptedTool, MODEL, PROVIDER};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{error_finish, text_response, text_script, tool_call_response};
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn every_request_is_rebuildable_from_the_log() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("echo")])
        .script([
            tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]).into(),
            error_finish("SERVER").into(),
            text_response("done").into(),
        ])
        .build();
    let checked: Arc<Mutex<Vec<bool>>> = Arc::default();
    let (sessions, seen) = (h.sessions().clone(), checked.clone());
    h.ctx()
        .on_waterfall_with::<LlmStream, _, _>(ListenOptions::prepend(), move |request, next| {
            let session = sessions.get(request.session_id.as_ref().unwrap()).unwrap();
            let header = session.request_header().unwrap();
            let rebuilt = EpochHeader {
                config: request.config.clone(),
                adapter_defaults: header.adapter_defaults,
                system: request.system.clone(),
                tools: request.tools.clone(),
            };
            let step_open = outline(&session.events())
                .iter()
                .rev()
                .find(|l| l.starts_with("step/"))
                .is_some_and(|l| l.starts_with("step/start"));
            let same =
                request.messages == session.derive_messages() && *header == rebuilt && step_open;
            seen.lock().unwrap().push(same);
            next.run()
        })
        .unwrap()
        .forget();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<RequestError, _, _>(|_, _| async { Ok(Some(RequestErrorAction::Retry)) })
        .unwrap()
        .forget();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    assert_eq!(*checked.lock().unwrap(), [true, true, true]);
    h.finish().await;
}

#[tokio::test]
async fn runtime_context_is_logged_only_when_it_changes() {
    let h = Harness::builder()
        .script(text_script(&["ok", "ok", "ok", "ok"]))
        .build();
    let mode = Arc::new(Mutex::new("plan".to_string()));
    let current = mode.clone();
    h.prompt()
        .context(
            h.ctx(),
            ContextEntry::new(
                "mode",
                1.0,
                PromptText::dynamic(move |_| current.lock().unwrap().clone()),
            ),
        )
        .unwrap()
        .forget();
    let agent = h.create_agent_named("s1").await.agent().clone();
    for (prompt, next_mode) in [("a", "plan"), ("b", ""), ("c", ""), ("d", "build")] {
        *mode.lock().unwrap() = next_mode.to_string();
        agent.followup(msg(prompt)).unwrap();
        agent.when_idle().await;
    }
    let users: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("user:"))
        .collect();
    let snapshot = |m: &str| {
        format!("user: Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n{m}")
    };
    assert_eq!(
        users,
        [
            "user: a".to_string(),
            snapshot("plan"),
            "user: b".into(),
            "user: Current runtime context: none. Earlier runtime-context snapshots no longer apply.".into(),
            "user: c".into(),
            "user: d".into(),
            snapshot("build"),
        ]
    );
    let events = agent.session().events();
    let first_snapshot = events.iter().find(|e| outline_is_snapshot(e)).unwrap();
    let value = serde_json::to_value(&**first_snapshot).unwrap();
    assert_eq!(
        value["data"]["source"],
        json!({"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt", "form": "snapshot", "sections": [{"name": "mode", "text": "plan"}]})
    );
    h.finish().await;
}

fn outline_is_snapshot(event: &dsh_session::SessionEvent) -> bool {
    matches!(&event.data, dsh_session::EventData::UserMessage(m) if dsh_prompt::is_runtime_context_message(m))
}

#[tokio::test]
async fn a_failing_listener_errors_the_turn_but_not_the_loop() {
    let h = Harness::builder().script(text_script(&["fine"])).build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let fail_once = Arc::new(AtomicBool::new(true));
    let flag = fail_once.clone();
    agent
        .ctx()
        .on_waterfall::<AgentRequest, _, _>(move |_, next| {
            let fail = flag.swap(false, Ordering::SeqCst);
            async move {
                if fail {
                    return Err("boom".into());
                }
                next.run().await
            }
        })
        .unwrap()
        .forget();
    let live = h.record();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    let ends: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("turn/end"))
        .collect();
    assert_eq!(ends, ["turn/end 1 error UNKNOWN", "turn/end 2 completed"]);
    assert!(live.lines().contains(&"agent/error UNKNOWN".to_string()));
    let events = agent.session().events();
    let end = events.iter().find(|e| e.type_name() == "turn/end").unwrap();
    assert_eq!(
        end.data.to_value()["reason"],
        json!({"kind": "error", "error": {"message": "boom", "code": "UNKNOWN"}})
    );
    h.finish().await;
}

#[tokio::test]
async fn a_missing_model_is_a_turn_error() {
    let h = Harness::builder().build();
    let agent = h
        .create_agent_with(named(
            "s1",
            AgentOptions {
                provider: Some(PROVIDER.into()),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .agent()
        .clone();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    let last = agent.session().last_event().unwrap();
    let reason = last.data.to_value()["reason"].clone();
    assert_eq!(reason["kind"], "error");
    assert!(reason["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no model"));
    h.finish().await;
}

#[tokio::test]
async fn a_route_without_adapter_can_be_served_by_stream_middleware() {
    let h = Harness::builder().build();
    h.ctx()
        .on_waterfall::<LlmStream, _, _>(|request, next| async move {
            if request.config.provider != "custom" {
                return next.run().await;
            }
            let chunks = text_response("from middleware");
            Ok(futures_util::stream::iter(
                chunks.into_iter().map(Ok::<StreamChunk, dsh_llm::LlmError>),
            )
            .boxed())
        })
        .unwrap()
        .forget();
    let agent = h
        .create_agent_with(named("s1", AgentOptions::new("custom", "x")))
        .await
        .unwrap()
        .agent()
        .clone();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    let lines = outline(&agent.session().events());
    assert!(
        lines.contains(&"assistant: from middleware +usage cites [7, 8, 9, 10, 11]".to_string()),
        "{lines:#?}"
    );
    assert_eq!(lines.last().unwrap(), "turn/end 1 completed");
    h.finish().await;
}

/// Creation options for agent `id` with `agent_options`.
fn named(id: &str, agent_options: AgentOptions) -> CreateAgentOptions {
    CreateAgentOptions {
        session_id: Some(SessionId::from(id)),
        agent_options,
        ..Default::default()
    }
}

/// Reports which agent the tool sees, through the execution and the ambient initiator.
struct WhoAmI;

impl Tool for WhoAmI {
    fn name(&self) -> &str {
        "whoami"
    }
    fn description(&self) -> String {
        "who runs me".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute<'a>(
        &'a self,
        _args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let from_exec = exec.caller().map(|c| c.id().to_string());
            let ambient = current_initiator().map(|a| a.id().to_string());
            Ok(json!(format!("{from_exec:?} {ambient:?}")))
        })
    }
}

#[tokio::test]
async fn tools_see_their_agent_through_the_execution_and_the_initiator() {
    let h = Harness::builder()
        .custom_tool(Arc::new(WhoAmI))
        .script([
            tool_call_response(&[("c1", "whoami", "{}")]).into(),
            text_response("done").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    let results: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result"))
        .collect();
    assert_eq!(
        results,
        ["tool/result Some(\"s1\") Some(\"s1\") cites [13]"]
    );
    h.finish().await;
}

#[tokio::test]
async fn model_selection_switches_the_next_step_and_is_logged() {
    use dsh_agent::{install_model_selection, ModelSelection, ModelSelectionRef};
    let h = Harness::builder()
        .script(text_script(&["one", "two"]))
        .build();
    h.prompt()
        .section(
            h.ctx(),
            dsh_prompt::Section::new("who", 1.0, "I am {{model}}"),
        )
        .unwrap()
        .forget();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let selection = Arc::new(ModelSelectionRef::new(None));
    for d in install_model_selection(agent.ctx(), selection.clone()).unwrap() {
        d.forget();
    }
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    selection.set(Some(ModelSelection {
        provider: PROVIDER.into(),
        model: "m2".into(),
        reasoning_effort: None,
    }));
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    let requests = h.adapter().requests();
    assert_eq!(requests[0].config.model, MODEL);
    assert_eq!(requests[1].config.model, "m2");
    assert!(requests[1].system.as_deref().unwrap().ends_with("I am m2"));
    let headers: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("request/"))
        .collect();
    assert_eq!(
        headers,
        [
            "request/header initial",
            "request/context scripted/scripted-model",
            "request/header change",
            "request/context scripted/m2"
        ]
    );
    h.finish().await;
}

/// Spec agent-features 9.1: a pre-step listener that shadows the retained runtime-context
/// snapshot (a compaction) must not leave the step's request without it. The snapshot is
/// projected after the outer listeners ran, so the same step re-emits it.
#[tokio::test]
async fn a_snapshot_shadowed_by_a_pre_step_replace_is_re_emitted_in_the_same_step() {
    use dsh_agent::PreStep;
    use dsh_protocol::{ContentBlock, Message, MessageSource};
    use dsh_session::{AppendOptions, EventData};
    let h = Harness::builder()
        .script(text_script(&["ok", "ok"]))
        .build();
    h.prompt()
        .context(
            h.ctx(),
            ContextEntry::new("mode", 1.0, PromptText::dynamic(|_| "plan".to_string())),
        )
        .unwrap()
        .forget();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<PreStep, _, _>(|args, next| {
            if args.turn == 2 {
                // Replace the whole surface (prompt, snapshot, answer) with one message.
                let session = args.agent.session();
                let nodes = session.surface().nodes;
                let (first, last) = (nodes[0], nodes[nodes.len() - 1]);
                let mut summary = Message::user_text("summary of turn one");
                summary.source = MessageSource::plugin("test-compact");
                session
                    .append(
                        EventData::UserMessage(Arc::new(summary)),
                        AppendOptions::surface_replace(first, last).sources(nodes),
                    )
                    .unwrap();
            }
            next.run()
        })
        .unwrap()
        .forget();
    for prompt in ["a", "b"] {
        agent.followup(msg(prompt)).unwrap();
        agent.when_idle().await;
    }
    let requests = h.adapter().requests();
    let texts: Vec<String> = requests[1]
        .messages
        .iter()
        .map(|m| match &m.content[0] {
            ContentBlock::Text { text } => text.lines().next().unwrap_or("").to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "summary of turn one",
            "b",
            "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
        ]
    );
    assert!(requests
        .iter()
        .all(|r| r.purpose == dsh_llm::RequestPurpose::Step));
    h.finish().await;
}
