//! Typed extension points and the listener registry behind them.
//!
//! Each extension point is a Rust type implementing one of the mode traits. Listeners are
//! stored per (event type, mode) as an immutable `Arc<[Listener]>` that registration and
//! removal replace copy-on-write, so a dispatch snapshots the whole list by cloning one `Arc`
//! and holds no lock while listeners run.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::marker::PhantomData;
use std::panic::Location;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use crate::dispatch::Next;
use crate::error::BoxError;
use crate::scope::ScopeKey;

/// A heap-allocated, sendable future, the return type of async listeners.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// An extension point. The name is for logs and diagnostics only; identity is the type.
pub trait Event: 'static {
    const NAME: &'static str;
}

/// Fire-and-forget, synchronous observers (`emit`).
pub trait Notification: Event {
    type Payload: Send + Sync + 'static;
}

/// Listeners awaited one by one; the first `Some` result wins (`serial`).
pub trait Serial: Event {
    type Args: Send + Sync + 'static;
    type Output: Send + 'static;
}

/// Listeners run concurrently; all are awaited and failures aggregated (`parallel`).
pub trait Parallel: Event {
    type Args: Send + Sync + 'static;
}

/// Async middleware: each listener gets the args and a [`Next`]; not calling it vetoes
/// everything inward, including the dispatcher's default (`waterfall`).
pub trait Waterfall: Event {
    type Args: Send + Sync + 'static;
    type Output: Send + 'static;
}

/// How a listener is inserted and filtered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenOptions {
    /// Insert before the existing listeners instead of after them.
    pub prepend: bool,
    /// Hear every dispatch regardless of scope carrier.
    pub global: bool,
}

impl ListenOptions {
    /// Options with `prepend` set.
    pub fn prepend() -> Self {
        ListenOptions {
            prepend: true,
            global: false,
        }
    }
    /// Options with `global` set.
    pub fn global() -> Self {
        ListenOptions {
            prepend: false,
            global: true,
        }
    }
}

pub(crate) type NotifyFn<E> =
    dyn Fn(&<E as Notification>::Payload) -> Result<(), BoxError> + Send + Sync;
pub(crate) type SerialFn<E> = dyn Fn(Arc<<E as Serial>::Args>) -> BoxFuture<Result<Option<<E as Serial>::Output>, BoxError>>
    + Send
    + Sync;
pub(crate) type ParallelFn<E> =
    dyn Fn(Arc<<E as Parallel>::Args>) -> BoxFuture<Result<(), BoxError>> + Send + Sync;
pub(crate) type WaterfallFn<E> = dyn Fn(
        Arc<<E as Waterfall>::Args>,
        Next<E>,
    ) -> BoxFuture<Result<<E as Waterfall>::Output, BoxError>>
    + Send
    + Sync;

/// Registry keys: one per (event type, mode), so an event type may serve several modes.
pub(crate) struct NotifyKey<E>(PhantomData<E>);
pub(crate) struct SerialKey<E>(PhantomData<E>);
pub(crate) struct ParallelKey<E>(PhantomData<E>);
pub(crate) struct WaterfallKey<E>(PhantomData<E>);

pub(crate) struct Listener<F: ?Sized> {
    pub(crate) id: u64,
    pub(crate) scope: Option<ScopeKey>,
    pub(crate) global: bool,
    pub(crate) call: Arc<F>,
}

impl<F: ?Sized> Clone for Listener<F> {
    fn clone(&self) -> Self {
        Listener {
            id: self.id,
            scope: self.scope.clone(),
            global: self.global,
            call: self.call.clone(),
        }
    }
}

/// The four dispatch modes an extension point can be declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DispatchMode {
    /// [`Notification`]: synchronous, contained observers.
    Notification,
    /// [`Serial`]: awaited one by one, first `Some` wins.
    Serial,
    /// [`Parallel`]: all awaited concurrently, failures aggregated.
    Parallel,
    /// [`Waterfall`]: async middleware with `next`.
    Waterfall,
}

impl DispatchMode {
    /// The lowercase word used in docs (`notification`, `serial`, `parallel`, `waterfall`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Notification => "notification",
            Self::Serial => "serial",
            Self::Parallel => "parallel",
            Self::Waterfall => "waterfall",
        }
    }
}

/// One live listener, as [`crate::Context::listeners`] reports it: which extension point it
/// joined, and which fiber owns it. This is what lets a test (and `docs/extension-points.md`)
/// say who listens to what without reading every plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    /// The extension point's [`Event::NAME`].
    pub event: &'static str,
    pub mode: DispatchMode,
    /// The owning fiber's path from the root, `/`-separated (`root/store/...`); the first
    /// segment below the root is the composition row that registered it.
    pub owner: Arc<str>,
    /// Registered in a scope (an agent's context) rather than globally.
    pub scoped: bool,
    /// Registered with [`ListenOptions::global`].
    pub global: bool,
    /// The source line that registered it (the caller of `on`, `on_waterfall`, ...), so a
    /// live listener can be matched to its code.
    pub registered_at: &'static Location<'static>,
}

/// What the registry keeps about each listener of a slot, beside the typed list.
#[derive(Clone)]
struct ListenerMeta {
    id: u64,
    owner: Arc<str>,
    scoped: bool,
    global: bool,
    registered_at: &'static Location<'static>,
}

impl<F: ?Sized> Listener<F> {
    /// Scope routing: global and unscoped listeners hear everything; a listener in scope S
    /// hears a dispatch whose carrier is S or a descendant of S; an unscoped dispatch
    /// reaches unscoped listeners only.
    #[inline]
    pub(crate) fn hears(&self, carrier: Option<&ScopeKey>) -> bool {
        if self.global {
            return true;
        }
        match (&self.scope, carrier) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(own), Some(carrier)) => carrier.is_self_or_descendant_of(own),
        }
    }
}

/// Hasher for `TypeId` keys, which are already well distributed; avoids SipHash on the
/// emit hot path.
#[derive(Default)]
pub(crate) struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type TypeIdMap<V> = HashMap<TypeId, V, BuildHasherDefault<TypeIdHasher>>;

struct Slot {
    len: usize,
    /// Always an `Arc<[Listener<F>]>` for the `F` that belongs to the key.
    list: Box<dyn Any + Send + Sync>,
    event: &'static str,
    mode: DispatchMode,
    /// Same order as `list`; read only by [`Registry::describe`], never on dispatch.
    meta: Vec<ListenerMeta>,
}

/// Where a new listener goes and who owns it.
pub(crate) struct Placement {
    pub(crate) event: &'static str,
    pub(crate) mode: DispatchMode,
    pub(crate) owner: Arc<str>,
    pub(crate) registered_at: &'static Location<'static>,
    pub(crate) prepend: bool,
}

#[derive(Default)]
pub(crate) struct Registry {
    slots: RwLock<TypeIdMap<Slot>>,
}

impl Registry {
    /// Clones the current listener list for `key` (one `Arc` clone).
    #[inline]
    pub(crate) fn snapshot<F: ?Sized + Send + Sync + 'static>(
        &self,
        key: TypeId,
    ) -> Option<Arc<[Listener<F>]>> {
        let slots = self.slots.read().unwrap_or_else(|p| p.into_inner());
        slots
            .get(&key)
            .and_then(|s| s.list.downcast_ref::<Arc<[Listener<F>]>>())
            .cloned()
    }

    pub(crate) fn insert<F: ?Sized + Send + Sync + 'static>(
        &self,
        key: TypeId,
        listener: Listener<F>,
        placement: Placement,
    ) {
        let mut slots = self.slots.write().unwrap_or_else(|p| p.into_inner());
        let (old, old_meta): (&[Listener<F>], &[ListenerMeta]) = slots
            .get(&key)
            .and_then(|s| {
                s.list
                    .downcast_ref::<Arc<[Listener<F>]>>()
                    .map(|a| (&a[..], &s.meta[..]))
            })
            .unwrap_or((&[], &[]));
        let meta = ListenerMeta {
            id: listener.id,
            owner: placement.owner,
            scoped: listener.scope.is_some(),
            global: listener.global,
            registered_at: placement.registered_at,
        };
        let mut next = Vec::with_capacity(old.len() + 1);
        let mut next_meta = Vec::with_capacity(old.len() + 1);
        if placement.prepend {
            next.push(listener);
            next.extend_from_slice(old);
            next_meta.push(meta);
            next_meta.extend_from_slice(old_meta);
        } else {
            next.extend_from_slice(old);
            next.push(listener);
            next_meta.extend_from_slice(old_meta);
            next_meta.push(meta);
        }
        let list: Arc<[Listener<F>]> = next.into();
        slots.insert(
            key,
            Slot {
                len: list.len(),
                list: Box::new(list),
                event: placement.event,
                mode: placement.mode,
                meta: next_meta,
            },
        );
    }

    pub(crate) fn remove<F: ?Sized + Send + Sync + 'static>(&self, key: TypeId, id: u64) {
        let mut slots = self.slots.write().unwrap_or_else(|p| p.into_inner());
        let Some(old) = slots
            .get(&key)
            .and_then(|s| s.list.downcast_ref::<Arc<[Listener<F>]>>())
        else {
            return;
        };
        if !old.iter().any(|l| l.id == id) {
            return;
        }
        let next: Vec<Listener<F>> = old.iter().filter(|l| l.id != id).cloned().collect();
        if next.is_empty() {
            slots.remove(&key);
        } else if let Some(slot) = slots.get_mut(&key) {
            let list: Arc<[Listener<F>]> = next.into();
            slot.len = list.len();
            slot.list = Box::new(list);
            slot.meta.retain(|m| m.id != id);
        }
    }

    /// Every live listener, grouped by extension point in registration order.
    pub(crate) fn describe(&self) -> Vec<ListenerInfo> {
        let slots = self.slots.read().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<ListenerInfo> = slots
            .values()
            .flat_map(|slot| {
                slot.meta.iter().map(|m| ListenerInfo {
                    event: slot.event,
                    mode: slot.mode,
                    owner: m.owner.clone(),
                    scoped: m.scoped,
                    global: m.global,
                    registered_at: m.registered_at,
                })
            })
            .collect();
        out.sort_by(|a, b| (a.event, a.mode).cmp(&(b.event, b.mode)));
        out
    }

    /// Total number of registered listeners across all events and modes.
    pub(crate) fn len(&self) -> usize {
        let slots = self.slots.read().unwrap_or_else(|p| p.into_inner());
        slots.values().map(|s| s.len).sum()
    }
}
