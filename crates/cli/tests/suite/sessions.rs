//! `dsh sessions ...` on the original's session logs (copied into a temporary home) and on
//! sessions written by runs.

use super::run_support::*;
use dsh_store::{Compression, JsonlBackend, JsonlConfig};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};
use std::path::PathBuf;

const PROJECT: &str = "/home/user/project";

/// Makes the store plain JSONL, as the fixtures' `jsonl` form needs.
fn plain_store(sandbox: &Sandbox) {
    let settings = format!(
        "[[plugins]]\nid = \"session-persistence-jsonl\"\nconfig = {{ root = {:?}, compression = \"none\" }}\n",
        sandbox.sessions_root().display().to_string()
    );
    std::fs::write(sandbox.home.path().join("settings.toml"), settings).unwrap();
}

fn plain_backend(sandbox: &Sandbox) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig {
        compression: Compression::None,
        pack_chunks: false,
        ..JsonlConfig::new(sandbox.sessions_root())
    })
}

/// The one log file of a fixture copied into the sandbox.
fn log_path(sandbox: &Sandbox, id: &str, file: &str) -> PathBuf {
    sandbox
        .sessions_root()
        .join("--home-user-project--")
        .join(id)
        .join(file)
}

#[tokio::test]
async fn list_reads_the_index_per_workspace_or_all() {
    let sandbox = Sandbox::new()
        .with_fixture("text", "zstd")
        .with_fixture("bash", "zstd");
    let here = sandbox.dsh(&["sessions", "list"]).await;
    assert_eq!(here.status.code(), Some(0));
    assert_eq!(text(&here.stdout), "");
    assert!(text(&here.stderr).contains("no stored sessions in"));

    let all = sandbox.dsh(&["sessions", "list", "--all", "--json"]).await;
    assert_eq!(all.status.code(), Some(0), "{}", text(&all.stderr));
    let summaries: Vec<Value> = serde_json::from_slice(&all.stdout).unwrap();
    let mut seen: Vec<(String, Value, Value, Value)> = summaries
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["cwd"].clone(),
                s["turns"].clone(),
                s["lastOutcome"].clone(),
            )
        })
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected = vec![
        (
            fixture_id("text", "zstd"),
            json!(PROJECT),
            json!(1),
            json!("completed"),
        ),
        (
            fixture_id("bash", "zstd"),
            json!(PROJECT),
            json!(1),
            json!("completed"),
        ),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(seen, expected);

    let project = sandbox.dsh(&["sessions", "list", "--cwd", PROJECT]).await;
    let listing = text(&project.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 3, "{listing}");
    assert!(lines[0].starts_with("ID"));
    // The original's logs carry model titles, which the listing prefers to the prompt.
    assert!(listing.contains("Reading the notes file"), "{listing}");
}

#[tokio::test]
async fn show_prints_the_conversation_or_the_raw_log() {
    let sandbox = Sandbox::new().with_fixture("bash", "zstd");
    let id = fixture_id("bash", "zstd");
    let prefix = &id[..16];
    let human = sandbox.dsh(&["sessions", "show", prefix]).await;
    assert_eq!(human.status.code(), Some(0), "{}", text(&human.stderr));
    let shown = text(&human.stdout);
    assert!(
        shown.starts_with(&format!("session {id}  ·  {PROJECT}")),
        "{shown}"
    );
    assert!(shown.contains("› What does notes.txt say?"), "{shown}");
    assert!(shown.contains("bash  cat notes.txt"), "{shown}");
    assert!(shown.contains("turn 1 completed"), "{shown}");

    let raw = sandbox.dsh(&["sessions", "show", "--json", &id]).await;
    let lines = json_lines(&raw);
    assert_eq!(lines.len(), 1 + 53);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["id"], json!(id));
    let seqs: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..53).collect::<Vec<_>>());
}

#[tokio::test]
async fn verify_passes_every_fixture_and_names_file_and_line_of_damage() {
    let mut sandbox = Sandbox::new();
    for scenario in [
        "text",
        "bash",
        "read-edit",
        "multi-turn",
        "retry",
        "parallel-tools",
    ] {
        sandbox = sandbox.with_fixture(scenario, "zstd");
    }
    let all = sandbox.dsh(&["sessions", "verify", "--all"]).await;
    assert_eq!(all.status.code(), Some(0), "{}", text(&all.stdout));
    let report = text(&all.stdout);
    assert_eq!(
        report.lines().filter(|l| l.starts_with("ok ")).count(),
        6,
        "{report}"
    );

    let damaged = Sandbox::new().with_fixture("multi-turn", "jsonl");
    plain_store(&damaged);
    let id = fixture_id("multi-turn", "jsonl");
    let path = log_path(&damaged, &id, "session.jsonl");
    let original = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = original.lines().collect();
    lines[9] = "{\"type\":\"user/message\",\"seq\":8,\"da";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let output = damaged.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(output.status.code(), Some(1));
    let report = text(&output.stdout);
    assert!(report.starts_with(&format!("CORRUPT  {id}")), "{report}");
    assert!(report.contains(&path.display().to_string()), "{report}");
    assert!(report.contains("line 10"), "{report}");
    // Resuming refuses a corrupt log; only an explicit repair cuts the damage off, after a
    // backup, and says what it dropped.
    let damaged_text = lines.join("\n") + "\n";
    let resume = damaged.dsh(&["run", "--resume", &id, "go on"]).await;
    assert_eq!(resume.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged_text);
    let repair = damaged.dsh(&["sessions", "repair", &id]).await;
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair.stderr));
    let said = text(&repair.stdout);
    assert!(
        said.contains("dropped everything from line 10 on"),
        "{said}"
    );
    let backup = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".bak-"))
        .unwrap();
    assert_eq!(std::fs::read_to_string(backup).unwrap(), damaged_text);
    let events = dsh_store::SessionPersistence::load(
        &plain_backend(&damaged),
        &dsh_protocol::SessionId::new(id.clone()),
    )
    .unwrap()
    .events;
    assert_log_ok(&events);
    assert_eq!(events[7].seq, 7);
    assert_eq!(turn_ends(&events), [json!({"kind": "interrupted"})]);
}

/// What `dsh sessions verify <id>` must print for one session, from an in-process
/// inspection (which drops the session it validated, where the command keeps it).
fn expected_verify_line(sandbox: &Sandbox, id: &str) -> String {
    let backend = JsonlBackend::new(JsonlConfig::new(sandbox.sessions_root()));
    match dsh_store::SessionPersistence::inspect(&backend, &dsh_protocol::SessionId::new(id)) {
        Ok(inspection) if !inspection.needs_repair() => format!(
            "ok       {id}  {} events  {}\n",
            inspection.events,
            inspection.path.display()
        ),
        Ok(inspection) => {
            let mut what = Vec::new();
            if let Some(tail) = &inspection.torn_tail {
                what.push(format!("a torn tail from {} ({})", tail.at, tail.reason));
            }
            if !inspection.pending_closers.is_empty() {
                what.push(format!(
                    "a turn left open ({} closing events owed)",
                    inspection.pending_closers.len()
                ));
            }
            format!(
                "repair   {id}  {}: {}; resuming it or `dsh sessions repair {id}` fixes this\n",
                inspection.path.display(),
                what.join(" and "),
            )
        }
        Err(error) => format!("CORRUPT  {id}  {error} [{}]\n", error.code()),
    }
}

#[tokio::test]
async fn verify_of_one_zstd_log_reports_as_before_when_intact_torn_or_damaged() {
    let id = fixture_id("read-edit", "zstd");
    let sandbox = Sandbox::new().with_fixture("read-edit", "zstd");
    let path = log_path(&sandbox, &id, "session.jsonl.zstd");
    let intact = std::fs::read(&path).unwrap();
    let frame_starts: Vec<usize> = {
        let mut starts = Vec::new();
        let mut at = 0;
        while at < intact.len() {
            starts.push(at);
            at += zstd::zstd_safe::find_frame_compressed_size(&intact[at..]).unwrap();
        }
        starts
    };
    let last = *frame_starts.last().unwrap();
    let middle = frame_starts[frame_starts.len() / 2];
    let mut flipped = intact.clone();
    flipped[middle + 12] ^= 0x20;
    let cases = [
        ("intact", intact.clone(), 0, "ok "),
        // a crash inside the last append: a torn tail to cut, and the turn it left open
        (
            "torn",
            intact[..last + (intact.len() - last) / 2].to_vec(),
            0,
            "repair ",
        ),
        // no crash flips a bit in a frame before the end
        ("flipped", flipped, 1, "CORRUPT "),
    ];
    for (what, bytes, status, verdict) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let output = sandbox.dsh(&["sessions", "verify", &id]).await;
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(status), "{what}: {stdout}");
        assert!(stdout.starts_with(verdict), "{what}: {stdout}");
        assert_eq!(stdout, expected_verify_line(&sandbox, &id), "{what}");
        let stderr = text(&output.stderr);
        if status == 1 {
            assert_eq!(stderr, "dsh: 1 of 1 session logs are damaged\n", "{what}");
        } else {
            assert_eq!(stderr, "", "{what}");
        }
        // verify changed nothing
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}");
    }
}

#[tokio::test]
async fn repair_backs_up_then_cuts_a_torn_tail_and_closes_the_open_turn() {
    let sandbox = Sandbox::new().with_fixture("multi-turn", "jsonl");
    plain_store(&sandbox);
    let id = fixture_id("multi-turn", "jsonl");
    let path = log_path(&sandbox, &id, "session.jsonl");
    // A crash in turn 2: the log stops after line 60, mid-write of the next line.
    let original = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> = original.lines().take(60).collect();
    let crashed = kept.join("\n") + "\n{\"type\":\"assistant/chu";
    std::fs::write(&path, &crashed).unwrap();

    let before = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(before.status.code(), Some(0));
    let report = text(&before.stdout);
    assert!(report.starts_with(&format!("repair   {id}")), "{report}");
    assert!(
        report.contains("torn tail from line 61 (incomplete final line)"),
        "{report}"
    );
    assert!(report.contains("a turn left open"), "{report}");

    let repair = sandbox.dsh(&["sessions", "repair", &id[..12]]).await;
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair.stderr));
    let said = text(&repair.stdout);
    assert!(
        said.contains("cut a torn tail from line 61 (incomplete final line)"),
        "{said}"
    );
    let backups: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".bak-"))
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), crashed);

    let after = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert!(
        text(&after.stdout).starts_with("ok "),
        "{}",
        text(&after.stdout)
    );
    let events = dsh_store::SessionPersistence::load(
        &plain_backend(&sandbox),
        &dsh_protocol::SessionId::new(id.clone()),
    )
    .unwrap()
    .events;
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "completed"}), json!({"kind": "interrupted"})]
    );
    let again = sandbox.dsh(&["sessions", "repair", &id]).await;
    assert_eq!(text(&again.stdout), format!("{id}: nothing to repair\n"));
}

#[tokio::test]
async fn fork_copies_a_prefix_into_a_new_session_and_refuses_half_turns() {
    let sandbox = Sandbox::new().with_fixture("multi-turn", "zstd");
    let id = fixture_id("multi-turn", "zstd");
    let source = sandbox.events(&id);
    let first_end = source
        .iter()
        .find(|e| e.type_name() == "turn/end")
        .unwrap()
        .seq;
    let at = first_end.to_string();
    let fork = sandbox.dsh(&["sessions", "fork", &id, "--at", &at]).await;
    assert_eq!(fork.status.code(), Some(0), "{}", text(&fork.stderr));
    let child = text(&fork.stdout).trim().to_owned();
    assert!(child.starts_with("session-") && child != id, "{child}");
    let raw = sandbox.dsh(&["sessions", "show", "--json", &child]).await;
    let lines = json_lines(&raw);
    assert_eq!(lines[0]["parentSession"], json!(id));
    assert_eq!(lines[0]["seedLength"], json!(first_end + 1));
    let events = sandbox.events(&child);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events).len(), 1);
    assert_eq!(events.last().unwrap().type_name(), "session/end-seed");

    let inside = (first_end - 3).to_string();
    let refused = sandbox
        .dsh(&["sessions", "fork", &id, "--at", &inside])
        .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("cannot fork"),
        "{}",
        text(&refused.stderr)
    );
}

#[tokio::test]
async fn export_writes_the_header_and_every_event_as_one_file() {
    let sandbox = Sandbox::new().with_fixture("read-edit", "zstd");
    let id = fixture_id("read-edit", "zstd");
    let target = sandbox.cwd.path().join("out.jsonl");
    let export = sandbox
        .dsh(&["sessions", "export", &id, "-o", target.to_str().unwrap()])
        .await;
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    assert!(text(&export.stderr).contains("exported 56 events"));
    let raw = sandbox.dsh(&["sessions", "show", "--json", &id]).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), text(&raw.stdout));

    let default_name = sandbox.dsh(&["sessions", "export", &id]).await;
    let written = sandbox.cwd.path().join(format!("{id}.dsh-session.jsonl"));
    assert_eq!(
        text(&default_name.stdout).trim(),
        format!("{id}.dsh-session.jsonl")
    );
    assert_eq!(std::fs::read_to_string(written).unwrap(), text(&raw.stdout));
}

#[tokio::test]
async fn a_fixture_resumes_for_another_turn_in_its_own_log() {
    let server = serve(Script::new().respond(Reply::text("Still three lines."))).await;
    let sandbox = Sandbox::new()
        .with_fixture("bash", "zstd")
        .with_server(&server);
    let id = fixture_id("bash", "zstd");
    let path = log_path(&sandbox, &id, "session.jsonl.zstd");
    let size_before = std::fs::metadata(&path).unwrap().len();
    let output = sandbox
        .dsh(&["run", "--resume", &id[..14], "and now?"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(session_of(&output), id);
    assert_eq!(text(&output.stdout), "Still three lines.\n");
    assert!(std::fs::metadata(&path).unwrap().len() > size_before);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "completed"}), json!({"kind": "completed"})]
    );
    assert_eq!(events[53].type_name(), "session/end-seed");
    // The model saw the earlier turn: the resumed request carries the old conversation.
    let body = server.requests()[0].body.to_string();
    assert!(body.contains("What does notes.txt say?"), "{body}");
    assert!(body.contains("and now?"), "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn sessions_written_by_runs_are_listed_verified_and_forked() {
    let server = serve(
        Script::new()
            .respond(Reply::text("first answer"))
            .respond(Reply::text("second answer"))
            .respond(Reply::text("forked answer")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let one = session_of(&sandbox.dsh(&["run", "first question"]).await);
    let two = session_of(&sandbox.dsh(&["run", "second question"]).await);
    let list = sandbox.dsh(&["sessions", "list", "--json"]).await;
    let summaries: Vec<Value> = serde_json::from_slice(&list.stdout).unwrap();
    let ids: Vec<&str> = summaries
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [two.as_str(), one.as_str()]);
    // The model's title (the mock's built-in title reply) replaced the prompt's.
    assert_eq!(
        summaries[1]["title"],
        json!(dsh_testkit::mock_llm::DEFAULT_TITLE)
    );
    let verify = sandbox.dsh(&["sessions", "verify", &one]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));

    let fork = sandbox.dsh(&["sessions", "fork", &one]).await;
    let child = text(&fork.stdout).trim().to_owned();
    let resumed = sandbox.dsh(&["run", "--resume", &child, "go on"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), "forked answer\n");
    let events = sandbox.events(&child);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events).len(), 2);
    // The source is untouched.
    assert_eq!(turn_ends(&sandbox.events(&one)).len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn ambiguous_and_unknown_ids_are_usage_errors() {
    let sandbox = Sandbox::new()
        .with_fixture("text", "zstd")
        .with_fixture("bash", "zstd");
    let ambiguous = sandbox.dsh(&["sessions", "show", "session-f"]).await;
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(text(&ambiguous.stderr).contains("matches 2 sessions"));
    let unknown = sandbox.dsh(&["sessions", "show", "zzz"]).await;
    assert_eq!(unknown.status.code(), Some(2));
    let neither = sandbox.dsh(&["sessions", "verify"]).await;
    assert_eq!(neither.status.code(), Some(2));
}

#[tokio::test]
async fn a_damaged_zstd_frame_is_reported_and_cut_at_the_frame() {
    let sandbox = Sandbox::new().with_fixture("multi-turn", "zstd");
    let id = fixture_id("multi-turn", "zstd");
    let path = log_path(&sandbox, &id, "session.jsonl.zstd");
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(1));
    let report = text(&verify.stdout);
    assert!(report.contains("zstd frame"), "{report}");
    assert!(report.contains(&path.display().to_string()), "{report}");

    let repair = sandbox.dsh(&["sessions", "repair", &id]).await;
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair.stderr));
    assert!(text(&repair.stdout).contains("dropped everything from line"));
    let after = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stdout));
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert!((std::fs::metadata(&path).unwrap().len() as usize) < bytes.len());
}
