//! Plugins: compiled-in units of behaviour applied through a context, optionally deferred
//! until the services they require exist.

use std::any::{type_name, TypeId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, Weak};

use serde::de::DeserializeOwned;

use crate::context::{Context, Runtime};
use crate::error::{panic_message, BoxError, KernelError};
use crate::fiber::{lock, Fiber};
use crate::scope::ScopeKey;

/// Names a service type in [`Plugin::requires`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceName {
    pub(crate) id: TypeId,
    name: &'static str,
}

impl ServiceName {
    /// The service provided as `Arc<T>`.
    pub fn of<T: ?Sized + Send + Sync + 'static>() -> ServiceName {
        ServiceName {
            id: TypeId::of::<T>(),
            name: type_name::<T>(),
        }
    }

    /// The Rust type name, for diagnostics.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// A unit of behaviour. `apply` registers everything through `ctx`; all of it is owned by
/// the plugin's fiber and unwinds when that fiber is disposed.
///
/// `Config` must be `Clone` because a plugin with requirements is re-applied (with the same
/// config) every time its required services come back.
pub trait Plugin: Send + Sync + 'static {
    /// The name compositions refer to this plugin by.
    const NAME: &'static str;
    type Config: DeserializeOwned + Clone + Send + 'static;

    /// Services that must all be provided before `apply` runs; the plugin is unloaded when
    /// one disappears and applied again when all are back.
    fn requires() -> Vec<ServiceName> {
        Vec::new()
    }

    fn apply(ctx: &Context, config: Self::Config) -> Result<(), BoxError>;
}

fn run_apply<P: Plugin>(ctx: &Context, config: P::Config) -> Result<(), BoxError> {
    match catch_unwind(AssertUnwindSafe(|| P::apply(ctx, config))) {
        Ok(result) => result,
        Err(panic) => Err(format!("apply panicked: {}", panic_message(&*panic)).into()),
    }
}

impl Context {
    /// Loads plugin `P` on a new child fiber and returns that fiber. Without requirements
    /// `apply` runs now and its error is returned (`PLUGIN_FAILED`, fiber disposed). With
    /// requirements it runs now if they are all met, otherwise as soon as they are.
    pub fn plugin<P: Plugin>(&self, config: P::Config) -> Result<Fiber, KernelError> {
        self.load_plugin::<P>(P::NAME, config)
    }

    pub(crate) fn load_plugin<P: Plugin>(
        &self,
        id: &str,
        config: P::Config,
    ) -> Result<Fiber, KernelError> {
        let outer = self.fiber().child(id)?;
        let requires = P::requires();
        if requires.is_empty() {
            return match run_apply::<P>(&self.on_fiber(outer.clone()), config) {
                Ok(()) => Ok(outer),
                Err(source) => {
                    outer.dispose();
                    Err(KernelError::PluginFailed {
                        id: id.to_string(),
                        source,
                    })
                }
            };
        }
        let deferred = Arc::new(Deferred::<P> {
            rt: Arc::downgrade(&self.rt),
            outer: outer.clone(),
            scope: self.scope().cloned(),
            id: id.to_string(),
            requires,
            config: Mutex::new(config),
            state: Mutex::new(DeferredState::default()),
        });
        let weak = Arc::downgrade(&deferred);
        let watcher = self.rt.add_watcher(Arc::new(move || {
            if let Some(d) = weak.upgrade() {
                d.reconcile();
            }
        }));
        let rt = Arc::downgrade(&self.rt);
        let keep = deferred.clone();
        outer
            .add_effect("requires", move || {
                if let Some(rt) = rt.upgrade() {
                    rt.remove_watcher(watcher);
                }
                drop(keep);
            })?
            .forget();
        if let Some(source) = deferred.reconcile() {
            outer.dispose();
            return Err(KernelError::PluginFailed {
                id: id.to_string(),
                source,
            });
        }
        Ok(outer)
    }
}

#[derive(Default)]
struct DeferredState {
    /// A reconcile pass is running; others only mark `dirty` and leave.
    running: bool,
    dirty: bool,
    /// The fiber of the current application, a child of `outer`.
    instance: Option<Fiber>,
    /// The last apply failed; do not retry until the requirements drop and return.
    failed: bool,
}

struct Deferred<P: Plugin> {
    rt: Weak<Runtime>,
    outer: Fiber,
    scope: Option<ScopeKey>,
    id: String,
    requires: Vec<ServiceName>,
    config: Mutex<P::Config>,
    state: Mutex<DeferredState>,
}

impl<P: Plugin> Deferred<P> {
    /// Brings the plugin in line with service availability: apply when all requirements are
    /// met, unload when one is gone. Reentrant calls (an apply providing services) and
    /// concurrent calls fold into the running pass via the `dirty` flag. Returns the error
    /// of an apply attempted during this call.
    fn reconcile(&self) -> Option<BoxError> {
        {
            let mut st = lock(&self.state);
            if st.running {
                st.dirty = true;
                return None;
            }
            st.running = true;
            st.dirty = false;
        }
        let mut first_error = None;
        loop {
            if let Some(rt) = self.rt.upgrade() {
                if let Some(e) = self.step(&rt) {
                    first_error.get_or_insert(e);
                }
            }
            let mut st = lock(&self.state);
            if !st.dirty {
                st.running = false;
                break;
            }
            st.dirty = false;
        }
        first_error
    }

    fn step(&self, rt: &Arc<Runtime>) -> Option<BoxError> {
        let ready = self.outer.is_active() && self.requires.iter().all(|s| rt.has_service(s.id));
        let (instance, failed) = {
            let st = lock(&self.state);
            (st.instance.clone(), st.failed)
        };
        match (ready, instance) {
            (true, None) if !failed => {
                let instance = self.outer.child(&self.id).ok()?;
                lock(&self.state).instance = Some(instance.clone());
                let ctx = Context::from_parts(rt.clone(), instance.clone(), self.scope.clone());
                let config = lock(&self.config).clone();
                if let Err(error) = run_apply::<P>(&ctx, config) {
                    tracing::warn!(plugin = %self.id, %error, "deferred plugin failed to apply");
                    {
                        let mut st = lock(&self.state);
                        st.instance = None;
                        st.failed = true;
                    }
                    instance.dispose();
                    return Some(error);
                }
            }
            (false, Some(instance)) => {
                tracing::debug!(plugin = %self.id, "required service gone; unloading plugin");
                lock(&self.state).instance = None;
                instance.dispose();
            }
            (false, None) => lock(&self.state).failed = false,
            _ => {}
        }
        None
    }
}
