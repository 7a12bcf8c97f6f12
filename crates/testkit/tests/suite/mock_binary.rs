//! The `dsh-mock-llm` binary: announces its URL, serves, records, exits on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use dsh_testkit::mock_llm::{RecordedRequest, Served};
use serde_json::json;

use super::mock_client::{chat_body, RawClient};

#[tokio::test]
async fn binary_serves_records_and_exits_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let record = dir.path().join("requests.jsonl");
    std::fs::write(
        &script,
        r#"{"responses": [{"text": "from the binary", "chunks": 2}]}"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dsh-mock-llm"))
        .arg("--script")
        .arg(&script)
        .arg("--record")
        .arg(&record)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first_line = String::new();
    stdout.read_line(&mut first_line).unwrap();
    let url = first_line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {first_line:?}"));
    let addr = url.parse().unwrap();

    let mut client = RawClient::connect(addr).await;
    let response = client
        .request("POST", "/chat/completions", Some(&chat_body(true)))
        .await;
    assert_eq!(response.status, 200);
    let text: String = response
        .events()
        .iter()
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(|v| v.as_str())
        })
        .collect();
    assert_eq!(text, "from the binary");

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "exit status {exit:?}");

    let lines = std::fs::read_to_string(&record).unwrap();
    let records: Vec<RecordedRequest> = lines
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (
            records[0].method.as_str(),
            records[0].path.as_str(),
            &records[0].body,
            &records[0].served
        ),
        (
            "POST",
            "/chat/completions",
            &chat_body(true),
            &Served::Response { index: 0 }
        )
    );
    let line: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(line["served"], json!({"kind": "response", "index": 0}));
}

#[test]
fn binary_rejects_an_invalid_script_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"responses": [{"chunks": 0}]}"#).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_dsh-mock-llm"))
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("responses[0]"), "{stderr}");
    assert!(output.stdout.is_empty());
}
