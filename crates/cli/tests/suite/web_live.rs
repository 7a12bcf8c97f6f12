//! `dsh web`'s live host stream and its goal and rename routes, end to end: the real binary,
//! the mock model server and a raw HTTP client. The host stream reports sessions created here
//! and by another process, status changes (running, waiting for an approval, idle), titles and
//! removals, resumes from a cursor, and sits behind the same fence and token as every route;
//! a goal set, refused and cleared and a rename are logged as the TUI's `/goal` and
//! `dsh sessions rename` log them (docs/web-api.md).

use super::run_support::*;
use super::web_support::{Sse, Web};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use dsh_testkit::normalize::outline;
use serde_json::{json, Value};
use std::path::Path;

fn header(name: &str, value: &str) -> (String, String) {
    (name.to_owned(), value.to_owned())
}

/// The `session` frame about `id`.
fn about<'a>(frame: &'a Sse, id: &str) -> Option<&'a Value> {
    (frame.event == "session" && frame.data["session"]["id"] == id).then_some(&frame.data)
}

/// Removes a session's log from the store, as another process deleting it would.
fn delete_stored(root: &Path, id: &str) {
    for entry in walk(root) {
        if entry.file_name().and_then(|n| n.to_str()) == Some(id) && entry.is_dir() {
            std::fs::remove_dir_all(&entry).unwrap();
            return;
        }
    }
    panic!("no directory for {id} under {}", root.display());
}

fn walk(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_stream_follows_sessions_here_and_in_other_processes() {
    let server = serve(
        Script::new()
            .rule(
                RuleMatch::any().last_message_contains("Generate the session title"),
                Reply::text("Model title"),
            )
            .rule(
                RuleMatch::any().last_message_contains("WRITE the note"),
                Reply::text("Writing.").with_tool_call(
                    "write",
                    json!({"file_path": "note.txt", "content": "hello\n"}),
                ),
            )
            .rule(RuleMatch::any(), Reply::text("ok")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let web = Web::start(&sandbox, &["--approval", "untrusted"]);

    // The fence and the token hold on this stream as on every route.
    let reply = web
        .raw("GET", "/api/events", &[header("Host", &web.host())], None)
        .await;
    assert_eq!((reply.status, reply.code()), (401, "unauthorized".into()));
    let bearer = format!("Bearer {}", web.token);
    for (name, value) in [
        ("Host", "evil.com:3080"),
        ("Origin", "null"),
        ("Sec-Fetch-Site", "cross-site"),
    ] {
        let mut headers = vec![header("Authorization", &bearer)];
        if name == "Host" {
            headers.push(header(name, value));
        } else {
            headers.push(header("Host", &web.host()));
            headers.push(header(name, value));
        }
        let reply = web.raw("GET", "/api/events", &headers, None).await;
        assert_eq!(
            (reply.status, reply.code()),
            (403, "forbidden".into()),
            "{name}: {value}"
        );
    }
    let reply = web.get("/api/events?after=12").await;
    assert_eq!((reply.status, reply.code()), (400, "bad_request".into()));

    // A fresh store: the snapshot is empty, and its id is the first cursor.
    let mut host = web.stream("/api/events", &[]).await;
    assert_eq!(host.status, 200);
    let snapshot = host.next().await.unwrap();
    assert_eq!(
        (snapshot.event.as_str(), &snapshot.data),
        ("snapshot", &json!({"sessions": []}))
    );
    let first_cursor = snapshot.id.clone().unwrap();

    // Created here: reported once, idle.
    let created = web.post("/api/sessions", json!({})).await.json();
    let id = created["session"]["id"].as_str().unwrap().to_owned();
    let frame = host.until(|f| about(f, &id).is_some()).await.pop().unwrap();
    assert_eq!(
        (
            frame.data["change"].clone(),
            frame.data["session"]["status"].clone()
        ),
        (json!("created"), json!("idle"))
    );
    let after_create = frame.id.clone().unwrap();

    // A turn that asks for an approval: running, then waiting, then idle, and titled (the
    // first prompt's words, then the model's title).
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "WRITE the note"}),
    )
    .await;
    let waiting = host
        .until(|f| about(f, &id).is_some_and(|d| d["session"]["status"] == "waiting"))
        .await;
    let fields = &waiting.last().unwrap().data["fields"];
    assert!(
        fields.as_array().unwrap().contains(&json!("status")),
        "{fields}"
    );
    let detail = web.get(&format!("/api/sessions/{id}")).await.json();
    assert_eq!(detail["session"]["status"], "waiting");
    let approval = detail["pending"]["approvals"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    web.post(
        &format!("/api/sessions/{id}/approvals/{approval}"),
        json!({"decision": "allow-once"}),
    )
    .await;
    let rest = host
        .until(|f| {
            about(f, &id).is_some_and(|d| {
                d["session"]["status"] == "idle" && d["session"]["title"] == "Model title"
            })
        })
        .await;
    assert_eq!(rest.last().unwrap().data["session"]["turns"], 1);
    let titled: Vec<&Value> = host
        .seen()
        .iter()
        .filter_map(|f| about(f, &id))
        .filter(|d| d["fields"].as_array().unwrap().contains(&json!("title")))
        .map(|d| &d["session"]["title"])
        .collect();
    // The fallback title (the first prompt) and the model's can land within one rescan
    // (40 ms) of each other; either way the changes end with the model's title.
    let (fallback, model) = (json!("WRITE the note"), json!("Model title"));
    assert!(
        titled == [&fallback, &model] || titled == [&model],
        "{titled:?}"
    );

    // A rename is one `title` change.
    let renamed = web
        .post(
            &format!("/api/sessions/{id}/title"),
            json!({"title": "Note writer"}),
        )
        .await;
    assert_eq!(
        (renamed.status, renamed.json()),
        (200, json!({"title": "Note writer"}))
    );
    let frame = host
        .until(|f| about(f, &id).is_some_and(|d| d["session"]["title"] == "Note writer"))
        .await
        .pop()
        .unwrap();
    assert_eq!(frame.data["fields"], json!(["title"]));
    assert_eq!(frame.data["session"]["title"], "Note writer");

    // Another process's session appears (the slow rescan), and leaves when deleted.
    let run = sandbox.dsh(&["run", "from a terminal"]).await;
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let other = session_of(&run);
    // A rescan can fall while that process is still writing (one is due 40 ms after the
    // rename above), so the session may first appear with the title it had then; it
    // appears once, as created and stored, and its frames end with the model's title.
    let frames: Vec<Value> = host
        .until(|f| about(f, &other).is_some_and(|d| d["session"]["title"] == "Model title"))
        .await
        .iter()
        .filter_map(|f| about(f, &other).cloned())
        .collect();
    assert_eq!(
        (
            frames[0]["change"].clone(),
            frames[0]["session"]["status"].clone()
        ),
        (json!("created"), json!("stored"))
    );
    assert!(
        frames[1..].iter().all(|f| f["change"] == "updated"),
        "{frames:#?}"
    );
    delete_stored(&sandbox.sessions_root(), &other);
    let gone = host
        .until(|f| f.event == "session-removed")
        .await
        .pop()
        .unwrap();
    assert_eq!(gone.data, json!({"id": other}));
    let last_cursor = gone.id.clone().unwrap();

    // Reconnecting from a cursor gets exactly the frames missed since it, in order.
    let all = host.seen();
    let from = all
        .iter()
        .position(|f| f.id.as_deref() == Some(after_create.as_str()))
        .unwrap();
    let missed = all[from + 1..].to_vec();
    let mut resumed = web
        .stream(&format!("/api/events?after={after_create}"), &[])
        .await;
    let again = resumed
        .until(|f| f.id.as_deref() == Some(last_cursor.as_str()))
        .await;
    assert_eq!(again, missed);
    // The browser's own reconnect (Last-Event-ID) at the end: nothing more to send.
    let mut current = web
        .stream("/api/events", &[("Last-Event-ID", &last_cursor)])
        .await;
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(2500), current.next()).await;
    assert!(quiet.is_err(), "a caught-up client was sent {quiet:?}");
    // A cursor from another launch gets a fresh snapshot: the one session left.
    let mut foreign = web.stream("/api/events?after=0badcafe.1", &[]).await;
    let fresh = foreign.next().await.unwrap();
    assert_eq!(fresh.event, "snapshot");
    let ids: Vec<&Value> = fresh.data["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert_eq!(ids, [&json!(id)]);
    assert_ne!(first_cursor, last_cursor);
    server.shutdown().await;
}

/// `update_goal` on the goal the last tool result showed (the mock fills the placeholders).
fn update_goal(action: &str) -> Reply {
    Reply::tool_call(
        "update_goal",
        Value::String(format!(
            r#"{{"goal_id":"{{{{last-tool-result:/goal/id}}}}","revision":{{{{last-tool-result:/goal/revision}}}},"action":"{action}"}}"#
        )),
    )
}

/// A log line with its run-specific ids masked, cut at its first line break.
fn brief(line: &str) -> String {
    // Real line breaks, and escaped ones inside a JSON string.
    let first = line
        .split('\n')
        .next()
        .and_then(|l| l.split("\\n").next())
        .unwrap_or_default();
    let mut out = String::new();
    let mut rest = first;
    while let Some(at) = rest.find("goal-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 5..];
        let id_len = tail
            .bytes()
            .take_while(|b| b.is_ascii_hexdigit() || *b == b'-')
            .count();
        out.push_str(if id_len >= 32 { "goal-ID" } else { "goal-" });
        rest = &tail[if id_len >= 32 { id_len } else { 0 }..];
    }
    out.push_str(rest);
    let words: Vec<String> = out
        .split(' ')
        .map(|w| match w.strip_prefix("call_") {
            Some(_) => "call".to_owned(),
            None => w.to_owned(),
        })
        .collect();
    words
        .join(" ")
        .split(" cites ")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Polls until the session's goal reaches `phase` and the session is idle.
async fn wait_goal(web: &Web, id: &str, phase: &str) -> Value {
    for _ in 0..1200 {
        let detail = web.get(&format!("/api/sessions/{id}")).await.json();
        if detail["goal"]["goal"]["phase"] == phase && detail["session"]["status"] == "idle" {
            return detail["goal"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the goal never reached {phase}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goal_and_rename_are_logged_as_the_tui_logs_them() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call("get_goal", json!({})))
            .respond(update_goal("complete"))
            .respond(Reply::text("The docs are written.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut web = Web::start(&sandbox, &[]);
    let id = web.post("/api/sessions", json!({})).await.json()["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let goal = format!("/api/sessions/{id}/goal");

    // Nothing to pause yet: the TUI's refusal, word for word.
    let reply = web.post(&goal, json!({"action": "pause"})).await;
    assert_eq!(
        (reply.status, reply.json()),
        (
            409,
            json!({"error": {"code": "goal_refused", "message":
                "No goal is currently set; /goal pause requires one. Usage: /goal [<objective>|clear|edit <objective>|pause|resume]"}})
        )
    );
    for bad in [
        json!({"action": "set"}),
        json!({"action": "set", "objective": "  "}),
        json!({"action": "clear", "objective": "x"}),
        json!({"action": "finish"}),
    ] {
        let reply = web.post(&goal, bad.clone()).await;
        assert_eq!(
            (reply.status, reply.code()),
            (400, "bad_request".into()),
            "{bad}"
        );
    }

    // Set: the goal is created armed and its first round runs until the model completes it.
    let reply = web
        .post(
            &goal,
            json!({"action": "set", "objective": "Write the docs"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let answer = reply.json();
    assert_eq!(answer["goal"]["goal"]["objective"], "Write the docs");
    assert_eq!(answer["goal"]["goal"]["phase"], "active");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("Goal created\n"),
        "{answer}"
    );
    let done = wait_goal(&web, &id, "complete").await;
    assert_eq!(done["goal"]["roundsStarted"], 1);

    // A complete goal cannot be paused; it can be cleared.
    let reply = web.post(&goal, json!({"action": "pause"})).await;
    assert_eq!((reply.status, reply.code()), (409, "goal_refused".into()));
    let reply = web.post(&goal, json!({"action": "clear"})).await;
    assert_eq!(
        (reply.status, reply.json()),
        (200, json!({"goal": null, "message": "Goal cleared."}))
    );
    let detail = web.get(&format!("/api/sessions/{id}")).await.json();
    assert_eq!(detail["goal"], Value::Null);

    // A rename is normalised and pinned; a blank one is refused.
    let title = format!("/api/sessions/{id}/title");
    let reply = web
        .post(&title, json!({"title": "  Docs\n   pass  "}))
        .await;
    assert_eq!(
        (reply.status, reply.json()),
        (200, json!({"title": "Docs pass"}))
    );
    let reply = web.post(&title, json!({"title": " \n "})).await;
    assert_eq!((reply.status, reply.code()), (400, "bad_request".into()));
    assert_eq!(web.stop(), Some(0));

    // The whole log: the goal's changes and its round, the rename, as the TUI writes them.
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let lines: Vec<String> = events
        .iter()
        .filter_map(|e| {
            let data = e.data.to_value();
            let line = match e.type_name() {
                "goal/change" => format!(
                    "goal/change {} {} rounds={}",
                    data["operation"].as_str().unwrap_or("?"),
                    data["goal"]["phase"].as_str().unwrap_or("-"),
                    data["roundsStarted"]
                ),
                "session/title" => format!(
                    "session/title {:?} {}",
                    data["title"].as_str().unwrap_or("?"),
                    data["source"]["kind"].as_str().unwrap_or("?")
                ),
                _ => outline(std::slice::from_ref(e)).concat(),
            };
            (!line.starts_with("request/") && !line.starts_with("chunk ")).then(|| brief(&line))
        })
        .collect();
    assert_eq!(
        lines,
        [
            "permission/preset",
            "sandbox/mode",
            "approval/policy",
            "goal/change create active rounds=0",
            r#"splice next-turn @0 -0 +["<goal_round>"#,
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "step/start 1.1",
            "user: <goal_round>",
            "assistant: <call call get_goal> +usage",
            "tool/call call get_goal {}",
            r#"tool/result {"goal":{"id":"goal-ID","revision":1,"objective":"Write the docs","phase":"active","roundsStarted":1,"maxGoalRounds":256},"activation":"armed"}"#,
            "step/end 1.1",
            "step/start 1.2",
            "assistant: <call call update_goal> +usage",
            r#"tool/call call update_goal {"goal_id":"goal-ID","revision":1,"action":"complete"}"#,
            "goal/change complete complete rounds=1",
            r#"tool/result {"goal":{"id":"goal-ID","revision":2,"objective":"Write the docs","phase":"complete","roundsStarted":1,"maxGoalRounds":256},"activation":"disarmed"}"#,
            r#"splice next-step @0 -0 +["<goal_complete>"#,
            "step/end 1.2",
            "splice next-step @0 -1 +[]",
            "step/start 1.3",
            "user: <goal_complete>",
            "assistant: The docs are written. +usage",
            "step/end 1.3",
            "turn/end 1 completed",
            "goal/change clear - rounds=null",
            r#"session/title "Docs pass" user"#,
        ],
        "{lines:#?}"
    );
    server.shutdown().await;
}
