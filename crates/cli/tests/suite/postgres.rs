//! Sessions on PostgreSQL through the real `dsh` binary: `[store] backend = "postgres"`
//! with `DSH_DATABASE_URL`, against a throwaway cluster (`pg_cluster`) and the mock model
//! server. Two `DSH_HOME`s sharing one database stand for two machines.

use super::run_support::*;
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_store::SessionPersistence;
use dsh_store_postgres::{PgConfig, PostgresBackend};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Fault, Reply, Script};
use dsh_testkit::pg_cluster::Cluster;
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(90);

/// A sandbox whose sessions live in `url`'s database (`[store] backend = "postgres"` in its
/// settings, the URL from `DSH_DATABASE_URL`).
fn on_postgres(sandbox: Sandbox, url: &str) -> Sandbox {
    write_store_settings(&sandbox, "postgres");
    with_url(sandbox, url)
}

/// A sandbox on the file backend that also knows the database (for `migrate`).
fn files_knowing(sandbox: Sandbox, url: &str) -> Sandbox {
    write_store_settings(&sandbox, "files");
    with_url(sandbox, url)
}

fn with_url(mut sandbox: Sandbox, url: &str) -> Sandbox {
    sandbox
        .env
        .push(("DSH_DATABASE_URL".into(), url.to_owned()));
    sandbox
}

fn write_store_settings(sandbox: &Sandbox, backend: &str) {
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        format!("[store]\nbackend = \"{backend}\"\n"),
    )
    .unwrap();
}

fn database(url: &str) -> PostgresBackend {
    PostgresBackend::open(PgConfig::parse(url, None).unwrap())
        .unwrap()
        .0
}

fn pg_events(url: &str, id: &str) -> Vec<Arc<SessionEvent>> {
    database(url).load(&SessionId::new(id)).unwrap().events
}

/// Runs a command to the end off the async thread (reading both pipes), killing it after
/// [`LIMIT`].
async fn finish(mut command: Command) -> Output {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid = child.id() as i32;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output().unwrap()));
    tokio::task::spawn_blocking(move || match receiver.recv_timeout(LIMIT) {
        Ok(output) => output,
        Err(_) => {
            // SAFETY: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let output = receiver.recv().unwrap();
            panic!("dsh did not finish: {}", text(&output.stderr));
        }
    })
    .await
    .unwrap()
}

fn first_json_line(child: &mut Child) -> Value {
    let stdout = child.stdout.as_mut().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// `dsh sessions export ID -o -`'s stdout.
async fn export(sandbox: &Sandbox, id: &str) -> String {
    let output = sandbox.dsh(&["sessions", "export", id, "-o", "-"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    text(&output.stdout)
}

/// A reply that streams two chunks, then stalls until the connection goes away.
fn stalled() -> Reply {
    Reply::text("an answer that stalls half way through")
        .chunks(6)
        .with_fault(Fault::Stall {
            after_chunks: Some(2),
        })
}

#[tokio::test]
async fn config_show_masks_the_database_password() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        "[store]\nbackend = \"postgres\"\nurl = \"postgres://alice:file-s3cret@db:5432/dsh\"\n\
         password_env = \"DSH_DB_PASSWORD\"\n",
    )
    .unwrap();
    let shown = sandbox.dsh(&["config", "show"]).await;
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let said = text(&shown.stdout);
    assert!(!said.contains("file-s3cret"), "{said}");
    assert!(
        said.contains("url = \"postgres://alice:<hidden>@db:5432/dsh\"  # settings.toml:3"),
        "{said}"
    );
    assert!(said.contains("backend = \"postgres\""), "{said}");
    assert!(
        said.contains("password_env = \"DSH_DB_PASSWORD\""),
        "{said}"
    );

    // The environment's URL overrides the file's, and is masked too (also in JSON).
    let sandbox = with_url(
        sandbox,
        "postgresql://bob:env-s3cret@other/dsh?password=q-s3cret",
    );
    let shown = sandbox.dsh(&["config", "show", "--json"]).await;
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let said = text(&shown.stdout);
    assert!(!said.contains("s3cret"), "{said}");
    let json: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(
        json["store"]["url"],
        json!({
            "value": "postgresql://bob:<hidden>@other/dsh?password=<hidden>",
            "source": "env DSH_DATABASE_URL"
        })
    );
}

#[tokio::test]
async fn a_postgres_backend_without_a_url_is_a_settings_error() {
    let sandbox = Sandbox::new();
    write_store_settings(&sandbox, "postgres");
    let output = sandbox.dsh(&["sessions", "list"]).await;
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output.stderr);
    assert!(
        said.contains("store.url") && said.contains("DSH_DATABASE_URL"),
        "{said}"
    );
}

#[tokio::test]
async fn a_wrong_password_or_a_server_down_names_the_setting_never_the_password() {
    let Some(cluster) = Cluster::start_with_password("right-pw") else {
        return;
    };
    let server = serve(Script::new().respond(Reply::text("hello"))).await;
    let wrong = format!(
        "postgres://dsh:wrong-pw@127.0.0.1:{}/postgres",
        cluster.port
    );
    let sandbox = on_postgres(Sandbox::new().with_server(&server), &wrong);
    for args in [&["sessions", "list"][..], &["run", "hi"][..]] {
        let output = finish(sandbox.command(args)).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let said = text(&output.stderr);
        assert!(!said.contains("wrong-pw"), "{said}");
        assert!(
            said.contains("DSH_DATABASE_URL") && said.contains("password"),
            "{args:?}: {said}"
        );
    }
    assert!(server.requests().is_empty(), "no model request");

    // The password from [store] password_env (overriding the URL's) lets it in.
    let mut sandbox = sandbox;
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        "[store]\nbackend = \"postgres\"\npassword_env = \"TEAM_DB_PASSWORD\"\n",
    )
    .unwrap();
    sandbox
        .env
        .push(("TEAM_DB_PASSWORD".into(), "right-pw".into()));
    let output = finish(sandbox.command(&["run", "hi"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "hello\n");

    // A server that is down: the setting and the question to ask.
    cluster.stop_server();
    let output = finish(sandbox.command(&["sessions", "list"])).await;
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output.stderr);
    assert!(
        said.contains("is the server running") && said.contains("DSH_DATABASE_URL"),
        "{said}"
    );
    assert!(!said.contains("right-pw"), "{said}");
    server.shutdown().await;
}

#[tokio::test]
async fn run_then_continue_from_a_second_home_sharing_the_database() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let server = serve(
        Script::new()
            .respond(Reply::text("first"))
            .respond(Reply::text("second")),
    )
    .await;
    let one = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let two = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let first = finish(one.command(&["run", "one"])).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_of(&first);

    // The second "machine" works in the same workspace path, with its own home.
    let mut command = two.command(&["run", "--continue", "two"]);
    command.current_dir(one.cwd.path());
    let second = finish(command).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(session_of(&second), id);
    assert_eq!(text(&second.stdout), "second\n");

    let events = pg_events(&cluster.url(), &id);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events).len(), 2);
    // Nothing was written under either home's sessions directory.
    for home in [&one, &two] {
        assert!(!home.sessions_root().exists(), "no session files");
    }
    // Both homes list it, from the sessions table.
    let listed = finish(two.command(&["sessions", "list", "--all", "--json"])).await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["id"], json!(id));
    assert_eq!(listed[0]["turns"], json!(2));
    server.shutdown().await;
}

#[tokio::test]
async fn export_show_verify_and_repair_read_the_database() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "echo from-bash", "description": "print"}),
            ))
            .respond(Reply::text("done")),
    )
    .await;
    let sandbox = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let run = finish(sandbox.command(&["run", "--approval", "never", "go"])).await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let id = session_of(&run);
    let from_database = export(&sandbox, &id).await;

    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(0));
    assert!(
        text(&verify.stdout).starts_with("ok "),
        "{}",
        text(&verify.stdout)
    );
    let repair = sandbox.dsh(&["sessions", "repair", &id]).await;
    assert_eq!(text(&repair.stdout), format!("{id}: nothing to repair\n"));
    let show = sandbox.dsh(&["sessions", "show", &id]).await;
    assert!(
        text(&show.stdout).contains("from-bash"),
        "{}",
        text(&show.stdout)
    );

    // The same session in files (copied by migrate) exports to the same content.
    let migrate = sandbox.dsh(&["sessions", "migrate", "--to", "files"]).await;
    assert_eq!(migrate.status.code(), Some(0), "{}", text(&migrate.stderr));
    write_store_settings(&sandbox, "files");
    let from_files = export(&sandbox, &id).await;
    assert_eq!(from_files, from_database);
    assert_eq!(
        from_database.lines().count(),
        pg_events(&cluster.url(), &id).len() + 1
    );
    server.shutdown().await;
}

#[tokio::test]
async fn sigkill_mid_turn_then_verify_repair_and_resume() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let server = serve(
        Script::new()
            .respond(stalled())
            .respond(Reply::text("back")),
    )
    .await;
    let sandbox = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let mut command = sandbox.command(&["run", "--json", "start"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut live = command.spawn().unwrap();
    let id = first_json_line(&mut live)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    server.wait_for_requests(1).await;
    // The checkpoint before the request committed the open turn.
    let url = cluster.url();
    assert!(
        eventually(|| database(&url)
            .load(&SessionId::new(id.clone()))
            .is_ok_and(|s| s.events.iter().any(|e| e.type_name() == "user/message")))
        .await
    );
    live.kill().unwrap();
    live.wait().unwrap();
    let stored = pg_events(&url, &id);

    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    let said = text(&verify.stdout);
    assert!(
        said.starts_with("repair ") && said.contains("a turn left open"),
        "{said}"
    );

    // A resume (the dead writer's lock went with its connection) closes the turn first.
    let resumed = finish(sandbox.command(&["run", "--resume", &id, "again"])).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), "back\n");
    let events = pg_events(&url, &id);
    assert_log_ok(&events);
    // Nothing acknowledged was lost: the stored prefix is unchanged.
    let texts = |events: &[Arc<SessionEvent>]| -> Vec<String> {
        events
            .iter()
            .map(|e| serde_json::to_string(&**e).unwrap())
            .collect()
    };
    assert_eq!(texts(&events[..stored.len()]), texts(&stored));
    assert_eq!(turn_ends(&events).len(), 2);
    assert_eq!(turn_ends(&events)[1], json!({"kind": "completed"}));
    server.shutdown().await;
}

#[tokio::test]
async fn a_second_resume_elsewhere_is_refused_while_the_first_writes() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let server = serve(
        Script::new()
            .respond(Reply::text("first"))
            .respond(stalled())
            .respond(Reply::text("never asked")),
    )
    .await;
    let one = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let two = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let first = finish(one.command(&["run", "one"])).await;
    let id = session_of(&first);

    let mut command = one.command(&["run", "--json", "--resume", &id, "two"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut live = command.spawn().unwrap();
    first_json_line(&mut live);
    server.wait_for_requests(2).await;

    let refused = finish(two.command(&["run", "--resume", &id, "three"])).await;
    assert_ne!(refused.status.code(), Some(0));
    let said = text(&refused.stderr);
    assert!(
        said.contains("is already open for writing by another process"),
        "{said}"
    );
    assert_eq!(server.requests().len(), 2, "the refused run asked no model");

    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(live.id() as i32, libc::SIGTERM) }, 0);
    let status = tokio::task::spawn_blocking(move || live.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let events = pg_events(&cluster.url(), &id);
    assert_log_ok(&events);
    let prompts: Vec<String> = events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .filter_map(|e| e.message().map(|m| m.text()))
        .collect();
    assert_eq!(prompts, ["one", "two"]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_restart_mid_turn_loses_nothing_and_a_checkpoint_that_cannot_commit_stops_the_turn(
) {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let bash = |marker: &str| {
        Reply::tool_call(
            "bash",
            json!({
                "command": format!("touch {marker}; sleep 4"),
                "description": "wait"
            }),
        )
    };
    let server = serve(
        Script::new()
            .respond(bash("restarted"))
            .respond(Reply::text("after the restart"))
            .respond(bash("stopped"))
            .respond(Reply::text("never asked")),
    )
    .await;
    let sandbox = on_postgres(Sandbox::new().with_server(&server), &cluster.url());
    let url = cluster.url();

    // 1. Restarted while a tool runs: the writer reconnects and the turn completes.
    let mut command = sandbox.command(&["run", "--approval", "never", "one"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let live = command.spawn().unwrap();
    let marker = sandbox.cwd.path().join("restarted");
    assert!(eventually(|| marker.exists()).await);
    cluster.restart();
    let output = tokio::task::spawn_blocking(move || live.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "after the restart\n");
    let id = session_of(&output);
    let events = pg_events(&url, &id);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);

    // 2. Stopped while a tool runs, and still down at the checkpoint before the next
    //    model request: the turn stops with the storage error, the model is not asked.
    let mut command = sandbox.command(&["run", "--approval", "never", "--resume", &id, "two"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let live = command.spawn().unwrap();
    let marker = sandbox.cwd.path().join("stopped");
    assert!(eventually(|| marker.exists()).await);
    let acknowledged = pg_events(&url, &id);
    cluster.stop_server();
    let output = tokio::task::spawn_blocking(move || live.wait_with_output().unwrap())
        .await
        .unwrap();
    let said = text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{said}");
    assert_eq!(
        server.requests().len(),
        3,
        "no request after the failed checkpoint"
    );
    assert!(said.contains("postgres"), "{said}");

    // Back up: everything acknowledged before the stop is there, and the session resumes.
    cluster.start_server();
    let stored = pg_events(&url, &id);
    assert!(stored.len() >= acknowledged.len());
    let texts = |events: &[Arc<SessionEvent>]| -> Vec<String> {
        events
            .iter()
            .map(|e| serde_json::to_string(&**e).unwrap())
            .collect()
    };
    assert_eq!(texts(&stored[..acknowledged.len()]), texts(&acknowledged));
    let repair = finish(sandbox.command(&["sessions", "repair", &id])).await;
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair.stderr));
    let events = pg_events(&url, &id);
    assert_log_ok(&events);
    server.shutdown().await;
}

/// Every session of the original's fixtures (both encodings) in one home's files.
fn fixture_home(url: &str) -> Sandbox {
    let sandbox = files_knowing(Sandbox::new(), url);
    for scenario in [
        "text",
        "multi-turn",
        "bash",
        "read-edit",
        "parallel-tools",
        "retry",
    ] {
        for form in ["jsonl", "zstd"] {
            let from = fixtures().join(scenario).join(form).join("sessions");
            copy_dir(&from, &sandbox.sessions_root());
        }
    }
    sandbox
}

/// Two exports with the same content: line for line the same JSON values. (Key order may
/// differ for the original's logs: a copy goes through this build's typed events, which
/// write each object's keys in one order, as every log this build writes has them.)
fn assert_same_export(left: &str, right: &str, id: &str) {
    let (l, r): (Vec<&str>, Vec<&str>) = (left.lines().collect(), right.lines().collect());
    assert_eq!(l.len(), r.len(), "{id}: line counts");
    for (n, (a, b)) in l.iter().zip(&r).enumerate() {
        let (va, vb): (Value, Value) = (
            serde_json::from_str(a).unwrap(),
            serde_json::from_str(b).unwrap(),
        );
        let cut = |s: &str| s.chars().take(600).collect::<String>();
        assert!(va == vb, "{id} line {}:\n{}\n{}", n + 1, cut(a), cut(b));
    }
}

fn listed_ids(output: &Output) -> Vec<String> {
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut ids: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn tree_bytes(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    fn walk(dir: &Path, root: &Path, files: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, files);
            } else if !path.ends_with("index.jsonl") {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                files.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    walk(root, root, &mut files);
    files.sort();
    files
}

#[tokio::test]
async fn the_original_fixtures_migrate_both_ways_verified_and_resumably() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let source = fixture_home(&url);
    let list = finish(source.command(&["sessions", "list", "--all", "--json"])).await;
    let ids = listed_ids(&list);
    assert_eq!(ids.len(), 12);
    let mut exports = Vec::new();
    for id in &ids {
        exports.push(export(&source, id).await);
    }
    let before = tree_bytes(&source.sessions_root());

    // An interrupted earlier run left a partial copy of one session.
    let partial = SessionId::new(ids[0].clone());
    {
        let files =
            dsh_store::JsonlBackend::new(dsh_store::JsonlConfig::new(source.sessions_root()));
        let stored = files.load(&partial).unwrap();
        let db = database(&url);
        db.create(&stored.header).unwrap();
        db.append(&partial, &stored.events[..3]).unwrap();
        db.release(&partial);
    }
    // A workspace that ran nothing copies nothing.
    let none = finish(source.command(&[
        "sessions",
        "migrate",
        "--to",
        "postgres",
        "--workspace",
        "/nowhere",
    ]))
    .await;
    assert_eq!(none.status.code(), Some(0), "{}", text(&none.stderr));
    assert!(
        text(&none.stdout).contains("0 copied, 0 finished"),
        "{}",
        text(&none.stdout)
    );

    let to_pg = finish(source.command(&[
        "sessions",
        "migrate",
        "--to",
        "postgres",
        "--workspace",
        "/home/user/project",
    ]))
    .await;
    assert_eq!(to_pg.status.code(), Some(0), "{}", text(&to_pg.stderr));
    let said = text(&to_pg.stdout);
    assert!(
        said.contains(&format!("finished  {}  events 3..", ids[0]))
            && said.contains("11 copied, 1 finished, 0 already present, 0 empty, 0 failed"),
        "{said}"
    );
    // Rerunning finds every copy present and verified.
    let again = finish(source.command(&["sessions", "migrate", "--to", "postgres"])).await;
    assert!(
        text(&again.stdout).contains("0 copied, 0 finished, 12 already present"),
        "{}",
        text(&again.stdout)
    );
    // The source is untouched, byte for byte.
    assert_eq!(tree_bytes(&source.sessions_root()), before);

    // A second home reading the database sees the same sessions, exported identically.
    let reader = on_postgres(Sandbox::new(), &url);
    let list = finish(reader.command(&["sessions", "list", "--all", "--json"])).await;
    assert_eq!(listed_ids(&list), ids);
    for (id, exported) in ids.iter().zip(&exports) {
        assert_same_export(&export(&reader, id).await, exported, id);
    }

    // And back into another home's files.
    let back = files_knowing(Sandbox::new(), &url);
    let to_files = finish(back.command(&["sessions", "migrate", "--to", "files"])).await;
    assert_eq!(
        to_files.status.code(),
        Some(0),
        "{}",
        text(&to_files.stderr)
    );
    assert!(
        text(&to_files.stdout).contains("12 copied, 0 finished"),
        "{}",
        text(&to_files.stdout)
    );
    for (id, exported) in ids.iter().zip(&exports) {
        assert_same_export(&export(&back, id).await, exported, id);
    }
    let verify = finish(back.command(&["sessions", "verify", "--all"])).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
}
