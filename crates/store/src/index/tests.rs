use super::*;
use serde_json::json;

#[test]
fn summaries_fold_titles_turns_and_outcomes() {
    let mut summary = SessionSummary::from_header(&LogHeader::new("s", 5));
    for event in [
        json!({"type": "user/message", "seq": 0, "time": 6, "data": {"role": "user",
               "source": {"kind": "plugin", "plugin": "x"}, "content": [{"type": "text", "text": "context"}]}}),
        json!({"type": "turn/start", "seq": 1, "time": 7, "data": {"turn": 1}}),
        json!({"type": "user/message", "seq": 2, "time": 8, "data": {"role": "user",
               "source": {"kind": "user"}, "content": [{"type": "text", "text": "Fix  the\nbug"}]}}),
        json!({"type": "user/message", "seq": 3, "time": 9, "data": {"role": "user",
               "source": {"kind": "user"}, "content": [{"type": "text", "text": "later"}]}}),
        json!({"type": "turn/end", "seq": 4, "time": 10, "data": {"turn": 1, "reason": {"kind": "blocked"}}}),
    ] {
        summary.apply(&event);
    }
    assert_eq!(
        summary,
        SessionSummary {
            id: "s".into(),
            title: Some("Fix the bug".into()),
            created_at: 5,
            updated_at: 10,
            turns: 1,
            events: 5,
            last_outcome: Some("blocked".into()),
            ..SessionSummary::default()
        }
    );
}

#[test]
fn the_latest_session_title_wins_over_the_first_prompt() {
    let mut summary = SessionSummary::from_header(&LogHeader::new("s", 5));
    let title = |seq: u64, title: &str, kind: &str| {
        json!({"type": "session/title", "seq": seq, "time": 6, "data": {"title": title,
               "messageSeqs": [], "source": {"kind": kind}}})
    };
    for event in [
        json!({"type": "user/message", "seq": 0, "time": 6, "data": {"role": "user",
               "source": {"kind": "user"}, "content": [{"type": "text", "text": "Fix the bug in the parser now"}]}}),
        title(1, "Fix the bug in", "fallback"),
        title(2, "Parser bug fix", "provider"),
        title(3, "  ", "user"),
    ] {
        summary.apply(&event);
    }
    assert_eq!(summary.title.as_deref(), Some("Parser bug fix"));
    summary.apply(&title(4, "Pinned by hand", "user"));
    assert_eq!(summary.title.as_deref(), Some("Pinned by hand"));
    // The typed path converts the record too.
    let mut typed = SessionSummary::from_header(&LogHeader::new("s", 5));
    let event = SessionEvent::from_value(&title(0, "Typed title", "user")).unwrap();
    typed.apply_event(&event);
    assert_eq!(typed.title.as_deref(), Some("Typed title"));
}

#[test]
fn the_index_file_is_compacted_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let layout = StoreLayout::new(dir.path(), Compression::None);
    let index = SessionIndex::new(layout);
    let log = dir.path().join("--w--/s/session.jsonl");
    let header = LogHeader::new("s", 1);
    let event = json!({"type": "turn/start", "seq": 0, "time": 2, "data": {"turn": 1}});
    let mut size = None;
    for n in 1..=(COMPACT_AFTER_LINES as u64 + 10) {
        let stamp = LogStamp {
            size: n * 10,
            mtime_ns: n,
        };
        index.record_append(&log, &header, size, std::slice::from_ref(&event), stamp);
        size = Some(n * 10);
    }
    let text = fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap();
    assert!(text.lines().count() < 20, "{} lines", text.lines().count());
    let entries = load_entries(&dir.path().join(INDEX_FILE)).unwrap();
    let entry = &entries["--w--/s/session.jsonl"];
    assert_eq!(entry.summary.size, (COMPACT_AFTER_LINES as u64 + 10) * 10);
    assert_eq!(entry.summary.turns, COMPACT_AFTER_LINES as u64 + 10);
}

#[test]
fn typed_and_general_summaries_agree_on_every_original_log() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0");
    let mut checked = 0;
    for scenario in fs::read_dir(root).unwrap() {
        for compression in [Compression::Zstd, Compression::None] {
            let form = if compression == Compression::Zstd {
                "zstd"
            } else {
                "jsonl"
            };
            let sessions = scenario
                .as_ref()
                .unwrap()
                .path()
                .join(form)
                .join("sessions");
            let Ok(logs) =
                crate::discover::discover_logs(&StoreLayout::new(&sessions, compression))
            else {
                continue;
            };
            for log in logs {
                assert_eq!(log.compression, compression);
                let (path, stamp) = (log.path(&sessions), log.stamp);
                assert!(matches!(
                    crate::typed_log::read_typed(&path, compression, None),
                    Ok((_, None))
                ));
                assert_eq!(
                    summarize_log(&path, compression, stamp),
                    summarize_log_general(&path, compression, stamp),
                    "{}",
                    path.display()
                );
                torn_copies_summarize_alike(&path, compression);
                checked += 1;
            }
        }
    }
    assert!(checked >= 12, "only {checked} fixture logs found");
}

/// Copies of `path` cut at several points (a torn tail, down to a header alone) and with a
/// header created after every event: the streaming fold and the general summary agree.
fn torn_copies_summarize_alike(path: &Path, compression: Compression) {
    let bytes = fs::read(path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(path.file_name().unwrap());
    for keep in [bytes.len() * 9 / 10, bytes.len() / 2, bytes.len() / 7, 40] {
        fs::write(&copy, &bytes[..keep.min(bytes.len())]).unwrap();
        let stamp = LogStamp::of(&copy).unwrap();
        assert_eq!(
            summarize_log(&copy, compression, stamp),
            summarize_log_general(&copy, compression, stamp),
            "{} cut to {keep} bytes",
            path.display()
        );
    }
    if compression == Compression::None {
        // The header's creation time after every event's: `updated_at` is the header's.
        let text = String::from_utf8(bytes).unwrap();
        let (header, events) = text.split_once('\n').unwrap();
        let mut header: Value = serde_json::from_str(header).unwrap();
        header["createdAt"] = json!(u64::MAX / 2);
        fs::write(&copy, format!("{header}\n{events}")).unwrap();
        let stamp = LogStamp::of(&copy).unwrap();
        let typed = summarize_log(&copy, compression, stamp);
        assert_eq!(typed.updated_at, u64::MAX / 2);
        assert_eq!(typed, summarize_log_general(&copy, compression, stamp));
    }
}

#[test]
fn index_lines_read_back_as_written() {
    let entry = IndexEntry {
        path: "--w--/s/session.jsonl".into(),
        mtime_ns: 7,
        summary: SessionSummary {
            id: "s".into(),
            cwd: Some("/w".into()),
            title: Some("t".into()),
            created_at: 1,
            updated_at: 2,
            turns: 3,
            events: 4,
            size: 5,
            last_outcome: Some("completed".into()),
            parent_session: Some("parent".into()),
            delegation_depth: Some(1),
            problem: Some("p".into()),
        },
    };
    let text = serde_json::to_string(&entry).unwrap();
    assert_eq!(
        text,
        r#"{"path":"--w--/s/session.jsonl","mtimeNs":7,"id":"s","cwd":"/w","title":"t","createdAt":1,"updatedAt":2,"turns":3,"events":4,"size":5,"lastOutcome":"completed","parentSession":"parent","delegationDepth":1,"problem":"p"}"#
    );
    assert_eq!(serde_json::from_str::<IndexEntry>(&text).unwrap(), entry);
    let mut plain = entry.clone();
    plain.summary.problem = None;
    plain.summary.cwd = None;
    let text = serde_json::to_string(&plain).unwrap();
    assert_eq!(serde_json::from_str::<IndexEntry>(&text).unwrap(), plain);
}

#[test]
fn unreadable_index_files_mean_no_entries() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(INDEX_FILE);
    assert!(load_entries(&file).unwrap().is_empty());
    fs::write(&file, "garbage\n{\"path\":\"x\"}\n").unwrap();
    assert!(load_entries(&file).unwrap().is_empty());
}
