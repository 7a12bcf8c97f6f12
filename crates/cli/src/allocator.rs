//! The `dsh` binary's memory allocator: mimalloc (v2) in place of glibc's malloc.
//!
//! Reading a long session back allocates millions of small strings, on the reader's thread
//! and on the thread that decompresses and types lines ahead of it. With glibc's arenas that
//! costs 12–15 % more time than with mimalloc; the `dsh web` history pages and resume gain
//! likewise, and the peak RSS of a read is a little lower. A one-turn `dsh run` pays about
//! 0.3 ms more to start (docs/performance.md: "Session read path", stop 31, and "CLI
//! startup", stop 31).
//!
//! It is built without transparent huge pages (the `no_thp` feature): on a system with THP
//! in `madvise` mode mimalloc would ask for 2 MiB pages, which cost the start-up more than
//! they save.
//!
//! The allocator is the binary's choice: `main.rs` installs [`Allocator`]; the library and
//! its tests run on whatever allocator their binary has (`dsh-bench` forwards to this one,
//! so its in-process figures are the product's).

/// The global allocator `main.rs` installs.
pub use mimalloc::MiMalloc as Allocator;
