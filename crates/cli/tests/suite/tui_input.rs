//! The input box's features on the state machine: the multi-line editor and its keys,
//! pastes, history recall and Ctrl-R, `@path` and `/command` completion, `!command`,
//! Esc-Esc and the pickers. Key sequences in, buffer, cursor, screen and effects out.

use super::tui_support::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_cli::tui::complete::FileIndex;
use dsh_cli::tui::editor::MAX_INPUT_BYTES;
use dsh_cli::tui::interactive::pickers::session_picker;
use dsh_cli::tui::interactive::{
    Effect, Input, InteractiveState, OpenedHow, OpenedSession, SessionListing,
};
use dsh_protocol::SessionId;

fn with(code: KeyCode, modifiers: KeyModifiers) -> Input {
    Input::Key(KeyEvent::new(code, modifiers))
}

fn alt(ch: char) -> Input {
    with(KeyCode::Char(ch), KeyModifiers::ALT)
}

/// The text with `|` at the cursor.
fn buffer(state: &InteractiveState) -> String {
    let mut text = state.input().text().to_owned();
    text.insert(state.input().cursor(), '|');
    text
}

fn press(state: &mut InteractiveState, inputs: impl IntoIterator<Item = Input>) -> Vec<Effect> {
    inputs.into_iter().flat_map(|i| state.reduce(i)).collect()
}

#[test]
fn ctrl_j_shift_enter_and_a_trailing_backslash_make_one_multi_line_prompt() {
    let mut state = new_state(40);
    type_text(&mut state, "first");
    press(&mut state, [ctrl('j')]);
    type_text(&mut state, "second");
    press(&mut state, [with(KeyCode::Enter, KeyModifiers::SHIFT)]);
    type_text(&mut state, "third\\");
    press(&mut state, [key(KeyCode::Enter)]);
    type_text(&mut state, "fourth");
    assert_eq!(buffer(&state), "first\nsecond\nthird\nfourth|");
    assert_eq!(
        screen(&state, 6),
        "────────────────────────────────────────\n\
         › first\n  \
         second\n  \
         third\n  \
         fourth\n\
         idle · deepseek-v4-flash (deepseek-offi…"
    );
    assert_eq!(
        actions(state.reduce(key(KeyCode::Enter))),
        [Effect::Steer("first\nsecond\nthird\nfourth".into())]
    );
}

#[test]
fn cursor_and_word_keys_edit_where_the_cursor_is() {
    let mut state = new_state(60);
    type_text(&mut state, "cargo test -p dsh_cli");
    press(&mut state, [alt('b'), alt('b')]);
    assert_eq!(buffer(&state), "cargo test -|p dsh_cli");
    press(&mut state, [alt('f')]);
    assert_eq!(buffer(&state), "cargo test -p| dsh_cli");
    // Ctrl-W deletes back to whitespace, as a shell does.
    press(&mut state, [ctrl('w')]);
    assert_eq!(buffer(&state), "cargo test | dsh_cli");
    press(&mut state, [ctrl('a')]);
    assert_eq!(buffer(&state), "|cargo test  dsh_cli");
    press(&mut state, [alt('d')]);
    assert_eq!(buffer(&state), "| test  dsh_cli");
    press(
        &mut state,
        [ctrl('e'), key(KeyCode::Left), key(KeyCode::Left)],
    );
    assert_eq!(buffer(&state), " test  dsh_c|li");
    press(&mut state, [ctrl('k')]);
    assert_eq!(buffer(&state), " test  dsh_c|");
    press(&mut state, [key(KeyCode::Home), key(KeyCode::Delete)]);
    assert_eq!(buffer(&state), "|test  dsh_c");
    press(&mut state, [key(KeyCode::End), ctrl('u')]);
    assert_eq!(buffer(&state), "|");
    // Up and Down move between lines before they reach the history.
    type_text(&mut state, "ab");
    press(&mut state, [ctrl('j')]);
    type_text(&mut state, "cdef");
    press(&mut state, [key(KeyCode::Up)]);
    assert_eq!(buffer(&state), "ab|\ncdef");
    press(&mut state, [key(KeyCode::Down)]);
    assert_eq!(buffer(&state), "ab\ncd|ef");
}

#[test]
fn a_long_prompt_grows_the_box_to_a_limit_then_scrolls_with_the_cursor() {
    let mut state = new_state(30);
    let lines: Vec<String> = (1..=12).map(|i| format!("line {i}")).collect();
    state.reduce(Input::Paste(lines.join("\n")));
    assert_eq!(
        screen(&state, 10),
        "──────────────────────────────\n\
         ↑ line 5\n  \
         line 6\n  \
         line 7\n  \
         line 8\n  \
         line 9\n  \
         line 10\n  \
         line 11\n  \
         line 12\n\
         idle · deepseek-v4-flash (dee…"
    );
    press(&mut state, (0..11).map(|_| key(KeyCode::Up)));
    let top = screen(&state, 10);
    assert!(
        top.starts_with("──────────────────────────────\n› line 1\n"),
        "{top}"
    );
    assert!(top.contains("↓ line 8\n"), "{top}");
}

#[test]
fn a_paste_of_many_lines_is_one_message_and_a_huge_one_is_cut_with_a_note() {
    let mut state = new_state(60);
    let effects = state.reduce(Input::Paste("one\r\ntwo\rthree\n".into()));
    assert_eq!(effects, []);
    assert_eq!(buffer(&state), "one\ntwo\nthree\n|");
    assert_eq!(
        actions(state.reduce(key(KeyCode::Enter))),
        [Effect::Steer("one\ntwo\nthree\n".into())]
    );

    let huge = "0123456789abcdef\n".repeat(10 * 1024 * 1024 / 17);
    let effects = state.reduce(Input::Paste(huge));
    assert_eq!(state.input().text().len(), MAX_INPUT_BYTES);
    let note = scrollback(&effects).join(" ");
    assert!(
        note.contains("the paste was cut to the input's limit of 256 KiB"),
        "{note}"
    );
    // The screen still draws: the box shows its last rows.
    let shown = screen(&state, 12);
    assert!(shown.contains("↑ 0123456789abcdef"), "{shown}");
}

#[test]
fn up_and_down_recall_the_history_and_ctrl_r_searches_it() {
    let mut state = new_state(60);
    state.reduce(Input::History(vec![
        "explain the parser".into(),
        "run the tests\nthen fix them".into(),
    ]));
    type_text(&mut state, "draft");
    press(&mut state, [key(KeyCode::Up)]);
    assert_eq!(buffer(&state), "run the tests\nthen fix them|");
    // On the last line of a recalled entry Up moves up a line first, then recalls.
    press(&mut state, [key(KeyCode::Up)]);
    assert_eq!(buffer(&state), "run the tests|\nthen fix them");
    press(&mut state, [key(KeyCode::Up)]);
    assert_eq!(buffer(&state), "explain the parser|");
    press(&mut state, [key(KeyCode::Down), key(KeyCode::Down)]);
    assert_eq!(
        buffer(&state),
        "draft|",
        "Down past the newest brings the draft back"
    );

    press(&mut state, [ctrl('r')]);
    type_text(&mut state, "pa");
    // A paste goes into the query.
    press(&mut state, [Input::Paste("rs\nignored".into())]);
    assert_eq!(buffer(&state), "explain the parser|");
    assert!(
        screen(&state, 4).contains("history search: pars"),
        "{}",
        screen(&state, 4)
    );
    press(&mut state, [key(KeyCode::Enter)]);
    assert!(!screen(&state, 4).contains("history search"));
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(
        effects
            .iter()
            .filter(|e| !matches!(e, Effect::Scrollback(_)))
            .collect::<Vec<_>>(),
        [
            &Effect::Remember("explain the parser".into()),
            &Effect::Steer("explain the parser".into())
        ]
    );
    // Esc cancels a search and gives back what was typed.
    type_text(&mut state, "keep me");
    press(&mut state, [ctrl('r')]);
    type_text(&mut state, "tests");
    assert_eq!(state.input().text(), "run the tests\nthen fix them");
    press(&mut state, [key(KeyCode::Esc)]);
    assert_eq!(buffer(&state), "keep me|");
}

#[test]
fn at_completes_workspace_files_and_slash_still_completes_commands() {
    let mut state = new_state(60);
    type_text(&mut state, "/he");
    press(&mut state, [key(KeyCode::Tab)]);
    assert_eq!(buffer(&state), "/help |");
    press(&mut state, [ctrl('u')]);

    let effects = type_text(&mut state, "look at @");
    assert_eq!(effects, [Effect::IndexFiles]);
    state.reduce(Input::Files(FileIndex::new(vec![
        "src/main.rs".into(),
        "src/lib.rs".into(),
        "docs/main-notes.md".into(),
    ])));
    assert_eq!(
        type_text(&mut state, "main"),
        [],
        "the index is asked for once"
    );
    assert_eq!(
        state.file_completions(),
        ["src/main.rs", "docs/main-notes.md"]
    );
    assert!(screen(&state, 6).contains("  @docs/main-notes.md"));
    press(&mut state, [key(KeyCode::Down), key(KeyCode::Enter)]);
    assert_eq!(buffer(&state), "look at docs/main-notes.md |");
    assert!(state.file_completions().is_empty());
    type_text(&mut state, "and @lib");
    press(&mut state, [key(KeyCode::Tab)]);
    assert_eq!(
        buffer(&state),
        "look at docs/main-notes.md and src/lib.rs |"
    );
    // An address is not a completion.
    type_text(&mut state, "me@src");
    assert!(state.file_completions().is_empty());
}

#[test]
fn bang_runs_a_shell_command_whose_output_is_printed_not_sent() {
    let mut state = new_state(60);
    type_text(&mut state, "!ls -a");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(actions(effects.clone()), [Effect::Shell("ls -a".into())]);
    assert_eq!(
        scrollback(&effects),
        [] as [String; 0],
        "printed when it finishes"
    );
    assert!(state.shell_running());
    assert_eq!(actions(state.reduce(key(KeyCode::Esc))), [Effect::Cancel]);
    let effects = state.reduce(Input::ShellDone {
        command: "ls -a".into(),
        output: Ok("Cargo.toml\nsrc\n\u{1b}]0;title\u{7}[exit code: 2]".into()),
    });
    assert_eq!(
        scrollback(&effects),
        ["", "! ls -a", "Cargo.toml", "src", "[exit code: 2]"]
    );
    assert!(!state.shell_running());
    let effects = state.reduce(Input::ShellDone {
        command: "nope".into(),
        output: Err("no sandbox".into()),
    });
    assert_eq!(scrollback(&effects), ["", "! nope", "✗ no sandbox"]);
}

#[test]
fn esc_twice_on_an_empty_idle_input_rewinds_to_edit_the_last_prompt() {
    let mut state = new_state(60);
    // Nothing sent yet: Esc does nothing.
    assert_eq!(state.reduce(key(KeyCode::Esc)), []);
    assert_eq!(state.status_note(), None);
    let mut log = Log::default();
    let mut events = log.turn_start(1);
    events.push(log.user("write a README"));
    events.extend(log.turn_end(1, serde_json::json!({"kind": "completed"})));
    feed(&mut state, &events);
    assert_eq!(actions(state.reduce(key(KeyCode::Esc))), []);
    assert_eq!(
        state.status_note(),
        Some("press Esc again to edit your previous message (in a fork)")
    );
    // Another key disarms it.
    type_text(&mut state, "x");
    press(&mut state, [key(KeyCode::Backspace)]);
    assert_eq!(actions(state.reduce(key(KeyCode::Esc))), []);
    assert_eq!(actions(state.reduce(key(KeyCode::Esc))), [Effect::Rewind]);

    let rewound = OpenedSession {
        id: SessionId::new("session-2"),
        ..opened(
            Vec::new(),
            OpenedHow::Rewound {
                parent: SessionId::new("session-1"),
            },
        )
    };
    let effects = press(
        &mut state,
        [Input::Opened(rewound), Input::Edit("write a README".into())],
    );
    assert_eq!(
        scrollback(&effects),
        [
            "",
            "forked session session-1 from before its last prompt into",
            "session-2; edit the prompt and send it"
        ]
    );
    assert_eq!(buffer(&state), "write a README|");
}

#[test]
fn the_session_picker_narrows_and_chooses() {
    let mut state = new_state(80);
    let listing = |id: &str, title: &str| SessionListing {
        id: SessionId::new(id),
        updated: "1h ago".into(),
        title: title.into(),
        turns: 2,
        outcome: None,
    };
    let picker = session_picker(
        &[
            listing("session-b", "add a cache"),
            listing("session-a", "fix the cache"),
        ],
        None,
    );
    assert_eq!(state.reduce(Input::Pick(picker)), []);
    type_text(&mut state, "fix");
    assert_eq!(
        actions(state.reduce(key(KeyCode::Enter))),
        [Effect::Resume("session-a".into())]
    );
    assert!(state.picker().is_none());
    // Esc closes without choosing; Ctrl-C too (and arms the quit).
    let picker = session_picker(&[listing("session-b", "add a cache")], None);
    state.reduce(Input::Pick(picker.clone()));
    assert_eq!(state.reduce(key(KeyCode::Esc)), []);
    assert!(state.picker().is_none());
    state.reduce(Input::Pick(picker));
    assert_eq!(state.reduce(ctrl('c')), []);
    assert!(state.picker().is_none());
    assert_eq!(state.status_note(), Some("press Ctrl-C again to quit"));
}
