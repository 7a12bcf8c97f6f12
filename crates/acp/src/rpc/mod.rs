//! Newline-delimited JSON-RPC 2.0 over a byte stream: bounded line reading ([`lines`]), frame
//! classification and errors ([`frame`]), and the [`Peer`] that owns the write side (one
//! writer task, so frames never interleave) and correlates the requests dsh sends.
//!
//! Only protocol frames are ever written: diagnostics go to `tracing` (stderr).

pub mod frame;
pub mod lines;
mod peer;

pub use frame::{Incoming, RpcError};
pub use lines::{Line, LineReader, MAX_FRAME_BYTES};
pub use peer::Peer;
