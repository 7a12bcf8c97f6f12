//! The original's compacted session (`dsh-0.1.0-compaction`, 22 checkpoints in one turn) through
//! the real binary: listed, verified, shown, forked and resumed, and the resumed request holds
//! the last `<compacted-summary>` checkpoint and the retained tail, not the shadowed results.

use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{RecordedRequest, Reply, RuleMatch, Script};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const ID: &str = "session-e46909af-dd21-4b3e-8ef2-2136027e5aa0";
/// Events in the fixture's log.
const EVENTS: usize = 398;
/// The last checkpoint (`user/message` replacing `332..=368`'s span) and its `turn/end`.
const LAST_CHECKPOINT: u64 = 384;
const TURN_END: u64 = 397;

fn fixture_sessions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0-compaction/sessions")
}

fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    copy_dir(&fixture_sessions(), &sandbox.sessions_root());
    sandbox
}

/// The `read` result paths a request body mentions, by note number.
fn notes_in(body: &str) -> Vec<u32> {
    (0..24)
        .filter(|n| body.contains(&format!("<path>/home/user/project/note{n}.txt</path>")))
        .collect()
}

/// The text of the checkpoint message the original wrote last, as the wire joins it.
fn last_checkpoint_text(sandbox: &Sandbox) -> String {
    let events = sandbox.events(ID);
    let checkpoint = events[LAST_CHECKPOINT as usize].data.to_value();
    checkpoint["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap())
        .collect()
}

/// The user-message text of a recorded chat request, joined per message.
fn user_texts(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            _ => String::new(),
        })
        .collect()
}

/// The assertion this fixture exists for: the request is the model's view after the last
/// checkpoint (one summary, then the tail with notes 21-23), whatever else it holds.
fn assert_compacted_view(sandbox: &Sandbox, request: &RecordedRequest, prompt: &str) {
    let body = request.body.to_string();
    assert_eq!(
        body.matches("<compacted-summary>").count(),
        1,
        "exactly one checkpoint: {body}"
    );
    assert_eq!(
        notes_in(&body),
        [21, 22, 23],
        "only the retained tail's results"
    );
    let users = user_texts(request);
    assert_eq!(
        users[0],
        last_checkpoint_text(sandbox),
        "the checkpoint comes first"
    );
    assert!(users[0].contains("<compacted-summary>## Primary Request and Intent\n- read notes"));
    assert!(
        users[1..].iter().any(|u| u == prompt),
        "the new prompt follows: {users:?}"
    );
    let tools: Vec<&str> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "call_21_0_7098ecae",
            "call_22_0_cb7054ec",
            "call_23_0_00ac1174"
        ],
        "each retained result follows its own call"
    );
}

#[tokio::test]
async fn the_compacted_fixture_lists_verifies_and_shows() {
    let sandbox = sandbox();
    let list = sandbox.dsh(&["sessions", "list", "--all"]).await;
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    let listing = text(&list.stdout);
    assert!(
        listing.contains(ID) && listing.contains("completed"),
        "{listing}"
    );

    let verify = sandbox.dsh(&["sessions", "verify", &ID[..16]]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    assert!(
        text(&verify.stdout).starts_with(&format!("ok       {ID}  {EVENTS} events")),
        "{}",
        text(&verify.stdout)
    );

    let raw = sandbox.dsh(&["sessions", "show", "--json", ID]).await;
    assert_eq!(raw.status.code(), Some(0), "{}", text(&raw.stderr));
    let lines = json_lines(&raw);
    assert_eq!(lines.len(), 1 + EVENTS);
    let count = |kind: &str| lines[1..].iter().filter(|l| l["type"] == kind).count();
    assert_eq!(
        [
            count("compaction/start"),
            count("compaction/summary"),
            count("compaction/end")
        ],
        [44, 22, 44]
    );
    // The shadowed originals stay in the raw log.
    assert_eq!(
        notes_in(&text(&raw.stdout)),
        (0..24).collect::<Vec<_>>(),
        "every read result is still in the log"
    );
    let last = &lines[1 + LAST_CHECKPOINT as usize];
    assert_eq!(last["type"], "user/message");
    assert_eq!(
        last["surfaceOp"],
        json!({"op": "replace", "start": 368, "end": 332})
    );

    let human = sandbox.dsh(&["sessions", "show", ID]).await;
    assert_eq!(human.status.code(), Some(0), "{}", text(&human.stderr));
    let shown = text(&human.stdout);
    assert!(shown.contains("› Read all the notes one by one"), "{shown}");
    assert!(shown.contains("• all notes read"), "{shown}");
    assert!(shown.contains("turn 1 completed"), "{shown}");
    // The meter's reading after the last step (anchored on the provider's 9,824-token
    // usage plus the answer), against the 10,000-token window the original recorded.
    let tail: Vec<&str> = shown.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        [
            "compactions: 22 landed, 22 failed",
            "context: ~9827 tokens of 10000 (98%) for deepseek-official/deepseek-v4-flash, calibrated to provider usage",
        ]
    );
}

#[tokio::test]
async fn a_resumed_turn_sees_the_last_checkpoint_and_the_retained_tail() {
    let server = serve(
        Script::new()
            .rule(
                RuleMatch::any().header("x-deepseek-harness-compact", "1"),
                Reply::text("## Current Work\n- not expected"),
            )
            .respond(Reply::text("Notes 21 to 23 are beta notes.")),
    )
    .await;
    let sandbox = sandbox().with_server(&server);
    let output = sandbox
        .dsh(&["run", "--resume", &ID[..14], "Which notes did you keep?"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(session_of(&output), ID);
    assert_eq!(text(&output.stdout), "Notes 21 to 23 are beta notes.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one turn request, no summarisation");
    assert_compacted_view(&sandbox, &requests[0], "Which notes did you keep?");

    let events = sandbox.events(ID);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "completed"}), json!({"kind": "completed"})]
    );
    assert_eq!(events[EVENTS].type_name(), "session/end-seed");
    let verify = sandbox.dsh(&["sessions", "verify", ID]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    server.shutdown().await;
}

#[tokio::test]
async fn a_fork_after_the_compactions_resumes_with_the_compacted_history() {
    let sandbox = sandbox();
    // Inside the turn (here: at a compaction's start) a fork would
    // cut the turn in half, and is refused without writing anything.
    let inside = sandbox.dsh(&["sessions", "fork", ID, "--at", "41"]).await;
    assert_eq!(inside.status.code(), Some(1));
    assert!(
        text(&inside.stderr).contains("cannot fork"),
        "{}",
        text(&inside.stderr)
    );

    let fork = sandbox
        .dsh(&["sessions", "fork", ID, "--at", &TURN_END.to_string()])
        .await;
    assert_eq!(fork.status.code(), Some(0), "{}", text(&fork.stderr));
    let child = text(&fork.stdout).trim().to_owned();
    assert_ne!(child, ID);
    let events = sandbox.events(&child);
    assert_log_ok(&events);
    assert_eq!(events.len(), EVENTS + 1);
    assert_eq!(events[EVENTS].type_name(), "session/end-seed");

    let server = serve(Script::new().respond(Reply::text("From the fork."))).await;
    let sandbox = sandbox.with_server(&server);
    let output = sandbox
        .dsh(&["run", "--resume", &child, "Continue from the fork"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_compacted_view(&sandbox, &server.requests()[0], "Continue from the fork");
    // The parent is untouched.
    assert_eq!(sandbox.events(ID).len(), EVENTS);
    server.shutdown().await;
}

fn summary_rule() -> RuleMatch {
    RuleMatch::any().header("x-deepseek-harness-compact", "1")
}

#[tokio::test]
async fn sessions_compact_summarises_a_stored_session_once_and_then_declines() {
    let server = serve(
        Script::new()
            .rule(
                summary_rule(),
                Reply::text("## Current Work\n- all 24 notes read"),
            )
            .respond(Reply::text("Nothing left but the summary.")),
    )
    .await;
    let sandbox = sandbox().with_server(&server);
    let compact = sandbox.dsh(&["sessions", "compact", &ID[..12]]).await;
    assert_eq!(compact.status.code(), Some(0), "{}", text(&compact.stderr));
    assert_eq!(
        text(&compact.stdout),
        "Compacted 8 history items (~1869 tokens).\n"
    );
    assert_eq!(
        text(&compact.stderr),
        "compacted: 8 messages (~1869 tokens) → summary (~105 tokens)\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one summarisation call");
    assert_eq!(requests[0].header("x-deepseek-harness-compact"), Some("1"));
    let events = sandbox.events(ID);
    assert_log_ok(&events);
    let tail: Vec<&str> = events[EVENTS..].iter().map(|e| e.type_name()).collect();
    assert_eq!(
        tail,
        [
            "session/end-seed",
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end"
        ]
    );
    assert_eq!(events[EVENTS + 1].data.to_value()["turn"], Value::Null);
    let verify = sandbox.dsh(&["sessions", "verify", ID]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));

    // The surface is now the new checkpoint and the last answer: nothing worth a call.
    let again = sandbox.dsh(&["sessions", "compact", ID]).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), "No compactable history yet.\n");
    assert_eq!(server.requests().len(), 1);
    let after: Vec<String> = sandbox.events(ID)[EVENTS + 5..]
        .iter()
        .map(|e| e.type_name().to_owned())
        .collect();
    assert_eq!(
        after,
        ["session/end-seed"],
        "nothing but the resume's marker"
    );

    // The next turn sees only the newest checkpoint.
    let output = sandbox.dsh(&["run", "--resume", ID, "Go on"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let body = server.requests()[1].body.to_string();
    assert_eq!(body.matches("<compacted-summary>").count(), 1, "{body}");
    assert!(body.contains("- all 24 notes read"), "{body}");
    assert!(notes_in(&body).is_empty(), "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_manual_compaction_exits_1_and_leaves_the_history_as_it_was() {
    let server = serve(Script::new().rule(
        summary_rule(),
        Reply::error(400, "invalid request: bad thing"),
    ))
    .await;
    let sandbox = sandbox().with_server(&server);
    let compact = sandbox.dsh(&["sessions", "compact", ID]).await;
    assert_eq!(compact.status.code(), Some(1), "{}", text(&compact.stderr));
    assert_eq!(
        text(&compact.stdout),
        "Compaction could not produce a useful summary. The conversation is unchanged; the attempt is recorded in the session log.\n"
    );
    let stderr = text(&compact.stderr);
    assert!(
        stderr.contains("dsh: compaction failed (summary): "),
        "{stderr}"
    );
    let events = sandbox.events(ID);
    assert_log_ok(&events);
    let tail: Vec<&str> = events[EVENTS..].iter().map(|e| e.type_name()).collect();
    assert_eq!(
        tail,
        ["session/end-seed", "compaction/start", "compaction/end"]
    );
    assert!(events.last().unwrap().data.to_value()["error"].is_string());
    // The model still sees the original's last checkpoint and tail.
    let server2 = serve(Script::new().respond(Reply::text("ok"))).await;
    let sandbox = sandbox.with_server(&server2);
    let output = sandbox
        .dsh(&["run", "--resume", ID, "Which notes did you keep?"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_compacted_view(
        &sandbox,
        &server2.requests()[0],
        "Which notes did you keep?",
    );
    server.shutdown().await;
    server2.shutdown().await;
}

/// A manual compaction between turns owns no turn, so a fork may cut inside its bracket:
/// the child gets the history as it was before the checkpoint (and an open bracket that its
/// own end-seed makes stale), while a fork after the bracket gets the new checkpoint.
#[tokio::test]
async fn forks_inside_and_after_a_manual_compaction_see_the_history_of_that_point() {
    let server = serve(
        Script::new()
            .rule(
                summary_rule(),
                Reply::text("## Current Work\n- all 24 notes read"),
            )
            .respond(Reply::text("inside"))
            .respond(Reply::text("after")),
    )
    .await;
    let sandbox = sandbox().with_server(&server);
    let compact = sandbox.dsh(&["sessions", "compact", ID]).await;
    assert_eq!(compact.status.code(), Some(0), "{}", text(&compact.stderr));
    let events = sandbox.events(ID);
    let start = events[EVENTS + 1].seq;
    let end = events[EVENTS + 4].seq;
    assert_eq!(
        (
            events[EVENTS + 1].type_name(),
            events[EVENTS + 4].type_name()
        ),
        ("compaction/start", "compaction/end")
    );

    let fork_at = |seq: u64| {
        let sandbox = &sandbox;
        async move {
            let fork = sandbox
                .dsh(&["sessions", "fork", ID, "--at", &seq.to_string()])
                .await;
            assert_eq!(fork.status.code(), Some(0), "{}", text(&fork.stderr));
            text(&fork.stdout).trim().to_owned()
        }
    };
    let inside = fork_at(start).await;
    let after = fork_at(end).await;
    let summaries = server.requests().len();

    let run = sandbox
        .dsh(&["run", "--resume", &inside, "Which notes did you keep?"])
        .await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        summaries + 1,
        "the stale bracket costs no call"
    );
    assert_compacted_view(&sandbox, &requests[summaries], "Which notes did you keep?");
    let child = sandbox.events(&inside);
    assert_log_ok(&child);

    let run = sandbox.dsh(&["run", "--resume", &after, "Go on"]).await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let body = server.requests()[summaries + 1].body.to_string();
    assert_eq!(body.matches("<compacted-summary>").count(), 1, "{body}");
    assert!(body.contains("- all 24 notes read"), "{body}");
    assert!(notes_in(&body).is_empty(), "{body}");
    assert_log_ok(&sandbox.events(&after));

    // The child forked inside the bracket is not locked by it.
    let again = sandbox.dsh(&["sessions", "compact", &inside]).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).starts_with("Compacted "),
        "{}",
        text(&again.stdout)
    );
    server.shutdown().await;
}
