//! Dispatch-mode semantics, containment, veto, snapshotting, prepend and scope routing.

use std::sync::Arc;

use dsh_kernel::{Context, ListenOptions, ScopeKey};

use super::common::*;

#[test]
fn emit_runs_in_order_and_contains_errors_and_panics() {
    let ctx = Context::root();
    let log = Log::default();
    let l = log.clone();
    ctx.on::<Ping>(move |p| {
        l.push(format!("a:{p}"));
        Ok(())
    })
    .unwrap()
    .forget();
    ctx.on::<Ping>(|_| Err(err("nope"))).unwrap().forget();
    ctx.on::<Ping>(|_| panic!("boom")).unwrap().forget();
    let l = log.clone();
    ctx.on::<Ping>(move |p| {
        l.push(format!("d:{p}"));
        Ok(())
    })
    .unwrap()
    .forget();
    ctx.emit::<Ping>(None, &"x".to_string());
    assert_eq!(log.take(), vec!["a:x", "d:x"]);
}

#[test]
fn emit_strict_propagates_first_failure() {
    let ctx = Context::root();
    let log = Log::default();
    ctx.on::<Ping>(|_| Err(err("veto"))).unwrap().forget();
    let l = log.clone();
    ctx.on::<Ping>(move |_| {
        l.push("late");
        Ok(())
    })
    .unwrap()
    .forget();
    let e = ctx.emit_strict::<Ping>(None, &String::new()).unwrap_err();
    assert_eq!(e.to_string(), "veto");
    assert!(log.take().is_empty());

    let ctx = Context::root();
    ctx.on::<Ping>(|_| panic!("kaboom")).unwrap().forget();
    let e = ctx.emit_strict::<Ping>(None, &String::new()).unwrap_err();
    assert_eq!(e.to_string(), "listener for `test/ping` panicked: kaboom");
}

#[tokio::test]
async fn serial_first_some_wins() {
    let ctx = Context::root();
    let log = Log::default();
    let l = log.clone();
    ctx.on_serial::<Ask, _, _>(move |n| {
        let l = l.clone();
        async move {
            l.push(format!("first:{n}"));
            Ok(None)
        }
    })
    .unwrap()
    .forget();
    ctx.on_serial::<Ask, _, _>(|n| async move { Ok(Some(format!("second:{n}"))) })
        .unwrap()
        .forget();
    let l = log.clone();
    ctx.on_serial::<Ask, _, _>(move |_| {
        l.push("third");
        async { Ok(Some("third".to_string())) }
    })
    .unwrap()
    .forget();
    let out = ctx.serial::<Ask>(None, Arc::new(7)).await.unwrap();
    assert_eq!(out, Some("second:7".to_string()));
    assert_eq!(log.take(), vec!["first:7"]);
}

#[tokio::test]
async fn serial_error_propagates_and_empty_is_none() {
    let ctx = Context::root();
    assert_eq!(ctx.serial::<Ask>(None, Arc::new(1)).await.unwrap(), None);
    ctx.on_serial::<Ask, _, _>(|_| async { Err(err("bad")) })
        .unwrap()
        .forget();
    ctx.on_serial::<Ask, _, _>(|_| async { Ok(Some("never".to_string())) })
        .unwrap()
        .forget();
    let e = ctx.serial::<Ask>(None, Arc::new(1)).await.unwrap_err();
    assert_eq!(e.to_string(), "bad");
}

#[tokio::test]
async fn parallel_awaits_all_and_aggregates() {
    let ctx = Context::root();
    for i in 0..3 {
        ctx.on_parallel::<Flush, _, _>(move |log| async move {
            tokio::task::yield_now().await;
            log.push(format!("p{i}"));
            if i == 1 {
                Err(err("one failed"))
            } else {
                Ok(())
            }
        })
        .unwrap()
        .forget();
    }
    ctx.on_parallel::<Flush, _, _>(|_| async { Err(err("last failed")) })
        .unwrap()
        .forget();
    let log = Log::default();
    let e = ctx
        .parallel::<Flush>(None, Arc::new(log.clone()))
        .await
        .unwrap_err();
    let mut seen = log.take();
    seen.sort();
    assert_eq!(seen, vec!["p0", "p1", "p2"]);
    assert_eq!(
        e.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        vec!["one failed", "last failed"]
    );
}

#[tokio::test]
async fn waterfall_middleware_order_and_default() {
    let ctx = Context::root();
    ctx.on_waterfall::<Wrap, _, _>(|log, next| async move {
        log.push("outer in");
        let inner = next.run().await?;
        log.push("outer out");
        Ok(format!("outer({inner})"))
    })
    .unwrap()
    .forget();
    ctx.on_waterfall::<Wrap, _, _>(|log, next| async move {
        log.push("inner in");
        let inner = next.run().await?;
        Ok(format!("inner({inner})"))
    })
    .unwrap()
    .forget();
    let log = Log::default();
    let out = ctx
        .waterfall::<Wrap, _, _>(None, Arc::new(log.clone()), |log| async move {
            log.push("default");
            Ok("d".to_string())
        })
        .await
        .unwrap();
    assert_eq!(out, "outer(inner(d))");
    assert_eq!(
        log.take(),
        vec!["outer in", "inner in", "default", "outer out"]
    );
}

#[tokio::test]
async fn waterfall_veto_skips_inner_and_default() {
    let ctx = Context::root();
    ctx.on_waterfall::<Wrap, _, _>(|log, _next| async move {
        log.push("veto");
        Ok("vetoed".to_string())
    })
    .unwrap()
    .forget();
    ctx.on_waterfall::<Wrap, _, _>(|log, next| async move {
        log.push("inner");
        next.run().await
    })
    .unwrap()
    .forget();
    let log = Log::default();
    let out = ctx
        .waterfall::<Wrap, _, _>(None, Arc::new(log.clone()), |log| async move {
            log.push("default");
            Ok("d".to_string())
        })
        .await
        .unwrap();
    assert_eq!(out, "vetoed");
    assert_eq!(log.take(), vec!["veto"]);
}

#[tokio::test]
async fn prepend_goes_first() {
    let ctx = Context::root();
    let log = Log::default();
    for (name, opts) in [
        ("a", ListenOptions::default()),
        ("b", ListenOptions::prepend()),
        ("c", ListenOptions::default()),
    ] {
        let l = log.clone();
        ctx.on_with::<Ping>(opts, move |_| {
            l.push(name);
            Ok(())
        })
        .unwrap()
        .forget();
    }
    ctx.emit::<Ping>(None, &String::new());
    assert_eq!(log.take(), vec!["b", "a", "c"]);
}

#[test]
fn scope_routing_flows_up() {
    let root = Context::root();
    let parent = ScopeKey::new("parent");
    let child = ScopeKey::new("child");
    child.bind_parent(&parent).unwrap();
    let other = ScopeKey::new("other");
    let log = Log::default();
    let listen = |ctx: &Context, name: &'static str, opts: ListenOptions| {
        let l = log.clone();
        ctx.on_with::<Ping>(opts, move |p| {
            l.push(format!("{name}<-{p}"));
            Ok(())
        })
        .unwrap()
        .forget();
    };
    listen(&root, "unscoped", ListenOptions::default());
    listen(
        &root.with_scope(parent.clone()),
        "parent",
        ListenOptions::default(),
    );
    listen(
        &root.with_scope(child.clone()),
        "child",
        ListenOptions::default(),
    );
    listen(
        &root.with_scope(other.clone()),
        "global",
        ListenOptions::global(),
    );

    root.emit::<Ping>(Some(&child), &"c".into());
    root.emit::<Ping>(Some(&parent), &"p".into());
    root.emit::<Ping>(Some(&other), &"o".into());
    root.emit::<Ping>(None, &"n".into());
    assert_eq!(
        log.take(),
        vec![
            "unscoped<-c",
            "parent<-c",
            "child<-c",
            "global<-c",
            "unscoped<-p",
            "parent<-p",
            "global<-p",
            "unscoped<-o",
            "global<-o",
            "unscoped<-n",
            "global<-n",
        ]
    );
}
