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

#[tokio::test]
async fn waterfall_snapshots_listeners_at_dispatch_start() {
    let ctx = Context::root();
    let registrar = ctx.clone();
    ctx.on_waterfall::<Wrap, _, _>(move |log, next| {
        // Registers a new outer-most listener mid-dispatch; it must not run this time.
        registrar
            .on_waterfall_with::<Wrap, _, _>(ListenOptions::prepend(), |log, next| async move {
                log.push("late");
                next.run().await
            })
            .unwrap()
            .forget();
        async move {
            log.push("first");
            next.run().await
        }
    })
    .unwrap()
    .forget();
    let log = Log::default();
    let default = |log: Arc<Log>| async move {
        log.push("default");
        Ok("d".to_string())
    };
    ctx.waterfall::<Wrap, _, _>(None, Arc::new(log.clone()), default)
        .await
        .unwrap();
    assert_eq!(log.take(), vec!["first", "default"]);
    ctx.waterfall::<Wrap, _, _>(None, Arc::new(log.clone()), default)
        .await
        .unwrap();
    assert_eq!(log.take(), vec!["late", "first", "default"]);
    ctx.waterfall::<Wrap, _, _>(None, Arc::new(log.clone()), default)
        .await
        .unwrap();
    assert_eq!(log.take(), vec!["late", "late", "first", "default"]);
}

#[test]
fn emit_snapshot_ignores_listeners_added_or_removed_mid_dispatch() {
    let ctx = Context::root();
    let log = Log::default();
    let second_slot: Arc<std::sync::Mutex<Option<dsh_kernel::Disposer>>> = Default::default();
    let (c, l, slot) = (ctx.clone(), log.clone(), second_slot.clone());
    ctx.on::<Ping>(move |_| {
        l.push("first");
        if let Some(d) = slot.lock().unwrap().take() {
            d.dispose();
        }
        let l2 = l.clone();
        c.on::<Ping>(move |_| {
            l2.push("added");
            Ok(())
        })?
        .forget();
        Ok(())
    })
    .unwrap()
    .forget();
    let l = log.clone();
    let second = ctx
        .on::<Ping>(move |_| {
            l.push("second");
            Ok(())
        })
        .unwrap();
    *second_slot.lock().unwrap() = Some(second);
    ctx.emit::<Ping>(None, &String::new());
    assert_eq!(log.take(), vec!["first", "second"]);
    ctx.emit::<Ping>(None, &String::new());
    assert_eq!(log.take(), vec!["first", "added"]);
}

#[test]
fn reentrant_emit_from_a_listener() {
    let ctx = Context::root();
    let log = Log::default();
    let (c, l) = (ctx.clone(), log.clone());
    ctx.on::<Ping>(move |p| {
        l.push(p.clone());
        if p.len() < 3 {
            c.emit::<Ping>(None, &format!("{p}x"));
        }
        Ok(())
    })
    .unwrap()
    .forget();
    ctx.emit::<Ping>(None, &"x".to_string());
    assert_eq!(log.take(), vec!["x", "xx", "xxx"]);
}

#[tokio::test]
async fn waterfall_errors_propagate_and_args_are_shared() {
    let ctx = Context::root();
    ctx.on_waterfall::<Wrap, _, _>(|log, next| async move {
        log.push("outer saw args");
        let r = next.run().await;
        log.push(format!("outer got {}", r.is_err()));
        r
    })
    .unwrap()
    .forget();
    let log = Log::default();
    let e = ctx
        .waterfall::<Wrap, _, _>(None, Arc::new(log.clone()), |log| async move {
            log.push("default failing");
            Err(err("default broke"))
        })
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "default broke");
    assert_eq!(
        log.take(),
        vec!["outer saw args", "default failing", "outer got true"]
    );
}

#[tokio::test]
async fn async_modes_route_by_scope() {
    let root = Context::root();
    let agent = ScopeKey::new("agent");
    let sub = ScopeKey::new("sub");
    sub.bind_parent(&agent).unwrap();
    let scoped = root.with_scope(agent.clone());

    scoped
        .on_serial::<Ask, _, _>(|_| async { Ok(Some("agent".to_string())) })
        .unwrap()
        .forget();
    root.on_serial::<Ask, _, _>(|_| async { Ok(Some("unscoped".to_string())) })
        .unwrap()
        .forget();
    assert_eq!(
        root.serial::<Ask>(Some(&sub), Arc::new(0)).await.unwrap(),
        Some("agent".to_string())
    );
    assert_eq!(
        root.serial::<Ask>(None, Arc::new(0)).await.unwrap(),
        Some("unscoped".to_string())
    );

    scoped
        .on_parallel::<Flush, _, _>(|log| async move {
            log.push("agent");
            Ok(())
        })
        .unwrap()
        .forget();
    let log = Log::default();
    root.parallel::<Flush>(None, Arc::new(log.clone()))
        .await
        .unwrap();
    assert!(log.take().is_empty());
    root.parallel::<Flush>(Some(&sub), Arc::new(log.clone()))
        .await
        .unwrap();
    assert_eq!(log.take(), vec!["agent"]);

    scoped
        .on_waterfall::<Wrap, _, _>(|_, _| async { Ok("agent veto".to_string()) })
        .unwrap()
        .forget();
    let default = |_: Arc<Log>| async { Ok("default".to_string()) };
    let other = ScopeKey::new("other");
    assert_eq!(
        root.waterfall::<Wrap, _, _>(Some(&other), Arc::new(Log::default()), default)
            .await
            .unwrap(),
        "default"
    );
    assert_eq!(
        root.waterfall::<Wrap, _, _>(Some(&sub), Arc::new(Log::default()), default)
            .await
            .unwrap(),
        "agent veto"
    );
}

#[tokio::test]
async fn serial_listener_may_register_while_running() {
    let ctx = Context::root();
    let c = ctx.clone();
    ctx.on_serial::<Ask, _, _>(move |_| {
        let c = c.clone();
        async move {
            c.on_serial::<Ask, _, _>(|_| async { Ok(Some("new".to_string())) })?
                .forget();
            Ok(None)
        }
    })
    .unwrap()
    .forget();
    assert_eq!(ctx.serial::<Ask>(None, Arc::new(0)).await.unwrap(), None);
    assert_eq!(
        ctx.serial::<Ask>(None, Arc::new(0)).await.unwrap(),
        Some("new".to_string())
    );
}

#[test]
fn once_fires_a_single_time_and_unregisters() {
    let ctx = Context::root();
    let log = Log::default();
    let l = log.clone();
    let d = ctx
        .once::<Ping>(move |p| {
            l.push(p.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(ctx.live_counts(), (1, 0));
    ctx.emit::<Ping>(None, &"a".into());
    ctx.emit::<Ping>(None, &"b".into());
    assert_eq!(log.take(), vec!["a"]);
    assert!(d.is_disposed());
    assert_eq!(ctx.live_counts(), (0, 0));
}

/// A panicking async listener must not unwind through the dispatcher's caller (an agent's
/// driver task would die with its turn open); it becomes an error naming the event.
#[tokio::test]
async fn async_listener_panics_become_errors_in_every_awaited_mode() {
    let ctx = Context::root();
    ctx.on_serial::<Ask, _, _>(|_| async { panic!("serial boom") })
        .unwrap()
        .forget();
    let err = ctx.serial::<Ask>(None, Arc::new(1)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "listener for `test/ask` panicked: serial boom"
    );

    ctx.on_parallel::<Flush, _, _>(|log| async move {
        log.push("ran");
        Ok(())
    })
    .unwrap()
    .forget();
    ctx.on_parallel::<Flush, _, _>(|_| async { panic!("parallel boom") })
        .unwrap()
        .forget();
    let log = Log::default();
    let err = ctx
        .parallel::<Flush>(None, Arc::new(log.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.errors.len(), 1);
    assert_eq!(
        err.errors[0].to_string(),
        "listener for `test/flush` panicked: parallel boom"
    );
    assert_eq!(log.take(), ["ran"], "the other parallel listener still ran");

    // an inner waterfall listener that panics while building its future, and one that
    // panics while running: the outer listener sees an error from `next`
    let outer = Log::default();
    let seen = outer.clone();
    ctx.on_waterfall::<Wrap, _, _>(move |_, next| {
        let seen = seen.clone();
        async move {
            let inner = next.run().await;
            seen.push(format!("{}", inner.as_ref().unwrap_err()));
            inner
        }
    })
    .unwrap()
    .forget();
    let building = ctx
        .on_waterfall::<Wrap, _, _>(|_, _next| -> std::future::Ready<Result<String, _>> {
            panic!("while building")
        })
        .unwrap();
    let err = ctx
        .waterfall::<Wrap, _, _>(None, Arc::new(Log::default()), |_| async {
            Ok("default".to_string())
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "listener for `test/wrap` panicked: while building"
    );
    building.dispose();
    ctx.on_waterfall::<Wrap, _, _>(|_, _next| async { panic!("while running") })
        .unwrap()
        .forget();
    let err = ctx
        .waterfall::<Wrap, _, _>(None, Arc::new(Log::default()), |_| async {
            Ok("default".to_string())
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "listener for `test/wrap` panicked: while running"
    );
    assert_eq!(
        outer.take(),
        [
            "listener for `test/wrap` panicked: while building",
            "listener for `test/wrap` panicked: while running"
        ]
    );
}

#[test]
fn listeners_report_event_mode_owner_and_scope_and_vanish_with_their_fiber() {
    use dsh_kernel::DispatchMode;
    let root = Context::root();
    let store = root.child("store").unwrap();
    let ping_line = line!() + 1;
    store.on::<Ping>(|_| Ok(())).unwrap().forget();
    let agent = store.create_scope(ScopeKey::new("agent-1"), None).unwrap();
    let wrap_line = line!() + 2;
    agent
        .on_waterfall::<Wrap, _, _>(|args, next| async move {
            let _ = args;
            next.run().await
        })
        .unwrap()
        .forget();
    let seen: Vec<(&str, DispatchMode, String, bool)> = root
        .listeners()
        .into_iter()
        .map(|l| (l.event, l.mode, l.owner.to_string(), l.scoped))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                "test/ping",
                DispatchMode::Notification,
                "root/store".to_string(),
                false
            ),
            (
                "test/wrap",
                DispatchMode::Waterfall,
                "root/store/agent-1".to_string(),
                true
            ),
        ]
    );
    // The recorded site is the plugin's call (through `once` too), never a kernel line.
    let once_line = line!() + 1;
    store.once::<Ping>(|_| Ok(())).unwrap().forget();
    let sites: Vec<(String, u32)> = root
        .listeners()
        .into_iter()
        .map(|l| {
            (
                l.registered_at.file().replace('\\', "/"),
                l.registered_at.line(),
            )
        })
        .collect();
    let here = file!().replace('\\', "/");
    assert_eq!(
        sites,
        [
            (here.clone(), ping_line),
            (here.clone(), once_line),
            (here, wrap_line)
        ]
    );
    agent.fiber().dispose();
    assert_eq!(root.listeners().len(), 2);
    store.fiber().dispose();
    assert!(root.listeners().is_empty());
}
