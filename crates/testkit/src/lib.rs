//! Test support for dsh: fakes and checkers that exercise the real code paths.
//!
//! - [`mock_llm`]: a fault-injecting OpenAI-compatible HTTP server (also the `dsh-mock-llm`
//!   binary) for testing the real model adapter, retry and recovery end to end.
//! - [`scripted`]: an in-process scripted model adapter and reply builders for loop tests.
//! - [`fake_agent`]: a minimal agent over a live session, for tests of `agent/*` and tool
//!   listeners that must not run the real loop.
//! - [`checks`]: session-log invariant checkers (seqs, enclosure, tool pairing, anchors).
//! - [`normalize`]: a log as stable JSON (no times, numbered ids) for whole-value asserts,
//!   or as one line per event for assertions about order.
//! - [`expect`]: expected logs of harness agents, built event by event.
//! - [`recon`]: checks every model request against its session log (model-visible ⇔ recorded).
//! - [`pg_cluster`]: a throwaway PostgreSQL cluster on a loopback port, for the PostgreSQL
//!   store's tests and the binary's.
//! - [`harness`]: the whole agent core on a fresh kernel with a scripted model, ending every
//!   test with the log and request checks.

pub mod checks;
pub mod expect;
pub mod fake_agent;
pub mod harness;
pub mod mock_llm;
pub mod normalize;
pub mod pg_cluster;
pub mod recon;
pub mod scripted;
