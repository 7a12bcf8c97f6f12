//! Index → search over hand-made and the original's sessions; incremental updates; rebuilds;
//! workspace limits; hostile queries; a corrupt index.

use super::support::*;
use dsh_memory::{EventFilter, MemoryIndex, SessionFilter};
use dsh_store::SessionPersistence;

fn ws() -> SessionFilter {
    SessionFilter {
        cwd: Some(WORKSPACE.into()),
        ..SessionFilter::default()
    }
}

fn hits(
    memory: &dsh_memory::Memory,
    query: &str,
    filter: &SessionFilter,
) -> Vec<(String, u64, String)> {
    memory
        .index()
        .search(query, filter, &EventFilter::default(), 20)
        .unwrap()
        .into_iter()
        .map(|h| (h.session.id, h.event.seq, h.event.snippet))
        .collect()
}

#[test]
fn search_finds_prompts_answers_and_tool_calls_with_marked_snippets() {
    let f = Fixture::with_sessions();
    let memory = f.memory();
    let report = memory.sync().unwrap();
    assert_eq!(report.sessions, 3);
    assert_eq!(
        report.events_indexed,
        3 * 2 + 3 + 3,
        "prompts, tool calls, answers"
    );

    // A tool call's arguments are searchable; the snippet marks the match.
    let found = hits(&memory, "flaky_widget", &ws());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "session-alpha");
    assert!(
        found[0].2.contains("\u{2}flaky_widget\u{3}"),
        "{:?}",
        found[0].2
    );

    // One hit per session, best first; the other workspace is not searched by default.
    let widget = hits(&memory, "widget", &ws());
    let sessions: Vec<&str> = widget.iter().map(|h| h.0.as_str()).collect();
    assert_eq!(sessions.len(), 2);
    assert!(sessions.contains(&"session-alpha") && sessions.contains(&"session-beta"));
    assert!(!sessions.contains(&"session-gamma"));

    // `--all` searches every workspace.
    let all = hits(&memory, "widget", &SessionFilter::default());
    assert_eq!(all.len(), 3);

    // Turn numbers and titles come along.
    let hit = &memory
        .index()
        .search("FakeClock", &ws(), &EventFilter::default(), 5)
        .unwrap()[0];
    assert_eq!(
        (hit.event.turn, hit.event.event_type.as_str()),
        (2, "assistant/message")
    );
    assert_eq!(
        hit.session.title.as_deref(),
        Some("Why does the flaky test fail on CI?")
    );
}

#[test]
fn operators_and_odd_characters_are_searched_as_text() {
    let f = Fixture::with_sessions();
    let memory = f.memory();
    memory.sync().unwrap();
    for query in [
        "widget AND",
        "\"widget",
        "widget*",
        "NEAR(widget",
        "widget:clock",
        "(widget OR",
        "-widget",
        "wid'get",
        "🙂 widget",
    ] {
        assert!(
            memory
                .index()
                .search(query, &SessionFilter::default(), &EventFilter::default(), 5)
                .is_ok(),
            "{query}"
        );
    }
    let err = memory
        .index()
        .search(
            "  ()*\"  ",
            &SessionFilter::default(),
            &EventFilter::default(),
            5,
        )
        .unwrap_err();
    assert_eq!(err.code(), "MEMORY_INVALID_INPUT");
    // `AND` is a word here, not an operator: nothing says "AND", so nothing matches.
    assert!(hits(&memory, "widget AND", &ws()).is_empty());
}

#[test]
fn a_new_turn_is_indexed_incrementally_and_a_rebuild_gives_the_same_hits() {
    let f = Fixture::with_sessions();
    let memory = f.memory();
    memory.sync().unwrap();
    assert!(hits(&memory, "kubernetes", &ws()).is_empty());

    append_turn(
        f.store.as_ref(),
        "session-beta",
        "Deploy it to kubernetes",
        "Deployed.",
    );
    let report = memory.sync().unwrap();
    assert_eq!(
        report.events_indexed, 3,
        "only the new turn is read: {report:?}"
    );
    let found = hits(&memory, "kubernetes", &ws());
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].0.as_str(), found[0].1), ("session-beta", 5));

    let before: Vec<_> = ["widget", "kubernetes", "changelog", "clock"]
        .iter()
        .map(|q| hits(&memory, q, &SessionFilter::default()))
        .collect();
    // From scratch: a new file.
    drop(memory);
    std::fs::remove_file(f.index_path()).unwrap();
    let rebuilt = f.memory();
    rebuilt.sync().unwrap();
    let after: Vec<_> = ["widget", "kubernetes", "changelog", "clock"]
        .iter()
        .map(|q| hits(&rebuilt, q, &SessionFilter::default()))
        .collect();
    assert_eq!(before, after);
    // And `clear` + sync (what `dsh sessions reindex` does).
    rebuilt.index().clear().unwrap();
    rebuilt.sync().unwrap();
    let again: Vec<_> = ["widget", "kubernetes", "changelog", "clock"]
        .iter()
        .map(|q| hits(&rebuilt, q, &SessionFilter::default()))
        .collect();
    assert_eq!(before, again);
}

#[test]
fn sessions_gone_from_the_store_leave_the_index() {
    let f = Fixture::with_sessions();
    let memory = f.memory();
    memory.sync().unwrap();
    let dir = f
        .root()
        .join("--home-user-elsewhere--")
        .join("session-gamma");
    assert!(dir.is_dir(), "{}", dir.display());
    std::fs::remove_dir_all(dir).unwrap();
    let report = memory.sync().unwrap();
    assert_eq!(report.sessions_dropped, 1);
    assert!(hits(&memory, "launch", &SessionFilter::default()).is_empty());
}

#[test]
fn a_corrupt_index_is_rebuilt_with_a_notice() {
    let f = Fixture::with_sessions();
    {
        let memory = f.memory();
        memory.sync().unwrap();
        memory.index().checkpoint().unwrap();
    }
    // Damage the file: keep its size, overwrite the middle.
    let path = f.index_path();
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    for b in &mut bytes[100..len] {
        *b = 0x5a;
    }
    std::fs::write(&path, bytes).unwrap();
    let (index, notice) = MemoryIndex::open(&path).unwrap();
    let notice = notice.expect("a notice");
    assert!(notice.contains("rebuilt from the session logs"), "{notice}");
    let memory = dsh_memory::Memory::new(std::sync::Arc::new(index), f.store.clone(), None);
    memory.sync().unwrap();
    assert_eq!(hits(&memory, "flaky_widget", &ws()).len(), 1);
}

#[test]
fn the_originals_sessions_are_indexed_and_searchable() {
    let f = Fixture::new();
    assert!(copy_original_fixtures(&f.root()) >= 12);
    let memory = f.memory();
    let report = memory.sync().unwrap();
    assert_eq!(report.sessions, 12, "{report:?}");
    assert!(report.unreadable.is_empty(), "{report:?}");
    let stored = f.store.list().unwrap();
    assert!(stored.iter().all(|s| s.cwd.as_deref() == Some(WORKSPACE)));

    // A prompt (both runs of the read-edit scenario), a tool result's text.
    let edits = hits(&memory, "reviewed", &ws());
    assert!(edits.len() >= 2, "{edits:?}");
    let notes = memory
        .index()
        .search("owner nobody", &ws(), &EventFilter::default(), 20)
        .unwrap();
    assert!(
        notes.iter().any(|h| h.event.event_type == "tool/result"),
        "{notes:?}"
    );
    // The original's `session/title` events name the sessions.
    let titled = memory.index().sessions(Some(WORKSPACE), 20).unwrap();
    assert!(
        titled
            .iter()
            .any(|s| s.title.as_deref() == Some("Mark notes as reviewed")),
        "{titled:?}"
    );
    // Injected runtime context is not indexed: every session would match it.
    assert!(hits(&memory, "supersedes", &ws()).is_empty());
}

#[test]
fn a_lazy_index_opens_on_first_use_and_a_search_before_any_event_is_empty() {
    let f = Fixture::with_sessions();
    let path = f.index_path();
    let index = std::sync::Arc::new(MemoryIndex::lazy(&path));
    assert!(!path.exists() && !index.is_open());
    let memory = dsh_memory::Memory::new(index.clone(), f.store.clone(), None);
    // Searching an index nobody has filled: it is created, and empty.
    assert_eq!(hits(&memory, "widget", &ws()), Vec::new());
    assert!(path.exists() && index.is_open());
    // The sync every surface runs before a search fills it.
    memory.sync().unwrap();
    assert_eq!(hits(&memory, "flaky_widget", &ws()).len(), 1);
}

#[test]
fn a_lazy_index_replaces_an_unreadable_file_on_first_use() {
    let f = Fixture::with_sessions();
    let path = f.index_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"not an index at all, just bytes ..................").unwrap();
    let memory = dsh_memory::Memory::new(
        std::sync::Arc::new(MemoryIndex::lazy(&path)),
        f.store.clone(),
        None,
    );
    memory.sync().unwrap();
    assert_eq!(hits(&memory, "flaky_widget", &ws()).len(), 1);
}
