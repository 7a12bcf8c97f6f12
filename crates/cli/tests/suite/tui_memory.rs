//! Memory on the state machine: the `/search` picker (queries, stale answers, Enter resumes,
//! Ctrl-F forks from the hit, busy and same-session refusals) and `@session` completion.

use super::tui_support::*;
use crossterm::event::KeyCode;
use dsh_cli::tui::complete::FileIndex;
use dsh_cli::tui::interactive::{
    AtCompletion, Effect, Input, InteractiveState, SearchHit, SessionListing,
};
use dsh_protocol::SessionId;

fn hit(id: &str, seq: u64) -> SearchHit {
    SearchHit {
        session: SessionId::new(id),
        title: format!("title of {id}"),
        age: "3h ago".into(),
        turn: 2,
        seq,
        snippet: "why is the \u{2}widget\u{3} flaky".into(),
    }
}

fn listing(id: &str, title: &str) -> SessionListing {
    SessionListing {
        id: SessionId::new(id),
        updated: "5m ago".into(),
        title: title.into(),
        turns: 1,
        outcome: None,
    }
}

fn search_effects(effects: Vec<Effect>) -> Vec<String> {
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::SearchSessions(q) => Some(q),
            _ => None,
        })
        .collect()
}

#[test]
fn search_runs_each_query_shows_its_own_hits_and_enter_resumes() {
    let mut state = new_state(100);
    type_text(&mut state, "/search");
    let effects = state.reduce(key(KeyCode::Enter));
    assert!(search_effects(effects).is_empty(), "no words, no search");
    assert!(screen(&state, 12).contains("search this workspace's sessions: type words"));
    // A punctuation-only query is not sent (it would be refused).
    assert!(search_effects(type_text(&mut state, "(")).is_empty());
    assert!(search_effects(state.reduce(key(KeyCode::Backspace))).is_empty());
    assert_eq!(search_effects(type_text(&mut state, "wi")), ["w", "wi"]);
    // The answer to an older query is dropped.
    state.reduce(Input::SearchHits {
        query: "w".into(),
        hits: Ok(vec![hit("session-old", 1)]),
    });
    assert!(!screen(&state, 12).contains("session-old"));
    state.reduce(Input::SearchHits {
        query: "wi".into(),
        hits: Ok(vec![hit("session-a", 7), hit("session-b", 9)]),
    });
    let shown = screen(&state, 12);
    assert!(shown.contains("2 sessions match, best first"), "{shown}");
    assert!(
        shown.contains(
            "›   title of session-a              3h ago  turn 2    why is the widget flaky"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("↑↓ move · Enter resume · Ctrl-F fork from the hit · Esc close"),
        "{shown}"
    );
    let effects = state.reduce(key(KeyCode::Down));
    assert!(actions(effects).is_empty());
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(actions(effects), [Effect::Resume("session-b".into())]);
    assert!(state.picker().is_none());
}

#[test]
fn ctrl_f_forks_from_the_hit_and_a_hit_in_this_session_says_so() {
    let mut state = new_state(100);
    type_text(&mut state, "/search widget");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(search_effects(effects), ["widget"]);
    state.reduce(Input::SearchHits {
        query: "widget".into(),
        hits: Ok(vec![hit(SESSION, 4), hit("session-b", 9)]),
    });
    let effects = state.reduce(key(KeyCode::Enter));
    assert!(actions(effects.clone()).is_empty());
    assert!(
        scrollback(&effects)
            .join("\n")
            .contains("that hit (seq 4) is in this session; Ctrl-F on it forks from there"),
        "{effects:?}"
    );
    type_text(&mut state, "/search widget");
    state.reduce(key(KeyCode::Enter));
    state.reduce(Input::SearchHits {
        query: "widget".into(),
        hits: Ok(vec![hit(SESSION, 4), hit("session-b", 9)]),
    });
    let effects = state.reduce(ctrl('f'));
    assert_eq!(
        actions(effects),
        [Effect::ForkAt {
            session: SESSION.into(),
            seq: 4
        }]
    );
    // An error from the application shows in the picker's title.
    type_text(&mut state, "/search x");
    state.reduce(key(KeyCode::Enter));
    state.reduce(Input::SearchHits {
        query: "x".into(),
        hits: Err("searching sessions needs the memory row".into()),
    });
    assert!(screen(&state, 12).contains("searching sessions needs the memory row"));
    state.reduce(key(KeyCode::Esc));
    assert!(state.picker().is_none());
}

fn completions(state: &InteractiveState) -> Vec<String> {
    state
        .at_completions()
        .iter()
        .map(|c| match c {
            AtCompletion::File(path) => format!("file {path}"),
            AtCompletion::Session(s) => format!("session {}", s.id.as_str()),
        })
        .collect()
}

#[test]
fn at_session_completes_sessions_by_title_newest_first() {
    let mut state = new_state(100);
    let effects = type_text(&mut state, "see @");
    assert_eq!(actions(effects), [Effect::IndexFiles]);
    state.reduce(Input::Files(FileIndex::new(vec![
        "src/main.rs".into(),
        "docs/session-notes.md".into(),
    ])));
    let effects = type_text(&mut state, "s");
    assert_eq!(actions(effects), [Effect::ListSessionRefs], "asked once");
    state.reduce(Input::SessionRefs(vec![
        listing("session-new", "Fix the flaky widget"),
        listing(SESSION, "the session on screen"),
        listing("session-mid", "Parser rewrite"),
        listing("session-old", "Widget docs"),
    ]));
    // Files as before, then the newest sessions (the one on screen left out).
    assert_eq!(
        completions(&state),
        [
            "file docs/session-notes.md",
            "file src/main.rs",
            "session session-new",
            "session session-mid",
            "session session-old",
        ]
    );
    assert!(actions(type_text(&mut state, "ession:WIDG")).is_empty());
    assert_eq!(
        completions(&state),
        ["session session-new", "session session-old"]
    );
    let shown = screen(&state, 10);
    assert!(
        shown.contains("  @session:new…  Fix the flaky widget  · 5m ago"),
        "{shown}"
    );
    state.reduce(key(KeyCode::Down));
    state.reduce(key(KeyCode::Tab));
    assert_eq!(state.input().text(), "see @session:session-old ");
    assert!(completions(&state).is_empty());
}
