//! Poison-tolerant lock helpers, shared by every crate of the workspace.
//!
//! A panic while a lock is held poisons it. In this code base every critical section either
//! completes its mutation or leaves the data as it was (state is replaced wholesale after
//! validation), so a poisoned lock still guards consistent data, and refusing it would turn
//! one contained panic (a plugin's listener, say) into an unusable session. These helpers
//! take the guard either way.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering the guard if a holder panicked.
#[inline]
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Read-locks `lock`, recovering the guard if a writer panicked.
#[inline]
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Write-locks `lock`, recovering the guard if a holder panicked.
#[inline]
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_still_yields_its_data() {
        let m = Arc::new(Mutex::new(1));
        let r = Arc::new(RwLock::new(2));
        let (m2, r2) = (m.clone(), r.clone());
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            let _w = r2.write();
            panic!("poison both");
        })
        .join();
        assert!(m.is_poisoned() && r.is_poisoned());
        *lock(&m) += 1;
        *write(&r) += 1;
        assert_eq!((*lock(&m), *read(&r)), (2, 3));
    }
}
