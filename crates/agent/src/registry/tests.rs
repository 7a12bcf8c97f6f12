use super::*;
use crate::testing::{session, FakeAgent};
use crate::{initiator, AgentCreated, AgentDisposed, AgentHandle};
use futures_util::future::BoxFuture;
use std::sync::Mutex as StdMutex;

type Log = Arc<StdMutex<Vec<String>>>;

fn record(ctx: &Context) -> Log {
    let log: Log = Arc::default();
    let l = log.clone();
    ctx.on::<AgentCreated>(move |e| {
        l.lock().unwrap().push(format!("created {}", e.agent.id()));
        Ok(())
    })
    .unwrap()
    .forget();
    let l = log.clone();
    ctx.on::<AgentDisposed>(move |e| {
        l.lock().unwrap().push(format!("disposed {}", e.agent.id()));
        Ok(())
    })
    .unwrap()
    .forget();
    log
}

fn agent(root: &Context, id: &str) -> Arc<dyn Agent> {
    FakeAgent::create(root, session(id))
}

#[test]
fn enter_announce_and_exact_detach() {
    let root = Context::root();
    let registry = AgentRegistry::install(&root).unwrap();
    let log = record(&root);
    let a = agent(&root, "a");
    let exit = registry.enter(a.clone(), None).unwrap();
    let dup = registry.enter(agent(&root, "a"), None).unwrap_err();
    assert_eq!(dup.to_string(), "agent \"a\" already exists");
    registry.announce(&a).unwrap();
    assert_eq!(
        registry.announce(&a).unwrap_err().code(),
        "AGENT_ALREADY_ANNOUNCED"
    );
    assert!(registry.get(&"a".into()).is_some());
    exit.detach();
    exit.detach();
    assert!(registry.get(&"a".into()).is_none());

    // A stale detach never removes a later same-id entry.
    let again = agent(&root, "a");
    let second = registry.enter(again.clone(), None).unwrap();
    exit.detach();
    assert!(registry.get(&"a".into()).is_some());
    // Never announced: leaving emits nothing.
    second.detach();
    assert_eq!(*log.lock().unwrap(), ["created a", "disposed a"]);
}

#[test]
fn a_failing_created_listener_vetoes_and_detach_pairs_it() {
    let root = Context::root();
    let registry = AgentRegistry::install(&root).unwrap();
    let log = record(&root);
    root.on::<AgentCreated>(|_| Err("no".into()))
        .unwrap()
        .forget();
    let a = agent(&root, "a");
    let exit = registry.enter(a.clone(), None).unwrap();
    let err = registry.announce(&a).unwrap_err();
    assert_eq!(err.code(), "AGENT_CREATION_VETOED");
    exit.detach();
    assert_eq!(*log.lock().unwrap(), ["created a", "disposed a"]);
}

#[test]
fn detach_during_announce_is_deferred_until_the_dispatch_unwinds() {
    let root = Context::root();
    let registry = AgentRegistry::install(&root).unwrap();
    let log = record(&root);
    let slot: Arc<StdMutex<Option<RegistryExit>>> = Arc::default();
    let (s, r, l) = (slot.clone(), registry.clone(), log.clone());
    root.on::<AgentCreated>(move |e| {
        if let Some(exit) = s.lock().unwrap().as_ref() {
            exit.detach();
        }
        let present = r.get(e.agent.id()).is_some();
        l.lock().unwrap().push(format!("still present: {present}"));
        Ok(())
    })
    .unwrap()
    .forget();
    let a = agent(&root, "a");
    *slot.lock().unwrap() = Some(registry.enter(a.clone(), None).unwrap());
    registry.announce(&a).unwrap();
    assert!(registry.get(&"a".into()).is_none());
    assert_eq!(
        *log.lock().unwrap(),
        ["created a", "still present: true", "disposed a"]
    );
}

#[test]
fn ids_must_match_sessions_and_owners_come_from_the_calling_scope() {
    let root = Context::root();
    let registry = AgentRegistry::install(&root).unwrap();
    let parent = agent(&root, "p");
    let _p = registry.register(&root, parent.clone()).unwrap();
    let child = agent(&root, "c");
    let nested = parent.ctx().child("tool").unwrap();
    let _c = registry.register(&nested, child.clone()).unwrap();
    assert!(registry.is_owned_by(&"c".into(), &"p".into()));
    assert!(!registry.is_owned_by(&"p".into(), &"c".into()));
    let roots: Vec<_> = registry
        .roots()
        .iter()
        .map(|a| a.id().to_string())
        .collect();
    assert_eq!(roots, ["p"]);
    assert_eq!(registry.list().len(), 2);
    // Disposing the owning context's fiber leaves the registry.
    nested.fiber().dispose();
    assert!(registry.get(&"c".into()).is_none());
}

struct NoFactory;
impl AgentFactory for NoFactory {
    fn create(
        &self,
        _: Context,
        _: CreateAgentOptions,
    ) -> BoxFuture<'static, Result<AgentHandle, AgentError>> {
        Box::pin(async { Err(AgentError::message("nope")) })
    }
    fn resume(
        &self,
        _: Context,
        _: ResumeAgentOptions,
    ) -> BoxFuture<'static, Result<AgentHandle, AgentError>> {
        Box::pin(async { Err(AgentError::message("nope")) })
    }
}

#[tokio::test]
async fn one_factory_at_a_time_cleared_with_its_fiber() {
    let root = Context::root();
    let registry = AgentRegistry::install(&root).unwrap();
    let err = registry
        .create(&root, CreateAgentOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no agent factory registered (load an agent-loop plugin)"
    );
    let plugin = root.child("loop").unwrap();
    let _d = registry.set_factory(&plugin, Arc::new(NoFactory)).unwrap();
    assert_eq!(
        registry
            .set_factory(&root, Arc::new(NoFactory))
            .unwrap_err()
            .code(),
        "AGENT_FACTORY_TAKEN"
    );
    let err = registry
        .create(&root, CreateAgentOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "nope");
    plugin.fiber().dispose();
    assert!(!registry.has_factory());
}

#[tokio::test]
async fn initiator_boundaries_nest_and_close_with_the_registry() {
    let root = Context::root();
    let plugin = root.child("agents").unwrap();
    let registry = AgentRegistry::install(&plugin).unwrap();
    assert_eq!(
        initiator::require_initiator().unwrap_err().to_string(),
        "no initiating agent is active"
    );
    let a = agent(&root, "a");
    let seen = registry
        .with_initiator(a.clone(), async {
            let outer = initiator::current_initiator().map(|a| a.id().to_string());
            let inner =
                initiator::without_initiator(async { initiator::current_initiator().is_none() })
                    .await;
            (outer, inner)
        })
        .unwrap()
        .await;
    assert_eq!(seen, (Some("a".to_string()), true));
    registry.drain().await;
    plugin.fiber().dispose();
    let err = registry.with_initiator(a, async {}).err().unwrap();
    assert_eq!(err.to_string(), "agent initiator scope is disposed");
}

#[test]
fn scoped_listeners_hear_their_own_agent_only() {
    let root = Context::root();
    let registry = AgentRegistry::install(&root).unwrap();
    let a = agent(&root, "a");
    let b = agent(&root, "b");
    let log = record(a.ctx());
    let _a = registry.register(&root, a).unwrap();
    let _b = registry.register(&root, b).unwrap();
    assert_eq!(*log.lock().unwrap(), ["created a"]);
}
