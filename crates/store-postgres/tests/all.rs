//! The PostgreSQL store's integration tests, against a throwaway cluster each.

mod suite;
