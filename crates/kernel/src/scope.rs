//! Scope keys: identities with an optional, bind-once parent.
//!
//! Events flow *up* the parent chain (a listener in an ancestor scope hears its descendants'
//! dispatches) and registrations flow *down* (a scope sees its ancestors' layers).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::KernelError;

/// Serializes parent binding so two concurrent binds cannot jointly form a cycle.
static BIND_LOCK: Mutex<()> = Mutex::new(());

struct ScopeInner {
    name: String,
    parent: OnceLock<ScopeKey>,
}

/// An opaque scope identity. Clones are the same scope; equality and hashing are by identity.
#[derive(Clone)]
pub struct ScopeKey {
    inner: Arc<ScopeInner>,
}

impl ScopeKey {
    /// A fresh scope with no parent. The name is only for diagnostics.
    pub fn new(name: impl Into<String>) -> ScopeKey {
        ScopeKey {
            inner: Arc::new(ScopeInner {
                name: name.into(),
                parent: OnceLock::new(),
            }),
        }
    }

    /// The diagnostic name given at creation.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Links this scope under `parent`. Allowed once per key; refuses cycles.
    pub fn bind_parent(&self, parent: &ScopeKey) -> Result<(), KernelError> {
        let _guard = BIND_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        if self.inner.parent.get().is_some() {
            return Err(KernelError::ScopeAlreadyBound);
        }
        if parent.is_self_or_descendant_of(self) {
            return Err(KernelError::ScopeCycle);
        }
        self.inner
            .parent
            .set(parent.clone())
            .map_err(|_| KernelError::ScopeAlreadyBound)
    }

    /// The bound parent, if any.
    pub fn parent(&self) -> Option<ScopeKey> {
        self.inner.parent.get().cloned()
    }

    /// `[self, parent, grandparent, ..]`.
    pub fn chain(&self) -> Vec<ScopeKey> {
        let mut out = vec![self.clone()];
        let mut cur = self.inner.parent.get();
        while let Some(p) = cur {
            out.push(p.clone());
            cur = p.inner.parent.get();
        }
        out
    }

    /// True when `ancestor` is this scope or appears on its parent chain. Allocation-free:
    /// this runs for every scoped listener on every scoped dispatch.
    pub fn is_self_or_descendant_of(&self, ancestor: &ScopeKey) -> bool {
        let mut cur = Some(self);
        while let Some(k) = cur {
            if Arc::ptr_eq(&k.inner, &ancestor.inner) {
                return true;
            }
            cur = k.inner.parent.get();
        }
        false
    }
}

impl PartialEq for ScopeKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
impl Eq for ScopeKey {}

impl Hash for ScopeKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.inner) as usize).hash(state);
    }
}

impl fmt::Debug for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScopeKey({})", self.inner.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_and_descendant() {
        let a = ScopeKey::new("a");
        let b = ScopeKey::new("b");
        let c = ScopeKey::new("c");
        b.bind_parent(&a).unwrap();
        c.bind_parent(&b).unwrap();
        assert_eq!(c.chain(), vec![c.clone(), b.clone(), a.clone()]);
        assert!(c.is_self_or_descendant_of(&a));
        assert!(c.is_self_or_descendant_of(&c));
        assert!(!a.is_self_or_descendant_of(&c));
        assert_eq!(c.parent(), Some(b));
    }

    #[test]
    fn bind_once_and_no_cycles() {
        let a = ScopeKey::new("a");
        let b = ScopeKey::new("b");
        b.bind_parent(&a).unwrap();
        assert_eq!(b.bind_parent(&a).unwrap_err().code(), "SCOPE_ALREADY_BOUND");
        assert_eq!(a.bind_parent(&b).unwrap_err().code(), "SCOPE_CYCLE");
        assert_eq!(a.bind_parent(&a).unwrap_err().code(), "SCOPE_CYCLE");
    }

    #[test]
    fn identity_equality() {
        let a = ScopeKey::new("same");
        let b = ScopeKey::new("same");
        assert_ne!(a, b);
        assert_eq!(a, a.clone());
        assert_eq!(format!("{a:?}"), "ScopeKey(same)");
    }
}
