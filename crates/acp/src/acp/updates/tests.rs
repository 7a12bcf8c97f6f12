use super::*;
use dsh_protocol::CallId;
use dsh_session::{AssistantChunk, Todo, ToolCall, ToolErrorInfo};
use std::sync::Arc;

fn event(data: EventData) -> SessionEvent {
    SessionEvent {
        seq: 0,
        time: 0,
        data,
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    }
}

fn call(id: &str, name: &str, arguments: Value) -> SessionEvent {
    event(EventData::ToolCall(ToolCall {
        turn: 1,
        step: 1,
        call_id: CallId::new(id),
        name: name.into(),
        arguments: arguments.to_string(),
    }))
}

fn result(id: &str, text: &str, error: bool) -> SessionEvent {
    let message = Message::new(
        dsh_protocol::Role::User,
        vec![ContentBlock::ToolResult {
            tool_call_id: CallId::new(id),
            content: vec![ContentBlock::text(text)],
            is_error: error.then_some(true),
        }],
        MessageSource::Tool {
            call_id: CallId::new(id),
        },
    );
    event(EventData::ToolResult(ToolResult {
        turn: 1,
        step: 1,
        message: Arc::new(message),
        error: error.then(|| ToolErrorInfo {
            name: "x".into(),
            code: "y".into(),
        }),
        meta: None,
    }))
}

#[test]
fn streamed_text_and_reasoning_become_chunks() {
    let mut t = Translator::new("/w");
    let delta = |chunk| {
        event(EventData::AssistantChunk(AssistantChunk {
            turn: 1,
            step: 1,
            chunk,
        }))
    };
    assert_eq!(
        t.live(&delta(StreamChunk::TextDelta {
            index: 0,
            text: "hi".into()
        })),
        vec![
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        ]
    );
    assert_eq!(
        t.live(&delta(StreamChunk::ReasoningDelta {
            index: 0,
            text: "hm".into()
        })),
        vec![
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})
        ]
    );
    assert!(t
        .live(&delta(StreamChunk::TextDelta {
            index: 0,
            text: String::new()
        }))
        .is_empty());
}

#[test]
fn an_edit_is_announced_with_its_diff_and_completed_with_it() {
    let mut t = Translator::new("/w");
    let args = json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"});
    let diff = json!({"type": "diff", "path": "/w/a.txt", "oldText": "one", "newText": "two"});
    assert_eq!(
        t.live(&call("c1", "edit", args.clone())),
        vec![json!({
            "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit a.txt",
            "kind": "edit", "status": "pending", "rawInput": args,
            "locations": [{"path": "/w/a.txt"}], "content": [diff.clone()],
        })]
    );
    assert_eq!(
        t.live(&result("c1", "edited", false)),
        vec![json!({
            "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
            "content": [diff, {"type": "content", "content": {"type": "text", "text": "edited"}}],
            "rawOutput": {"text": "edited", "isError": false},
        })]
    );
}

#[test]
fn a_failed_call_is_failed_and_todos_are_a_plan() {
    let mut t = Translator::new("/w");
    t.live(&call("c2", "bash", json!({"command": "false"})));
    let update = t.live(&result("c2", "exit 1", true));
    assert_eq!(update[0]["status"], "failed");
    let todos = event(EventData::TodoWrite(TodoWrite {
        todos: vec![
            Todo {
                content: "a".into(),
                status: TodoStatus::Completed,
            },
            Todo {
                content: "b".into(),
                status: TodoStatus::InProgress,
            },
        ],
    }));
    assert_eq!(
        t.live(&todos),
        vec![json!({"sessionUpdate": "plan", "entries": [
            {"content": "a", "priority": "medium", "status": "completed"},
            {"content": "b", "priority": "medium", "status": "in_progress"},
        ]})]
    );
}

#[test]
fn replay_shows_the_persons_messages_but_not_plugin_messages() {
    let mut t = Translator::new("/w");
    let typed = event(EventData::UserMessage(Arc::new(Message::user_text(
        "fix it",
    ))));
    assert_eq!(
        t.replay(&typed),
        vec![
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "fix it"}})
        ]
    );
    let injected = Message::new(
        dsh_protocol::Role::User,
        vec![ContentBlock::text("AGENTS.md says")],
        MessageSource::Plugin {
            plugin: "instructions".into(),
            extra: Default::default(),
        },
    );
    assert!(t
        .replay(&event(EventData::UserMessage(Arc::new(injected))))
        .is_empty());
    assert!(t.live(&typed).is_empty(), "a live prompt is not echoed");
}
