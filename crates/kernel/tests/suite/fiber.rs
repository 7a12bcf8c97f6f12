//! Fiber lifecycle through the public Context API: teardown order, idempotence, disposed
//! fibers refusing registrations, and reentrancy from listeners and disposers.

use std::sync::{Arc, Mutex};

use dsh_kernel::{Context, Disposer, NamedEntries, ScopedLayers};

use super::common::*;

#[test]
fn teardown_is_children_first_then_reverse_registration_order() {
    let root = Context::root();
    let log = Log::default();
    let plugin = root.child("plugin").unwrap();
    let eff = |ctx: &Context, name: &'static str| {
        let l = log.clone();
        ctx.effect(name, move || l.push(name)).unwrap().forget();
    };
    eff(&plugin, "p1");
    let a = plugin.child("a").unwrap();
    eff(&a, "a1");
    let a_inner = a.child("a-inner").unwrap();
    eff(&a_inner, "ai1");
    eff(&a, "a2");
    eff(&plugin, "p2");
    let b = plugin.child("b").unwrap();
    eff(&b, "b1");
    eff(&plugin, "p3");

    plugin.fiber().dispose();
    assert_eq!(log.take(), vec!["b1", "ai1", "a2", "a1", "p3", "p2", "p1"]);
    assert!(!a_inner.fiber().is_active());
    assert!(!b.fiber().is_active());
    assert!(root.fiber().is_active());
    assert_eq!(root.fiber().live_counts(), (0, 0));

    plugin.fiber().dispose();
    a.fiber().dispose();
    assert!(log.take().is_empty(), "double dispose must be a no-op");
}

#[test]
fn every_registration_on_a_disposed_fiber_is_refused() {
    let root = Context::root();
    let dead = root.child("dead").unwrap();
    dead.fiber().dispose();
    let codes = vec![
        dead.effect("e", || {}).unwrap_err().code(),
        dead.child("c").unwrap_err().code(),
        dead.on::<Ping>(|_| Ok(())).unwrap_err().code(),
        dead.on_serial::<Ask, _, _>(|_| async { Ok(None) })
            .unwrap_err()
            .code(),
        dead.on_parallel::<Flush, _, _>(|_| async { Ok(()) })
            .unwrap_err()
            .code(),
        dead.on_waterfall::<Wrap, _, _>(|_, next| next.run())
            .unwrap_err()
            .code(),
        dead.provide(Arc::new(5u8)).unwrap_err().code(),
        ScopedLayers::<NamedEntries<u8>>::new()
            .insert_named(&dead, "x", 1)
            .unwrap_err()
            .code(),
    ];
    assert_eq!(codes, vec!["INACTIVE_EFFECT"; 8]);
    assert_eq!(root.live_counts(), (0, 0));
    let err = dead.effect("e", || {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        "fiber `dead` is disposed; registering on it is not allowed"
    );
}

#[test]
fn a_listener_may_dispose_its_own_fiber_and_register_elsewhere() {
    let root = Context::root();
    let plugin = root.child("plugin").unwrap();
    let log = Log::default();
    let (p, r, l) = (plugin.clone(), root.clone(), log.clone());
    plugin
        .on::<Ping>(move |_| {
            l.push("first");
            p.fiber().dispose();
            let l2 = l.clone();
            r.on::<Ping>(move |_| {
                l2.push("added");
                Ok(())
            })?
            .forget();
            Ok(())
        })
        .unwrap()
        .forget();
    root.emit::<Ping>(None, &String::new());
    root.emit::<Ping>(None, &String::new());
    assert_eq!(log.take(), vec!["first", "added"]);
}

#[test]
fn a_disposer_may_dispatch_and_dispose_other_effects() {
    let root = Context::root();
    let plugin = root.child("plugin").unwrap();
    let log = Log::default();
    let l = log.clone();
    root.on::<Ping>(move |p| {
        l.push(format!("heard {p}"));
        Ok(())
    })
    .unwrap()
    .forget();
    let l = log.clone();
    let other: Disposer = plugin.effect("other", move || l.push("other")).unwrap();
    let (r, l) = (root.clone(), log.clone());
    plugin
        .effect("last", move || {
            r.emit::<Ping>(None, &"bye".to_string());
            other.dispose();
            l.push("last");
        })
        .unwrap()
        .forget();
    plugin.fiber().dispose();
    assert_eq!(log.take(), vec!["heard bye", "other", "last"]);
}

#[test]
fn disposer_removes_exactly_its_own_registration() {
    let root = Context::root();
    let log = Log::default();
    let mk = |name: &'static str| {
        let l = log.clone();
        root.on::<Ping>(move |_| {
            l.push(name);
            Ok(())
        })
        .unwrap()
    };
    let a = mk("a");
    let a2 = mk("a");
    a.dispose();
    a.dispose();
    root.emit::<Ping>(None, &String::new());
    assert_eq!(log.take(), vec!["a"]);
    assert!(a.is_disposed());
    assert!(!a2.is_disposed());
    a2.dispose();
    root.emit::<Ping>(None, &String::new());
    assert!(log.take().is_empty());
    assert_eq!(root.fiber().live_counts(), (0, 0));
}

#[test]
fn context_is_send_and_sync_and_works_across_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Disposer>();
    let root = Context::root();
    let count = Arc::new(Mutex::new(0usize));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (root, count) = (root.clone(), count.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let c = count.clone();
                    let d = root
                        .on::<Ping>(move |_| {
                            *c.lock().unwrap() += 1;
                            Ok(())
                        })
                        .unwrap();
                    root.emit::<Ping>(None, &String::new());
                    d.dispose();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(*count.lock().unwrap() >= 200);
    assert_eq!(root.live_counts(), (0, 0));
    assert_eq!(root.fiber().live_counts(), (0, 0));
}
