//! The integration tests of dsh-modes, one binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
