//! todo_write: summary text like the original, the whole list in metadata, validation.

use dsh_tools::{Tool, Typed, TypedTool};
use dsh_tools_builtin::{TodoWrite, TodoWriteArgs};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::Fixture;

fn list(value: serde_json::Value) -> TodoWriteArgs {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn returns_the_summary_and_the_whole_list() {
    let fx = Fixture::new();
    let todos = json!([
        {"content": "List the project files", "status": "in_progress"},
        {"content": "Read the notes", "status": "pending"},
        {"content": "Summarise the project", "status": "pending"}
    ]);
    let out = TodoWrite
        .run(
            list(json!({"todos": todos})),
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "Updated todo list: 2 pending, 1 in progress, 0 completed."
    );
    assert_eq!(out.metadata, json!({"todos": todos}));
    assert!(!TodoWrite.is_concurrency_safe(&json!({})));
}

#[tokio::test]
async fn rejects_bad_statuses_and_empty_tasks() {
    let fx = Fixture::new();
    let problem = Typed(TodoWrite)
        .check_arguments(&json!({"todos": [{"content": "x", "status": "done"}]}))
        .unwrap_err();
    assert!(problem.contains("unknown variant `done`"), "{problem}");
    let err = TodoWrite
        .run(
            list(json!({"todos": [{"content": "  ", "status": "pending"}]})),
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("todos[0].content is empty"));
    let out = TodoWrite
        .run(
            list(json!({"todos": []})),
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "Updated todo list: 0 pending, 0 in progress, 0 completed."
    );
}
