//! A plugin-declared event type through the whole durable path: typed append, stored in
//! either format, read back, inspected and resumed.

use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::{
    register_event_types, AppendOptions, EventData, EventDeclaration, PluginEvent, Session,
    SessionEvent, SessionHeader, TurnEnd, TurnEndReason, TurnStart,
};
use dsh_store::{
    read_log, read_typed_log, Compression, JsonlBackend, JsonlConfig, SessionPersistence,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A type this implementation adds: known only because it is registered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Checkpointed {
    label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl PluginEvent for Checkpointed {
    const TYPE: &'static str = "test-store/checkpointed";
    fn validate(&self) -> Result<(), String> {
        if self.label.is_empty() {
            return Err("label must not be empty".into());
        }
        Ok(())
    }
}

static TYPES: &[EventDeclaration] = &[EventDeclaration::of::<Checkpointed>()];

fn values(events: &[Arc<SessionEvent>]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect()
}

#[test]
fn a_declared_type_round_trips_through_the_store() {
    register_event_types(TYPES).unwrap();
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let backend = JsonlBackend::new(JsonlConfig {
            root: dir.path().to_owned(),
            compression,
            pack_chunks: compression == Compression::Zstd,
        });
        let mut header = SessionHeader::new("plugin".into(), 1);
        header.cwd = Some("/work".into());
        let session = Session::builder(header.clone())
            .clock(Arc::new(|| 5))
            .build()
            .unwrap();
        let log = AppendOptions::log_only;
        session
            .append(EventData::TurnStart(TurnStart { turn: 1 }), log())
            .unwrap();
        let first = Checkpointed {
            label: "a".into(),
            note: Some("with \"quotes\" and é".into()),
        };
        session.append_typed(&first).unwrap();
        // Refused by the hook: never reaches the store.
        let refused = session
            .append_typed(&Checkpointed {
                label: String::new(),
                note: None,
            })
            .unwrap_err();
        assert_eq!(refused.code(), "INVALID_EVENT_DATA");
        let second = Checkpointed {
            label: "b".into(),
            note: None,
        };
        session.append_typed(&second).unwrap();
        session
            .append(
                EventData::TurnEnd(TurnEnd {
                    turn: 1,
                    reason: TurnEndReason::Completed,
                }),
                log(),
            )
            .unwrap();
        let written = session.events();
        assert_eq!(
            values(&written),
            [
                json!({"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}}),
                json!({"type": "test-store/checkpointed", "seq": 1, "time": 5,
                    "data": {"label": "a", "note": "with \"quotes\" and é"}}),
                json!({"type": "test-store/checkpointed", "seq": 2, "time": 5, "data": {"label": "b"}}),
                json!({"type": "turn/end", "seq": 3, "time": 5,
                    "data": {"turn": 1, "reason": {"kind": "completed"}}}),
            ]
        );

        backend.create(&header).unwrap();
        let id = SessionId::from("plugin");
        backend.append(&id, &written).unwrap();

        // Both readers return exactly what was written.
        let path = backend
            .layout()
            .session_file(Some("/work"), "plugin")
            .unwrap();
        assert_eq!(
            read_log(&path, compression, Some("plugin")).unwrap().events,
            values(&written),
            "{compression:?}"
        );
        let typed = read_typed_log(&path, compression, Some("plugin")).unwrap();
        assert_eq!(typed.events, written.to_vec(), "{compression:?}");

        // `dsh sessions verify` and resume accept it, and readers decode it typed.
        assert!(!backend.inspect(&id).unwrap().needs_repair());
        let resumed = backend.prepare(&id).unwrap().session;
        assert_eq!(resumed.events()[..4], written[..]);
        let decoded: Vec<Checkpointed> = resumed
            .events()
            .iter()
            .filter_map(|e| e.decode::<Checkpointed>())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(decoded, [first.clone(), second.clone()]);
        backend.release(&id);
    }
}
