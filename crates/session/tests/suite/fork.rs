//! Forking a session at a closed-turn boundary.

use super::common::*;
use dsh_session::*;
use serde_json::json;

#[test]
fn a_fork_copies_the_prefix_and_records_its_lineage() {
    let source = session("source");
    tool_turn(&source, 1);
    source
        .append(
            EventData::other("session/title", json!({"title": "t"})),
            log_only(),
        )
        .unwrap();
    tool_turn(&source, 2);

    // Through the log-only event after the first closed turn.
    let plan = fork(&source, Some(11), "child".into()).unwrap();
    assert_eq!(plan.seed.len(), 12);
    let mut expected = SessionHeader::new("child".into(), TIME);
    expected.cwd = Some("/work".into());
    expected.parent_session = Some("source".into());
    expected.seed_length = Some(12);
    assert_eq!(plan.header, expected);
    let child = plan.build(&source).unwrap();
    assert_eq!(&child.events()[..12], &source.events()[..12]);
    assert_eq!(child.events()[12].data, EventData::EndSeed);
    assert_eq!(child.seed_source(), Some(SeedSource::Fork));
    assert_eq!(child.header().seed_length, Some(12));

    // Default boundary: the whole source.
    let whole = fork(&source, None, "whole".into()).unwrap();
    assert_eq!(whole.seed.len() as u64, source.len());
}

#[test]
fn an_empty_source_forks_an_empty_child() {
    let source = session("source");
    let plan = fork(&source, None, "child".into()).unwrap();
    assert!(plan.seed.is_empty());
    assert_eq!(plan.header.seed_length, Some(0));
    let child = plan.build(&source).unwrap();
    assert_eq!(child.len(), 1);
}

#[test]
fn bad_boundaries_are_refused() {
    let source = session("source");
    tool_turn(&source, 1);
    source.append(turn_start(2), log_only()).unwrap();
    source.append(user("u2", "more"), surface()).unwrap();

    let err = fork(&source, Some(13), "c".into()).unwrap_err();
    assert!(
        matches!(
            err,
            SessionError::InvalidBoundary {
                boundary: 13,
                len: 13,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.code(), "INVALID_BOUNDARY");
    // Inside turn 1 (its step is open), and inside the still-open turn 2.
    let err = fork(&source, Some(4), "c".into()).unwrap_err();
    assert!(
        matches!(
            err,
            SessionError::OpenTurn {
                boundary: 4,
                turn: 1,
                ..
            }
        ),
        "{err}"
    );
    let err = fork(&source, None, "c".into()).unwrap_err();
    assert!(
        matches!(
            err,
            SessionError::OpenTurn {
                boundary: 12,
                turn: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.code(), "OPEN_TURN");
    // The turn/end itself is a valid boundary.
    assert_eq!(fork(&source, Some(10), "c".into()).unwrap().seed.len(), 11);
}
