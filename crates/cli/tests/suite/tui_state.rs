//! The interactive UI's state machine driven by scripted keys and session events; what a
//! person sees is checked as plain screen text.

use super::tui_support::*;
use crossterm::event::KeyCode;
use dsh_cli::tui::interactive::{Effect, Input, QUIT_HINT_TICKS};
use dsh_protocol::{CallId, SessionId};
use dsh_tools_builtin::approval::{
    ApprovalDecision, ApprovalQuestion, GrantScope, SandboxEscalation, SessionGrant,
};
use dsh_tools_builtin::SandboxMode;
use serde_json::json;

/// The status line of a 60-column UI when idle.
const IDLE: &str = "idle · deepseek-v4-flash (deepseek-official) · 0 in / 0 out…";
/// With one message queued, and while the model writes.
const RUNNING_QUEUED: &str = "running · turn 1 step 1 · 1 queued · deepseek-v4-flash (dee…";
const IDLE_QUEUED: &str = "idle · 1 queued · deepseek-v4-flash (deepseek-official) · 0…";
const WRITING: &str = "running · turn 1 step 1 · writing · deepseek-v4-flash (deep…";
const RULE: &str = "────────────────────────────────────────────────────────────";

#[test]
fn enter_while_idle_starts_a_turn() {
    let mut state = new_state(40);
    assert_eq!(type_text(&mut state, "say hi"), []);
    assert_eq!(
        screen(&state, 3),
        "────────────────────────────────────────\n\
         › say hi\n\
         idle · deepseek-v4-flash (deepseek-offi…"
    );
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(effects, [Effect::Steer("say hi".into())]);
    assert_eq!(state.input().text(), "");

    // The driver's steer starts a turn; the log says so and the screen follows.
    let mut log = Log::default();
    let mut events = vec![log.queued("next-step", 0, "say hi")];
    events.extend(log.turn_start(1));
    events.push(log.claimed("next-step", 1));
    events.push(log.user("say hi"));
    let effects = feed(&mut state, &events);
    assert!(state.is_running());
    // Printed under the "new session" line.
    assert_eq!(scrollback(&effects), ["", "› say hi"]);
    assert_eq!(
        screen(&state, 3),
        "────────────────────────────────────────\n\
         › Enter steers · Tab queues a follow-up\n\
         running · turn 1 step 1 · deepseek-v4-f…"
    );
}

fn running_state() -> (dsh_cli::tui::interactive::InteractiveState, Log) {
    let mut state = new_state(60);
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("refactor the parser"));
    feed(&mut state, &events);
    (state, log)
}

#[test]
fn typing_while_running_steers() {
    let (mut state, mut log) = running_state();
    type_text(&mut state, "use nom");
    assert_eq!(
        state.reduce(key(KeyCode::Enter)),
        [Effect::Steer("use nom".into())]
    );
    // Until the agent reads it at its next step, the steering is shown above the input.
    feed(&mut state, &[log.queued("next-step", 0, "use nom")]);
    assert_eq!(
        screen(&state, 4),
        format!(
            "steering › use nom\n\
         ────────────────────────────────────────────────────────────\n\
         › Enter steers · Tab queues a follow-up · Esc cancels\n\
         {RUNNING_QUEUED}"
        )
    );
    let claim = [log.claimed("next-step", 1), log.user("use nom")];
    let effects = feed(&mut state, &claim);
    assert_eq!(scrollback(&effects), ["", "› use nom"]);
    assert_eq!(state.input().steering(), [] as [String; 0]);
}

#[test]
fn tab_queues_a_follow_up_shown_in_the_queue() {
    let (mut state, mut log) = running_state();
    type_text(&mut state, "then run clippy");
    assert_eq!(
        state.reduce(key(KeyCode::Tab)),
        [Effect::FollowUp("then run clippy".into())]
    );
    feed(&mut state, &[log.queued("next-turn", 0, "then run clippy")]);
    assert_eq!(state.input().queue(), ["then run clippy"]);
    assert_eq!(
        screen(&state, 4),
        format!(
            "queued › then run clippy\n\
         ────────────────────────────────────────────────────────────\n\
         › Enter steers · Tab queues a follow-up · Esc cancels\n\
         {RUNNING_QUEUED}"
        )
    );
}

#[test]
fn esc_cancels_the_turn_and_keeps_the_queue() {
    let (mut state, mut log) = running_state();
    feed(&mut state, &[log.queued("next-turn", 0, "then run clippy")]);
    assert_eq!(state.reduce(key(KeyCode::Esc)), [Effect::Cancel]);
    // The cancel keeps the inbox: the turn ends, the follow-up stays queued.
    let effects = feed(
        &mut state,
        &log.turn_end(1, json!({"kind": "aborted", "reason": {"kind": "user"}})),
    );
    assert_eq!(scrollback(&effects), ["", "■ turn 1 cancelled by you"]);
    assert!(!state.is_running());
    assert_eq!(
        screen(&state, 4),
        format!(
            "queued › then run clippy\n\
         ────────────────────────────────────────────────────────────\n\
         › Enter sends what is queued, or type a task\n\
         {IDLE_QUEUED}"
        )
    );
    // Esc while idle does nothing.
    assert_eq!(state.reduce(key(KeyCode::Esc)), []);
    // The agent leaves the kept queue parked; Enter on an empty line sends it.
    assert_eq!(state.reduce(key(KeyCode::Enter)), [Effect::SendQueued]);
    assert_eq!(state.reduce(key(KeyCode::Tab)), []);
}

fn ask(state: &mut dsh_cli::tui::interactive::InteractiveState, ticket: u64, call: &str) {
    state.reduce(Input::ApprovalAsked {
        ticket,
        request: ApprovalQuestion {
            session_id: SessionId::new(SESSION),
            call_id: CallId::new(call),
            tool: "bash".into(),
            summary: "cargo publish".into(),
            reason: Some("commands need approval under the untrusted policy".into()),
            grant: Some(SessionGrant {
                tool: "bash".into(),
                scope: GrantScope::CommandPrefix("cargo publish".into()),
            }),
            escalation: None,
        },
    });
}

/// An escalation question: one command asking to run outside its sandbox mode.
fn ask_escalation(state: &mut dsh_cli::tui::interactive::InteractiveState, ticket: u64) {
    state.reduce(Input::ApprovalAsked {
        ticket,
        request: ApprovalQuestion {
            session_id: SessionId::new(SESSION),
            call_id: CallId::new("e1"),
            tool: "bash".into(),
            summary: "touch ~/.cache/x".into(),
            reason: Some("escalate sandbox to danger-full-access: it caches at home".into()),
            grant: None,
            escalation: Some(SandboxEscalation {
                from: SandboxMode::WorkspaceWrite,
                mode: SandboxMode::DangerFullAccess,
                justification: "it caches at home".into(),
            }),
        },
    });
}

#[test]
fn an_escalation_prompt_shows_the_mode_and_reason_and_offers_no_session_grant() {
    let (mut state, _log) = running_state();
    ask_escalation(&mut state, 3);
    assert_eq!(
        screen(&state, 10),
        format!(
            "┌ Let this command leave the sandbox? ─────────────────────┐\n\
             │bash  touch ~/.cache/x                                    │\n\
             │run outside the sandbox: danger-full-access instead of    │\n\
             │workspace-write, for this one call                        │\n\
             │why: it caches at home                                    │\n\
             │[Allow once]   Deny                                       │\n\
             └──────────────────────────────────────────────────────────┘\n\
             {RULE}\n\
             › Enter steers · Tab queues a follow-up · Esc cancels\n\
             waiting for your approval · deepseek-v4-flash (deepseek-off…"
        )
    );
    // `s` offers nothing here; the arrows move between the two choices only.
    assert_eq!(state.reduce(key(KeyCode::Char('s'))), []);
    assert_eq!(state.reduce(key(KeyCode::Right)), []);
    assert_eq!(
        state.reduce(key(KeyCode::Enter)),
        [Effect::Answer {
            ticket: 3,
            decision: ApprovalDecision::Deny { feedback: None }
        }]
    );
}

#[test]
fn an_approval_prompt_on_screen() {
    let (mut state, _log) = running_state();
    ask(&mut state, 1, "c1");
    assert_eq!(
        screen(&state, 9),
        format!(
            "┌ Allow this tool call? ───────────────────────────────────┐\n\
             │bash  cargo publish                                       │\n\
             │why: commands need approval under the untrusted policy    │\n\
             │[Allow once]   Allow for this session    Deny             │\n\
             │a / s / d · this session covers bash `cargo publish …`    │\n\
             └──────────────────────────────────────────────────────────┘\n\
             {RULE}\n\
             › Enter steers · Tab queues a follow-up · Esc cancels\n\
             waiting for your approval · deepseek-v4-flash (deepseek-off…"
        )
    );
}

#[test]
fn approval_keys_answer_with_each_choice() {
    let cases = [
        (vec![key(KeyCode::Char('a'))], ApprovalDecision::AllowOnce),
        (
            vec![key(KeyCode::Char('s'))],
            ApprovalDecision::AllowForSession,
        ),
        (
            vec![key(KeyCode::Char('d'))],
            ApprovalDecision::Deny { feedback: None },
        ),
        (vec![key(KeyCode::Enter)], ApprovalDecision::AllowOnce),
        (
            vec![key(KeyCode::Right), key(KeyCode::Enter)],
            ApprovalDecision::AllowForSession,
        ),
        (
            vec![key(KeyCode::Left), key(KeyCode::Enter)],
            ApprovalDecision::Deny { feedback: None },
        ),
        (
            vec![key(KeyCode::Esc)],
            ApprovalDecision::Deny { feedback: None },
        ),
    ];
    for (keys, decision) in cases {
        let (mut state, _log) = running_state();
        ask(&mut state, 7, "c1");
        let effects: Vec<Effect> = keys.into_iter().flat_map(|k| state.reduce(k)).collect();
        assert_eq!(
            effects,
            [Effect::Answer {
                ticket: 7,
                decision
            }]
        );
        assert!(state.approval().is_none());
    }
}

#[test]
fn questions_queue_and_a_cancelled_ask_leaves_the_screen() {
    let (mut state, mut log) = running_state();
    ask(&mut state, 1, "c1");
    ask(&mut state, 2, "c2");
    // While a prompt is open, typed letters answer it instead of editing the input.
    assert_eq!(
        state.reduce(key(KeyCode::Char('a'))),
        [Effect::Answer {
            ticket: 1,
            decision: ApprovalDecision::AllowOnce
        }]
    );
    assert_eq!(
        state.approval().map(|p| p.summary.as_str()),
        Some("cargo publish")
    );
    assert_eq!(state.status_note(), Some("waiting for your approval"));
    // The turn is cancelled while c2 is asked: the log settles the ask as cancelled.
    feed(
        &mut state,
        &[log.add(
            "approval/decided",
            json!({"callId": "c2", "decision": "cancelled"}),
        )],
    );
    assert!(state.approval().is_none());
    assert_eq!(state.input().text(), "");
    // A withdrawn ticket (an ask of a subagent's session) leaves too.
    ask(&mut state, 3, "c3");
    state.reduce(Input::ApprovalWithdrawn { ticket: 3 });
    assert!(state.approval().is_none());
}

#[test]
fn help_prints_the_commands_into_scrollback() {
    let mut state = new_state(80);
    type_text(&mut state, "/help");
    let effects = state.reduce(key(KeyCode::Enter));
    let printed = scrollback(&effects);
    assert_eq!(actions(effects), []);
    assert_eq!(printed[..3], ["", "› /help", ""]);
    assert_eq!(
        printed[3..],
        dsh_cli::tui::interactive::slash::HELP
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()[..]
    );
}

#[test]
fn commands_become_effects() {
    let cases = [
        ("/model", vec![Effect::ShowModel]),
        (
            "/model deepseek-v4-pro",
            vec![Effect::SetModel("deepseek-v4-pro".into())],
        ),
        ("/sessions", vec![Effect::ListSessions]),
        (
            "/resume session-9",
            vec![Effect::Resume("session-9".into())],
        ),
        ("/fork", vec![Effect::Fork]),
        ("/permission", vec![Effect::ShowPermission]),
        (
            "/permission read-only",
            vec![Effect::SetPermission(
                dsh_tools_builtin::PermissionPreset::ReadOnly,
            )],
        ),
        ("/clear", vec![Effect::NewSession]),
        ("/quit", vec![Effect::Quit]),
        (
            "//etc is a dir",
            vec![Effect::Steer("/etc is a dir".into())],
        ),
    ];
    for (line, expected) in cases {
        let mut state = new_state(80);
        type_text(&mut state, line);
        assert_eq!(
            actions(state.reduce(key(KeyCode::Enter))),
            expected,
            "{line}"
        );
    }
}

#[test]
fn session_switches_wait_for_an_idle_agent() {
    let (mut state, _log) = running_state();
    type_text(&mut state, "/fork");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(
        scrollback(&effects),
        [
            "",
            "› /fork",
            "",
            "✗ the agent is busy; press Esc to cancel the turn first"
        ]
    );
    assert_eq!(actions(effects), []);
    type_text(&mut state, "/frobnicate");
    assert_eq!(
        scrollback(&state.reduce(key(KeyCode::Enter))),
        [
            "",
            "✗ unknown command /frobnicate; /help lists the commands"
        ]
    );
}

#[test]
fn ctrl_c_twice_quits() {
    let mut state = new_state(60);
    type_text(&mut state, "half a thought");
    assert_eq!(state.reduce(ctrl('c')), []);
    assert_eq!(state.input().text(), "", "the first press clears the input");
    assert_eq!(
        screen(&state, 3),
        format!(
            "{RULE}\n\
             › type a task; Enter sends\n\
             press Ctrl-C again to quit · deepseek-v4-flash (deepseek-of…"
        )
    );
    assert_eq!(state.status_note(), Some("press Ctrl-C again to quit"));
    assert_eq!(state.reduce(ctrl('c')), [Effect::Quit]);
    assert!(state.is_quitting());
}

#[test]
fn the_quit_hint_expires_and_the_first_press_cancels_a_turn() {
    let (mut state, _log) = running_state();
    assert_eq!(state.reduce(ctrl('c')), [Effect::Cancel]);
    for _ in 0..QUIT_HINT_TICKS {
        state.reduce(Input::Tick);
    }
    assert_eq!(state.status_note(), None);
    assert_eq!(state.reduce(ctrl('c')), [Effect::Cancel]);
    // Any other key disarms it too.
    state.reduce(key(KeyCode::Char('x')));
    assert_eq!(state.reduce(ctrl('c')), [Effect::Cancel]);
}

#[test]
fn streaming_text_is_live_and_a_finished_turn_moves_to_scrollback() {
    let (mut state, mut log) = running_state();
    let streaming = [
        log.chunk(json!({"type": "block-start", "index": 0, "blockType": "reasoning"})),
        log.chunk(json!({"type": "reasoning-delta", "index": 0, "text": "Look at lexer.rs first."})),
        log.chunk(json!({"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Look at lexer.rs first."}})),
        log.chunk(json!({"type": "block-start", "index": 1, "blockType": "text"})),
        log.chunk(json!({"type": "text-delta", "index": 1, "text": "Splitting the"})),
    ];
    let effects = feed(&mut state, &streaming);
    // The prompt was printed when it arrived; the streaming blocks are live.
    assert_eq!(scrollback(&effects), [] as [String; 0]);
    assert_eq!(
        screen(&state, 6),
        format!(
            "▸ thinking… Look at lexer.rs first.\n\
             \n\
             • Splitting the ▍\n\
             {RULE}\n\
             › Enter steers · Tab queues a follow-up · Esc cancels\n\
             {WRITING}"
        )
    );
    // Ctrl-T expands the thinking.
    state.reduce(ctrl('t'));
    assert!(screen(&state, 8).contains("▾ thinking\n  Look at lexer.rs first."));
    state.reduce(ctrl('t'));

    let mut finish = vec![
        log.chunk(json!({"type": "text-delta", "index": 1, "text": " parser now."})),
        log.chunk(json!({"type": "block-end", "index": 1, "block": {"type": "text", "text": "Splitting the parser now."}})),
        log.assistant("Splitting the parser now."),
    ];
    finish.extend(log.turn_end(1, json!({"kind": "completed"})));
    let effects = feed(&mut state, &finish);
    assert_eq!(
        scrollback(&effects),
        [
            "",
            "▸ thinking: Look at lexer.rs first.",
            "",
            "• Splitting the parser now.",
            "",
            "─ turn 1 completed"
        ]
    );
    assert_eq!(
        screen(&state, 3),
        "────────────────────────────────────────────────────────────\n\
         › type a task; Enter sends\n\
         idle · deepseek-v4-flash (deepseek-official) · 10k in / 12 …"
    );
}

#[test]
fn events_of_other_sessions_and_replays_are_ignored() {
    let (mut state, mut log) = running_state();
    let event = log.user("from elsewhere");
    let effects = state.reduce(Input::Session {
        session: SessionId::new("session-other"),
        event: event.clone(),
    });
    assert_eq!(effects, []);
    // The same event twice (a subscription racing the opening snapshot) counts once.
    assert_eq!(
        scrollback(&feed(&mut state, std::slice::from_ref(&event))),
        ["", "› from elsewhere"]
    );
    assert_eq!(feed(&mut state, &[event]), []);
}

#[test]
fn up_and_down_recall_earlier_lines() {
    let mut state = new_state(60);
    for line in ["first task", "/help", "second task"] {
        type_text(&mut state, line);
        state.reduce(key(KeyCode::Enter));
    }
    let mut seen = Vec::new();
    for code in [
        KeyCode::Up,
        KeyCode::Up,
        KeyCode::Up,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Down,
        KeyCode::Down,
    ] {
        state.reduce(key(code));
        seen.push(state.input().text().to_owned());
    }
    assert_eq!(
        seen,
        [
            "second task",
            "/help",
            "first task",
            "first task",
            "/help",
            "second task",
            ""
        ]
    );
    // A recalled line is sent like a typed one.
    state.reduce(key(KeyCode::Up));
    assert_eq!(
        state.reduce(key(KeyCode::Enter)),
        [Effect::Steer("second task".into())]
    );
}

#[test]
fn the_status_line_counts_live_background_jobs() {
    let mut state = new_state(60);
    assert_eq!(state.reduce(Input::Jobs(1)), []);
    assert_eq!(
        screen(&state, 3).lines().last(),
        Some("idle · 1 job · deepseek-v4-flash (deepseek-official) · 0 in…")
    );
    state.reduce(Input::Jobs(2));
    assert_eq!(
        screen(&state, 3).lines().last(),
        Some("idle · 2 jobs · deepseek-v4-flash (deepseek-official) · 0 i…")
    );
    state.reduce(Input::Jobs(0));
    assert_eq!(screen(&state, 3).lines().last(), Some(IDLE));
}

#[test]
fn the_status_line_counts_working_subagents_before_jobs() {
    let mut state = new_state(90);
    assert_eq!(state.reduce(Input::Agents(2)), []);
    state.reduce(Input::Jobs(1));
    assert_eq!(
        screen(&state, 3).lines().last(),
        Some("idle · 2 agents · 1 job · deepseek-v4-flash (deepseek-official) · 0 in / 0 out · ctx 0.0%…")
    );
    state.reduce(Input::Agents(1));
    state.reduce(Input::Jobs(0));
    assert_eq!(
        screen(&state, 3).lines().last(),
        Some("idle · 1 agent · deepseek-v4-flash (deepseek-official) · 0 in / 0 out · ctx 0.0% (0/1M)")
    );
    state.reduce(Input::Agents(0));
    assert_eq!(state.agents(), 0);
}
