//! The built-in tools registered on a real tool runtime and run through its pipeline.

use dsh_kernel::Context;
use dsh_protocol::CallId;
use dsh_protocol::ToolSchema;
use dsh_tools::{
    ErrorInfo, ExecutionMode, ToolInvocation, ToolRuntime, ToolsConfig, ToolsPlugin, TypedTool,
};
use dsh_tools_builtin::{
    Bash, BuiltinToolsConfig, BuiltinToolsPlugin, Edit, Glob, Grep, Read, TodoWrite, ToolEnvs,
    WebFetch, Write,
};
use serde_json::json;

use super::harness::{text, Harness};

fn bash(command: &str) -> serde_json::Value {
    json!({"command": command, "description": "test"})
}

/// What the model is shown of `tool`, from the tool itself.
fn schema(tool: &impl TypedTool) -> ToolSchema {
    ToolSchema {
        name: tool.name().to_owned(),
        description: tool.description().into(),
        parameters: tool.parameters().into(),
    }
}

fn never() -> serde_json::Value {
    json!({"policy": "never"})
}

#[tokio::test]
async fn plugin_registers_the_default_tools_with_their_own_schemas() {
    let h = Harness::new(never());
    let scope = Some(h.agent.scope_key());
    assert_eq!(
        h.tools.names(scope),
        [
            "bash",
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "todo_write"
        ]
    );
    let schemas = h.tools.schemas(scope);
    let expected = [
        schema(&Bash),
        schema(&Read),
        schema(&Write),
        schema(&Edit),
        schema(&Glob),
        schema(&Grep),
        schema(&TodoWrite),
    ];
    assert_eq!(schemas, expected);
}

#[tokio::test]
async fn web_fetch_and_flags_follow_the_config() {
    let h = Harness::with(
        json!({"enabled": {"bash": false}, "web_fetch": {"enabled": true}}),
        never(),
    );
    assert_eq!(
        h.tools.names(None),
        [
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "todo_write",
            "web_fetch"
        ]
    );
    assert_eq!(
        h.tools.get(None, "web_fetch").unwrap().parameters(),
        WebFetch::default().parameters()
    );
}

/// The schemas the model sees, byte for byte: the provider's prompt cache keys on them, so
/// any change (even key order) must be deliberate. Regenerate the file only on purpose.
#[tokio::test]
async fn registered_schemas_are_byte_identical_to_the_pinned_ones() {
    let h = Harness::with(json!({"web_fetch": {"enabled": true}}), never());
    let mut shown = serde_json::to_string_pretty(&h.tools.schemas(None)).unwrap();
    shown.push('\n');
    assert_eq!(shown, include_str!("builtin_schemas.json"));
}

/// Each tool's pipeline timeout and concurrency, as the registry sees them.
#[tokio::test]
async fn timeouts_and_concurrency_are_per_tool() {
    let h = Harness::with(json!({"web_fetch": {"enabled": true}}), never());
    let flags: Vec<(String, Option<u64>, bool)> = h
        .tools
        .names(None)
        .into_iter()
        .map(|name| {
            let tool = h.tools.get(None, &name).unwrap();
            let timeout = tool.timeout().map(|t| t.as_secs());
            let parallel = tool.is_concurrency_safe(&json!({}));
            (name, timeout, parallel)
        })
        .collect();
    let expected = [
        ("bash", None, false),
        ("read", Some(120), true),
        ("write", Some(120), false),
        ("edit", Some(120), false),
        ("glob", Some(120), true),
        ("grep", Some(120), true),
        ("todo_write", Some(30), false),
        ("web_fetch", Some(120), true),
    ]
    .map(|(name, timeout, parallel)| (name.to_string(), timeout, parallel));
    assert_eq!(flags, expected);
}

#[tokio::test]
async fn plugin_waits_for_the_tool_runtime_and_unwinds_with_it() {
    let root = Context::root();
    root.plugin::<BuiltinToolsPlugin>(BuiltinToolsConfig::default())
        .unwrap();
    let tools = root.plugin::<ToolsPlugin>(ToolsConfig::default()).unwrap();
    let runtime = root.require::<ToolRuntime>().unwrap();
    assert_eq!(runtime.names(None).len(), 7);
    assert!(root.get::<ToolEnvs>().is_some());
    tools.dispose();
    assert!(root.get::<ToolRuntime>().is_none());
    assert!(runtime.names(None).is_empty());
    assert!(root.get::<ToolEnvs>().is_none());
}

#[tokio::test]
async fn an_invalid_selection_fails_the_plugin_and_registers_nothing() {
    let root = Context::root();
    root.plugin::<ToolsPlugin>(ToolsConfig::default()).unwrap();
    let config: BuiltinToolsConfig = serde_json::from_value(json!({"enabled": ["rm"]})).unwrap();
    let err = root.plugin::<BuiltinToolsPlugin>(config).unwrap_err();
    assert_eq!(err.code(), "PLUGIN_FAILED");
    assert!(err.to_string().contains("tools-builtin"), "{err}");
    assert!(root
        .require::<ToolRuntime>()
        .unwrap()
        .names(None)
        .is_empty());
    assert!(root.get::<ToolEnvs>().is_none());
}

#[tokio::test]
async fn read_runs_through_the_pipeline_with_content_and_meta() {
    let h = Harness::new(never());
    h.fx.write("notes.txt", "hello\nworld\n");
    let result = h.run("read", json!({"file_path": "notes.txt"})).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(
        text(&result),
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n1: hello\n2: world\n\n(End of file - total 2 lines)\n</content>",
            h.fx.ws().join("notes.txt").display()
        )
    );
    assert_eq!(
        result.value().unwrap()["content"],
        json!(text(&result)),
        "the value carries the rendered content"
    );
    assert!(result.meta.is_some());
}

#[tokio::test]
async fn body_errors_keep_their_code_name_and_message() {
    let h = Harness::new(never());
    let result = h.run("read", json!({"file_path": "missing.txt"})).await;
    let missing = h.fx.ws().join("missing.txt");
    assert_eq!(
        text(&result),
        format!(
            "Error: file not found: {}. Check the path (relative paths resolve against the workspace) or use glob to find the file.",
            missing.display()
        )
    );
    assert_eq!(
        result.error_info(),
        Some(&ErrorInfo {
            name: "FileError".into(),
            code: "FILE_NOT_FOUND".into()
        })
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_before_the_body_runs() {
    let h = Harness::new(never());
    // Caught by the JSON schema.
    let result = h
        .run(
            "todo_write",
            json!({"todos": [{"content": "a", "status": "done"}]}),
        )
        .await;
    assert_eq!(result.error_info().unwrap().code, "INVALID_TOOL_ARGUMENTS");
    assert_eq!(
        text(&result),
        "Error: Invalid arguments for tool \"todo_write\": property \"todos/0/status\" must be one of \"pending\", \"in_progress\", \"completed\", got \"done\""
    );
    assert!(h.events(&["todo/"]).is_empty());
    // Caught only by the body's own argument type.
    let result = h
        .run(
            "bash",
            json!({"command": "echo", "description": "d", "timeoutMs": 1.5}),
        )
        .await;
    assert_eq!(result.error_info().unwrap().code, "INVALID_TOOL_ARGUMENTS");
    assert_eq!(
        text(&result),
        "Error: Invalid arguments for tool \"bash\": expected a non-negative whole number, got 1.5"
    );
}

#[tokio::test]
async fn a_call_without_a_tool_env_fails_clearly() {
    let h = Harness::new(never());
    let call = ToolInvocation::new(
        CallId::from("c"),
        "glob",
        json!({"pattern": "*"}).to_string(),
    );
    let result = h.tools.execute(call).await;
    assert_eq!(result.error_info().unwrap().code, "TOOL_ENV_MISSING");
    assert!(text(&result).contains("has no session environment"));
}

#[tokio::test]
async fn concurrency_follows_each_tool() {
    let h = Harness::new(never());
    let mode = |name: &str, args| h.tools.execution_mode(&h.call(name, args));
    assert_eq!(
        mode("grep", json!({"pattern": "x"})),
        ExecutionMode::Parallel
    );
    assert_eq!(
        mode("read", json!({"file_path": "a"})),
        ExecutionMode::Parallel
    );
    assert_eq!(mode("bash", bash("ls")), ExecutionMode::Exclusive);
    assert_eq!(
        mode("write", json!({"file_path": "a", "content": ""})),
        ExecutionMode::Exclusive
    );
}

#[tokio::test]
async fn todo_write_logs_its_list_before_the_result() {
    let h = Harness::new(never());
    let todos = json!([
        {"content": "List the project files", "status": "in_progress"},
        {"content": "  Read the notes ", "status": "pending"}
    ]);
    let result = h.run("todo_write", json!({ "todos": todos })).await;
    assert_eq!(
        text(&result),
        "Updated todo list: 1 pending, 1 in progress, 0 completed."
    );
    assert_eq!(
        h.events(&["todo/"]),
        [json!({"type": "todo/write", "data": {"todos": [
            {"content": "List the project files", "status": "in_progress"},
            {"content": "Read the notes", "status": "pending"}
        ]}})]
    );
}

#[tokio::test]
async fn write_then_edit_runs_the_real_bodies() {
    let h = Harness::new(never());
    let write = h
        .run("write", json!({"file_path": "a.txt", "content": "one\n"}))
        .await;
    assert!(!write.is_error(), "{write:?}");
    let edit = h
        .run(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
        )
        .await;
    assert!(!edit.is_error(), "{edit:?}");
    assert_eq!(
        std::fs::read_to_string(h.fx.ws().join("a.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        edit.meta.unwrap()["diffs"],
        json!([{"path": "a.txt", "oldText": "one", "newText": "two"}])
    );
}
