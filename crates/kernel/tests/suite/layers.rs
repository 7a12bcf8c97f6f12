//! ScopedLayers: registrations flow down, nearest wins, layers unwind with their fiber.

use std::sync::{Arc, Mutex};

use dsh_kernel::{AnonymousEntries, Context, KernelError, NamedEntries, ScopeKey, ScopedLayers};

fn tree() -> (Context, ScopeKey, ScopeKey, ScopeKey) {
    let root = Context::root();
    let preset = ScopeKey::new("preset");
    let agent = ScopeKey::new("agent");
    let sibling = ScopeKey::new("sibling");
    agent.bind_parent(&preset).unwrap();
    sibling.bind_parent(&preset).unwrap();
    (root, preset, agent, sibling)
}

fn view(
    layers: &ScopedLayers<NamedEntries<&'static str>>,
    s: Option<&ScopeKey>,
) -> Vec<(String, &'static str)> {
    layers.resolve(s)
}

fn owned(v: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
    v.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn registrations_flow_down_and_nearest_wins() {
    let (root, preset, agent, sibling) = tree();
    let tools: ScopedLayers<NamedEntries<&'static str>> = ScopedLayers::new();
    tools
        .insert_named(&root, "read", "global read")
        .unwrap()
        .forget();
    tools
        .insert_named(&root, "write", "global write")
        .unwrap()
        .forget();
    let p = root.with_scope(preset.clone());
    tools
        .insert_named(&p, "read", "preset read")
        .unwrap()
        .forget();
    tools
        .insert_named(&p, "grep", "preset grep")
        .unwrap()
        .forget();
    let a = root.with_scope(agent.clone());
    tools
        .insert_named(&a, "read", "agent read")
        .unwrap()
        .forget();
    tools.insert_named(&a, "own", "agent own").unwrap().forget();

    assert_eq!(
        view(&tools, Some(&agent)),
        owned(&[
            ("read", "agent read"),
            ("write", "global write"),
            ("grep", "preset grep"),
            ("own", "agent own"),
        ])
    );
    assert_eq!(
        view(&tools, Some(&sibling)),
        owned(&[
            ("read", "preset read"),
            ("write", "global write"),
            ("grep", "preset grep")
        ])
    );
    assert_eq!(
        view(&tools, None),
        owned(&[("read", "global read"), ("write", "global write")])
    );
}

#[test]
fn with_chain_orders_farthest_first_and_with_own_is_chain_blind() {
    let (root, preset, agent, sibling) = tree();
    let layers: ScopedLayers<AnonymousEntries<&'static str>> = ScopedLayers::new();
    layers
        .push(&root.with_scope(agent.clone()), "a", "agent")
        .unwrap()
        .forget();
    layers.push(&root, "g", "global").unwrap().forget();
    layers
        .push(&root.with_scope(preset.clone()), "p", "preset")
        .unwrap()
        .forget();
    let seen = layers.with_chain(Some(&agent), |global, chain| {
        let mut out: Vec<&str> = global.iter().copied().collect();
        for l in chain {
            out.push("|");
            out.extend(l.iter().copied());
        }
        out
    });
    assert_eq!(seen, vec!["global", "|", "preset", "|", "agent"]);
    assert_eq!(layers.collect(Some(&sibling)), vec!["global", "preset"]);
    let own: Option<Vec<&str>> =
        layers.with_own(Some(&agent), |l| l.map(|l| l.iter().copied().collect()));
    assert_eq!(own, Some(vec!["agent"]));
    assert!(layers.with_own(Some(&sibling), |l| l.is_none()));
}

#[test]
fn duplicate_names_error_within_a_layer_but_shadow_across_layers() {
    let (root, _preset, agent, _) = tree();
    let tools: ScopedLayers<NamedEntries<&'static str>> = ScopedLayers::new();
    tools.insert_named(&root, "x", "one").unwrap().forget();
    let err = tools.insert_named(&root, "x", "two").unwrap_err();
    assert!(matches!(&err, KernelError::DuplicateName { name } if name == "x"));
    let a = root.with_scope(agent.clone());
    let d = tools.insert_named(&a, "x", "agent").unwrap();
    assert_eq!(view(&tools, Some(&agent)), owned(&[("x", "agent")]));
    d.dispose();
    assert_eq!(view(&tools, Some(&agent)), owned(&[("x", "one")]));
    assert_eq!(tools.scoped_layer_count(), 0);
}

#[test]
fn undo_is_exact_for_reregistered_names() {
    let root = Context::root();
    let tools: ScopedLayers<NamedEntries<&'static str>> = ScopedLayers::new();
    let old = tools.insert_named(&root, "x", "old").unwrap();
    old.dispose();
    tools.insert_named(&root, "x", "new").unwrap().forget();
    old.dispose();
    assert_eq!(view(&tools, None), owned(&[("x", "new")]));
}

#[test]
fn failing_action_leaves_no_fresh_layer() {
    let (root, _, agent, _) = tree();
    let layers: ScopedLayers<NamedEntries<u8>> = ScopedLayers::new();
    let a = root.with_scope(agent);
    let err = layers
        .effect(&a, "bad", |_| {
            Err(KernelError::DuplicateName { name: "n".into() })
        })
        .unwrap_err();
    assert_eq!(err.code(), "DUPLICATE_NAME");
    assert_eq!(layers.scoped_layer_count(), 0);
}

#[test]
fn layers_unwind_with_the_scope_fiber_and_notify() {
    let (root, preset, agent, _) = tree();
    let changes: Arc<Mutex<Vec<Option<String>>>> = Default::default();
    let c = changes.clone();
    let tools: ScopedLayers<NamedEntries<u8>> = ScopedLayers::new()
        .with_change_hook(move |s| c.lock().unwrap().push(s.map(|k| k.name().to_string())));
    let preset_ctx = root.create_scope(preset.clone(), None).unwrap();
    let agent_ctx = preset_ctx.create_scope(agent.clone(), None).unwrap();
    tools.insert_named(&preset_ctx, "p", 1).unwrap().forget();
    tools.insert_named(&agent_ctx, "a", 2).unwrap().forget();
    tools.insert_named(&root, "g", 3).unwrap().forget();
    assert_eq!(tools.scoped_layer_count(), 2);
    preset_ctx.fiber().dispose();
    assert_eq!(tools.scoped_layer_count(), 0);
    assert_eq!(tools.resolve(Some(&agent)), vec![("g".to_string(), 3)]);
    assert_eq!(
        *changes.lock().unwrap(),
        vec![
            Some("preset".to_string()),
            Some("agent".to_string()),
            None,
            Some("agent".to_string()),
            Some("preset".to_string()),
        ]
    );
}

#[test]
fn create_scope_binds_parent_once() {
    let root = Context::root();
    let parent = ScopeKey::new("parent");
    let child = ScopeKey::new("child");
    let ctx = root.create_scope(child.clone(), Some(&parent)).unwrap();
    assert_eq!(ctx.scope(), Some(&child));
    assert_eq!(ctx.fiber().name(), "child");
    assert_eq!(child.parent(), Some(parent.clone()));
    assert_eq!(
        root.create_scope(child, Some(&parent)).unwrap_err().code(),
        "SCOPE_ALREADY_BOUND"
    );
}
