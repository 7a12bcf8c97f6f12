//! The interactive UI's runner on ratatui's test terminal with an inline viewport: what lands
//! in scrollback, what the live area shows, and what the driver is asked to do.

use super::tui_support::*;
use crossterm::event::KeyCode;
use dsh_cli::tui::interactive::{
    AgentListing, Answers, Input, OpenedHow, OpenedSession, Runner, SessionListing, TuiAnswerer,
};
use dsh_protocol::{CallId, SessionId};
use dsh_tools_builtin::approval::{
    ApprovalAnswerer, ApprovalDecision, ApprovalQuestion, GrantScope, SessionGrant,
};
use ratatui::backend::TestBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::mpsc;

fn runner(driver: Arc<FakeDriver>, answers: Answers) -> Runner<TestBackend> {
    sized_runner(driver, answers, 50, 14)
}

fn sized_runner(
    driver: Arc<FakeDriver>,
    answers: Answers,
    width: u16,
    height: u16,
) -> Runner<TestBackend> {
    let terminal = Terminal::with_options(
        TestBackend::new(width, height),
        TerminalOptions {
            viewport: Viewport::Inline(5),
        },
    )
    .unwrap();
    Runner::new(terminal, driver, answers).unwrap()
}

/// The whole test terminal: scrollback that scrolled off, then the screen.
fn terminal_text(runner: &mut Runner<TestBackend>) -> String {
    runner.draw().unwrap();
    let backend = runner.terminal().backend();
    let mut text = buffer_text(backend.scrollback());
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&buffer_text(backend.buffer()));
    text.trim_end().to_owned()
}

async fn keys(runner: &mut Runner<TestBackend>, text: &str) {
    for ch in text.chars() {
        runner.handle(key(KeyCode::Char(ch))).await.unwrap();
    }
    runner.handle(key(KeyCode::Enter)).await.unwrap();
}

#[tokio::test]
async fn finished_turns_go_to_scrollback_and_the_live_area_stays_below() {
    let driver = Arc::new(FakeDriver::default());
    let mut runner = runner(driver.clone(), Answers::new());
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    keys(&mut runner, "hello").await;
    assert_eq!(driver.calls(), ["steer hello"]);

    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("hello"));
    events.push(log.chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})));
    events.push(log.chunk(json!({"type": "text-delta", "index": 0, "text": "Hi! What"})));
    for event in &events {
        runner.handle(session_input(event)).await.unwrap();
    }
    assert_eq!(
        terminal_text(&mut runner),
        "new session session-1\n\
         \n\
         › hello\n\
         \n\
         • Hi! What ▍\n\
         ──────────────────────────────────────────────────\n\
         › Enter steers · Tab queues a follow-up · Esc canc\n\
         running · turn 1 step 1 · writing · deepseek-v4-f…"
    );

    let mut events = vec![
        log.chunk(json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hi! What shall we build?"}})),
        log.assistant("Hi! What shall we build?"),
    ];
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    for event in &events {
        runner.handle(session_input(event)).await.unwrap();
    }
    assert_eq!(
        terminal_text(&mut runner),
        "new session session-1\n\
         \n\
         › hello\n\
         \n\
         • Hi! What shall we build?\n\
         \n\
         ─ turn 1 completed\n\
         ──────────────────────────────────────────────────\n\
         › type a task; Enter sends\n\
         idle · deepseek-v4-flash (deepseek-official) · 10…"
    );
}

#[tokio::test]
async fn commands_go_through_the_driver() {
    let mut log = Log::default();
    log.turn_start(1);
    log.user("earlier question");
    log.assistant("earlier answer");
    log.turn_end(1, json!({"kind": "completed"}));
    let resumed = OpenedSession {
        id: SessionId::new("session-7"),
        ..opened(log.events.clone(), OpenedHow::Resumed)
    };
    let forked = OpenedSession {
        id: SessionId::new("session-8"),
        ..opened(
            log.events.clone(),
            OpenedHow::Forked {
                parent: SessionId::new("session-7"),
            },
        )
    };
    let driver = Arc::new(FakeDriver {
        sessions: vec![SessionListing {
            id: SessionId::new("session-7"),
            updated: "2025-06-01 10:00".into(),
            title: "earlier question".into(),
            turns: 1,
            outcome: Some("completed".into()),
        }],
        opens: std::sync::Mutex::new(vec![resumed, forked]),
        ..FakeDriver::default()
    });
    let mut runner = Runner::new(
        Terminal::with_options(
            TestBackend::new(60, 40),
            TerminalOptions {
                viewport: Viewport::Inline(3),
            },
        )
        .unwrap(),
        driver.clone(),
        Answers::new(),
    )
    .unwrap();
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    // `/sessions` opens the picker (see `pickers_choose_through_the_driver`); Esc closes it.
    keys(&mut runner, "/sessions").await;
    runner.handle(key(KeyCode::Esc)).await.unwrap();
    for line in [
        "/resume session-7",
        "/fork",
        "/model deepseek-v4-pro",
        "/permission danger-full-access",
        "/clear",
    ] {
        keys(&mut runner, line).await;
    }
    assert_eq!(
        driver.calls(),
        [
            "list-sessions",
            "resume session-7",
            "fork",
            "set-model deepseek-v4-pro",
            "set-permission danger-full-access",
            "new-session"
        ]
    );
    assert_eq!(
        terminal_text(&mut runner),
        "new session session-1\n\
         \n\
         › /sessions\n\
         \n\
         › /resume session-7\n\
         \n\
         resumed session session-7\n\
         \n\
         › earlier question\n\
         \n\
         • earlier answer\n\
         \n\
         ─ turn 1 completed\n\
         \n\
         › /fork\n\
         \n\
         forked session session-7 into session-8\n\
         \n\
         › /model deepseek-v4-pro\n\
         \n\
         model: deepseek-v4-pro from the next step\n\
         \n\
         › /permission danger-full-access\n\
         \n\
         permission: danger-full-access (sandbox danger-full-access,\n\
         approval never)\n\
         \n\
         › /clear\n\
         \n\
         ✗ nothing scripted\n\
         ────────────────────────────────────────────────────────────\n\
         › type a task; Enter sends\n\
         idle · deepseek-v4-flash (deepseek-official) · 10k in / 12 …"
    );
}

fn request(call: &str) -> ApprovalQuestion {
    ApprovalQuestion {
        session_id: SessionId::new(SESSION),
        call_id: CallId::new(call),
        tool: "write".into(),
        summary: "src/lib.rs (+3 -1)".into(),
        reason: None,
        grant: Some(SessionGrant {
            tool: "write".into(),
            scope: GrantScope::Path("src/lib.rs".into()),
        }),
        escalation: None,
    }
}

#[tokio::test]
async fn the_answerer_puts_questions_on_screen_and_returns_the_choice() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let answers = Answers::new();
    let answerer = TuiAnswerer::new(tx, answers.clone());
    let mut runner = runner(Arc::new(FakeDriver::default()), answers);
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();

    let asked = tokio::spawn(async move { answerer.answer(request("c1")).await });
    let question = rx.recv().await.unwrap();
    runner.handle(question).await.unwrap();
    assert_eq!(
        runner.state().approval().map(|p| p.tool.as_str()),
        Some("write")
    );
    runner.handle(key(KeyCode::Char('s'))).await.unwrap();
    assert_eq!(asked.await.unwrap(), ApprovalDecision::AllowForSession);
    assert!(runner.state().approval().is_none());
}

#[tokio::test]
async fn a_question_whose_asker_gave_up_leaves_at_the_next_tick() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let answers = Answers::new();
    let answerer = TuiAnswerer::new(tx, answers.clone());
    let mut runner = runner(Arc::new(FakeDriver::default()), answers);
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    let asked = tokio::spawn(async move { answerer.answer(request("c1")).await });
    runner.handle(rx.recv().await.unwrap()).await.unwrap();
    assert!(runner.state().approval().is_some());
    // The turn was cancelled: the asking future is dropped.
    asked.abort();
    let _ = asked.await;
    runner.handle(Input::Tick).await.unwrap();
    assert!(runner.state().approval().is_none());
}

#[tokio::test]
async fn a_closed_ui_denies() {
    let (tx, rx) = mpsc::unbounded_channel();
    drop(rx);
    let answerer = TuiAnswerer::new(tx, Answers::new());
    assert_eq!(
        answerer.answer(request("c1")).await,
        ApprovalDecision::Deny {
            feedback: Some("the terminal UI closed before anyone answered".into())
        }
    );
}

#[tokio::test]
async fn the_loop_runs_until_ctrl_c_twice_then_shuts_down() {
    let driver = Arc::new(FakeDriver::default());
    let mut runner = runner(driver.clone(), Answers::new());
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    for ch in "hi".chars() {
        tx.send(key(KeyCode::Char(ch))).unwrap();
    }
    tx.send(key(KeyCode::Enter)).unwrap();
    tx.send(ctrl('c')).unwrap();
    tx.send(ctrl('c')).unwrap();
    // Never read: the loop stops at the second Ctrl-C.
    tx.send(key(KeyCode::Char('x'))).unwrap();
    runner.run(&mut rx).await.unwrap();
    assert_eq!(driver.calls(), ["steer hi", "shutdown"]);
    assert!(runner.state().is_quitting());
}

/// A runner on a 80x30 terminal whose live area has room for a picker.
fn picker_runner(driver: Arc<FakeDriver>) -> Runner<TestBackend> {
    let terminal = Terminal::with_options(
        TestBackend::new(80, 30),
        TerminalOptions {
            viewport: Viewport::Inline(16),
        },
    )
    .unwrap();
    Runner::new(terminal, driver, Answers::new()).unwrap()
}

/// The live area's lines from the picker's title to its hint.
fn picker_lines(runner: &mut Runner<TestBackend>, title: &str) -> Vec<String> {
    let text = terminal_text(runner);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with(title))
        .unwrap_or_else(|| panic!("no picker {title:?} in:\n{text}"));
    let to = lines[from..]
        .iter()
        .position(|l| l.contains("Enter choose"))
        .unwrap_or_else(|| panic!("no hint in:\n{text}"));
    lines[from..=from + to]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

#[tokio::test]
async fn pickers_choose_through_the_driver() {
    let resumed = OpenedSession {
        id: SessionId::new("session-7"),
        ..opened(Vec::new(), OpenedHow::Resumed)
    };
    let driver = Arc::new(FakeDriver {
        sessions: vec![
            SessionListing {
                id: SessionId::new("session-9"),
                updated: "5m ago".into(),
                title: "fix the parser".into(),
                turns: 3,
                outcome: Some("interrupted".into()),
            },
            SessionListing {
                id: SessionId::new("session-7"),
                updated: "2d ago".into(),
                title: "earlier question".into(),
                turns: 1,
                outcome: Some("completed".into()),
            },
        ],
        opens: std::sync::Mutex::new(vec![resumed]),
        ..FakeDriver::default()
    });
    let mut runner = picker_runner(driver.clone());
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();

    keys(&mut runner, "/model").await;
    assert_eq!(
        picker_lines(&mut runner, "choose a model"),
        [
            "choose a model (deepseek-official; applies from the next step)",
            "search:",
            "    model                             context window",
            "› ● deepseek-v4-flash                 1M",
            "    deepseek-v4-pro                   unknown",
            "↑↓ move · Enter choose · Esc close · type to search",
        ]
    );
    runner.handle(key(KeyCode::Down)).await.unwrap();
    runner.handle(key(KeyCode::Enter)).await.unwrap();

    keys(&mut runner, "/permission").await;
    assert_eq!(
        picker_lines(&mut runner, "choose a permission"),
        [
            "choose a permission preset",
            "search:",
            "    read-only          read-only sandbox, ask before risky calls",
            "› ● workspace-write    writes confined to the workspace, ask before risky calls",
            "    danger-full-access no confinement, never ask",
            "↑↓ move · Enter choose · Esc close · type to search",
        ]
    );
    runner.handle(key(KeyCode::Up)).await.unwrap();
    runner.handle(key(KeyCode::Enter)).await.unwrap();

    // `/resume` without an id is the session picker; typing narrows it.
    keys(&mut runner, "/resume").await;
    for ch in "earlier".chars() {
        runner.handle(key(KeyCode::Char(ch))).await.unwrap();
    }
    assert_eq!(
        picker_lines(&mut runner, "resume a session"),
        [
            "resume a session",
            "search: earlier",
            "    title                              updated      turns  last turn    id",
            "›   earlier question                    2d ago     1 turn  completed    7",
            "↑↓ move · Enter choose · Esc close · type to search",
        ]
    );
    runner.handle(key(KeyCode::Enter)).await.unwrap();
    assert_eq!(
        driver.calls(),
        [
            "set-model deepseek-v4-pro",
            "set-permission read-only",
            "list-sessions",
            "resume session-7"
        ]
    );
    assert!(terminal_text(&mut runner).contains("resumed session session-7"));
}

#[tokio::test]
async fn slash_agents_lists_the_sessions_subagents_indented_by_depth() {
    let agent = |id: &str, depth, label: &str, status| AgentListing {
        id: SessionId::new(id),
        depth,
        label: label.into(),
        status,
    };
    let driver = Arc::new(FakeDriver {
        agents: vec![
            agent("session-2", 1, "scan the\nrepo", "working"),
            agent("session-4", 2, "read docs", "done"),
            agent("session-3", 1, "fix \u{1b}[31mtests", "interrupted"),
        ],
        ..FakeDriver::default()
    });
    let mut runner = Runner::new(
        Terminal::with_options(
            TestBackend::new(60, 20),
            TerminalOptions {
                viewport: Viewport::Inline(3),
            },
        )
        .unwrap(),
        driver.clone(),
        Answers::new(),
    )
    .unwrap();
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    keys(&mut runner, "/agents").await;
    assert_eq!(driver.calls(), ["list-agents"]);
    // Children first-level, a grandchild under its parent; labels on one line, made safe.
    assert_eq!(
        terminal_text(&mut runner),
        "new session session-1\n\
         \n\
         › /agents\n\
         \n\
         subagents (/agents ID shows one's transcript):\n  \
         session-2    working      scan the ⏎ repo\n    \
         session-4  done         read docs\n  \
         session-3    interrupted  fix tests\n\
         ────────────────────────────────────────────────────────────\n\
         › type a task; Enter sends\n\
         idle · deepseek-v4-flash (deepseek-official) · 0 in / 0 out…"
    );
}

#[tokio::test]
async fn the_live_area_grows_with_a_streaming_answer_and_gives_the_rows_back() {
    let driver = Arc::new(FakeDriver::default());
    let mut runner = sized_runner(driver, Answers::new(), 50, 30);
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    runner.draw().unwrap();
    let idle_height = runner.terminal_mut().get_frame().area().height;

    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("count"));
    events.push(log.chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})));
    let counted: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    events.push(log.chunk(json!({"type": "text-delta", "index": 0, "text": counted})));
    for event in &events {
        runner.handle(session_input(event)).await.unwrap();
    }
    runner.draw().unwrap();
    let streaming = runner.terminal_mut().get_frame().area().height;
    assert!(
        streaming > idle_height + 10,
        "{streaming} rows streaming, {idle_height} idle"
    );
    let screen = terminal_text(&mut runner);
    assert!(
        screen.contains("line 1\n") && screen.contains("line 12"),
        "{screen}"
    );

    let mut events = vec![log.assistant(&counted)];
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    for event in &events {
        runner.handle(session_input(event)).await.unwrap();
    }
    runner.draw().unwrap();
    assert_eq!(runner.terminal_mut().get_frame().area().height, idle_height);
    let screen = terminal_text(&mut runner);
    assert_eq!(screen.matches("line 12").count(), 1, "{screen}");
}

#[tokio::test]
async fn a_streamed_markdown_answer_commits_finished_blocks_and_renders_like_the_whole() {
    let driver = Arc::new(FakeDriver::default());
    let mut runner = sized_runner(driver, Answers::new(), 50, 30);
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    let answer = "## Plan\n\nFirst **do** this.\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.";
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("plan"));
    events.push(log.chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})));
    for event in &events {
        runner.handle(session_input(event)).await.unwrap();
    }
    let live_text = |runner: &Runner<TestBackend>| -> String {
        let lines: Vec<String> = runner
            .state()
            .live_lines()
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        lines.join("\n")
    };
    // Chunk by chunk, the live area holds only the open block.
    let mut max_live = 0;
    for piece in answer.split_inclusive(' ') {
        let event = log.chunk(json!({"type": "text-delta", "index": 0, "text": piece}));
        runner.handle(session_input(&event)).await.unwrap();
        max_live = max_live.max(runner.state().live_lines().len());
    }
    assert!(max_live <= 6, "the live area held {max_live} lines");
    assert_eq!(live_text(&runner), "\n  Done. ▍");
    let mut events = vec![
        log.chunk(
            json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": answer}}),
        ),
        log.assistant(answer),
    ];
    events.extend(log.turn_end(1, json!({"kind": "completed"})));
    for event in &events {
        runner.handle(session_input(event)).await.unwrap();
    }
    let screen = terminal_text(&mut runner);
    let expected = "› plan\n\
         \n\
         • Plan\n\
         \n  \
           First do this.\n\
         \n    \
             fn main() {}\n\
         \n  \
           a │ b\n  \
           ──┼──\n  \
           1 │ 2\n\
         \n  \
           Done.\n\
         \n\
         ─ turn 1 completed";
    assert!(screen.contains(expected), "{screen}");
}

#[tokio::test]
async fn the_status_line_shows_the_permission_preset() {
    let driver = Arc::new(FakeDriver::default());
    let mut runner = sized_runner(driver, Answers::new(), 120, 10);
    runner
        .handle(Input::Opened(opened(Vec::new(), OpenedHow::New)))
        .await
        .unwrap();
    runner.refresh_context().await.unwrap();
    let screen = terminal_text(&mut runner);
    let status = screen.lines().last().unwrap();
    assert!(
        status.starts_with("idle · deepseek-v4-flash (deepseek-official)")
            && status.ends_with(" · workspace-write"),
        "{status}"
    );
}
