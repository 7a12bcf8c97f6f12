//! Fibers and effects: ownership of everything a plugin registers.
//!
//! A fiber owns an ordered list of effects (undo closures) and a list of child fibers.
//! Disposing it disposes the children first (newest first), then runs the effects in reverse
//! registration order, exactly once. No lock is held while an undo or a child's teardown
//! runs, so undos may freely register, dispose or dispatch.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::error::{panic_message, KernelError};

type Undo = Box<dyn FnOnce() + Send>;

static NEXT_EFFECT_ID: AtomicU64 = AtomicU64::new(1);

/// One registered undo; the slot is emptied by whoever runs it first.
struct EffectSlot {
    id: u64,
    label: Box<str>,
    undo: Mutex<Option<Undo>>,
}

impl EffectSlot {
    fn run(&self, fiber: &str) {
        let undo = lock(&self.undo).take();
        if let Some(undo) = undo {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(undo)) {
                tracing::error!(
                    fiber,
                    effect = &*self.label,
                    panic = %panic_message(&*payload),
                    "effect disposer panicked"
                );
            }
        }
    }
}

struct FiberState {
    active: bool,
    effects: Vec<Arc<EffectSlot>>,
    children: Vec<Fiber>,
}

pub(crate) struct FiberInner {
    name: Box<str>,
    parent: Option<Weak<FiberInner>>,
    state: Mutex<FiberState>,
}

/// One loaded plugin instance (or scope): the owner of effects and child fibers.
/// Clones share the same fiber.
#[derive(Clone)]
pub struct Fiber {
    inner: Arc<FiberInner>,
}

// Kernel state is kept consistent before any user code runs, so a panic elsewhere never
// leaves it half-updated: poison is ignored (see `crate::sync`).
pub(crate) use crate::sync::lock;

impl Fiber {
    pub(crate) fn new_root(name: &str) -> Fiber {
        Fiber::build(name, None)
    }

    fn build(name: &str, parent: Option<Weak<FiberInner>>) -> Fiber {
        Fiber {
            inner: Arc::new(FiberInner {
                name: name.into(),
                parent,
                state: Mutex::new(FiberState {
                    active: true,
                    effects: Vec::new(),
                    children: Vec::new(),
                }),
            }),
        }
    }

    /// The name given at creation (plugin name or composition row id).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The names from the root fiber down to this one, joined with `/` (`root/store`).
    pub fn path(&self) -> String {
        let mut names = vec![self.inner.name.to_string()];
        let mut parent = self.inner.parent.as_ref().and_then(Weak::upgrade);
        while let Some(p) = parent {
            names.push(p.name.to_string());
            parent = p.parent.as_ref().and_then(Weak::upgrade);
        }
        names.reverse();
        names.join("/")
    }

    /// False once `dispose` has started.
    pub fn is_active(&self) -> bool {
        lock(&self.inner.state).active
    }

    /// Creates a child fiber that is disposed (before this fiber's own effects) when this
    /// fiber is disposed.
    pub fn child(&self, name: &str) -> Result<Fiber, KernelError> {
        let child = Fiber::build(name, Some(Arc::downgrade(&self.inner)));
        let mut st = lock(&self.inner.state);
        if !st.active {
            return Err(self.inactive());
        }
        st.children.push(child.clone());
        Ok(child)
    }

    /// Registers an undo owned by this fiber. When the fiber is already disposed the undo
    /// runs immediately (so the caller's half-done registration is rolled back) and an
    /// `INACTIVE_EFFECT` error is returned.
    pub fn add_effect(
        &self,
        label: &str,
        undo: impl FnOnce() + Send + 'static,
    ) -> Result<Disposer, KernelError> {
        let slot = Arc::new(EffectSlot {
            id: NEXT_EFFECT_ID.fetch_add(1, Ordering::Relaxed),
            label: label.into(),
            undo: Mutex::new(Some(Box::new(undo))),
        });
        {
            let mut st = lock(&self.inner.state);
            if st.active {
                st.effects.push(slot.clone());
                return Ok(Disposer {
                    slot,
                    fiber: Arc::downgrade(&self.inner),
                });
            }
        }
        slot.run(&self.inner.name);
        Err(self.inactive())
    }

    /// Fails with `INACTIVE_EFFECT` when this fiber is disposed; a cheap pre-check before
    /// doing work that would be rolled back anyway.
    pub(crate) fn ensure_active(&self) -> Result<(), KernelError> {
        if self.is_active() {
            Ok(())
        } else {
            Err(self.inactive())
        }
    }

    fn inactive(&self) -> KernelError {
        KernelError::InactiveEffect {
            fiber: self.inner.name.to_string(),
        }
    }

    /// Tears the fiber down: children first (newest first), then effects in reverse
    /// registration order. Runs once; later calls are no-ops.
    pub fn dispose(&self) {
        let (children, effects) = {
            let mut st = lock(&self.inner.state);
            if !st.active {
                return;
            }
            st.active = false;
            (
                std::mem::take(&mut st.children),
                std::mem::take(&mut st.effects),
            )
        };
        for child in children.iter().rev() {
            child.dispose();
        }
        for slot in effects.iter().rev() {
            slot.run(&self.inner.name);
        }
        if let Some(parent) = self.inner.parent.as_ref().and_then(Weak::upgrade) {
            lock(&parent.state)
                .children
                .retain(|c| !Arc::ptr_eq(&c.inner, &self.inner));
        }
    }

    /// Number of live effects and children; used by tests to prove nothing is left behind.
    #[doc(hidden)]
    pub fn live_counts(&self) -> (usize, usize) {
        let st = lock(&self.inner.state);
        (st.effects.len(), st.children.len())
    }
}

impl std::fmt::Debug for Fiber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fiber")
            .field("name", &&*self.inner.name)
            .field("active", &self.is_active())
            .finish()
    }
}

/// Handle to one registration. `dispose` removes exactly this registration, once; dropping
/// the handle leaves the registration owned by its fiber.
#[must_use = "dropping a Disposer keeps the registration until its fiber is disposed; call .forget() to say so"]
#[derive(Clone)]
pub struct Disposer {
    slot: Arc<EffectSlot>,
    fiber: Weak<FiberInner>,
}

impl Disposer {
    /// Runs this registration's undo now (no-op if it already ran).
    pub fn dispose(&self) {
        let fiber = self.fiber.upgrade();
        if let Some(f) = &fiber {
            let id = self.slot.id;
            lock(&f.state).effects.retain(|s| s.id != id);
        }
        let name = fiber.as_ref().map(|f| &*f.name).unwrap_or("<dropped>");
        self.slot.run(name);
    }

    /// Keeps the registration until the owning fiber is disposed.
    pub fn forget(self) {}

    /// True once the undo has run (by this handle or by the fiber's teardown).
    pub fn is_disposed(&self) -> bool {
        lock(&self.slot.undo).is_none()
    }
}

impl std::fmt::Debug for Disposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disposer")
            .field("label", &&*self.slot.label)
            .field("disposed", &self.is_disposed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> Arc<Mutex<Vec<String>>> {
        Arc::new(Mutex::new(Vec::new()))
    }

    fn push(l: &Arc<Mutex<Vec<String>>>, s: &str) -> impl FnOnce() + Send + 'static {
        let l = l.clone();
        let s = s.to_string();
        move || l.lock().unwrap().push(s)
    }

    #[test]
    fn reverse_order_children_first_once() {
        let l = log();
        let root = Fiber::new_root("root");
        root.add_effect("a", push(&l, "a")).unwrap().forget();
        let child = root.child("child").unwrap();
        child.add_effect("c1", push(&l, "c1")).unwrap().forget();
        child.add_effect("c2", push(&l, "c2")).unwrap().forget();
        root.add_effect("b", push(&l, "b")).unwrap().forget();
        root.dispose();
        root.dispose();
        assert_eq!(*l.lock().unwrap(), vec!["c2", "c1", "b", "a"]);
        assert!(!child.is_active());
    }

    #[test]
    fn disposer_is_exact_and_idempotent() {
        let l = log();
        let f = Fiber::new_root("f");
        let d1 = f.add_effect("x", push(&l, "x1")).unwrap();
        f.add_effect("x", push(&l, "x2")).unwrap().forget();
        d1.dispose();
        d1.dispose();
        assert!(d1.is_disposed());
        assert_eq!(f.live_counts(), (1, 0));
        f.dispose();
        assert_eq!(*l.lock().unwrap(), vec!["x1", "x2"]);
    }

    #[test]
    fn inactive_fiber_refuses_and_rolls_back() {
        let l = log();
        let f = Fiber::new_root("gone");
        f.dispose();
        let err = f.add_effect("late", push(&l, "late")).unwrap_err();
        assert_eq!(err.code(), "INACTIVE_EFFECT");
        assert_eq!(*l.lock().unwrap(), vec!["late"]);
        assert_eq!(f.child("c").unwrap_err().code(), "INACTIVE_EFFECT");
    }

    #[test]
    fn disposed_child_leaves_parent() {
        let root = Fiber::new_root("root");
        let child = root.child("c").unwrap();
        assert_eq!(root.live_counts(), (0, 1));
        child.dispose();
        assert_eq!(root.live_counts(), (0, 0));
    }

    #[test]
    fn panicking_undo_does_not_stop_teardown() {
        let l = log();
        let f = Fiber::new_root("f");
        f.add_effect("a", push(&l, "a")).unwrap().forget();
        f.add_effect("boom", || panic!("boom")).unwrap().forget();
        f.dispose();
        assert_eq!(*l.lock().unwrap(), vec!["a"]);
    }
}
