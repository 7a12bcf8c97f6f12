//! Integration tests of dsh-modes: one binary, suites under `suite/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
