//! Scoped registries: one global layer plus lazily created per-scope layers.
//!
//! Registrations flow *down*: a scope's view is the global layer, then its ancestors'
//! layers farthest-first, then its own, so folding in that order makes the nearest
//! same-name entry win. Every mutation is an effect on the registering context, so layers
//! and entries unwind with their fiber.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::context::Context;
use crate::error::KernelError;
use crate::fiber::{lock, Disposer};
use crate::scope::ScopeKey;

/// The undo a layer mutation hands back; it runs under the layer lock.
pub type LayerUndo<L> = Box<dyn FnOnce(&mut L) + Send>;

type ChangeHook = Arc<dyn Fn(Option<&ScopeKey>) + Send + Sync>;

struct ScopedLayer<L> {
    layer: L,
    /// Live mutations in this layer; the layer is deleted when this drops to zero.
    live: usize,
}

struct LayersState<L> {
    global: L,
    scoped: HashMap<ScopeKey, ScopedLayer<L>>,
}

/// A global layer plus per-scope layers of `L`, behind one lock.
///
/// `action`/undo closures and the readers passed to `with_chain`/`with_own` run under that
/// lock: they must only touch the layer, never re-enter this `ScopedLayers`.
pub struct ScopedLayers<L> {
    state: Arc<Mutex<LayersState<L>>>,
    on_change: Option<ChangeHook>,
}

impl<L> Clone for ScopedLayers<L> {
    fn clone(&self) -> Self {
        ScopedLayers {
            state: self.state.clone(),
            on_change: self.on_change.clone(),
        }
    }
}

impl<L: Default + Send + 'static> Default for ScopedLayers<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Default + Send + 'static> ScopedLayers<L> {
    /// Empty global layer, no scoped layers.
    pub fn new() -> Self {
        ScopedLayers {
            state: Arc::new(Mutex::new(LayersState {
                global: L::default(),
                scoped: HashMap::new(),
            })),
            on_change: None,
        }
    }

    /// Calls `hook(scope)` (outside the lock) after every mutation and every undo.
    pub fn with_change_hook(
        mut self,
        hook: impl Fn(Option<&ScopeKey>) + Send + Sync + 'static,
    ) -> Self {
        self.on_change = Some(Arc::new(hook));
        self
    }

    /// Mutates the layer of `ctx.scope()` (global when `None`), creating a scoped layer on
    /// demand. `action` returns the undo, which runs when the returned disposer is disposed
    /// or `ctx`'s fiber unwinds. A scoped layer whose mutations have all been undone is
    /// deleted; a failing `action` leaves no freshly created layer behind.
    pub fn effect(
        &self,
        ctx: &Context,
        label: &str,
        action: impl FnOnce(&mut L) -> Result<LayerUndo<L>, KernelError>,
    ) -> Result<Disposer, KernelError> {
        ctx.fiber().ensure_active()?;
        let scope = ctx.scope().cloned();
        let undo = {
            let mut st = lock(&self.state);
            match &scope {
                None => action(&mut st.global)?,
                Some(key) => {
                    let created = !st.scoped.contains_key(key);
                    let slot = st.scoped.entry(key.clone()).or_insert_with(|| ScopedLayer {
                        layer: L::default(),
                        live: 0,
                    });
                    match action(&mut slot.layer) {
                        Ok(undo) => {
                            slot.live += 1;
                            undo
                        }
                        Err(e) => {
                            if created {
                                st.scoped.remove(key);
                            }
                            return Err(e);
                        }
                    }
                }
            }
        };
        self.changed(scope.as_ref());
        let state = Arc::downgrade(&self.state);
        let hook = self.on_change.clone();
        ctx.effect(label, move || {
            let Some(state) = state.upgrade() else { return };
            {
                let mut st = lock(&state);
                match &scope {
                    None => undo(&mut st.global),
                    Some(key) => {
                        if let Some(slot) = st.scoped.get_mut(key) {
                            undo(&mut slot.layer);
                            slot.live = slot.live.saturating_sub(1);
                            if slot.live == 0 {
                                st.scoped.remove(key);
                            }
                        }
                    }
                }
            }
            if let Some(hook) = hook {
                hook(scope.as_ref());
            }
        })
    }

    fn changed(&self, scope: Option<&ScopeKey>) {
        if let Some(hook) = &self.on_change {
            hook(scope);
        }
    }

    /// Reads the global layer and the existing layers on `scope`'s chain, farthest ancestor
    /// first and the exact scope last. Fold in this order so the nearest entry wins.
    pub fn with_chain<R>(&self, scope: Option<&ScopeKey>, f: impl FnOnce(&L, &[&L]) -> R) -> R {
        let st = lock(&self.state);
        let mut chain: Vec<&L> = Vec::new();
        if let Some(scope) = scope {
            for key in scope.chain().iter().rev() {
                if let Some(slot) = st.scoped.get(key) {
                    chain.push(&slot.layer);
                }
            }
        }
        f(&st.global, &chain)
    }

    /// Reads one layer without its chain: the global layer for `None`, else the scope's own
    /// layer if it exists.
    pub fn with_own<R>(&self, scope: Option<&ScopeKey>, f: impl FnOnce(Option<&L>) -> R) -> R {
        let st = lock(&self.state);
        match scope {
            None => f(Some(&st.global)),
            Some(key) => f(st.scoped.get(key).map(|s| &s.layer)),
        }
    }

    /// Number of scoped layers currently alive; for leak tests.
    #[doc(hidden)]
    pub fn scoped_layer_count(&self) -> usize {
        lock(&self.state).scoped.len()
    }
}

impl<T: Clone + Send + 'static> ScopedLayers<NamedEntries<T>> {
    /// Adds `value` under `name` in `ctx`'s layer; duplicate names within that layer are
    /// refused. Undone exactly (a later same-name entry is never removed by this disposer).
    pub fn insert_named(
        &self,
        ctx: &Context,
        name: impl Into<String>,
        value: T,
    ) -> Result<Disposer, KernelError> {
        let name = name.into();
        let label = name.clone();
        self.effect(ctx, &label, move |layer| {
            let id = layer.insert(name, value)?;
            Ok(Box::new(move |layer: &mut NamedEntries<T>| {
                layer.remove(id);
            }))
        })
    }

    /// The merged view of `scope`: global entries, then chain layers farthest-first, a later
    /// same-name entry replacing the earlier value in its original position.
    pub fn resolve(&self, scope: Option<&ScopeKey>) -> Vec<(String, T)> {
        self.with_chain(scope, |global, chain| {
            let mut out: Vec<(String, T)> = Vec::new();
            let mut index: HashMap<String, usize> = HashMap::new();
            for layer in std::iter::once(global).chain(chain.iter().copied()) {
                for (name, value) in layer.iter() {
                    match index.get(name) {
                        Some(&i) => out[i].1 = value.clone(),
                        None => {
                            index.insert(name.to_string(), out.len());
                            out.push((name.to_string(), value.clone()));
                        }
                    }
                }
            }
            out
        })
    }
}

static NEXT_ENTRY_ID: AtomicU64 = AtomicU64::new(1);

/// Identity of one entry in a [`NamedEntries`] or [`AnonymousEntries`]; removal by id is
/// exact, so undoing an old entry never removes a newer one with the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryId(u64);

impl EntryId {
    fn fresh() -> EntryId {
        EntryId(NEXT_ENTRY_ID.fetch_add(1, Ordering::Relaxed))
    }
}

/// Insertion-ordered entries with unique names.
#[derive(Debug)]
pub struct NamedEntries<T> {
    entries: Vec<(EntryId, String, T)>,
}

impl<T> Default for NamedEntries<T> {
    fn default() -> Self {
        NamedEntries {
            entries: Vec::new(),
        }
    }
}

impl<T> NamedEntries<T> {
    /// Appends `value` under `name`; `DUPLICATE_NAME` if the name is taken.
    pub fn insert(&mut self, name: impl Into<String>, value: T) -> Result<EntryId, KernelError> {
        let name = name.into();
        if self.contains(&name) {
            return Err(KernelError::DuplicateName { name });
        }
        let id = EntryId::fresh();
        self.entries.push((id, name, value));
        Ok(id)
    }

    /// Removes exactly the entry `id`; `None` if it is already gone.
    pub fn remove(&mut self, id: EntryId) -> Option<T> {
        let pos = self.entries.iter().position(|(i, _, _)| *i == id)?;
        Some(self.entries.remove(pos).2)
    }

    pub fn get(&self, name: &str) -> Option<&T> {
        self.entries
            .iter()
            .find(|(_, n, _)| n == name)
            .map(|(_, _, v)| v)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|(_, n, _)| n == name)
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.entries.iter().map(|(_, n, v)| (n.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Insertion-ordered entries without names; each push is independent.
#[derive(Debug)]
pub struct AnonymousEntries<T> {
    entries: Vec<(EntryId, T)>,
}

impl<T> Default for AnonymousEntries<T> {
    fn default() -> Self {
        AnonymousEntries {
            entries: Vec::new(),
        }
    }
}

impl<T> AnonymousEntries<T> {
    pub fn push(&mut self, value: T) -> EntryId {
        let id = EntryId::fresh();
        self.entries.push((id, value));
        id
    }

    /// Removes exactly the entry `id`; `None` if it is already gone.
    pub fn remove(&mut self, id: EntryId) -> Option<T> {
        let pos = self.entries.iter().position(|(i, _)| *i == id)?;
        Some(self.entries.remove(pos).1)
    }

    /// Values in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<T: Clone + Send + 'static> ScopedLayers<AnonymousEntries<T>> {
    /// Appends `value` to `ctx`'s layer until the disposer runs or the fiber unwinds.
    pub fn push(&self, ctx: &Context, label: &str, value: T) -> Result<Disposer, KernelError> {
        self.effect(ctx, label, move |layer| {
            let id = layer.push(value);
            Ok(Box::new(move |layer: &mut AnonymousEntries<T>| {
                layer.remove(id);
            }))
        })
    }

    /// Global values, then chain layers farthest-first.
    pub fn collect(&self, scope: Option<&ScopeKey>) -> Vec<T> {
        self.with_chain(scope, |global, chain| {
            std::iter::once(global)
                .chain(chain.iter().copied())
                .flat_map(|l| l.iter().cloned())
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_entries_exact_undo() {
        let mut e = NamedEntries::default();
        let a = e.insert("x", 1).unwrap();
        assert_eq!(e.insert("x", 2).unwrap_err().code(), "DUPLICATE_NAME");
        assert_eq!(e.remove(a), Some(1));
        assert_eq!(e.remove(a), None);
        let b = e.insert("x", 3).unwrap();
        assert_eq!(e.remove(a), None);
        assert_eq!(e.get("x"), Some(&3));
        assert_eq!(e.remove(b), Some(3));
        assert!(e.is_empty());
    }

    #[test]
    fn anonymous_entries_independent() {
        let mut e = AnonymousEntries::default();
        let a = e.push("a");
        let _b = e.push("a");
        e.remove(a);
        assert_eq!(e.iter().copied().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(e.len(), 1);
    }
}
