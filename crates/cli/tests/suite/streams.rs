//! `dsh run` against broken and hostile model servers: streams without end, errors reported
//! mid-stream, a retried attempt's partial text, endpoints that are no URL, and answers
//! carrying terminal escape sequences, on a pipe and on a terminal.

use super::run_support::*;
use dsh_session::SessionEvent;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Fault, Reply, Script};
use dsh_testkit::normalize::outline;
use serde_json::json;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::Arc;

/// The events of the log from the prompt's `user/message` on (before it: the system
/// prompt's and instructions' setup, which these tests are not about).
fn from_prompt(events: &[Arc<SessionEvent>]) -> Vec<String> {
    let lines = outline(events);
    let at = lines
        .iter()
        .position(|line| line.starts_with("user: "))
        .unwrap_or_else(|| panic!("no prompt in {lines:#?}"));
    // Session titles are log-only and land beside the stream (suite::modes tests them).
    lines[at..]
        .iter()
        .filter(|line| !line.starts_with("request/") && !line.starts_with("session/title"))
        .cloned()
        .collect()
}

fn with_settings(sandbox: Sandbox, settings: &str) -> Sandbox {
    std::fs::write(sandbox.home.path().join("settings.toml"), settings).unwrap();
    sandbox
}

#[tokio::test]
async fn a_line_without_end_fails_the_run_instead_of_filling_memory() {
    let server = serve(
        Script::new().respond(Reply::text("Hello world").chunks(2).with_fault(
            Fault::EndlessLine {
                after_chunks: Some(1),
            },
        )),
    )
    .await;
    let sandbox = with_settings(
        Sandbox::new().with_server(&server),
        "[providers.deepseek-official]\nmax_sse_line_bytes = 65536\n",
    );
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    // The partial "Hello " is not what the log keeps, so a pipe gets nothing.
    assert_eq!(text(&output.stdout), "");
    let message = "the model API sent an event-stream line or event longer than 65536 bytes \
        (max_sse_line_bytes of provider route 'deepseek-official'); the rest of the response was not read";
    let id = session_of(&output);
    assert_eq!(
        text(&output.stderr),
        format!("dsh: the turn failed: {message} (RESPONSE_TOO_LARGE)\nsession: {id}\n")
    );
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        from_prompt(&events),
        [
            "user: hi",
            "chunk block-start",
            "chunk text-delta",
            "chunk finish",
            "step/end 1.1",
            "turn/end 1 error RESPONSE_TOO_LARGE",
        ]
    );
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "error", "error": {"message": message, "code": "RESPONSE_TOO_LARGE"}})]
    );
    // Not retried: the same request would bring the same endless line.
    assert_eq!(server.requests().len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_without_end_stops_at_the_response_limit() {
    let server = serve(
        Script::new().respond(Reply::text("x").with_fault(Fault::EndlessStream {
            after_chunks: Some(0),
        })),
    )
    .await;
    let sandbox = with_settings(
        Sandbox::new().with_server(&server),
        "[providers.deepseek-official]\nmax_response_bytes = 262144\n",
    );
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "");
    let id = session_of(&output);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let lines = from_prompt(&events);
    // Every delta that fit, then the failure; nothing is retried or kept as a message.
    let deltas = lines.iter().filter(|l| *l == "chunk text-delta").count();
    assert!(deltas > 1000, "{deltas} deltas");
    let mut expected = vec!["user: hi".to_owned(), "chunk block-start".to_owned()];
    expected.extend(std::iter::repeat_n("chunk text-delta".to_owned(), deltas));
    expected.extend(
        [
            "chunk finish",
            "step/end 1.1",
            "turn/end 1 error RESPONSE_TOO_LARGE",
        ]
        .map(String::from),
    );
    assert_eq!(lines, expected);
    assert_eq!(
        turn_ends(&events)[0]["error"]["message"],
        json!("the model API response exceeded 262144 bytes (max_response_bytes of provider route 'deepseek-official'); the rest was not read")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_error_event_mid_stream_fails_the_turn_instead_of_completing_it() {
    let server = serve(
        Script::new().respond(Reply::text("Half of it").chunks(2).with_fault(
            Fault::ErrorEvent {
                after_chunks: Some(1),
                error: json!({"message": "model crashed", "type": "BadRequestError", "code": 400}),
                sse_event: false,
            },
        )),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "");
    let id = session_of(&output);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        from_prompt(&events),
        [
            "user: hi",
            "chunk block-start",
            "chunk text-delta",
            "chunk finish",
            "step/end 1.1",
            "turn/end 1 error INVALID_REQUEST",
        ]
    );
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "error", "error": {
            "message": "the model API reported an error mid-stream: model crashed",
            "code": "INVALID_REQUEST", "status": 400}})]
    );
    assert_eq!(server.requests().len(), 1);
    server.shutdown().await;
}

/// A stream reset after "Hello ", then the whole answer on the retry.
fn reset_then_answer() -> Script {
    Script::new()
        .respond(
            Reply::text("Hello world")
                .chunks(2)
                .with_fault(Fault::Reset {
                    after_chunks: Some(1),
                }),
        )
        .respond(Reply::text("The full answer."))
}

#[tokio::test]
async fn after_a_retried_reset_a_pipe_gets_only_the_answer_the_log_keeps() {
    let server = serve(reset_then_answer()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "The full answer.\n");
    let id = session_of(&output);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    // The message cites only the retry's chunks; the first attempt's stay log-only.
    let started = events
        .iter()
        .position(|e| e.type_name() == "llm/retry-started")
        .unwrap();
    let retry_chunks: Vec<u64> = events[started..]
        .iter()
        .filter(|e| e.type_name() == "assistant/chunk")
        .map(|e| e.seq)
        .collect();
    let cites = format!(" cites {retry_chunks:?}");
    let lines: Vec<String> = from_prompt(&events)
        .into_iter()
        .map(|line| line.replace(&cites, " cites <the retry's chunks>"))
        .collect();
    assert_eq!(
        lines,
        [
            "user: hi",
            "chunk block-start",
            "chunk text-delta",
            "chunk finish",
            "llm/retry",
            "llm/retry-started",
            "chunk block-start",
            "chunk text-delta",
            "chunk block-end",
            "chunk usage",
            "chunk finish",
            "assistant: The full answer. +usage cites <the retry's chunks>",
            "step/end 1.1",
            "turn/end 1 completed",
        ]
    );
    server.shutdown().await;
}

/// A pseudo-terminal in raw mode (bytes pass unchanged): the reading end and the end a
/// child writes to.
fn terminal() -> (std::fs::File, OwnedFd) {
    let (mut reader, mut writer) = (0, 0);
    // SAFETY: openpty writes two descriptors it opened; name, termios and winsize may be null.
    let rc = unsafe {
        libc::openpty(
            &mut reader,
            &mut writer,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are open and owned by nobody else.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(reader), OwnedFd::from_raw_fd(writer)) };
    // SAFETY: termios is plain data; tcgetattr fills it, cfmakeraw edits it.
    unsafe {
        let mut mode: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(writer.as_raw_fd(), &mut mode), 0);
        libc::cfmakeraw(&mut mode);
        assert_eq!(libc::tcsetattr(writer.as_raw_fd(), libc::TCSANOW, &mode), 0);
    }
    (std::fs::File::from(reader), writer)
}

/// Everything written to the terminal `reader` belongs to, until no one has it open.
fn read_terminal(mut reader: std::fs::File) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return out,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                // EIO: the last writer closed its end.
                Err(_) => return out,
            }
        }
    })
}

/// `dsh <args>` with stdout and stderr each on its own terminal; the exit status and what
/// each terminal showed.
async fn dsh_on_terminals(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = sandbox.command(args);
    let (out_reader, out_writer) = terminal();
    let (err_reader, err_writer) = terminal();
    command
        .stdout(Stdio::from(out_writer))
        .stderr(Stdio::from(err_writer));
    let (out, err) = (read_terminal(out_reader), read_terminal(err_reader));
    let status = tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().unwrap();
        // The command holds our copies of the writing ends; drop them so EOF can come.
        drop(command);
        child.wait().unwrap()
    })
    .await
    .unwrap();
    let out = String::from_utf8(out.join().unwrap()).unwrap();
    let err = String::from_utf8(err.join().unwrap()).unwrap();
    (status.code(), out, err)
}

#[tokio::test]
async fn after_a_retried_reset_a_terminal_marks_the_discarded_text() {
    let server = serve(reset_then_answer()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let (status, out, err) = dsh_on_terminals(&sandbox, &["run", "hi"]).await;
    assert_eq!(status, Some(0), "{err}");
    // Streamed as it came, the broken attempt marked, then the kept answer.
    assert_eq!(
        out,
        "Hello \n[the answer above broke off (TRANSPORT) and is discarded]\nThe full answer.\n"
    );
    assert!(
        err.starts_with("retrying the model request (1/5) in "),
        "{err}"
    );
    server.shutdown().await;
}

/// An answer that retitles the terminal and writes its clipboard, a command that does the
/// same, and a tool error that clears the screen.
fn hostile_script() -> Script {
    let command = "printf '\u{1b}]0;PWNED\u{7}ok'";
    Script::new()
        .respond(Reply::tool_call("bash", json!({"command": command, "description": "Print"})))
        .respond(
            Reply::text("Done\u{1b}]0;PWNED\u{7}. \u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[31mred\u{1b}[0m é 漢字")
                .chunks(7),
        )
}

#[tokio::test]
async fn escape_sequences_from_the_model_never_reach_a_terminal() {
    let server = serve(hostile_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let (status, out, err) =
        dsh_on_terminals(&sandbox, &["run", "--approval", "never", "hi"]).await;
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(out, "Done. red é 漢字\n");
    for shown in [&out, &err] {
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:?}"
        );
        assert!(
            !shown.contains("PWNED") && !shown.contains("]52;"),
            "{shown:?}"
        );
    }
    assert!(err.starts_with("→ bash printf 'ok'\n"), "{err:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn escape_sequences_reach_a_pipe_byte_for_byte() {
    let server = serve(hostile_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "--approval", "never", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "Done\u{1b}]0;PWNED\u{7}. \u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[31mred\u{1b}[0m é 漢字\n"
    );
    assert!(
        text(&output.stderr).starts_with("→ bash printf '\u{1b}]0;PWNED\u{7}ok'\n"),
        "{}",
        text(&output.stderr)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_base_url_that_is_no_url_is_refused_before_anything_runs() {
    let server = serve(Script::new().respond(Reply::text("unused"))).await;
    let mut sandbox = Sandbox::new();
    let expected = |at: &str| {
        format!(
            "dsh: error: {at}: `providers.deepseek-official.base_url`: expected an http:// or \
             https:// URL, found \"http://[::1\" (invalid IPv6 address)\n"
        )
    };
    let output = sandbox
        .dsh(&["run", "--base-url", "http://[::1", "hi"])
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(text(&output.stderr), expected("flag --base-url"));
    sandbox
        .env
        .push(("DEEPSEEK_BASE_URL".into(), "http://[::1".into()));
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(text(&output.stderr), expected("env DEEPSEEK_BASE_URL"));
    // Nothing was sent and no session was started.
    assert!(server.requests().is_empty());
    assert!(!sandbox.sessions_root().exists());
    server.shutdown().await;
}

#[tokio::test]
async fn session_listings_and_transcripts_show_no_escape_sequences() {
    let server = serve(Script::new().respond(Reply::text("ok \u{1b}[2Jthere"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let prompt = "\u{1b}]0;PWNED\u{7}hello";
    let output = sandbox.dsh(&["run", prompt]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let id = session_of(&output);
    let list = sandbox.dsh(&["sessions", "list"]).await;
    let show = sandbox.dsh(&["sessions", "show", &id]).await;
    for shown in [text(&list.stdout), text(&show.stdout)] {
        assert!(
            !shown.contains('\u{1b}') && !shown.contains("PWNED"),
            "{shown:?}"
        );
    }
    assert!(
        text(&list.stdout).contains(dsh_testkit::mock_llm::DEFAULT_TITLE),
        "{}",
        text(&list.stdout)
    );
    assert!(
        text(&show.stdout).contains("• ok there"),
        "{}",
        text(&show.stdout)
    );
    // The JSON forms are exact: the listing's title is the model's (the mock's title reply),
    // and the log keeps the prompt's escapes as they were.
    let json = sandbox.dsh(&["sessions", "list", "--json"]).await;
    assert!(
        text(&json.stdout).contains(dsh_testkit::mock_llm::DEFAULT_TITLE),
        "{}",
        text(&json.stdout)
    );
    let raw = sandbox.dsh(&["sessions", "show", &id, "--json"]).await;
    assert!(
        text(&raw.stdout).contains("\\u001b]0;PWNED"),
        "{}",
        text(&raw.stdout)
    );
    server.shutdown().await;
}
