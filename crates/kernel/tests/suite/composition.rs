//! Compositions: patching rows by id, mounting in order, config errors, rollback.

use std::sync::Arc;

use dsh_kernel::{mount, BoxError, Composition, Context, PatchOp, Plugin, PluginTable, Row};
use serde::Deserialize;
use serde_json::json;

use super::common::*;

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GreetCfg {
    greeting: String,
    #[serde(default = "one")]
    times: u32,
}
fn one() -> u32 {
    1
}

pub struct Greet;
impl Plugin for Greet {
    const NAME: &'static str = "greet";
    type Config = GreetCfg;
    fn apply(ctx: &Context, cfg: GreetCfg) -> Result<(), BoxError> {
        let log = ctx.require::<Log>()?;
        log.push(format!(
            "{} x{} as {}",
            cfg.greeting,
            cfg.times,
            ctx.fiber().name()
        ));
        let l = log.clone();
        let name = ctx.fiber().name().to_string();
        ctx.effect("down", move || l.push(format!("down {name}")))?
            .forget();
        Ok(())
    }
}

#[derive(Clone, Deserialize, Default)]
pub struct Nothing {}

pub struct Broken;
impl Plugin for Broken {
    const NAME: &'static str = "broken";
    type Config = Nothing;
    fn apply(_: &Context, _: Nothing) -> Result<(), BoxError> {
        Err(err("broken on purpose"))
    }
}

fn table() -> PluginTable {
    PluginTable::new().with::<Greet>().with::<Broken>()
}

fn base() -> Composition {
    Composition {
        rows: vec![
            Row::new("hello", "greet", json!({"greeting": "hello"})),
            Row::new("bye", "greet", json!({"greeting": "bye", "times": 2})),
        ],
    }
}

fn setup() -> (Context, Log) {
    let root = Context::root();
    let log = Log::default();
    root.provide(Arc::new(log.clone())).unwrap().forget();
    (root, log)
}

#[test]
fn composition_deserializes_from_json_rows() {
    let c: Composition = serde_json::from_value(json!({"rows": [
        {"id": "a", "plugin": "greet", "config": {"greeting": "hi"}},
        {"id": "b", "plugin": "greet", "disabled": true}
    ]}))
    .unwrap();
    assert_eq!(
        c,
        Composition {
            rows: vec![
                Row::new("a", "greet", json!({"greeting": "hi"})),
                Row {
                    disabled: true,
                    ..Row::new("b", "greet", serde_json::Value::Null)
                },
            ]
        }
    );
    assert_eq!(table().names(), vec!["broken", "greet"]);
    assert!(table().contains("greet"));
}

#[test]
fn mount_applies_rows_in_order_on_fibers_named_by_row_id() {
    let (root, log) = setup();
    let mounted = mount(&root, &table(), &base()).unwrap();
    let ids: Vec<(&str, &str)> = mounted
        .iter()
        .map(|(id, f)| (id.as_str(), f.name()))
        .collect();
    assert_eq!(ids, vec![("hello", "hello"), ("bye", "bye")]);
    assert_eq!(log.take(), vec!["hello x1 as hello", "bye x2 as bye"]);
    root.fiber().dispose();
    assert_eq!(log.take(), vec!["down bye", "down hello"]);
}

#[test]
fn later_layers_patch_rows_by_id() {
    let mut c = base();
    c.patch([
        PatchOp::Replace {
            id: "hello".into(),
            config: json!({"greeting": "hi", "times": 3}),
        },
        PatchOp::Insert {
            row: Row::new("mid", "greet", json!({"greeting": "mid"})),
            after: Some("hello".into()),
        },
        PatchOp::Insert {
            row: Row::new("end", "greet", json!({"greeting": "end"})),
            after: None,
        },
        PatchOp::Disable { id: "bye".into() },
    ])
    .unwrap();
    assert_eq!(
        c,
        Composition {
            rows: vec![
                Row::new("hello", "greet", json!({"greeting": "hi", "times": 3})),
                Row::new("mid", "greet", json!({"greeting": "mid"})),
                Row {
                    disabled: true,
                    ..Row::new("bye", "greet", json!({"greeting": "bye", "times": 2}))
                },
                Row::new("end", "greet", json!({"greeting": "end"})),
            ]
        }
    );
    let (root, log) = setup();
    mount(&root, &table(), &c).unwrap();
    assert_eq!(
        log.take(),
        vec!["hi x3 as hello", "mid x1 as mid", "end x1 as end"]
    );

    c.patch([PatchOp::Enable { id: "bye".into() }]).unwrap();
    assert!(!c.rows[2].disabled);
}

#[test]
fn bad_patches_fail_without_changing_anything() {
    let mut c = base();
    let e = c
        .patch([
            PatchOp::Disable { id: "hello".into() },
            PatchOp::Disable { id: "nope".into() },
        ])
        .unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_ROW");
    assert_eq!(c, base());
    let e = c
        .patch([PatchOp::Insert {
            row: Row::new("bye", "greet", json!({})),
            after: None,
        }])
        .unwrap_err();
    assert_eq!(e.code(), "DUPLICATE_ROW");
    let e = c
        .patch([PatchOp::Insert {
            row: Row::new("x", "greet", json!({})),
            after: Some("ghost".into()),
        }])
        .unwrap_err();
    assert_eq!(e.to_string(), "composition has no row `ghost`");
    assert_eq!(c, base());
}

#[test]
fn config_errors_name_row_and_field_and_mount_nothing() {
    let (root, log) = setup();
    let mut c = base();
    c.patch([PatchOp::Replace {
        id: "bye".into(),
        config: json!({"greeting": "bye", "times": "twice"}),
    }])
    .unwrap();
    let e = mount(&root, &table(), &c).unwrap_err();
    assert_eq!(e.code(), "INVALID_CONFIG");
    assert_eq!(
        e.to_string(),
        "row `bye` (plugin `greet`): invalid config: field `times`: invalid type: string \"twice\", expected u32"
    );
    assert!(log.take().is_empty(), "validation happens before any apply");

    c.patch([PatchOp::Replace {
        id: "bye".into(),
        config: json!({}),
    }])
    .unwrap();
    let e = mount(&root, &table(), &c).unwrap_err();
    assert_eq!(
        e.to_string(),
        "row `bye` (plugin `greet`): invalid config: missing field `greeting`"
    );

    c.patch([PatchOp::Insert {
        row: Row::new("x", "nosuch", json!({})),
        after: None,
    }])
    .unwrap();
    c.patch([PatchOp::Disable { id: "bye".into() }]).unwrap();
    let e = mount(&root, &table(), &c).unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_PLUGIN");
    assert_eq!(e.to_string(), "row `x`: unknown plugin `nosuch`");
    assert_eq!(root.fiber().live_counts(), (1, 0));
}

#[test]
fn a_failing_row_rolls_back_rows_already_mounted() {
    let (root, log) = setup();
    let mut c = base();
    c.patch([PatchOp::Insert {
        row: Row::new("oops", "broken", serde_json::Value::Null),
        after: None,
    }])
    .unwrap();
    let e = mount(&root, &table(), &c).unwrap_err();
    assert_eq!(e.code(), "PLUGIN_FAILED");
    assert_eq!(
        e.to_string(),
        "plugin `oops` failed to apply: broken on purpose"
    );
    assert_eq!(
        log.take(),
        vec![
            "hello x1 as hello",
            "bye x2 as bye",
            "down bye",
            "down hello"
        ]
    );
    assert_eq!(root.fiber().live_counts(), (1, 0));
}
