//! `dsh acp` with an editor that offers its files (`fs/read_text_file`,
//! `fs/write_text_file`): the official TypeScript client serves an unsaved buffer, the agent
//! reads and edits that buffer through it (the disk is untouched), the approval question is
//! asked as usual, a write outside the sandbox never reaches the client, and the session log
//! records the calls as it always does.

use super::acp::{acp_client, assert_lines};
use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use dsh_testkit::normalize::outline;
use serde_json::{json, Value};
use std::path::PathBuf;

const ESCAPE_PATH: &str = "/etc/dsh-acp-editor-escape.txt";

fn scenario() -> Script {
    let rule = |text: &str| RuleMatch::any().last_message_contains(text);
    Script::new()
        .rule(
            rule("EDIT-BUFFER"),
            Reply::tool_call("read", json!({"file_path": "buffer.txt"})),
        )
        // Only the buffer has this line: the edit follows a read of the buffer.
        .rule(
            rule("1: unsaved line"),
            Reply::tool_call(
                "edit",
                json!({"file_path": "buffer.txt", "old_string": "unsaved line", "new_string": "edited line"}),
            ),
        )
        .rule(
            rule("has been updated successfully"),
            Reply::text("Edited the buffer."),
        )
        .rule(
            rule("dsh-acp-editor-escape"),
            Reply::text("Stayed inside."),
        )
        .rule(
            rule("ESCAPE"),
            Reply::tool_call("write", json!({"file_path": ESCAPE_PATH, "content": "x\n"})),
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_read_and_write_the_editors_buffers_inside_the_sandbox() {
    let Some(modules) = acp_client() else { return };
    let server = serve(scenario()).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(sandbox.workspace().join("buffer.txt"), "saved line\n").unwrap();
    let mut command = std::process::Command::new("node");
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/acp-client/editor.mjs"))
        .arg(env!("CARGO_BIN_EXE_dsh"))
        .arg(sandbox.workspace())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DSH_HOME", sandbox.home.path())
        .env("HOME", sandbox.home.path())
        .env("DEEPSEEK_API_KEY", FAKE_KEY)
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .env("DSH_ACP_NODE_MODULES", &modules);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "the client failed:\n{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let summary: Value =
        serde_json::from_str(text(&output.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(summary["reads"], 2);
    assert_eq!(summary["writes"], 1);
    // The disk still holds the saved text: the edit went to the editor's buffer.
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("buffer.txt")).unwrap(),
        "saved line\n"
    );
    assert!(!std::path::Path::new(ESCAPE_PATH).exists());

    let events = sandbox.events(summary["sessionId"].as_str().unwrap());
    assert_log_ok(&events);
    let lines = outline(&events);
    let first = lines.iter().position(|l| l.starts_with("user: ")).unwrap();
    let workspace = sandbox.workspace().display().to_string();
    let from_prompt: Vec<String> = lines[first..]
        .iter()
        .filter(|l| {
            !l.starts_with("request/")
                && !l.starts_with("chunk ")
                && !l.starts_with("session/title")
        })
        .map(|l| l.replace(&workspace, "<ws>"))
        .map(|l| l.split(" cites ").next().unwrap_or_default().to_owned())
        .map(|l| match (l.find(" and /"), l.find(" are writable")) {
            // The session's private temp dir.
            (Some(from), Some(to)) if from < to => format!("{} and <tmp>{}", &l[..from], &l[to..]),
            _ => l,
        })
        .collect();
    // The calls and results are logged exactly as with the disk.
    assert_lines(&from_prompt, &expected_log());
}

fn expected_log() -> Vec<&'static str> {
    vec![
        "user: EDIT-BUFFER please",
        "assistant: <call call_0_0_f8d1636e read> +usage",
        "tool/call call_0_0_f8d1636e read {\"file_path\": \"buffer.txt\"}",
        "tool/result <path><ws>/buffer.txt</path>\n<type>file</type>\n<content>\n1: unsaved line\n2: second line\n\n(End of file - total 2 lines)\n</content>",
        "step/end 1.1",
        "step/start 1.2",
        "assistant: <call call_1_0_81007439 edit> +usage",
        "tool/call call_1_0_81007439 edit {\"file_path\": \"buffer.txt\", \"old_string\": \"unsaved line\", \"new_string\": \"edited line\"}",
        "approval/asked",
        "approval/decided",
        "tool/result The file <ws>/buffer.txt has been updated successfully.",
        "step/end 1.2",
        "step/start 1.3",
        "assistant: Edited the buffer. +usage",
        "step/end 1.3",
        "turn/end 1 completed",
        "splice next-turn @0 -0 +[\"ESCAPE the workspace\"]",
        "turn/start 2",
        "splice next-turn @0 -1 +[]",
        "step/start 2.1",
        "user: ESCAPE the workspace",
        "assistant: <call call_4_0_8ed99eb8 write> +usage",
        "tool/call call_4_0_8ed99eb8 write {\"file_path\": \"/etc/dsh-acp-editor-escape.txt\", \"content\": \"x\\n\"}",
        "approval/asked",
        "approval/decided",
        "tool/result ERR Error: writing /etc/dsh-acp-editor-escape.txt is denied under workspace-write sandbox mode: only paths under <ws> and <tmp> are writable. [SANDBOX_DENIED]",
        "step/end 2.1",
        "step/start 2.2",
        "assistant: Stayed inside. +usage",
        "step/end 2.2",
        "turn/end 2 completed",
    ]
}
