//! The file tools: `read`, `write` and `edit`, and the observation store behind the
//! read-before-edit guard.

mod observe;

pub use observe::{content_hash, ContentHasher, Observation, ObservationStore};
