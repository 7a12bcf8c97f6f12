//! Test support for dsh: fakes and checkers that exercise the real code paths.
//!
//! - [`mock_llm`]: a fault-injecting OpenAI-compatible HTTP server (also the `dsh-mock-llm`
//!   binary) for testing the real model adapter, retry and recovery end to end.

pub mod mock_llm;
