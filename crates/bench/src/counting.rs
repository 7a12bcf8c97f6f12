//! Allocation counting and thread CPU time, for benches that explain their figures.
//!
//! [`CountingAlloc`] is the binary's global allocator: it forwards to mimalloc, the allocator
//! the `dsh` binary uses (so in-process figures are the product's), and, only while a bench
//! has switched counting on ([`start`]), counts allocations and the bytes currently
//! allocated. Switched off (the default) it costs one relaxed load per call,
//! so the other benches' figures are unaffected.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use dsh_cli::allocator::Allocator as Inner;

static ENABLED: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

pub struct CountingAlloc;

fn grew(bytes: usize) {
    LIVE_BYTES.fetch_add(bytes as i64, Relaxed);
}

// SAFETY: every call forwards to `Inner` (mimalloc) with the caller's arguments; the
// counters never touch the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let ptr = unsafe { Inner.alloc(layout) };
        if ENABLED.load(Relaxed) && !ptr.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let ptr = unsafe { Inner.alloc_zeroed(layout) };
        if ENABLED.load(Relaxed) && !ptr.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ENABLED.load(Relaxed) {
            LIVE_BYTES.fetch_sub(layout.size() as i64, Relaxed);
        }
        // SAFETY: forwarded as is.
        unsafe { Inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let new = unsafe { Inner.realloc(ptr, layout, new_size) };
        if ENABLED.load(Relaxed) && !new.is_null() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        }
        new
    }
}

/// Switches counting on (for the rest of the process).
pub fn start() {
    ENABLED.store(true, Relaxed);
}

/// Allocations (including reallocations) counted so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Relaxed)
}

/// Bytes allocated and not yet freed since counting started (blocks allocated before and
/// freed after make this a slight undercount).
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Relaxed)
}

/// CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
