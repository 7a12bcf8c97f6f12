//! The `dsh` binary's memory allocator: mimalloc (v2) in place of glibc's malloc.
//!
//! Reading a long session back allocates millions of small strings, on the reader's thread
//! and on the thread that decompresses and types lines ahead of it. With glibc's arenas that
//! costs 12–15 % more time than with mimalloc; the `dsh web` history pages and resume gain
//! likewise, and a one-turn `dsh run` pays about 0.3 ms more to start (docs/performance.md,
//! "The allocator").
//!
//! Two settings keep its memory in line:
//! - no transparent huge pages (the `no_thp` build feature): on a `madvise` THP system
//!   mimalloc would ask for 2 MiB pages, which cost the start-up more than they save;
//! - freed memory is returned at once ([`tune`]), not after mimalloc's default 10 ms: the
//!   first read of a log the listing index has not seen yet summarizes it, then reads it
//!   again, and with the delay the second read's peak sat on top of the first's (83 MiB
//!   against 63 MiB at 100k events).
//!
//! The allocator is the binary's choice: `main.rs` installs [`Allocator`] and calls
//! [`tune`]; the library and its tests run on whatever allocator their binary has.

/// The global allocator `main.rs` installs.
pub use mimalloc::MiMalloc as Allocator;

/// `mi_option_purge_delay` in mimalloc v2's `mi_option_e` (mimalloc.h of v2.3.2, the version
/// the pinned `libmimalloc-sys` builds); the crate does not name it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Applies the settings above. Call it first thing in `main`: it only affects later frees.
pub fn tune() {
    // SAFETY: mi_option_set only stores the value in mimalloc's option table; any option
    // number below `_mi_option_last` is valid, and 15 is the purge delay in v2.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tune_sets_the_purge_delay_to_immediate() {
        tune();
        // SAFETY: reads the option table.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 0);
    }
}
