//! `dsh sdk` end to end: the Python example client (examples/sdk_client.py) runs a prompt
//! and prints the streamed answer, then continues the same session by id in a second
//! process; the runtime's error texts; and a client that disconnects mid-turn.

use super::acp::assert_lines;
use super::acp_support::{error_of, Server};
use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use dsh_testkit::normalize::outline;
use serde_json::json;
use std::path::PathBuf;

fn example_client(sandbox: &Sandbox, session: &str, prompt: &str) -> std::process::Command {
    let mut command = std::process::Command::new("python3");
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sdk_client.py"))
        .args(["--dsh", env!("CARGO_BIN_EXE_dsh"), "--session", session])
        .arg("--cwd")
        .arg(sandbox.workspace())
        .arg(prompt)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DSH_HOME", sandbox.home.path())
        .env("HOME", sandbox.home.path())
        .env("DEEPSEEK_API_KEY", FAKE_KEY)
        .env("DEEPSEEK_BASE_URL", sandbox.base_url.clone().unwrap());
    command
}

async fn run(mut command: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_client_prints_the_streamed_answer_and_resumes_the_session_by_id() {
    let script = Script::new()
        .rule(
            RuleMatch::any().last_message_contains("HELLO"),
            Reply::text("Hello from the model.").chunks(3),
        )
        .rule(
            RuleMatch::any()
                .last_message_contains("AGAIN")
                .contains("Hello from the model."),
            Reply::text("Still here, and I remember.").chunks(2),
        );
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let first = run(example_client(&sandbox, "sdk-demo", "Say HELLO")).await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert_eq!(text(&first.stdout), "Hello from the model.\n");
    assert!(
        text(&first.stderr).ends_with("session: sdk-demo\n"),
        "{}",
        text(&first.stderr)
    );
    // A second process continues the stored session (the model sees the first answer).
    let second = run(example_client(&sandbox, "sdk-demo", "Say it AGAIN")).await;
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(text(&second.stdout), "Still here, and I remember.\n");

    let events = sandbox.events("sdk-demo");
    assert_log_ok(&events);
    let lines: Vec<String> = outline(&events)
        .into_iter()
        .filter(|l| {
            l.starts_with("user: ")
                || l.starts_with("assistant: ")
                || l.starts_with("turn/")
                || l.starts_with("session/resumed")
        })
        .map(|l| l.split(" cites ").next().unwrap_or_default().to_owned())
        .collect();
    assert_lines(
        &lines,
        &[
            "turn/start 1",
            "user: Say HELLO",
            "assistant: Hello from the model. +usage",
            "turn/end 1 completed",
            "turn/start 2",
            "user: Say it AGAIN",
            "assistant: Still here, and I remember. +usage",
            "turn/end 2 completed",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_answers_bad_requests_with_the_originals_texts() {
    let server = serve(Script::new().respond(Reply::text("unused"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut sdk = Server::start(&sandbox, &["sdk"]);
    let message = |reply: &serde_json::Value| {
        let error = error_of(reply);
        assert_eq!(error["code"], -32603, "{reply}");
        error["message"].as_str().unwrap().to_owned()
    };
    // Malformed lines are ignored; non-object params read as `{}`.
    sdk.send_raw(b"{oops\n[]\n");
    let init = sdk.call(1, "initialize", json!([1, 2]));
    assert_eq!(
        init["result"],
        json!({"serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": env!("CARGO_PKG_VERSION")}})
    );
    let table = [
        (
            "nope",
            json!({}),
            "unknown DeepSeek Harness SDK runtime method: nope",
        ),
        (
            "initialize",
            json!({"maxTokens": 0}),
            "initialize maxTokens must be a positive safe integer",
        ),
        (
            "initialize",
            json!({"maxTokens": 9007199254740992u64}),
            "initialize maxTokens must be a positive safe integer",
        ),
        (
            "initialize",
            json!({"provider": "nope"}),
            "no adapter registered for provider \"nope\"",
        ),
        (
            "session/cancel",
            json!({"sessionId": "never-seen"}),
            "unknown session: never-seen",
        ),
        (
            "session/prompt",
            json!({"sessionId": "s", "contentBlocks": "hi"}),
            "session/prompt needs a contentBlocks array",
        ),
        (
            "session/prompt",
            json!({"contentBlocks": []}),
            "session/prompt needs a string sessionId",
        ),
        (
            "session/prompt",
            json!({"sessionId": "s", "contentBlocks": [{"type": "image", "attachment": {}}]}),
            "unsupported content block: \"image\"",
        ),
    ];
    for (n, (method, params, expected)) in table.into_iter().enumerate() {
        let reply = sdk.call(10 + n as u64, method, params);
        assert_eq!(message(&reply), expected, "{method}");
    }
    assert_eq!(sdk.call(2, "shutdown", json!(null))["result"], json!({}));
    assert_eq!(sdk.close(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_disconnects_mid_turn_leaves_a_closed_valid_log() {
    let script = Script::new().respond(Reply::text("word ".repeat(200)).chunks(200).delay_ms(50));
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut sdk = Server::start(&sandbox, &["sdk"]);
    sdk.call(1, "initialize", json!({}));
    let queued = sdk.call(
        2,
        "session/prompt",
        json!({"sessionId": "gone", "contentBlocks": [{"type": "text", "text": "talk"}]}),
    );
    assert!(queued["result"]["messageId"].is_string(), "{queued}");
    loop {
        let frame = sdk.next();
        if frame["params"]["event"]["type"] == "assistant/chunk" {
            break;
        }
    }
    assert_eq!(sdk.close(), Some(0));
    let events = sandbox.events("gone");
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        vec![json!({"kind": "aborted", "reason": {"kind": "disposed"}})]
    );
}
