//! Bounded ranking: the window of newest matches, one hit per session, every filter a
//! search takes, and workspaces of any spelling.

use super::support::*;
use dsh_memory::index::{SessionMeta, ROWS_PER_SESSION, WINDOW_ROWS};
use dsh_memory::{EventFilter, MemoryIndex, SessionFilter};

fn index() -> (tempfile::TempDir, MemoryIndex) {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = MemoryIndex::open(&dir.path().join(dsh_memory::INDEX_FILE)).unwrap();
    (dir, index)
}

fn meta(n: usize, cwd: &str, parent: Option<&str>) -> SessionMeta {
    SessionMeta {
        id: format!("session-{n:05}"),
        cwd: Some(cwd.to_owned()),
        created_at: 1_790_000_000_000 + n as u64,
        parent_session: parent.map(str::to_owned),
    }
}

fn ids(hits: &[dsh_memory::SessionHit]) -> Vec<String> {
    hits.iter().map(|h| h.session.id.clone()).collect()
}

#[test]
fn a_word_in_every_session_ranks_only_the_newest_matches_and_a_rare_one_is_exact() {
    let (_dir, index) = index();
    // Three matching rows a session (prompt, tool call, answer): more rows than the window.
    let sessions = WINDOW_ROWS / 3 + 200;
    for n in 0..sessions {
        let answer = if n == 3 {
            "common words, and one zanzibar"
        } else {
            "common words"
        };
        let events = turn(0, 1, "common prompt", r#"{"q":"common"}"#, answer);
        index
            .index_events(&meta(n, WORKSPACE, None), &events)
            .unwrap();
    }
    let all = SessionFilter::default();
    let hits = index
        .search("common", &all, &EventFilter::default(), 50)
        .unwrap();
    assert_eq!(hits.len(), 50);
    let unique: std::collections::HashSet<_> = ids(&hits).into_iter().collect();
    assert_eq!(unique.len(), 50, "one hit per session");
    // Only sessions with a row among the newest WINDOW_ROWS matches are ranked.
    let oldest_ranked = sessions - WINDOW_ROWS / 3 - 1;
    for hit in &hits {
        let n: usize = hit.session.id["session-".len()..].parse().unwrap();
        assert!(
            n >= oldest_ranked,
            "{} is older than the window",
            hit.session.id
        );
        assert!(hit.event.snippet.contains("\u{2}common\u{3}"), "{hit:?}");
    }
    // One long session with more matches than the window takes only its share of it.
    let long: Vec<_> = (0..WINDOW_ROWS as u64 / 3 + 50)
        .flat_map(|t| turn(t * 4, t + 1, "common prompt", r#"{"q":"common"}"#, "common"))
        .collect();
    index
        .index_events(&meta(sessions, WORKSPACE, None), &long)
        .unwrap();
    let crowded = index
        .search("common", &all, &EventFilter::default(), 50)
        .unwrap();
    assert_eq!(crowded.len(), 50, "{:?}", ids(&crowded));
    assert!(ids(&crowded).contains(&format!("session-{sessions:05}")));
    // Its share is its newest rows.
    let long_hit = crowded
        .iter()
        .find(|h| h.session.id == format!("session-{sessions:05}"))
        .unwrap();
    assert!(
        long_hit.event.seq >= long.len() as u64 - 4 * ROWS_PER_SESSION as u64,
        "{long_hit:?}"
    );
    // A selective query is ranked over every match, however old.
    let rare = index
        .search("common zanzibar", &all, &EventFilter::default(), 50)
        .unwrap();
    assert_eq!(ids(&rare), ["session-00003"]);
    assert_eq!(rare[0].event.seq, 3);
    assert!(rare[0].event.snippet.contains("\u{2}zanzibar\u{3}"));
}

#[test]
fn a_session_with_more_matches_than_a_long_skip_is_stepped_over_whole() {
    let (_dir, index) = index();
    for n in 0..10 {
        let events = turn(0, 1, "common prompt", "{}", "common answer");
        index
            .index_events(&meta(n, WORKSPACE, None), &events)
            .unwrap();
    }
    // The newest session: far more matching rows than a search steps over before it starts
    // again below that session's rows (three a turn).
    let long: Vec<_> = (0..2_000u64)
        .flat_map(|t| turn(t * 4, t + 1, "common", r#"{"q":"common"}"#, "common"))
        .collect();
    index
        .index_events(&meta(10, WORKSPACE, None), &long)
        .unwrap();
    let hits = index
        .search(
            "common",
            &SessionFilter::default(),
            &EventFilter::default(),
            50,
        )
        .unwrap();
    let mut found = ids(&hits);
    found.sort();
    let expected: Vec<String> = (0..=10).map(|n| format!("session-{n:05}")).collect();
    assert_eq!(found, expected);
    let long_hit = hits
        .iter()
        .find(|h| h.session.id == "session-00010")
        .unwrap();
    assert!(long_hit.event.seq >= 4 * 2_000 - 4 * ROWS_PER_SESSION as u64);
}

#[test]
fn the_best_event_of_a_session_wins_and_sessions_are_ordered_by_it() {
    let (_dir, index) = index();
    // session-00000 says "widget" once in a long answer; session-00001 says little else.
    let long = format!("widget {}", "filler ".repeat(200));
    index
        .index_events(&meta(0, WORKSPACE, None), &turn(0, 1, "first", "{}", &long))
        .unwrap();
    index
        .index_events(
            &meta(1, WORKSPACE, None),
            &turn(0, 1, "widget widget", "{}", &long),
        )
        .unwrap();
    let hits = index
        .search(
            "widget",
            &SessionFilter::default(),
            &EventFilter::default(),
            10,
        )
        .unwrap();
    assert_eq!(ids(&hits), ["session-00001", "session-00000"]);
    assert_eq!(
        (hits[0].event.seq, hits[0].event.event_type.as_str()),
        (1, "user/message")
    );
    assert!(hits[0].event.rank < hits[1].event.rank);
}

#[test]
fn every_filter_of_a_session_search_applies() {
    let (_dir, index) = index();
    let odd = "/home/user/my project (ünï)";
    let add = |n: usize, cwd: &str, parent: Option<&str>| {
        index
            .index_events(
                &meta(n, cwd, parent),
                &turn(0, 1, "find the needle", r#"{"needle":1}"#, "needle found"),
            )
            .unwrap();
    };
    add(0, WORKSPACE, None);
    add(1, WORKSPACE, Some("session-00000"));
    add(2, WORKSPACE, Some("session-00001"));
    add(3, odd, None);
    add(4, OTHER_WORKSPACE, None);
    let search = |filter: SessionFilter, events: EventFilter| {
        let mut found = ids(&index.search("needle", &filter, &events, 20).unwrap());
        found.sort();
        found
    };
    let ws = |cwd: &str| SessionFilter {
        cwd: Some(cwd.to_owned()),
        ..SessionFilter::default()
    };
    let none = EventFilter::default;
    assert_eq!(
        search(ws(WORKSPACE), none()),
        ["session-00000", "session-00001", "session-00002"]
    );
    assert_eq!(search(ws(odd), none()), ["session-00003"]);
    assert!(search(ws("/home/user"), none()).is_empty());
    assert_eq!(search(SessionFilter::default(), none()).len(), 5);
    // The caller's own session is left out; an unknown one excludes nothing.
    let exclude = |id: &str| SessionFilter {
        exclude: Some(id.to_owned()),
        ..ws(WORKSPACE)
    };
    assert_eq!(
        search(exclude("session-00001"), none()),
        ["session-00000", "session-00002"]
    );
    assert_eq!(search(exclude("session-nope"), none()).len(), 3);
    // Ids, parents (with or without roots), creation time.
    let ids_only = SessionFilter {
        ids: Some(vec!["session-00002".into(), "session-00004".into()]),
        ..ws(WORKSPACE)
    };
    assert_eq!(search(ids_only, none()), ["session-00002"]);
    let children = SessionFilter {
        parents: Some(vec![Some("session-00000".into())]),
        ..ws(WORKSPACE)
    };
    assert_eq!(search(children, none()), ["session-00001"]);
    let roots = SessionFilter {
        parents: Some(vec![None, Some("session-00001".into())]),
        ..ws(WORKSPACE)
    };
    assert_eq!(search(roots, none()), ["session-00000", "session-00002"]);
    let created = SessionFilter {
        created_from: Some(1_790_000_000_001),
        created_to: Some(1_790_000_000_001),
        ..ws(WORKSPACE)
    };
    assert_eq!(search(created, none()), ["session-00001"]);
    // Event filters pick which row of each session can be its hit.
    let answers = EventFilter {
        types: Some(vec!["assistant/message".into()]),
        ..EventFilter::default()
    };
    let hits = index
        .search("needle", &ws(WORKSPACE), &answers, 20)
        .unwrap();
    assert_eq!(hits.len(), 3);
    assert!(hits.iter().all(|h| h.event.seq == 3), "{hits:?}");
    let seqs = EventFilter {
        seq_from: Some(2),
        seq_to: Some(2),
        ..EventFilter::default()
    };
    let hits = index.search("needle", &ws(WORKSPACE), &seqs, 20).unwrap();
    assert!(hits.iter().all(|h| h.event.seq == 2), "{hits:?}");
    let log_only = EventFilter {
        surfaces: Some(vec!["log-only".into()]),
        ..EventFilter::default()
    };
    let hits = index
        .search("needle", &ws(WORKSPACE), &log_only, 20)
        .unwrap();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter().all(|h| h.event.event_type == "tool/call"),
        "{hits:?}"
    );
    let times = EventFilter {
        time_from: Some(1_790_000_003_000),
        ..EventFilter::default()
    };
    let hits = index.search("needle", &ws(WORKSPACE), &times, 20).unwrap();
    assert!(hits.iter().all(|h| h.event.seq == 3), "{hits:?}");

    // One session's events: its rowid range only, with the same event filters.
    let events = |filter: &EventFilter| -> Vec<u64> {
        index
            .search_events("session-00001", "needle", filter, 20)
            .unwrap()
            .iter()
            .map(|h| h.seq)
            .collect()
    };
    let mut every = events(&EventFilter::default());
    every.sort_unstable();
    assert_eq!(every, [1, 2, 3]);
    assert_eq!(events(&answers), [3]);
    assert_eq!(events(&seqs), [2]);
    assert!(index
        .search_events("session-nope", "needle", &EventFilter::default(), 20)
        .unwrap()
        .is_empty());
    // A workspace's token is not a word a query can find.
    assert!(index
        .search("ws", &SessionFilter::default(), &none(), 20)
        .unwrap()
        .is_empty());
}
