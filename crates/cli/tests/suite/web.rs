//! `dsh web` end to end: the real binary on 127.0.0.1 with a free port, the mock model
//! server, and a raw HTTP client: every fence rule and refusal, every route, a tool-using
//! turn with an approval streamed to two clients, steering and queueing from both, cancel
//! with an approval open, reconnect with catch-up, and SIGKILL mid-turn then verify and
//! resume (docs/web-api.md).

use super::run_support::*;
use super::web_support::{is_turn_end, Sse, Web};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use dsh_testkit::normalize::outline;
use serde_json::{json, Value};

fn rule(text: &str) -> RuleMatch {
    RuleMatch::any().last_message_contains(text)
}

fn scenario() -> Script {
    Script::new()
        .rule(
            RuleMatch::any().header("x-deepseek-harness-compact", "1"),
            Reply::text("Summary of the conversation so far."),
        )
        .rule(
            rule("WRITE the note"),
            Reply::text("Writing.").chunks(2).with_tool_call(
                "write",
                json!({"file_path": "note.txt", "content": "hello\n"}),
            ),
        )
        .rule(
            rule("has been created successfully"),
            Reply::text("Done writing.").chunks(2),
        )
        .rule(
            rule("LONG"),
            Reply::tool_call(
                "bash",
                json!({"command": "sleep 30", "description": "Wait a long time"}),
            ),
        )
        .rule(rule("FIRST"), Reply::text("first seen"))
        .rule(rule("SECOND"), Reply::text("second seen"))
        .respond(Reply::text("ok"))
}

fn header(name: &str, value: &str) -> (String, String) {
    (name.to_owned(), value.to_owned())
}

/// Every fence rule, the token, the cookie exchange, and each body refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fence_token_and_body_rules_refuse_with_codes() {
    let server = serve(scenario()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let web = Web::start(&sandbox, &["--trusted-host", "box.lan"]);
    let host = web.host();
    let bearer = format!("Bearer {}", web.token);
    let ok_headers = || vec![header("Host", &host), header("Authorization", &bearer)];

    // A well-formed request passes.
    let reply = web.raw("GET", "/api/host", &ok_headers(), None).await;
    assert_eq!(reply.status, 200, "{:?}", reply);
    assert_eq!(reply.json()["cwd"], json!(sandbox.workspace()));

    // Host: foreign, DNS rebinding, missing; a trusted host passes.
    let port = web.port;
    for bad in [
        format!("evil.com:{port}"),
        "127.0.0.1.evil.com".to_owned(),
        format!("localhost.evil.com:{port}"),
        format!("10.0.0.1:{port}"),
    ] {
        let reply = web
            .raw(
                "GET",
                "/api/host",
                &[header("Host", &bad), header("Authorization", &bearer)],
                None,
            )
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (403, "forbidden".into()),
            "Host {bad}"
        );
    }
    let reply = web
        .raw(
            "GET",
            "/api/host",
            &[header("Authorization", &bearer)],
            None,
        )
        .await;
    assert_eq!(reply.status, 403, "no Host");
    for good in [
        format!("localhost:{port}"),
        format!("127.1:{port}"),
        "box.lan:8443".into(),
    ] {
        let reply = web
            .raw(
                "GET",
                "/api/host",
                &[header("Host", &good), header("Authorization", &bearer)],
                None,
            )
            .await;
        assert_eq!(reply.status, 200, "Host {good}");
    }
    // Origin: foreign, `null`, another port; the same origin passes.
    for (origin, status) in [
        ("http://evil.com".to_owned(), 403),
        ("null".to_owned(), 403),
        (format!("http://127.0.0.1:{}", port + 1), 403),
        (format!("http://127.0.0.1:{port}"), 200),
    ] {
        let mut headers = ok_headers();
        headers.push(header("Origin", &origin));
        let reply = web.raw("GET", "/api/host", &headers, None).await;
        assert_eq!(reply.status, status, "Origin {origin}");
    }
    // Sec-Fetch-Site: cross-site refused, same-origin fine; streams are fenced too.
    let mut headers = ok_headers();
    headers.push(header("Sec-Fetch-Site", "cross-site"));
    assert_eq!(
        web.raw("GET", "/api/host", &headers, None).await.status,
        403
    );
    assert_eq!(web.raw("GET", "/", &headers, None).await.status, 403);
    let mut headers = ok_headers();
    headers.push(header("Origin", "null"));
    let reply = web
        .raw("GET", "/api/sessions/x/events", &headers, None)
        .await;
    assert_eq!(reply.status, 403, "a stream behind a null Origin");

    // The token: none, wrong, bearer, cookie, and the exchange.
    let reply = web
        .raw("GET", "/api/sessions", &[header("Host", &host)], None)
        .await;
    assert_eq!((reply.status, reply.code()), (401, "unauthorized".into()));
    let reply = web
        .raw(
            "GET",
            "/api/sessions",
            &[
                header("Host", &host),
                header("Authorization", "Bearer nope"),
            ],
            None,
        )
        .await;
    assert_eq!(reply.status, 401);
    let reply = web
        .raw("GET", "/?token=wrong", &[header("Host", &host)], None)
        .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.header("set-cookie"), None);
    let reply = web
        .raw(
            "GET",
            &format!("/?token={}", web.token),
            &[header("Host", &host)],
            None,
        )
        .await;
    assert_eq!(reply.status, 303);
    assert_eq!(reply.header("location"), Some("/"));
    let cookie = reply.header("set-cookie").unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let reply = web
        .raw(
            "GET",
            "/api/sessions",
            &[header("Host", &host), header("Cookie", &pair)],
            None,
        )
        .await;
    assert_eq!(reply.status, 200, "the cookie authorizes");
    // The page needs no token (it holds no data).
    let reply = web.raw("GET", "/", &[header("Host", &host)], None).await;
    assert_eq!(reply.status, 200);
    assert!(reply
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));

    // Bodies: not JSON media type, over the cap, malformed, wrong shape.
    let reply = web
        .raw("POST", "/api/sessions", &ok_headers(), Some(b"{}"))
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (415, "unsupported_media_type".into())
    );
    let mut form = ok_headers();
    form.push(header("Content-Type", "application/x-www-form-urlencoded"));
    assert_eq!(
        web.raw("POST", "/api/sessions", &form, Some(b"a=b"))
            .await
            .status,
        415
    );
    let mut json_headers = ok_headers();
    json_headers.push(header("Content-Type", "application/json; charset=utf-8"));
    // Judged by Content-Length before reading (the body is never sent)...
    let mut declared = json_headers.clone();
    declared.push(header("Content-Length", &(9 << 20).to_string()));
    let reply = web.raw("POST", "/api/sessions", &declared, None).await;
    assert_eq!((reply.status, reply.code()), (413, "body_too_large".into()));
    // ...and by counting a chunked body while reading it.
    let mut chunked = json_headers.clone();
    chunked.push(header("Transfer-Encoding", "chunked"));
    let mut body = Vec::new();
    for _ in 0..9 {
        body.extend_from_slice(format!("{:x}\r\n", 1 << 20).as_bytes());
        body.extend(std::iter::repeat_n(b' ', 1 << 20));
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let reply = web
        .raw_unsized("POST", "/api/sessions", &chunked, &body)
        .await;
    assert_eq!((reply.status, reply.code()), (413, "body_too_large".into()));
    let reply = web
        .raw("POST", "/api/sessions", &json_headers, Some(b"{nope"))
        .await;
    assert_eq!((reply.status, reply.code()), (400, "bad_request".into()));
    let reply = web.post("/api/sessions", json!({"cwd": 5})).await;
    assert_eq!(reply.status, 400);
    let reply = web
        .post("/api/sessions", json!({"cwd": "relative/dir"}))
        .await;
    assert_eq!(reply.status, 400);

    // Unknown sessions, routes and methods.
    for path in [
        "/api/sessions/session-nope",
        "/api/sessions/session-nope/history",
        "/api/sessions/session-nope/events",
        "/api/sessions/..%2Fetc/history",
    ] {
        let reply = web.get(path).await;
        assert_eq!(
            (reply.status, reply.code()),
            (404, "session_not_found".into()),
            "{path}"
        );
    }
    let reply = web
        .post("/api/sessions/session-nope/prompt", json!({"text": "hi"}))
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (404, "session_not_found".into())
    );
    let reply = web
        .post(
            "/api/sessions/session-nope/approvals/apr-1",
            json!({"decision": "deny"}),
        )
        .await;
    assert_eq!(
        (reply.status, reply.code()),
        (404, "approval_not_found".into())
    );
    let reply = web.get("/api/nothing").await;
    assert_eq!((reply.status, reply.code()), (404, "not_found".into()));
    let reply = web.call("DELETE", "/api/sessions", None).await;
    assert_eq!(
        (reply.status, reply.code()),
        (405, "method_not_allowed".into())
    );

    // Configuration is loopback-only: a trusted (non-loopback) Host is refused there.
    let reply = web
        .raw(
            "GET",
            "/api/settings",
            &[header("Host", "box.lan"), header("Authorization", &bearer)],
            None,
        )
        .await;
    assert_eq!(reply.status, 403, "settings through a trusted host");
    let reply = web.get("/api/settings").await;
    assert_eq!(reply.status, 200);
    let settings = String::from_utf8_lossy(&reply.body).into_owned();
    assert!(
        !settings.contains(FAKE_KEY),
        "a secret in the settings view"
    );
    server.shutdown().await;
}

/// The outline of a log from its first prompt, as in the ACP test.
fn from_prompt(
    events: &[std::sync::Arc<dsh_session::SessionEvent>],
    workspace: &str,
) -> Vec<String> {
    let lines = outline(events);
    let first = lines.iter().position(|l| l.starts_with("user: ")).unwrap();
    lines[first..]
        .iter()
        .filter(|l| {
            !l.starts_with("request/")
                && !l.starts_with("chunk ")
                && !l.starts_with("session/title")
        })
        .map(|l| l.replace(workspace, "<ws>"))
        .map(|l| l.split(" cites ").next().unwrap_or_default().to_owned())
        .collect()
}

/// Polls until the session is idle with nothing queued.
async fn wait_idle(web: &Web, id: &str) {
    for _ in 0..1200 {
        let detail = web.get(&format!("/api/sessions/{id}")).await.json();
        let queued = detail["queue"]["followUps"].as_array().unwrap().len()
            + detail["queue"]["steering"].as_array().unwrap().len();
        if detail["session"]["status"] == "idle" && queued == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the session never went idle");
}

fn seqs(frames: &[Sse]) -> Vec<u64> {
    frames
        .iter()
        .filter(|f| f.event == "event")
        .map(|f| f.data["seq"].as_u64().unwrap())
        .collect()
}

/// A session created, driven and watched from two clients, then every other route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_drive_and_watch_one_session() {
    let server = serve(scenario()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut web = Web::start(&sandbox, &["--approval", "untrusted"]);

    let created = web.post("/api/sessions", json!({})).await;
    assert_eq!(created.status, 201, "{:?}", created);
    let session = created.json()["session"].clone();
    let id = session["id"].as_str().unwrap().to_owned();
    assert_eq!(session["status"], "idle");
    assert_eq!(session["cwd"], json!(sandbox.workspace()));

    // Client A watches from the start; a write needs an approval, answered over the API.
    let mut a = web.events(&id, "").await;
    assert_eq!(a.status, 200);
    let first = a.next().await.unwrap();
    assert_eq!(
        (first.event.as_str(), &first.data),
        ("status", &json!({"running": false}))
    );
    let reply = web
        .post(
            &format!("/api/sessions/{id}/prompt"),
            json!({"text": "WRITE the note"}),
        )
        .await;
    assert_eq!(reply.status, 202, "{:?}", reply);
    let upto_ask = a.until(|f| f.event == "approval").await;
    let approval = upto_ask.last().unwrap().data.clone();
    assert_eq!(approval["tool"], "write");
    // Pending approvals show on the session and to a client that connects now.
    let detail = web.get(&format!("/api/sessions/{id}")).await.json();
    assert_eq!(detail["pending"]["approvals"][0]["id"], approval["id"]);
    assert_eq!(detail["session"]["status"], "waiting");
    let mut b = web.events(&id, "").await;
    let b_first = b.until(|f| f.event == "approval").await;
    assert_eq!(b_first.last().unwrap().data, approval);
    let answer = format!(
        "/api/sessions/{id}/approvals/{}",
        approval["id"].as_str().unwrap()
    );
    let reply = web.post(&answer, json!({"decision": "allow-once"})).await;
    assert_eq!(reply.status, 200, "{:?}", reply);
    let again = web.post(&answer, json!({"decision": "deny"})).await;
    assert_eq!(
        (again.status, again.code()),
        (404, "approval_not_found".into())
    );
    let mut a_frames = upto_ask.clone();
    a_frames.extend(a.until(is_turn_end).await);
    assert!(a_frames
        .iter()
        .any(|f| f.event == "approval-resolved" && f.data["decision"] == "allow-once"));
    let mut b_frames = b_first.clone();
    b_frames.extend(b.until(is_turn_end).await);
    // Both clients saw the same events, each once, in order.
    assert_eq!(seqs(&a_frames), seqs(&b_frames));
    let seen = seqs(&a_frames);
    assert_eq!(seen, (0..seen.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("note.txt")).unwrap(),
        "hello\n"
    );

    // Both clients prompt at once: neither input is lost, both see both.
    let prompt_path = format!("/api/sessions/{id}/prompt");
    let (one, two) = tokio::join!(
        web.post(&prompt_path, json!({"text": "FIRST from A"})),
        web.post(
            &prompt_path,
            json!({"text": "SECOND from B", "mode": "steer"})
        ),
    );
    assert_eq!((one.status, two.status), (202, 202));
    let users = |frames: &[Sse]| -> Vec<String> {
        frames
            .iter()
            .filter(|f| f.event == "event" && f.data["type"] == "user/message")
            .map(|f| {
                f.data["data"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    let mut a_more = Vec::new();
    while users(&a_more).len() < 2 {
        a_more.push(a.next().await.expect("stream A ended"));
    }
    let mut sorted = users(&a_more);
    sorted.sort();
    assert_eq!(sorted, vec!["FIRST from A", "SECOND from B"]);
    wait_idle(&web, &id).await;

    // Cancel while an approval is open: the approval is withdrawn, the turn aborted.
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "LONG command"}),
    )
    .await;
    let frames = a.until(|f| f.event == "approval").await;
    assert_eq!(frames.last().unwrap().data["tool"], "bash");
    let reply = web
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(reply.status, 200);
    let frames = a.until(is_turn_end).await;
    assert!(
        frames
            .iter()
            .any(|f| f.event == "approval-resolved" && f.data["decision"] == "withdrawn"),
        "{frames:#?}"
    );
    assert_eq!(
        frames.last().unwrap().data["data"]["reason"]["kind"],
        "aborted"
    );

    // Reconnect with a resume point: the stream starts right after it.
    let mut c = web.events(&id, "?after=4").await;
    let frames = c.until(|f| f.event == "event").await;
    assert_eq!(frames.last().unwrap().data["seq"], 5);
    drop(c);

    // History pages.
    let tail = web
        .get(&format!("/api/sessions/{id}/history?limit=5"))
        .await
        .json();
    let last = tail["lastSeq"].as_u64().unwrap();
    let tail_seqs: Vec<u64> = tail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(tail_seqs, (last - 4..=last).collect::<Vec<_>>());
    assert_eq!(tail["hasMore"], true);
    let before = web
        .get(&format!("/api/sessions/{id}/history?before=3&limit=10"))
        .await
        .json();
    assert_eq!(before["events"].as_array().unwrap().len(), 3);
    assert_eq!(before["hasMore"], false);
    let after = web
        .get(&format!("/api/sessions/{id}/history?after={}", last - 1))
        .await
        .json();
    assert_eq!(after["events"][0]["seq"], last);
    let reply = web
        .get(&format!("/api/sessions/{id}/history?before=x"))
        .await;
    assert_eq!(reply.status, 400);

    // Model and permission switches, compaction, fork, lists, catalog.
    let reply = web
        .post(
            &format!("/api/sessions/{id}/model"),
            json!({"model": "deepseek-v4-pro"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply);
    assert_eq!(reply.json()["model"]["model"], "deepseek-v4-pro");
    let reply = web
        .post(
            &format!("/api/sessions/{id}/model"),
            json!({"model": "m", "provider": "nope"}),
        )
        .await;
    assert_eq!(reply.status, 400);
    let reply = web
        .post(
            &format!("/api/sessions/{id}/permission"),
            json!({"preset": "read-only"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply);
    let reply = web
        .post(
            &format!("/api/sessions/{id}/permission"),
            json!({"preset": "root"}),
        )
        .await;
    assert_eq!(reply.status, 400);
    let detail = web.get(&format!("/api/sessions/{id}")).await.json();
    assert_eq!(detail["permission"], "read-only");
    assert_eq!(detail["model"]["model"], "deepseek-v4-pro");
    let reply = web
        .post(&format!("/api/sessions/{id}/compact"), json!({}))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply);
    assert!(reply.json()["message"].is_string());
    let forked = web
        .post(&format!("/api/sessions/{id}/fork"), json!({}))
        .await;
    assert_eq!(forked.status, 201, "{:?}", forked);
    let child = forked.json()["session"]["id"].as_str().unwrap().to_owned();
    let list = web.get("/api/sessions").await.json();
    let listed: Vec<&Value> = list["sessions"].as_array().unwrap().iter().collect();
    let child_row = listed.iter().find(|s| s["id"] == child.as_str()).unwrap();
    assert_eq!(child_row["parentId"], id.as_str());
    assert!(listed
        .iter()
        .any(|s| s["id"] == id.as_str() && s["title"].is_string()));
    let workspaces = web.get("/api/workspaces").await.json();
    assert_eq!(
        workspaces["workspaces"][0]["cwd"],
        json!(sandbox.workspace())
    );
    let models = web.get("/api/models").await.json();
    assert!(
        models["providers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == "deepseek-official"),
        "{models}"
    );

    // SIGTERM: the server ends every turn and flushes; the log is whole and balanced.
    assert_eq!(web.stop(), Some(0));
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let workspace = sandbox.workspace().display().to_string();
    let lines = from_prompt(&events, &workspace);
    for prompt in [
        "WRITE the note",
        "FIRST from A",
        "SECOND from B",
        "LONG command",
    ] {
        let said = format!("user: {prompt}");
        assert_eq!(
            lines.iter().filter(|l| **l == said).count(),
            1,
            "{prompt}: {lines:#?}"
        );
    }
    assert!(lines.contains(&"approval/asked".to_owned()));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("turn/end") && l.ends_with("aborted user")),
        "{lines:#?}"
    );
    server.shutdown().await;
}

/// The server killed -9 mid-turn: the session verifies, and the next server resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_survives_the_server_killed_mid_turn() {
    let server = serve(
        Script::new()
            .rule(
                rule("SLOW"),
                Reply::text("never arrives").head_delay_ms(60_000),
            )
            .respond(Reply::text("Resumed fine.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut web = Web::start(&sandbox, &[]);
    let id = web.post("/api/sessions", json!({})).await.json()["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut stream = web.events(&id, "").await;
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "SLOW please"}),
    )
    .await;
    stream
        .until(|f| f.event == "event" && f.data["type"] == "step/start")
        .await;
    server.wait_for_requests(1).await;
    // Client gone mid-stream first: the run goes on (the request is still open).
    drop(stream);
    web.kill();

    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert!(
        matches!(verify.status.code(), Some(0) | Some(1)),
        "{}{}",
        text(&verify.stdout),
        text(&verify.stderr)
    );

    let mut web = Web::start(&sandbox, &[]);
    let listed = web.get("/api/sessions").await.json();
    assert_eq!(listed["sessions"][0]["status"], "stored");
    let mut stream = web.events(&id, "").await;
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "AGAIN"}),
    )
    .await;
    let frames = stream
        .until(|f| is_turn_end(f) && f.data["data"]["reason"]["kind"] == "completed")
        .await;
    assert!(frames.iter().any(|f| f.data["type"] == "user/message"));
    assert_eq!(web.stop(), Some(0));
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    server.shutdown().await;
}

/// A stored session's history is read without resuming it; the log read for one page is
/// kept for the next, but a session another process appends to is read afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_sessions_history_follows_appends_from_another_process() {
    let server = serve(
        Script::new()
            .rule(rule("SECOND"), Reply::text("second seen"))
            .respond(Reply::text("first seen")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let out = sandbox.dsh(&["run", "FIRST"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut web = Web::start(&sandbox, &[]);
    let listed = web.get("/api/sessions").await.json();
    let id = listed["sessions"][0]["id"].as_str().unwrap().to_owned();
    let page = |query: &'static str| {
        let (web, id) = (&web, &id);
        async move {
            web.get(&format!("/api/sessions/{id}/history?{query}"))
                .await
                .json()
        }
    };
    let first = page("limit=2000").await;
    let count = first["events"].as_array().unwrap().len();
    assert_eq!(first["lastSeq"], json!(count - 1));
    // Paging reads the kept log: the same events.
    let older = page("before=2&limit=2").await;
    assert_eq!(
        older["events"],
        json!(first["events"].as_array().unwrap()[..2])
    );

    let out = sandbox.dsh(&["run", "--resume", &id, "SECOND"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = page("limit=2000").await;
    let events = after["events"].as_array().unwrap();
    let stored = sandbox.events(&id);
    assert_eq!(events.len(), stored.len());
    assert!(events.len() > count);
    assert!(after["events"].to_string().contains("second seen"));
    // Still only read: the session is not held.
    let listed = web.get("/api/sessions").await.json();
    assert_eq!(listed["sessions"][0]["status"], "stored");
    assert_eq!(web.stop(), Some(0));
    server.shutdown().await;
}

/// Launch refusals: a public bind without --allow-remote, a bad trusted host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_flags_are_checked() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh(&["web", "--host", "0.0.0.0", "--no-open"])
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--allow-remote"),
        "{}",
        text(&out.stderr)
    );
    let out = sandbox
        .dsh(&[
            "web",
            "--port",
            "0",
            "--no-open",
            "--trusted-host",
            "http://x",
        ])
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--trusted-host"),
        "{}",
        text(&out.stderr)
    );
}
