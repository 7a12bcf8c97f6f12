//! A scripted in-process model for loop tests.
//!
//! [`ScriptedAdapter`] is an [`LlmAdapter`](dsh_llm::LlmAdapter) that answers call *n* with
//! script entry *n* ([`ScriptEntry`]): fixed chunks, chunks computed from the request, a hang
//! that only cancellation ends, or a failure before or during the stream. It records every
//! request so tests can assert what the model was shown. The [`Response`] builder and the
//! `*_response` helpers produce chunk sequences in the order a real adapter sends them
//! (blocks, authoritative `block-end`s, usage, terminal finish).

mod adapter;
mod responses;

pub use adapter::{text_script, RespondFn, ScriptEntry, ScriptedAdapter, SCRIPT_EXHAUSTED};
pub use responses::{
    error_finish, error_finish_with, max_tokens_response, reasoning_text_response, text_response,
    tool_call_response, Response, SCRIPTED_USAGE,
};
