//! A fault-injecting, OpenAI-compatible chat-completions server for tests.
//!
//! It speaks real HTTP/1.1 on 127.0.0.1, so the production adapter can be pointed at it
//! unchanged (`DEEPSEEK_BASE_URL`). A [`Script`] says what each request gets: streamed
//! reasoning, text and tool calls split into a chosen number of deltas, usage numbers, a
//! finish reason, an HTTP error with `Retry-After`, or a transport fault (reset, stall,
//! end without `[DONE]`, a malformed line, an empty stream, a missing body, a line or a
//! stream without end, an error event mid-stream). Every request is recorded for
//! assertions.
//!
//! ```no_run
//! # async fn demo() -> Result<(), dsh_testkit::mock_llm::MockError> {
//! use dsh_testkit::mock_llm::{Fault, MockServer, Reply, Script};
//! let script = Script::new()
//!     .respond(Reply::error(429, "slow down").retry_after("1"))
//!     .respond(Reply::text("partial").chunks(4).with_fault(Fault::Reset { after_chunks: Some(2) }))
//!     .respond(Reply::text("Hello!").with_reasoning("Greet.").chunks(3));
//! let server = MockServer::start(script).await?;
//! // point the adapter at server.base_url(), run, then:
//! assert_eq!(server.requests().len(), 3);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Script files
//!
//! The JSON form (what `dsh-mock-llm --script` reads) is a superset of the fixtures'
//! `script.json`:
//!
//! ```json
//! {
//!   "index_by": "assistant_turns",
//!   "rules": [{"match": {"no_tools": true, "max_tokens_le": 64}, "response": {"text": "A title"}}],
//!   "responses": [
//!     {"reasoning": "Look first.", "text": "Reading.", "chunks": 3,
//!      "tool_calls": [{"name": "read", "arguments": {"file_path": "a.md"}}], "arg_chunks": 2},
//!     {"status": 429, "error_message": "slow down", "retry_after": "2"},
//!     {"text": "partial", "fault": {"kind": "reset", "after_chunks": 1}},
//!     {"text": "Done.", "finish_reason": "length", "delay_ms": 5,
//!      "usage": {"prompt_tokens": 900, "cached_tokens": 800}}
//!   ]
//! }
//! ```
//!
//! A rule's `match` may also require request headers (`"header": {"x-deepseek-harness-compact":
//! "1"}`, names in any case), message text (`"message_contains"`, `"last_message_contains"`),
//! and text the conversation must hold (`"contains": "CHILD-A"` or a list, all required) or must
//! not (`"lacks"`), checked against every non-system message. So one script answers
//! summarisation requests with a summary and turn requests with tool calls, and one server
//! answers several agents (a parent and its subagents) by whose request it is; every recorded
//! request keeps its headers.
//!
//! Rules are tried first, in order, and never used up. Otherwise `index_by` picks the entry: `order`
//! (default) takes the next unused response; `assistant_turns` takes the entry whose index is
//! the number of assistant messages in the request, so retries repeat a reply. A request
//! past the end gets HTTP 500 with error code `script_exhausted`. Usage is reported only
//! when the request sets `stream_options.include_usage` (as real servers do); non-stream
//! completions always carry it.
//!
//! The `dsh-mock-llm` binary serves a script file the same way; it prints
//! `listening on http://127.0.0.1:PORT` first and exits 0 on SIGINT or SIGTERM.

mod error;
mod faults;
mod http;
mod script;
mod select;
mod server;
mod sse;

pub use error::MockError;
pub use faults::{ENDLESS_DELTA, ENDLESS_LINE_START, MALFORMED_PAYLOAD};
pub use script::{
    CacheField, Fault, IndexBy, Reply, Rule, RuleMatch, Script, ToolCallSpec, UsageSpec,
};
pub use select::{is_title_request, Served, DEFAULT_TITLE};
pub use server::{MockOptions, MockServer, RecordedRequest, DEFAULT_MODELS};
pub use sse::{default_call_id, python_style_json, split_chars, wire_arguments, CREATED};
