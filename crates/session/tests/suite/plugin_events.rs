//! Plugin-declared event types: typed appends and decoding, validation hooks, registration.
//!
//! The registry is process-wide, so every test here uses type names no other test uses.

use super::common::*;
use dsh_session::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

/// A plugin type this implementation adds (not one of the original's names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GaugeSet {
    gauge: String,
    level: u8,
}

impl PluginEvent for GaugeSet {
    const TYPE: &'static str = "test-plugin/gauge";
    fn validate(&self) -> Result<(), String> {
        if self.level > 10 {
            return Err(format!("level {} is above 10", self.level));
        }
        Ok(())
    }
}

static GAUGE_TYPES: &[EventDeclaration] = &[EventDeclaration::of::<GaugeSet>()];

fn gauge(level: u8) -> GaugeSet {
    GaugeSet {
        gauge: "fuel".into(),
        level,
    }
}

#[test]
fn a_registered_type_is_appended_typed_and_decoded_back() {
    register_event_types(GAUGE_TYPES).unwrap();
    let session = session("typed");
    session.append(turn_start(1), log_only()).unwrap();
    session.append_typed(&gauge(3)).unwrap();
    session.append(turn_end(1), log_only()).unwrap();
    assert_eq!(
        log_json(&session),
        json!([
            {"type": "turn/start", "seq": 0, "time": TIME, "data": {"turn": 1}},
            {"type": "test-plugin/gauge", "seq": 1, "time": TIME, "data": {"gauge": "fuel", "level": 3}},
            {"type": "turn/end", "seq": 2, "time": TIME, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ])
    );
    let events = session.events();
    let decoded: Vec<GaugeSet> = events
        .iter()
        .filter_map(|e| e.decode::<GaugeSet>())
        .map(Result::unwrap)
        .collect();
    assert_eq!(decoded, [gauge(3)]);
    assert!(events[1].is::<GaugeSet>());
    assert!(!events[0].is::<GaugeSet>());

    // A seed of the same events builds the same log (what resume and fork do).
    let seeded = seeded("typed-again", events.to_vec()).unwrap();
    assert_eq!(seeded.events()[..3], events[..]);
}

#[test]
fn a_validation_hook_refuses_with_a_typed_error_and_leaves_the_log_unchanged() {
    register_event_types(GAUGE_TYPES).unwrap();
    let session = session("hook");
    session.append_typed(&gauge(1)).unwrap();
    let before = log_json(&session);

    let err = session.append_typed(&gauge(11)).unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidEventData { type_name, reason }
            if type_name == "test-plugin/gauge" && reason == "level 11 is above 10"),
        "{err:?}"
    );
    // Raw appends of a declared type run the same hook, and must decode first.
    let raw = |data| EventData::other("test-plugin/gauge", data);
    for data in [
        json!({"gauge": "fuel", "level": 12}),
        json!({"gauge": "fuel"}),
        json!({"gauge": "fuel", "level": "high"}),
    ] {
        let err = session.append(raw(data.clone()), log_only()).unwrap_err();
        assert_eq!(err.code(), "INVALID_EVENT_DATA", "{data}");
    }
    assert_eq!(log_json(&session), before);
    assert_eq!(session.len(), 1);
}

#[test]
fn the_newest_event_of_a_type_is_found_after_appends_refusals_and_a_seed() {
    register_event_types(GAUGE_TYPES).unwrap();
    let session = session("newest");
    assert!(session.newest::<GaugeSet>().is_none());
    session.append_typed(&gauge(1)).unwrap();
    session.append(turn_start(1), log_only()).unwrap();
    session.append_typed(&gauge(2)).unwrap();
    // A refused append is not the newest: it never entered the log.
    session.append_typed(&gauge(11)).unwrap_err();
    session.append(turn_end(1), log_only()).unwrap();
    let newest = session.newest::<GaugeSet>().unwrap();
    assert_eq!(newest.seq, 2);
    assert_eq!(newest.decode::<GaugeSet>().unwrap().unwrap(), gauge(2));

    // The same answer as scanning the log backwards, in a session built from a seed.
    let seeded = seeded("newest-again", session.events().to_vec()).unwrap();
    let scanned = seeded
        .events()
        .iter()
        .rev()
        .find(|e| e.is::<GaugeSet>())
        .cloned();
    assert_eq!(seeded.newest::<GaugeSet>(), scanned);
    assert_eq!(seeded.newest::<GaugeSet>().map(|e| e.seq), Some(2));
    seeded.append_typed(&gauge(7)).unwrap();
    assert_eq!(
        seeded.newest_decoded::<GaugeSet>().map(Result::unwrap),
        Some(gauge(7))
    );
    assert!(session.newest_decoded::<Unregistered>().is_none());
}

/// A type nobody registered: its events could not be read back, so appending is refused.
#[derive(Serialize, Deserialize)]
struct Unregistered {}

impl PluginEvent for Unregistered {
    const TYPE: &'static str = "test-plugin/unregistered";
}

/// The same, but a reader may skip it.
#[derive(Serialize, Deserialize)]
struct Skippable {
    note: String,
}

impl PluginEvent for Skippable {
    const TYPE: &'static str = "test-plugin/skippable";
    const IGNORABLE: bool = true;
}

#[test]
fn an_unknown_required_type_is_refused_and_an_ignorable_one_is_carried() {
    let session = session("unknown");
    let err = session.append_typed(&Unregistered {}).unwrap_err();
    assert!(
        matches!(&err, SessionError::UnknownEventType { type_name } if type_name == "test-plugin/unregistered"),
        "{err:?}"
    );
    assert!(session.is_empty());

    let event = session
        .append_typed(&Skippable { note: "n".into() })
        .unwrap();
    assert_eq!(
        serde_json::to_value(&*event).unwrap(),
        json!({"type": "test-plugin/skippable", "seq": 0, "time": TIME, "data": {"note": "n"}, "ignorable": true})
    );

    // A stored log holding an unknown required type is refused as written by a newer build;
    // an unknown ignorable one loads with its data untouched.
    let stored = |value| Arc::new(SessionEvent::from_value(&value).unwrap());
    let required =
        stored(json!({"type": "test-plugin/unregistered", "seq": 0, "time": 1, "data": {}}));
    let err = seeded("newer", vec![required]).unwrap_err();
    assert_eq!(err.root().code(), "UNKNOWN_EVENT_TYPE");
    let skippable = json!({"type": "test-plugin/other", "seq": 0, "time": 1,
        "data": {"deep": [1, 2.5, {"x": null}]}, "ignorable": true});
    let loaded = seeded("skippable", vec![stored(skippable.clone())]).unwrap();
    assert_eq!(
        serde_json::to_value(&*loaded.events()[0]).unwrap(),
        skippable
    );
}

/// A type whose stored records are checked too.
#[derive(Serialize, Deserialize)]
struct Strict {
    count: u32,
}

impl PluginEvent for Strict {
    const TYPE: &'static str = "test-plugin/strict";
    const CHECK_STORED: bool = true;
    fn validate(&self) -> Result<(), String> {
        if self.count == 0 {
            return Err("count must be positive".into());
        }
        Ok(())
    }
}

/// A type whose stored records are taken as they are (the default).
#[derive(Debug, Serialize, Deserialize)]
struct Lenient {
    count: u32,
}

impl PluginEvent for Lenient {
    const TYPE: &'static str = "test-plugin/lenient";
}

static STORED_TYPES: &[EventDeclaration] = &[
    EventDeclaration::of::<Strict>(),
    EventDeclaration::of::<Lenient>(),
];

#[test]
fn stored_records_are_checked_only_when_the_declaration_asks() {
    register_event_types(STORED_TYPES).unwrap();
    let stored = |type_name: &str, data| {
        Arc::new(
            SessionEvent::from_value(
                &json!({"type": type_name, "seq": 0, "time": 1, "data": data}),
            )
            .unwrap(),
        )
    };
    let err = seeded(
        "strict",
        vec![stored("test-plugin/strict", json!({"count": 0}))],
    )
    .unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidSeed { index: 0, .. }),
        "{err:?}"
    );
    assert_eq!(err.root().code(), "INVALID_EVENT_DATA");
    seeded(
        "strict-ok",
        vec![stored("test-plugin/strict", json!({"count": 2}))],
    )
    .unwrap();

    // A lenient type's odd record loads verbatim; its readers see the decode fail.
    let odd = seeded(
        "lenient",
        vec![stored("test-plugin/lenient", json!({"count": "many"}))],
    )
    .unwrap();
    assert_eq!(odd.events()[0].data.to_value(), json!({"count": "many"}));
    let decoded = odd.events()[0].decode::<Lenient>().unwrap();
    assert_eq!(decoded.unwrap_err().code(), "INVALID_EVENT_DATA");
    // Appends are checked either way.
    let err = odd
        .append(
            EventData::other("test-plugin/lenient", json!({"count": "many"})),
            log_only(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_EVENT_DATA");
}

/// Another Rust type claiming a registered name.
#[derive(Serialize, Deserialize)]
struct Impostor {}

impl PluginEvent for Impostor {
    const TYPE: &'static str = "test-plugin/gauge";
}

/// A plugin type trying to take a core name.
#[derive(Serialize, Deserialize)]
struct CoreName {}

impl PluginEvent for CoreName {
    const TYPE: &'static str = "turn/start";
}

#[derive(Serialize, Deserialize)]
struct Fresh {}

impl PluginEvent for Fresh {
    const TYPE: &'static str = "test-plugin/fresh";
}

#[test]
fn registration_is_idempotent_and_refuses_conflicts_as_a_whole() {
    register_event_types(GAUGE_TYPES).unwrap();
    // The same declarations again, also in another static: nothing changes.
    static AGAIN: &[EventDeclaration] = &[EventDeclaration::of::<GaugeSet>()];
    register_event_types(AGAIN).unwrap();
    assert_eq!(
        registered_event_types()
            .filter(|d| d.type_name() == "test-plugin/gauge")
            .count(),
        1
    );

    static CONFLICT: &[EventDeclaration] = &[
        EventDeclaration::of::<Fresh>(),
        EventDeclaration::of::<Impostor>(),
    ];
    let err = register_event_types(CONFLICT).unwrap_err();
    assert_eq!(err.code(), "INVALID_EVENT_DECLARATION");
    assert!(err.to_string().contains("already declared by"), "{err}");
    // Nothing of a refused batch is registered.
    assert!(declared_event_type("test-plugin/fresh").is_none());
    assert!(!event_types::is_known_event_type("test-plugin/fresh"));

    static CORE: &[EventDeclaration] = &[EventDeclaration::of::<CoreName>()];
    assert_eq!(
        register_event_types(CORE).unwrap_err().code(),
        "INVALID_EVENT_DECLARATION"
    );
    static TWICE: &[EventDeclaration] = &[
        EventDeclaration::of::<Fresh>(),
        EventDeclaration::of::<Fresh>(),
    ];
    assert_eq!(
        register_event_types(TWICE).unwrap_err().code(),
        "INVALID_EVENT_DECLARATION"
    );

    let gauge = declared_event_type("test-plugin/gauge").unwrap();
    assert!(!gauge.ignorable() && !gauge.checks_stored());
    assert!(
        gauge.rust_name().ends_with("GaugeSet"),
        "{}",
        gauge.rust_name()
    );
    assert!(event_types::is_known_event_type("test-plugin/gauge"));
}

#[test]
fn the_originals_plugin_types_are_known_without_registration() {
    let session = session("original");
    for name in event_types::ORIGINAL_PLUGIN_EVENT_TYPES {
        assert!(event_types::is_known_event_type(name), "{name}");
        if declared_event_type(name).is_none() {
            session
                .append(EventData::other(*name, json!({"any": "shape"})), log_only())
                .unwrap();
        }
    }
}
