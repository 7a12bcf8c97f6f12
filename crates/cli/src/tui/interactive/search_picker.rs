//! `/search`: a picker over the memory index. Typing runs the query against this
//! workspace's sessions (the application answers with [`SearchHit`]s); each row is a
//! session's best hit (title, age, turn, snippet with the matches bold). Enter resumes that
//! session; Ctrl-F forks it through the turn of the hit and continues in the fork.

use super::driver::SearchHit;
use crate::sanitize::sanitize;
use crate::tui::picker::{Picker, PickerKind, PickerRow, MARK_END, MARK_START};
use crate::tui::text::{one_line, truncate};

/// The keys line of the search picker.
pub const SEARCH_KEYS: &str = "↑↓ move · Enter resume · Ctrl-F fork from the hit · Esc close";
const TITLE_CHARS: usize = 28;
const SNIPPET_CHARS: usize = 120;

/// The picker `/search [WORDS]` opens.
pub fn search_picker(query: &str) -> Picker {
    let title = if query.trim().is_empty() {
        "search this workspace's sessions: type words".to_owned()
    } else {
        format!("searching for \"{}\" …", sanitize(query.trim()))
    };
    Picker::searching(PickerKind::SearchHit, title, query).with_hint(SEARCH_KEYS)
}

/// Puts a search's outcome into the picker (when it is the answer to its current query).
pub fn show_hits(picker: &mut Picker, query: &str, hits: Result<Vec<SearchHit>, String>) {
    if picker.kind != PickerKind::SearchHit || picker.query() != query {
        return;
    }
    match hits {
        Ok(hits) => {
            let title = match hits.len() {
                0 => format!("no session of this workspace mentions \"{}\"", clean(query)),
                1 => "1 session matches (best hit shown)".to_owned(),
                n => format!("{n} sessions match, best first (best hit of each)"),
            };
            picker.set_rows(title, hits.iter().map(hit_row).collect());
        }
        Err(error) => picker.set_rows(clean(&error), Vec::new()),
    }
}

/// The words typed, as the title shows them.
fn clean(text: &str) -> String {
    one_line(&sanitize(text.trim()))
}

fn hit_row(hit: &SearchHit) -> PickerRow {
    let title = truncate(&clean(&hit.title), TITLE_CHARS);
    let snippet = truncate(&marked_snippet(&hit.snippet), SNIPPET_CHARS);
    PickerRow {
        text: format!(
            "{title:<TITLE_CHARS$}  {:>8}  turn {:<3}  {snippet}",
            hit.age, hit.turn
        ),
        value: hit_value(hit.session.as_str(), hit.seq),
        current: false,
    }
}

/// The snippet on one line, terminal-safe, its marks kept: each piece between marks is
/// sanitized on its own (the marks are control characters) and whitespace runs become one
/// space without losing the spaces around a match.
fn marked_snippet(snippet: &str) -> String {
    let mut out = String::with_capacity(snippet.len());
    let mut space = false;
    for (i, piece) in snippet.split([MARK_START, MARK_END]).enumerate() {
        if i > 0 {
            if std::mem::take(&mut space) && !out.is_empty() {
                out.push(' ');
            }
            out.push(if i % 2 == 1 { MARK_START } else { MARK_END });
        }
        for ch in sanitize(piece).chars() {
            if ch.is_whitespace() {
                space = true;
                continue;
            }
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(ch);
        }
    }
    out
}

/// A row's value: the seq, then the session id (ids hold no spaces).
fn hit_value(session: &str, seq: u64) -> String {
    format!("{seq} {session}")
}

/// The session and seq a row's value names.
pub fn parse_hit(value: &str) -> Option<(String, u64)> {
    let (seq, session) = value.split_once(' ')?;
    Some((session.to_owned(), seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use dsh_protocol::SessionId;

    fn hit(id: &str, snippet: &str) -> SearchHit {
        SearchHit {
            session: SessionId::new(id.to_owned()),
            title: "Why does the flaky test \u{1b}[31mfail".into(),
            age: "2h ago".into(),
            turn: 3,
            seq: 17,
            snippet: snippet.into(),
        }
    }

    #[test]
    fn hits_become_rows_that_name_their_session_and_seq() {
        let mut picker = search_picker("flaky");
        show_hits(
            &mut picker,
            "flaky",
            Ok(vec![hit("session-a", "the \u{2}flaky\u{3}\n \u{7}test")]),
        );
        assert_eq!(picker.title(), "1 session matches (best hit shown)");
        let row = picker.selected().unwrap();
        assert_eq!(parse_hit(&row.value), Some(("session-a".into(), 17)));
        assert!(
            row.text
                .starts_with("Why does the flaky test fail    2h ago  turn 3 "),
            "{:?}",
            row.text
        );
        assert!(
            row.text.ends_with("the \u{2}flaky\u{3} test"),
            "{:?}",
            row.text
        );
    }

    #[test]
    fn an_answer_to_an_older_query_is_ignored() {
        let mut picker = search_picker("fla");
        picker.type_char('k');
        show_hits(&mut picker, "fla", Ok(vec![hit("session-a", "x")]));
        assert!(picker.shown().is_empty());
        show_hits(&mut picker, "flak", Ok(Vec::new()));
        assert_eq!(
            picker.title(),
            "no session of this workspace mentions \"flak\""
        );
        show_hits(&mut picker, "flak", Err("the index is busy".into()));
        assert_eq!(picker.title(), "the index is busy");
    }
}
