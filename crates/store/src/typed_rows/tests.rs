use super::*;
use crate::chunk_rows::{self, Unpacked};
use serde_json::{json, Value};

fn delta(seq: u64, time: u64, chunk: StreamChunk) -> Arc<SessionEvent> {
    Arc::new(SessionEvent {
        seq,
        time,
        data: EventData::AssistantChunk(AssistantChunk {
            turn: 1,
            step: 1,
            chunk,
        }),
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    })
}

fn text(seq: u64, time: u64, text: &str) -> Arc<SessionEvent> {
    delta(
        seq,
        time,
        StreamChunk::TextDelta {
            index: 1,
            text: text.into(),
        },
    )
}

fn lines(events: &[Arc<SessionEvent>]) -> String {
    let mut out = Vec::new();
    write_lines(events, true, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_run_is_written_as_the_original_writes_it() {
    let events = [
        text(22, 100, "Hel"),
        text(23, 105, "lo"),
        text(24, 111, "!"),
    ];
    assert_eq!(
        lines(&events),
        "{\"type\":\"text-chunks\",\"seq0\":22,\"time0\":100,\"data\":{\"turn\":1,\"step\":1,\"index\":1,\"dt\":[5,6],\"texts\":[\"Hel\",\"lo\",\"!\"]}}\n"
    );
    let tool = |seq, args: &str| {
        delta(
            seq,
            7,
            StreamChunk::ToolCallDelta {
                index: 2,
                id: "call_1".into(),
                name: Some("bash".into()),
                arguments_delta: args.into(),
            },
        )
    };
    assert_eq!(
        lines(&[tool(5, "{\"a"), tool(6, "\": "), tool(7, "1}")]),
        "{\"type\":\"tool-call-chunks\",\"seq0\":5,\"time0\":7,\"data\":{\"turn\":1,\"step\":1,\"index\":2,\"dt\":[0,0],\"id\":\"call_1\",\"name\":\"bash\",\"args\":[\"{\\\"a\",\"\\\": \",\"1}\"]}}\n"
    );
}

#[test]
fn short_or_ineligible_runs_stay_verbatim() {
    let mut ignorable = (*text(2, 0, "c")).clone();
    ignorable.ignorable = true;
    for events in [
        vec![text(0, 0, "a"), text(1, 0, "b")],
        vec![text(0, 5, "a"), text(1, 4, "b"), text(2, 6, "c")],
        vec![text(0, 0, "a"), text(1, 0, "b"), Arc::new(ignorable)],
    ] {
        let expected: String = events
            .iter()
            .map(|e| serde_json::to_string(&**e).unwrap() + "\n")
            .collect();
        assert_eq!(lines(&events), expected);
    }
}

#[test]
fn rows_unpack_to_the_events_the_general_path_yields() {
    let row = json!({"type": "tool-call-chunks", "seq0": 4, "time0": 10,
        "data": {"turn": 2, "step": 3, "index": 1, "dt": [2], "id": "c", "args": ["{", "}"]}});
    let fast = unpack_line(row.to_string().as_bytes()).unwrap();
    let Ok(Unpacked::Run(general)) = chunk_rows::unpack(row) else {
        panic!("the row unpacks")
    };
    let general: Vec<Arc<SessionEvent>> = general
        .iter()
        .map(|v| Arc::new(SessionEvent::from_value(v).unwrap()))
        .collect();
    assert_eq!(fast, general);
}

#[test]
fn anything_but_a_canonical_row_is_left_to_the_general_path() {
    let good = json!({"type": "text-chunks", "seq0": 0, "time0": 0,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"]}});
    assert!(unpack_line(good.to_string().as_bytes()).is_some());
    let edits: [(&str, Value); 7] = [
        ("/data/dt", json!([1, 2])),
        ("/data/texts", json!(["a", 2])),
        ("/data/texts", json!([])),
        ("/data/turn", json!(1.5)),
        ("/seq0", json!(-1)),
        ("/data/id", json!("x")),
        ("/data/args", Value::Null),
    ];
    for (pointer, value) in edits {
        let mut case = good.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let target = if parent.is_empty() {
            &mut case
        } else {
            case.pointer_mut(parent).unwrap()
        };
        target[key] = value;
        assert!(unpack_line(case.to_string().as_bytes()).is_none(), "{case}");
    }
    let mut extra = good;
    extra["x"] = json!(1);
    assert!(unpack_line(extra.to_string().as_bytes()).is_none());
}
