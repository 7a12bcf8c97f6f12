//! `MeterService`: one meter per live session, eager on `session/event`, dropped on dispose.

use super::common::*;
use dsh_compaction::*;
use dsh_kernel::Context;
use dsh_session::*;
use std::sync::Arc;

fn mounted() -> (Context, Arc<SessionStore>, Arc<MeterService>) {
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(()).unwrap();
    let store = ctx.require::<SessionStore>().unwrap();
    let service = MeterService::install(&ctx).unwrap();
    assert!(Arc::ptr_eq(
        &ctx.require::<MeterService>().unwrap(),
        &service
    ));
    (ctx, store, service)
}

fn scratch(session: &Session) -> Measurement {
    TokenMeter::from_events(session.events().iter())
        .unwrap()
        .measure()
}

#[test]
fn a_measured_session_is_followed_eagerly_and_dropped_on_dispose() {
    let (ctx, store, service) = mounted();
    let s = store.create(&ctx, None, SessionOptions::default()).unwrap();
    s.append(header("system"), log_only()).unwrap();
    assert_eq!(service.tracked(), 0, "nothing until the first measurement");
    assert_eq!(service.folded(&s), None);

    assert_eq!(service.measure(&s).unwrap(), scratch(&s));
    assert_eq!(service.tracked(), 1);
    tool_step(&s, 1, 1, "result", Some(usage(4000, 10)));
    assert_eq!(
        service.folded(&s),
        Some(s.len()),
        "session/event advanced the meter without a measurement"
    );
    assert_eq!(service.measure(&s).unwrap(), scratch(&s));
    let nodes = service
        .with_meter(&s, |m| m.nodes().iter().map(|n| n.seq).collect::<Vec<_>>())
        .unwrap();
    assert_eq!(nodes, s.surface().nodes);

    store.dispose(&s).unwrap();
    assert_eq!(service.tracked(), 0, "session/disposed drops the meter");
    // A session the store no longer holds is still measurable, with a throwaway meter.
    assert_eq!(service.measure(&s).unwrap(), scratch(&s));
    assert_eq!(service.tracked(), 0);
}

#[test]
fn sessions_outside_the_store_are_never_held() {
    let (_ctx, _store, service) = mounted();
    let s = session("loose");
    tool_step(&s, 1, 1, "result", None);
    assert_eq!(service.measure(&s).unwrap(), scratch(&s));
    assert_eq!(service.tracked(), 0);
}

/// A callback that appends to the measured session cannot deadlock: the eager listener skips
/// a busy meter and the next measurement folds what it skipped.
#[test]
fn appending_from_inside_with_meter_is_folded_later() {
    let (ctx, store, service) = mounted();
    let s = store.create(&ctx, None, SessionOptions::default()).unwrap();
    service.measure(&s).unwrap();
    let before = service
        .with_meter(&s, |m| {
            s.append(user("u", "appended while measuring"), surface())
                .unwrap();
            m.consumed()
        })
        .unwrap();
    assert_eq!(before, 0);
    assert_eq!(
        service.folded(&s),
        Some(0),
        "the listener skipped the busy meter"
    );
    assert_eq!(service.measure(&s).unwrap(), scratch(&s));
    assert_eq!(service.folded(&s), Some(1));
}

/// A log the meter cannot fold makes every measurement report the same error.
#[test]
fn a_log_the_meter_refuses_is_reported_on_every_measurement() {
    let (ctx, store, service) = mounted();
    let s = store.create(&ctx, None, SessionOptions::default()).unwrap();
    service.measure(&s).unwrap();
    s.append(step_start(1, 1), log_only()).unwrap();
    s.append(step_start(1, 2), log_only()).unwrap();
    s.append(user("u", "after"), surface()).unwrap();
    let err = service.measure(&s).unwrap_err();
    assert_eq!(err.code(), "METER_STEP_ALREADY_OPEN");
    assert_eq!(service.measure(&s).unwrap_err(), err);
    assert_eq!(
        service.folded(&s),
        Some(1),
        "stopped before the refused event"
    );
}

/// A session that leaves the store without `session/disposed` (entered, never announced) is
/// swept when the next session gets a meter.
#[test]
fn departed_sessions_are_swept() {
    let (ctx, store, service) = mounted();
    let quiet = store.prepare(None, SessionOptions::default()).unwrap();
    let detach = store.enter(&ctx, &quiet).unwrap();
    service.measure(&quiet).unwrap();
    assert_eq!(service.tracked(), 1);
    detach.detach();
    assert_eq!(
        service.tracked(),
        1,
        "no session/disposed for an unannounced session"
    );
    let other = store.create(&ctx, None, SessionOptions::default()).unwrap();
    service.measure(&other).unwrap();
    assert_eq!(service.tracked(), 1);
    assert_eq!(service.folded(&quiet), None);
    assert_eq!(service.folded(&other), Some(0));
}
