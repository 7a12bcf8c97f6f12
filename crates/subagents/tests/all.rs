//! The integration tests of dsh-subagents, one binary (see `suite`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
