//! "Dispose and nothing is left": for every registry, disposing the owning fiber removes
//! every trace of what was registered through it.

use std::sync::Arc;

use dsh_kernel::{AnonymousEntries, Context, NamedEntries, ScopeKey, ScopedLayers};

use super::common::*;

#[test]
fn disposing_a_plugin_fiber_leaves_nothing_behind() {
    let root = Context::root();
    let plugin = root.child("plugin").unwrap();
    let scope = ScopeKey::new("agent");
    let scoped = plugin.create_scope(scope.clone(), None).unwrap();
    let named: ScopedLayers<NamedEntries<u32>> = ScopedLayers::new();
    let anon: ScopedLayers<AnonymousEntries<u32>> = ScopedLayers::new();

    for ctx in [&plugin, &scoped] {
        ctx.on::<Ping>(|_| Ok(())).unwrap().forget();
        ctx.on_serial::<Ask, _, _>(|_| async { Ok(None) })
            .unwrap()
            .forget();
        ctx.on_parallel::<Flush, _, _>(|_| async { Ok(()) })
            .unwrap()
            .forget();
        ctx.on_waterfall::<Wrap, _, _>(|_, next| next.run())
            .unwrap()
            .forget();
        named.insert_named(ctx, "tool", 1).unwrap().forget();
        anon.push(ctx, "section", 2).unwrap().forget();
    }
    plugin.provide(Arc::new(42u64)).unwrap().forget();
    scoped.provide(Arc::new("svc")).unwrap().forget();

    assert_eq!(root.live_counts(), (8, 2));
    assert_eq!(named.scoped_layer_count(), 1);
    assert_eq!(anon.scoped_layer_count(), 1);
    assert_eq!(named.resolve(Some(&scope)).len(), 1);

    plugin.fiber().dispose();

    assert_eq!(root.live_counts(), (0, 0));
    assert_eq!(named.scoped_layer_count(), 0);
    assert_eq!(anon.scoped_layer_count(), 0);
    assert!(named.resolve(Some(&scope)).is_empty());
    assert!(anon.collect(Some(&scope)).is_empty());
    named.with_own(None, |g| assert!(g.unwrap().is_empty()));
    assert_eq!(root.fiber().live_counts(), (0, 0));
}

#[test]
fn disposing_each_registration_individually_leaves_nothing_behind() {
    let root = Context::root();
    let named: ScopedLayers<NamedEntries<u32>> = ScopedLayers::new();
    let scoped = root.with_scope(ScopeKey::new("s"));
    let disposers = vec![
        root.on::<Ping>(|_| Ok(())).unwrap(),
        scoped.on::<Ping>(|_| Ok(())).unwrap(),
        root.on_serial::<Ask, _, _>(|_| async { Ok(None) }).unwrap(),
        root.on_parallel::<Flush, _, _>(|_| async { Ok(()) })
            .unwrap(),
        root.on_waterfall::<Wrap, _, _>(|_, next| next.run())
            .unwrap(),
        root.provide(Arc::new(1u8)).unwrap(),
        named.insert_named(&scoped, "a", 1).unwrap(),
        named.insert_named(&root, "a", 1).unwrap(),
    ];
    assert_eq!(root.live_counts(), (5, 1));
    for d in &disposers {
        d.dispose();
    }
    assert_eq!(root.live_counts(), (0, 0));
    assert_eq!(named.scoped_layer_count(), 0);
    named.with_own(None, |g| assert!(g.unwrap().is_empty()));
    assert_eq!(root.fiber().live_counts(), (0, 0));
}
