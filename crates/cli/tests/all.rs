#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Integration tests of the `dsh` binary, one test binary for the whole crate.

mod suite;
