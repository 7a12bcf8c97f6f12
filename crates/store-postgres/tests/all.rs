#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The PostgreSQL store's integration tests, against a throwaway cluster each.

mod suite;
