//! The web page in a real headless Chromium, against the real `dsh web` and the mock model:
//! the token exchange, a session started and driven from the page (a streamed tool-using
//! turn, an approval answered, a steer while running, a cancel), the same conversation after
//! a reload and in a second tab, a stored session's diff, and the phone-width layout; the
//! sidebar following other tabs and processes live, and the goal and title set from the page.

use super::run_support::{serve, Sandbox};
use super::web_page_support::WebServer;
use super::webdriver::{chromium_or_skip, Browser};
use dsh_testkit::mock_llm::{Fault, Reply, RuleMatch, Script};
use serde_json::{json, Value};

/// Each prompt's keyword picks the model's reply, and so does each tool result a follow-up
/// request ends with.
fn scenario() -> Script {
    let rules = [
        (
            "EDIT-NOTE",
            Reply::text("Reading the note first.")
                .chunks(3)
                .with_tool_call("read", json!({"file_path": "notes.txt"})),
        ),
        (
            "2: status: draft",
            Reply::text("Editing the note.")
                .with_reasoning("The status line says draft; I will change it.")
                .chunks(3)
                .with_tool_call(
                    "edit",
                    json!({"file_path": "notes.txt", "old_string": "status: draft",
                        "new_string": "status: reviewed"}),
                ),
        ),
        (
            "has been updated successfully",
            Reply::text(
                "Done: **notes** now say `reviewed`.\n\n<script>window.pwned = 1</script>\n\n\
                 [a link](javascript:window.pwned=2)",
            ),
        ),
        (
            "SLOW",
            Reply::text("Working on it slowly, one word at a time, so you can steer.")
                .chunks(40)
                .delay_ms(150),
        ),
        ("STEER-NOW", Reply::text("Steered.")),
        (
            "HANG",
            Reply::text("never").with_fault(Fault::StallBeforeResponse),
        ),
        ("FROM-TAB-ONE", Reply::text("Seen in both tabs.")),
    ];
    rules
        .into_iter()
        .fold(Script::new(), |script, (keyword, reply)| {
            script.rule(RuleMatch::any().last_message_contains(keyword), reply)
        })
}

/// A sandbox whose approval policy asks before every file change, with a note to edit.
fn sandbox(server: &dsh_testkit::mock_llm::MockServer) -> Sandbox {
    let sandbox = Sandbox::new().with_server(server);
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        "[approval]\npolicy = \"untrusted\"\n",
    )
    .unwrap();
    std::fs::write(
        sandbox.cwd.path().join("notes.txt"),
        "TODO: write more tests\nstatus: draft\nowner: nobody\n",
    )
    .unwrap();
    sandbox
}

const ITEMS_TEXT: &str = "return document.querySelector('#items').innerText";
const SHOWS: &str = "return document.querySelector('#items').innerText.includes(arguments[0])";
/// What the conversation shows, block by block (class and full text, hidden parts included),
/// to compare two renderings of one log.
const DIGEST: &str = "return [...document.querySelectorAll('#items > *')]
    .map(e => e.className.replace(/\\b(live|collapsed)\\b/g, '').trim() + ': ' + e.textContent)";

async fn send(browser: &Browser, text: &str) {
    browser.type_into("#input", text).await;
    browser.click("#send").await;
}

async fn wait_shows(browser: &Browser, text: &str) {
    browser
        .wait_for(&format!("the page to show {text:?}"), SHOWS, json!([text]))
        .await;
}

async fn wait_idle(browser: &Browser) {
    browser
        .wait_for(
            "the session to be idle",
            "return document.querySelector('#cancel').hidden",
            json!([]),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_drives_a_session_from_first_prompt_to_reload_and_a_second_tab() {
    let Some(chromium) = chromium_or_skip("the web page test") else {
        return;
    };
    let model = serve(scenario()).await;
    let sandbox = sandbox(&model);
    let server = WebServer::start(&sandbox);
    let browser = Browser::start(&chromium, 1280, 900).await;

    // The launch URL's token becomes a cookie and leaves the address bar.
    browser.goto(&server.url).await;
    browser.find("#input").await;
    let address = browser.url().await;
    assert!(!address.contains("token"), "{address}");

    // A first prompt starts a session; its tool-using turn streams in and asks for approval.
    send(&browser, "EDIT-NOTE please").await;
    browser
        .find(".approval button[data-decision='allow-once']")
        .await;
    let shown = browser.eval(ITEMS_TEXT, json!([])).await;
    let shown = shown.as_str().unwrap();
    assert!(shown.contains("EDIT-NOTE please"), "{shown}");
    assert!(shown.contains("Editing the note."), "{shown}");
    assert!(shown.contains("Approval needed: edit"), "{shown}");
    // The sidebar shows the session waiting for its approval (the host event stream).
    browser
        .wait_for(
            "the sidebar to show the session waiting",
            "return document.querySelector('#sessions .dot.waiting') !== null",
            json!([]),
        )
        .await;
    browser
        .click(".approval button[data-decision='allow-once']")
        .await;
    wait_shows(&browser, "Done: notes now say reviewed.").await;
    wait_idle(&browser).await;
    // The edit's card shows its diff; the answer's markdown is rendered, its HTML inert.
    let page = browser
        .eval(
            "return {
                added: [...document.querySelectorAll('.diff .a')].map(e => e.textContent),
                removed: [...document.querySelectorAll('.diff .d')].map(e => e.textContent),
                strong: [...document.querySelectorAll('.md strong')].map(e => e.textContent),
                scripts: document.querySelectorAll('#items script').length,
                links: [...document.querySelectorAll('.md a')].map(e => e.getAttribute('href')),
                pwned: window.pwned === undefined ? null : window.pwned,
                verdict: document.querySelector('.approval .verdict').textContent,
                states: [...document.querySelectorAll('.card[data-call] .state')].map(e => e.textContent),
            }",
            json!([]),
        )
        .await;
    assert_eq!(
        page,
        json!({"added": ["status: reviewed"], "removed": ["status: draft"], "strong": ["notes"],
            "scripts": 0, "links": [], "pwned": null, "verdict": "Allowed once",
            "states": ["done", "done"]})
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.cwd.path().join("notes.txt")).unwrap(),
        "TODO: write more tests\nstatus: reviewed\nowner: nobody\n"
    );
    let id = browser
        .eval("return location.hash.replace('#/s/', '')", json!([]))
        .await
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("session-"), "{id}");

    // Steer while running: the steer reaches the running turn, which answers it.
    send(&browser, "SLOW please").await;
    browser
        .wait_for(
            "the steer button",
            "return !document.querySelector('#steer').hidden",
            json!([]),
        )
        .await;
    browser.type_into("#input", "STEER-NOW").await;
    browser.click("#steer").await;
    wait_shows(&browser, "Steered.").await;
    wait_idle(&browser).await;

    // Cancel a turn whose model never answers.
    send(&browser, "HANG now").await;
    browser
        .wait_for(
            "the cancel button",
            "return !document.querySelector('#cancel').hidden",
            json!([]),
        )
        .await;
    browser.click("#cancel").await;
    wait_shows(&browser, "Turn cancelled").await;
    wait_idle(&browser).await;

    // A reload shows the same conversation, rebuilt from history.
    let before = browser.eval(DIGEST, json!([])).await;
    browser.refresh().await;
    wait_shows(&browser, "Turn cancelled").await;
    let after = browser.eval(DIGEST, json!([])).await;
    assert_eq!(after, before);

    // A second tab on the same session sees the first tab's prompt and its answer.
    let first = browser.new_tab().await;
    browser.goto(&format!("{}/#/s/{id}", server.base)).await;
    wait_shows(&browser, "Turn cancelled").await;
    let second = browser.switch_back(&first).await;
    send(&browser, "FROM-TAB-ONE hello").await;
    browser.switch_to(&second).await;
    wait_shows(&browser, "FROM-TAB-ONE hello").await;
    wait_shows(&browser, "Seen in both tabs.").await;
    browser.quit().await;
    drop(server);

    // Everything went through the session log, as the TUI would have written it.
    let events = sandbox.events(&id);
    dsh_testkit::checks::assert_log_ok(&events);
    let story: Vec<Value> = events
        .iter()
        .filter_map(|e| {
            let data = e.data.to_value();
            match e.type_name() {
                "user/message" if data["source"]["kind"] == "user" => {
                    Some(json!(["user", data["content"][0]["text"]]))
                }
                "approval/decided" => Some(json!(["decided", data["decision"]])),
                "turn/end" => Some(json!(["turn/end", data["reason"]["kind"]])),
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        story,
        [
            json!(["user", "EDIT-NOTE please"]),
            json!(["decided", "allow-once"]),
            json!(["turn/end", "completed"]),
            json!(["user", "SLOW please"]),
            json!(["user", "STEER-NOW"]),
            json!(["turn/end", "completed"]),
            json!(["user", "HANG now"]),
            json!(["turn/end", "aborted"]),
            json!(["user", "FROM-TAB-ONE hello"]),
            json!(["turn/end", "completed"]),
        ]
    );
}

/// The sidebar lists session `id` titled `title`.
async fn wait_listed(browser: &Browser, id: &str, title: &str) {
    browser
        .wait_for(
            &format!("the sidebar to list {id} as {title:?}"),
            "const row = document.querySelector(`#sessions .sess[data-id='${arguments[0]}'] .t`);
             return row !== null && row.textContent === arguments[1]",
            json!([id, title]),
        )
        .await;
}

/// The sidebar follows the host event stream: a session a `dsh run` in a terminal starts
/// and one another tab starts both appear, and the running dot follows the other tab's turn,
/// without a reload. Then the page sets and clears the session's goal and renames it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidebar_is_live_and_the_goal_and_title_are_set_from_the_page() {
    let Some(chromium) = chromium_or_skip("the live sidebar page test") else {
        return;
    };
    let model = serve(
        Script::new()
            .rule(
                RuleMatch::any().last_message_contains("Generate the session title"),
                Reply::text("Model title"),
            )
            .rule(
                RuleMatch::any().last_message_contains("TAB-TWO"),
                Reply::text("Writing the file.")
                    .with_tool_call("write", json!({"file_path": "tab2.txt", "content": "hi\n"})),
            )
            .rule(
                RuleMatch::any().last_message_contains("has been created successfully"),
                Reply::text("Second tab here."),
            )
            .rule(RuleMatch::any(), Reply::text("Working on it.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&model);
    // One goal round: the goal stops at its cap instead of running on against the mock.
    // File changes wait for an approval, so a turn can be held in `waiting`.
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        "[approval]\npolicy = \"untrusted\"\n\n\
         [[plugins]]\nid = \"goal\"\nconfig = { defaultMaxGoalRounds = 1 }\n",
    )
    .unwrap();
    let server = WebServer::start(&sandbox);
    let browser = Browser::start(&chromium, 1280, 900).await;
    browser.goto(&server.url).await;
    browser.find("#sessions .note").await;
    // A marker a reload would lose.
    browser.eval("window.notReloaded = true", json!([])).await;

    // A session started by another process appears by itself.
    let run = sandbox.dsh(&["run", "TERMINAL-RUN hello"]).await;
    assert_eq!(run.status.code(), Some(0));
    wait_listed(
        &browser,
        &super::run_support::session_of(&run),
        "Model title",
    )
    .await;

    // One started in a second tab appears, waiting for its approval, then idle once the
    // second tab answers it.
    let first = browser.new_tab().await;
    browser.goto(&format!("{}/", server.base)).await;
    browser.find("#sessions .sess").await;
    send(&browser, "TAB-TWO please").await;
    browser
        .find(".approval button[data-decision='allow-once']")
        .await;
    let id = browser
        .eval("return location.hash.replace('#/s/', '')", json!([]))
        .await
        .as_str()
        .unwrap()
        .to_owned();
    let second = browser.switch_back(&first).await;
    let dot = format!("#sessions .sess[data-id='{id}'] .dot");
    browser
        .wait_for(
            "the other tab's session to show waiting",
            &format!("return document.querySelector(\"{dot}.waiting\") !== null"),
            json!([]),
        )
        .await;
    browser.switch_to(&second).await;
    browser
        .click(".approval button[data-decision='allow-once']")
        .await;
    wait_shows(&browser, "Second tab here.").await;
    browser.switch_to(&first).await;
    browser
        .wait_for(
            "the other tab's session to go idle",
            &format!("return document.querySelector(\"{dot}.idle\") !== null"),
            json!([]),
        )
        .await;
    wait_listed(&browser, &id, "Model title").await;
    assert_eq!(
        browser
            .eval("return window.notReloaded === true", json!([]))
            .await,
        json!(true)
    );

    // Open it here; set a goal from the page: the goal line shows it; then clear it.
    browser
        .click(&format!("#sessions .sess[data-id='{id}']"))
        .await;
    wait_shows(&browser, "Second tab here.").await;
    browser.click("#goal-set").await;
    browser.type_into("#goal-input", "Ship the docs").await;
    browser.click("#goal-form button[type='submit']").await;
    browser
        .wait_for(
            "the goal line",
            "return !document.querySelector('#goal-row').hidden
                && document.querySelector('#goal').textContent.startsWith('Goal: Ship the docs')",
            json!([]),
        )
        .await;
    // Its one round runs (the line counts it); clear the goal from the goal line.
    wait_shows(&browser, "goal round 1").await;
    browser
        .wait_for(
            "the goal line to count the round",
            "return document.querySelector('#goal').textContent.includes('round 1/1')",
            json!([]),
        )
        .await;
    wait_idle(&browser).await;
    browser.click("#goal-clear").await;
    browser
        .wait_for(
            "the goal line to go",
            "return document.querySelector('#goal-row').hidden
                && !document.querySelector('#goal-set').hidden",
            json!([]),
        )
        .await;

    // Rename from the page: the title and the sidebar follow.
    browser.click("#rename").await;
    browser
        .eval(
            "document.querySelector('#rename-input').value = ''",
            json!([]),
        )
        .await;
    browser.type_into("#rename-input", "Docs sprint").await;
    browser.click("#rename-form button[type='submit']").await;
    browser
        .wait_for(
            "the new title",
            "return document.querySelector('#title').textContent === 'Docs sprint'",
            json!([]),
        )
        .await;
    wait_listed(&browser, &id, "Docs sprint").await;
    // The other tab's sidebar follows the rename too.
    browser.switch_to(&second).await;
    wait_listed(&browser, &id, "Docs sprint").await;
    browser.quit().await;
    drop(server);

    // The goal and the rename went through the session log, as the TUI writes them (the
    // model's title and the goal driver's block at the cap, which come on their own time,
    // left aside).
    let events = sandbox.events(&id);
    dsh_testkit::checks::assert_log_ok(&events);
    let story: Vec<Value> = events
        .iter()
        .filter_map(|e| {
            let data = e.data.to_value();
            match e.type_name() {
                "goal/change" if data["operation"] != "block" => {
                    Some(json!(["goal", data["operation"]]))
                }
                "session/title" if data["source"]["kind"] != "provider" => {
                    Some(json!(["title", data["title"], data["source"]["kind"]]))
                }
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        story,
        [
            json!(["title", "TAB-TWO please", "fallback"]),
            json!(["goal", "create"]),
            json!(["goal", "clear"]),
            json!(["title", "Docs sprint", "user"]),
        ]
    );
}

/// A stored session (the original's read-edit fixture) opens from the sidebar at phone
/// width: nothing overflows sideways, the sidebar slides in and out, the edit shows its diff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_session_reads_well_at_phone_width() {
    let Some(chromium) = chromium_or_skip("the phone-width page test") else {
        return;
    };
    let sandbox = Sandbox::new().with_fixture("read-edit", "jsonl");
    let server = WebServer::start(&sandbox);
    let browser = Browser::start(&chromium, 375, 812).await;
    browser.goto(&server.url).await;
    browser.click("#menu").await;
    browser.click("#sessions .sess").await;
    wait_shows(&browser, "Done: notes.txt now says status: reviewed.").await;
    let layout = browser
        .eval(
            "return {
                width: window.innerWidth,
                overflow: document.documentElement.scrollWidth > window.innerWidth,
                sidebarOpen: document.querySelector('#app').classList.contains('side-open'),
                title: document.querySelector('#title').textContent,
                added: [...document.querySelectorAll('.diff .a')].map(e => e.textContent),
                code: [...document.querySelectorAll('.md code')].map(e => e.textContent),
                reasoning: document.querySelectorAll('details.reasoning').length,
            }",
            json!([]),
        )
        .await;
    assert_eq!(
        layout,
        json!({"width": 375, "overflow": false, "sidebarOpen": false, "title": "Mark notes as reviewed",
            "added": ["status: reviewed"], "code": ["status: reviewed"], "reasoning": 2})
    );
    browser.quit().await;
}

/// `scripts/screenshots`: the main views as PNGs into `$DSH_SCREENSHOTS_DIR` (docs/screenshots
/// in the repository). Ignored in the ordinary run: it writes files and proves nothing the
/// tests above do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/screenshots"]
async fn screenshots() {
    let dir = std::path::PathBuf::from(
        std::env::var("DSH_SCREENSHOTS_DIR").expect("DSH_SCREENSHOTS_DIR names the output folder"),
    );
    let chromium = chromium_or_skip("screenshots").expect("chromium is needed for screenshots");
    let model = serve(scenario()).await;
    // Stored sessions of another workspace fill the sidebar.
    let sandbox = sandbox(&model)
        .with_fixture("read-edit", "jsonl")
        .with_fixture("bash", "jsonl")
        .with_fixture("multi-turn", "jsonl");
    let server = WebServer::start(&sandbox);
    let browser = Browser::start(&chromium, 1280, 800).await;
    browser.goto(&server.url).await;
    send(
        &browser,
        "EDIT-NOTE: in notes.txt, mark the status as reviewed",
    )
    .await;
    browser
        .find(".approval button[data-decision='allow-once']")
        .await;
    browser.save_screenshot(&dir.join("approval.png")).await;
    browser
        .click(".approval button[data-decision='allow-once']")
        .await;
    wait_shows(&browser, "Done: notes now say reviewed.").await;
    wait_idle(&browser).await;
    browser.save_screenshot(&dir.join("conversation.png")).await;
    browser.quit().await;

    let phone = Browser::start(&chromium, 390, 844).await;
    phone.goto(&server.url).await;
    phone.click("#menu").await;
    phone.find("#sessions .sess").await;
    phone.save_screenshot(&dir.join("phone-sessions.png")).await;
    phone.click("#sessions .sess").await;
    wait_shows(&phone, "Done: notes now say reviewed.").await;
    phone.save_screenshot(&dir.join("phone.png")).await;
    phone.quit().await;
}

/// A stored session of `turns` tool-using turns, 17 events each (a streamed step with a bash
/// call and its result, then a closing answer), written straight into the sandbox's store.
fn long_session(sandbox: &Sandbox, turns: u64) -> String {
    use dsh_protocol::SessionId;
    use dsh_session::{SessionEvent, SessionHeader};
    use dsh_store::SessionPersistence as _;
    use std::sync::Arc;
    let id = SessionId::new("session-0000000a-long-4000-8000-000000010000");
    let mut header = SessionHeader::new(id.clone(), 1_796_000_000_000);
    header.cwd = Some(sandbox.workspace().display().to_string());
    let store = sandbox.store();
    store.create(&header).unwrap();
    let mut events: Vec<Arc<SessionEvent>> = Vec::new();
    let mut add = |kind: &str, data: Value, surface: bool| {
        let mut raw = json!({"type": kind, "seq": events.len(), "time": 1_796_000_000_000u64 + events.len() as u64, "data": data});
        if surface {
            raw["surfaceOp"] = json!("append");
        }
        events.push(Arc::new(SessionEvent::from_value(&raw).unwrap()));
    };
    let model = json!({"kind": "model", "provider": "deepseek", "model": "deepseek-v4-flash"});
    for turn in 1..=turns {
        let call = format!("call_{turn}");
        let command = json!({"command": format!("echo turn {turn}")}).to_string();
        add("turn/start", json!({"turn": turn}), false);
        add(
            "user/message",
            json!({"id": format!("u{turn}"), "role": "user", "source": {"kind": "user"},
            "content": [{"type": "text", "text": format!("prompt number {turn}")}]}),
            true,
        );
        add("step/start", json!({"turn": turn, "step": 1}), false);
        let chunk = |c: Value| json!({"turn": turn, "step": 1, "chunk": c});
        add(
            "assistant/chunk",
            chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})),
            false,
        );
        for part in ["Running ", "the ", "command."] {
            add(
                "assistant/chunk",
                chunk(json!({"type": "text-delta", "index": 0, "text": part})),
                false,
            );
        }
        add(
            "assistant/chunk",
            chunk(json!({"type": "block-end", "index": 0,
            "block": {"type": "text", "text": "Running the command."}})),
            false,
        );
        add(
            "assistant/chunk",
            chunk(json!({"type": "finish", "reason": {"kind": "tool-calls"}})),
            false,
        );
        add(
            "assistant/message",
            json!({"turn": turn, "step": 1, "message": {"id": format!("a{turn}"),
            "role": "assistant", "source": model, "content": [
                {"type": "text", "text": "Running the command."},
                {"type": "tool-call", "id": call, "name": "bash", "arguments": command}]}}),
            true,
        );
        add(
            "tool/call",
            json!({"turn": turn, "step": 1, "callId": call, "name": "bash", "arguments": command}),
            false,
        );
        add(
            "tool/result",
            json!({"turn": turn, "step": 1, "meta": {"exitCode": 0}, "message": {
            "id": format!("r{turn}"), "role": "user", "source": {"kind": "tool", "callId": call},
            "content": [{"type": "tool-result", "toolCallId": call, "isError": false,
                "content": [{"type": "text", "text": format!("turn {turn}\n")}]}]}}),
            true,
        );
        add("step/end", json!({"turn": turn, "step": 1}), false);
        add("step/start", json!({"turn": turn, "step": 2}), false);
        add(
            "assistant/message",
            json!({"turn": turn, "step": 2, "message": {"id": format!("b{turn}"),
            "role": "assistant", "source": model,
            "content": [{"type": "text", "text": format!("Turn **{turn}** is done.")}]}}),
            true,
        );
        add("step/end", json!({"turn": turn, "step": 2}), false);
        add(
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "completed"}}),
            false,
        );
    }
    store.append(&id, &events).unwrap();
    id.as_str().to_owned()
}

/// A 10,000-event session opens on its tail, and scrolling to the top pages back in older
/// events above what is shown, keeping the reader's place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_thousand_event_session_renders_its_tail_and_pages_back_on_scroll() {
    let Some(chromium) = chromium_or_skip("the long-session page test") else {
        return;
    };
    let sandbox = Sandbox::new();
    let id = long_session(&sandbox, 590);
    assert!(sandbox.events(&id).len() >= 10_000);
    let server = WebServer::start(&sandbox);
    let browser = Browser::start(&chromium, 1280, 800).await;
    browser.goto(&format!("{}#/s/{id}", server.url)).await;
    wait_shows(&browser, "Turn 590 is done.").await;
    let first_user =
        "return [...document.querySelectorAll('#items .user')].map(e => e.textContent)";
    let shown = browser.eval(first_user, json!([])).await;
    let shown: Vec<&str> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // Only the tail is rendered: the last page, not 590 turns.
    assert!(shown.len() < 100, "{} prompts rendered", shown.len());
    assert_eq!(shown.last(), Some(&"prompt number 590"));
    let oldest = shown[0].to_owned();
    let (_, number) = oldest.rsplit_once(' ').unwrap();
    let number: u64 = number.parse().unwrap();
    // Scrolling to the top loads the page before it, above, and the old top stays in view.
    browser
        .eval("document.querySelector('#log').scrollTop = 0", json!([]))
        .await;
    let older = format!("prompt number {}", number - 1);
    browser
        .wait_for(
            "an older page",
            "return [...document.querySelectorAll('#items .user')].some(e => e.textContent === arguments[0])",
            json!([older]),
        )
        .await;
    let place = browser
        .eval(
            "const el = [...document.querySelectorAll('#items .user')].find(e => e.textContent === arguments[0]);
             const r = el.getBoundingClientRect();
             return r.bottom > 0 && r.top < window.innerHeight && document.querySelector('#log').scrollTop > 0",
            json!([oldest]),
        )
        .await;
    assert_eq!(place, json!(true), "the reader's place moved");
    browser.quit().await;
}
