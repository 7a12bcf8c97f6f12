//! `Context`: the handle plugins register through — runtime, current fiber, current scope.

use std::any::{type_name, Any, TypeId};
use std::future::Future;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::dispatch::Next;
use crate::error::{BoxError, KernelError};
use crate::events::{
    DispatchMode, ListenOptions, Listener, ListenerInfo, Notification, NotifyFn, NotifyKey,
    Parallel, ParallelFn, ParallelKey, Placement, Registry, Serial, SerialFn, SerialKey, TypeIdMap,
    Waterfall, WaterfallFn, WaterfallKey,
};
use crate::fiber::{lock, Disposer, Fiber};
use crate::scope::ScopeKey;

type Watcher = Arc<dyn Fn() + Send + Sync>;

struct ServiceEntry {
    id: u64,
    /// Holds an `Arc<T>` so unsized services (`Arc<dyn Trait>`) work too.
    value: Arc<dyn Any + Send + Sync>,
}

/// Shared state of one kernel instance.
pub(crate) struct Runtime {
    pub(crate) events: Registry,
    services: RwLock<TypeIdMap<ServiceEntry>>,
    /// Called (outside all locks) after any service appears or disappears.
    watchers: Mutex<Vec<(u64, Watcher)>>,
    next_id: AtomicU64,
}

impl Runtime {
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn has_service(&self, id: TypeId) -> bool {
        self.services
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&id)
    }

    fn notify_service_change(&self) {
        let watchers: Vec<Watcher> = lock(&self.watchers)
            .iter()
            .map(|(_, w)| w.clone())
            .collect();
        for w in watchers {
            w();
        }
    }

    /// Registers a callback run after every service change; returns its id for removal.
    pub(crate) fn add_watcher(&self, w: Watcher) -> u64 {
        let id = self.next_id();
        lock(&self.watchers).push((id, w));
        id
    }

    pub(crate) fn remove_watcher(&self, id: u64) {
        lock(&self.watchers).retain(|(i, _)| *i != id);
    }
}

/// The handle through which plugins register and dispatch. Cloning is cheap (two `Arc`s and
/// an optional scope key).
///
/// Every registration is an effect owned by [`Context::fiber`]; listeners and layered
/// registrations also remember [`Context::scope`].
#[derive(Clone)]
pub struct Context {
    pub(crate) rt: Arc<Runtime>,
    fiber: Fiber,
    scope: Option<ScopeKey>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("fiber", &self.fiber)
            .field("scope", &self.scope)
            .finish()
    }
}

impl Context {
    /// A fresh kernel with a root fiber and no scope.
    pub fn root() -> Context {
        Context {
            rt: Arc::new(Runtime {
                events: Registry::default(),
                services: RwLock::new(TypeIdMap::default()),
                watchers: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(1),
            }),
            fiber: Fiber::new_root("root"),
            scope: None,
        }
    }

    /// The fiber that owns registrations made through this context.
    pub fn fiber(&self) -> &Fiber {
        &self.fiber
    }

    /// The scope registrations made through this context land in (`None` = global).
    pub fn scope(&self) -> Option<&ScopeKey> {
        self.scope.as_ref()
    }

    /// Same fiber, but registrations land in `key`'s scope.
    pub fn with_scope(&self, key: ScopeKey) -> Context {
        Context {
            rt: self.rt.clone(),
            fiber: self.fiber.clone(),
            scope: Some(key),
        }
    }

    /// A context on a new child fiber (disposed with this one, before its own effects).
    pub fn child(&self, name: &str) -> Result<Context, KernelError> {
        Ok(self.on_fiber(self.fiber.child(name)?))
    }

    /// Mints a scope: binds `key` under `parent` (if given) and returns a context on a new
    /// child fiber whose registrations land in `key`. Disposing the returned context's fiber
    /// unwinds everything registered through it.
    pub fn create_scope(
        &self,
        key: ScopeKey,
        parent: Option<&ScopeKey>,
    ) -> Result<Context, KernelError> {
        self.fiber.ensure_active()?;
        if let Some(parent) = parent {
            key.bind_parent(parent)?;
        }
        let fiber = self.fiber.child(key.name())?;
        Ok(Context {
            rt: self.rt.clone(),
            fiber,
            scope: Some(key),
        })
    }

    pub(crate) fn from_parts(rt: Arc<Runtime>, fiber: Fiber, scope: Option<ScopeKey>) -> Context {
        Context { rt, fiber, scope }
    }

    pub(crate) fn on_fiber(&self, fiber: Fiber) -> Context {
        Context {
            rt: self.rt.clone(),
            fiber,
            scope: self.scope.clone(),
        }
    }

    /// Registers an undo owned by this context's fiber (see [`Fiber::add_effect`]).
    pub fn effect(
        &self,
        label: &str,
        undo: impl FnOnce() + Send + 'static,
    ) -> Result<Disposer, KernelError> {
        self.fiber.add_effect(label, undo)
    }

    // ----- services -----

    /// Provides the service of type `T` until the returned disposer runs or this fiber is
    /// disposed. One provider per type per kernel.
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        service: Arc<T>,
    ) -> Result<Disposer, KernelError> {
        self.fiber.ensure_active()?;
        let id = self.rt.next_id();
        {
            let mut services = self.rt.services.write().unwrap_or_else(|p| p.into_inner());
            if services.contains_key(&TypeId::of::<T>()) {
                return Err(KernelError::ServiceConflict {
                    service: type_name::<T>(),
                });
            }
            services.insert(
                TypeId::of::<T>(),
                ServiceEntry {
                    id,
                    value: Arc::new(service),
                },
            );
        }
        let weak: Weak<Runtime> = Arc::downgrade(&self.rt);
        let disposer = self.fiber.add_effect(type_name::<T>(), move || {
            let Some(rt) = weak.upgrade() else { return };
            let removed = {
                let mut services = rt.services.write().unwrap_or_else(|p| p.into_inner());
                let ours = services.get(&TypeId::of::<T>()).is_some_and(|e| e.id == id);
                ours.then(|| services.remove(&TypeId::of::<T>()))
            };
            if removed.is_some() {
                rt.notify_service_change();
            }
        })?;
        self.rt.notify_service_change();
        Ok(disposer)
    }

    /// The service of type `T`, if provided.
    pub fn get<T: ?Sized + Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let services = self.rt.services.read().unwrap_or_else(|p| p.into_inner());
        services
            .get(&TypeId::of::<T>())
            .and_then(|e| e.value.downcast_ref::<Arc<T>>())
            .cloned()
    }

    /// The service of type `T`, or `SERVICE_MISSING`.
    pub fn require<T: ?Sized + Send + Sync + 'static>(&self) -> Result<Arc<T>, KernelError> {
        self.get::<T>().ok_or(KernelError::ServiceMissing {
            service: type_name::<T>(),
        })
    }

    // ----- listeners -----

    /// Every public registration method is `#[track_caller]` down to here, so the site the
    /// kernel records is the plugin's call, not a line of this file.
    #[track_caller]
    fn listen<F: ?Sized + Send + Sync + 'static>(
        &self,
        key: TypeId,
        label: &'static str,
        mode: DispatchMode,
        opts: ListenOptions,
        call: Arc<F>,
    ) -> Result<Disposer, KernelError> {
        self.fiber.ensure_active()?;
        let id = self.rt.next_id();
        let listener = Listener {
            id,
            scope: self.scope.clone(),
            global: opts.global,
            call,
        };
        let placement = Placement {
            event: label,
            mode,
            owner: self.fiber.path().into(),
            registered_at: Location::caller(),
            prepend: opts.prepend,
        };
        self.rt.events.insert::<F>(key, listener, placement);
        let weak = Arc::downgrade(&self.rt);
        self.fiber.add_effect(label, move || {
            if let Some(rt) = weak.upgrade() {
                rt.events.remove::<F>(key, id);
            }
        })
    }

    /// Observes notification `E` (dispatched with [`Context::emit`]).
    #[track_caller]
    pub fn on<E: Notification>(
        &self,
        f: impl Fn(&E::Payload) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<Disposer, KernelError> {
        self.on_with::<E>(ListenOptions::default(), f)
    }

    /// [`Context::on`] with options.
    #[track_caller]
    pub fn on_with<E: Notification>(
        &self,
        opts: ListenOptions,
        f: impl Fn(&E::Payload) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<Disposer, KernelError> {
        let call: Arc<NotifyFn<E>> = Arc::new(f);
        self.listen(
            TypeId::of::<NotifyKey<E>>(),
            E::NAME,
            DispatchMode::Notification,
            opts,
            call,
        )
    }

    /// Observes the next `E` this context would hear, then unregisters itself.
    #[track_caller]
    pub fn once<E: Notification>(
        &self,
        f: impl FnOnce(&E::Payload) -> Result<(), BoxError> + Send + 'static,
    ) -> Result<Disposer, KernelError> {
        let own: Arc<OnceLock<Disposer>> = Arc::new(OnceLock::new());
        let pending = Mutex::new(Some(f));
        let own_in_listener = own.clone();
        let disposer = self.on::<E>(move |payload| {
            let Some(f) = lock(&pending).take() else {
                return Ok(());
            };
            if let Some(d) = own_in_listener.get() {
                d.dispose();
            }
            f(payload)
        })?;
        // Only this call sets it; a failed set is impossible and harmless.
        let _ = own.set(disposer.clone());
        Ok(disposer)
    }

    /// Joins serial chain `E`; returning `Some` stops the chain with that value.
    #[track_caller]
    pub fn on_serial<E: Serial, F, Fut>(&self, f: F) -> Result<Disposer, KernelError>
    where
        F: Fn(Arc<E::Args>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<E::Output>, BoxError>> + Send + 'static,
    {
        self.on_serial_with::<E, F, Fut>(ListenOptions::default(), f)
    }

    /// [`Context::on_serial`] with options.
    #[track_caller]
    pub fn on_serial_with<E: Serial, F, Fut>(
        &self,
        opts: ListenOptions,
        f: F,
    ) -> Result<Disposer, KernelError>
    where
        F: Fn(Arc<E::Args>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<E::Output>, BoxError>> + Send + 'static,
    {
        let call: Arc<SerialFn<E>> = Arc::new(move |args| Box::pin(f(args)));
        self.listen(
            TypeId::of::<SerialKey<E>>(),
            E::NAME,
            DispatchMode::Serial,
            opts,
            call,
        )
    }

    /// Joins parallel event `E`.
    #[track_caller]
    pub fn on_parallel<E: Parallel, F, Fut>(&self, f: F) -> Result<Disposer, KernelError>
    where
        F: Fn(Arc<E::Args>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.on_parallel_with::<E, F, Fut>(ListenOptions::default(), f)
    }

    /// [`Context::on_parallel`] with options.
    #[track_caller]
    pub fn on_parallel_with<E: Parallel, F, Fut>(
        &self,
        opts: ListenOptions,
        f: F,
    ) -> Result<Disposer, KernelError>
    where
        F: Fn(Arc<E::Args>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        let call: Arc<ParallelFn<E>> = Arc::new(move |args| Box::pin(f(args)));
        self.listen(
            TypeId::of::<ParallelKey<E>>(),
            E::NAME,
            DispatchMode::Parallel,
            opts,
            call,
        )
    }

    /// Joins waterfall `E` as middleware: call `next.run().await` to continue inward, or
    /// return without it to veto.
    #[track_caller]
    pub fn on_waterfall<E: Waterfall, F, Fut>(&self, f: F) -> Result<Disposer, KernelError>
    where
        F: Fn(Arc<E::Args>, Next<E>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<E::Output, BoxError>> + Send + 'static,
    {
        self.on_waterfall_with::<E, F, Fut>(ListenOptions::default(), f)
    }

    /// [`Context::on_waterfall`] with options.
    #[track_caller]
    pub fn on_waterfall_with<E: Waterfall, F, Fut>(
        &self,
        opts: ListenOptions,
        f: F,
    ) -> Result<Disposer, KernelError>
    where
        F: Fn(Arc<E::Args>, Next<E>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<E::Output, BoxError>> + Send + 'static,
    {
        let call: Arc<WaterfallFn<E>> = Arc::new(move |args, next| Box::pin(f(args, next)));
        self.listen(
            TypeId::of::<WaterfallKey<E>>(),
            E::NAME,
            DispatchMode::Waterfall,
            opts,
            call,
        )
    }

    /// Every live listener of this kernel (all scopes), sorted by extension point: the
    /// machine-readable half of `docs/extension-points.md`.
    pub fn listeners(&self) -> Vec<ListenerInfo> {
        self.rt.events.describe()
    }

    /// Number of live listeners and services in this kernel; for leak tests.
    #[doc(hidden)]
    pub fn live_counts(&self) -> (usize, usize) {
        let services = self
            .rt
            .services
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        (self.rt.events.len(), services)
    }
}
