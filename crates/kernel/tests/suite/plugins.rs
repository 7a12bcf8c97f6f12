//! Plugins: immediate apply, failure, deferred apply on service arrival, unload/reapply.

use std::sync::Arc;

use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use serde::Deserialize;

use super::common::*;

pub struct Db(pub &'static str);
pub struct Cache;

/// Requires two services and records its lifecycle into the `Log` it is configured with.
pub struct Needy;
impl Plugin for Needy {
    const NAME: &'static str = "needy";
    type Config = Log;
    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<Db>(), ServiceName::of::<Cache>()]
    }
    fn apply(ctx: &Context, log: Log) -> Result<(), BoxError> {
        let db = ctx.require::<Db>()?;
        log.push(format!("apply with {}", db.0));
        let l = log.clone();
        ctx.effect("bye", move || l.push("unload"))?.forget();
        let l = log.clone();
        ctx.on::<Ping>(move |p| {
            l.push(format!("heard {p}"));
            Ok(())
        })?
        .forget();
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Log {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <()>::deserialize(d).map(|_| Log::default())
    }
}

pub struct Failing;
impl Plugin for Failing {
    const NAME: &'static str = "failing";
    type Config = Log;
    fn apply(ctx: &Context, log: Log) -> Result<(), BoxError> {
        let l = log.clone();
        ctx.effect("partial", move || l.push("rolled back"))?
            .forget();
        Err(err("cannot start"))
    }
}

#[test]
fn plugin_applies_immediately_and_unloads_with_its_fiber() {
    let root = Context::root();
    let log = Log::default();
    root.provide(Arc::new(Db("pg"))).unwrap().forget();
    root.provide(Arc::new(Cache)).unwrap().forget();
    let fiber = root.plugin::<Needy>(log.clone()).unwrap();
    assert_eq!(fiber.name(), "needy");
    root.emit::<Ping>(None, &"x".into());
    fiber.dispose();
    root.emit::<Ping>(None, &"y".into());
    assert_eq!(log.take(), vec!["apply with pg", "heard x", "unload"]);
    assert_eq!(root.live_counts(), (0, 2));
}

#[test]
fn failing_plugin_is_rolled_back_and_reported() {
    let root = Context::root();
    let log = Log::default();
    let err = root.plugin::<Failing>(log.clone()).unwrap_err();
    assert_eq!(err.code(), "PLUGIN_FAILED");
    assert_eq!(
        err.to_string(),
        "plugin `failing` failed to apply: cannot start"
    );
    assert_eq!(log.take(), vec!["rolled back"]);
    assert_eq!(root.fiber().live_counts(), (0, 0));
}

#[test]
fn deferred_plugin_waits_for_services_unloads_and_reapplies() {
    let root = Context::root();
    let log = Log::default();
    let fiber = root.plugin::<Needy>(log.clone()).unwrap();
    assert!(fiber.is_active());
    assert!(log.take().is_empty(), "nothing applied without services");

    let db_provider = root.child("db").unwrap();
    db_provider.provide(Arc::new(Db("pg"))).unwrap().forget();
    assert!(log.take().is_empty(), "still waiting for Cache");
    let cache = root.provide(Arc::new(Cache)).unwrap();
    assert_eq!(log.take(), vec!["apply with pg"]);

    root.emit::<Ping>(None, &"1".into());
    db_provider.fiber().dispose();
    root.emit::<Ping>(None, &"2".into());
    assert_eq!(log.take(), vec!["heard 1", "unload"]);

    root.child("db2")
        .unwrap()
        .provide(Arc::new(Db("sqlite")))
        .unwrap()
        .forget();
    root.emit::<Ping>(None, &"3".into());
    assert_eq!(log.take(), vec!["apply with sqlite", "heard 3"]);

    cache.dispose();
    assert_eq!(log.take(), vec!["unload"]);
    fiber.dispose();
    root.provide(Arc::new(Cache)).unwrap().forget();
    assert!(log.take().is_empty(), "a disposed plugin never comes back");
    assert_eq!(root.live_counts(), (0, 2));
}

/// Provides `Cache` itself once `Db` exists, which must not re-trigger it forever.
pub struct CacheMaker;
impl Plugin for CacheMaker {
    const NAME: &'static str = "cache-maker";
    type Config = Log;
    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<Db>()]
    }
    fn apply(ctx: &Context, log: Log) -> Result<(), BoxError> {
        log.push("cache-maker up");
        ctx.provide(Arc::new(Cache))?.forget();
        Ok(())
    }
}

#[test]
fn deferred_plugins_chain_through_services_they_provide() {
    let root = Context::root();
    let log = Log::default();
    root.plugin::<Needy>(log.clone()).unwrap();
    root.plugin::<CacheMaker>(log.clone()).unwrap();
    let db = root.provide(Arc::new(Db("pg"))).unwrap();
    assert_eq!(log.take(), vec!["cache-maker up", "apply with pg"]);
    db.dispose();
    assert_eq!(log.take(), vec!["unload"]);
    assert!(root.get::<Cache>().is_none(), "cache-maker unloaded too");
}

/// Fails only while deferred; must be logged and not retried in a loop.
pub struct DeferredFailing;
impl Plugin for DeferredFailing {
    const NAME: &'static str = "deferred-failing";
    type Config = Log;
    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<Db>()]
    }
    fn apply(ctx: &Context, log: Log) -> Result<(), BoxError> {
        log.push("attempt");
        ctx.provide(Arc::new(Cache))?.forget();
        Err(err("no"))
    }
}

#[test]
fn deferred_failure_is_not_retried_until_requirements_return() {
    let root = Context::root();
    let log = Log::default();
    let fiber = root.plugin::<DeferredFailing>(log.clone()).unwrap();
    let db = root.provide(Arc::new(Db("pg"))).unwrap();
    assert_eq!(log.take(), vec!["attempt"]);
    assert!(root.get::<Cache>().is_none());
    db.dispose();
    root.provide(Arc::new(Db("pg"))).unwrap().forget();
    assert_eq!(log.take(), vec!["attempt"]);
    assert!(fiber.is_active());

    let root = Context::root();
    root.provide(Arc::new(Db("pg"))).unwrap().forget();
    let e = root.plugin::<DeferredFailing>(log.clone()).unwrap_err();
    assert_eq!(e.code(), "PLUGIN_FAILED");
    assert_eq!(log.take(), vec!["attempt"]);
    assert_eq!(root.fiber().live_counts(), (1, 0));
}
