//! Wire names of event types, and the vocabulary this build knows.
//!
//! Readers refuse a log holding a type outside [`KNOWN_EVENT_TYPES`] unless that event is
//! marked `ignorable`: such a log was written by a newer build, and skipping a required event
//! would rebuild a wrong session. `Session::append` applies the same rule, so anything the
//! log accepts can be read back. A plugin that adds a required type adds its name here.

pub const TURN_START: &str = "turn/start";
pub const TURN_END: &str = "turn/end";
pub const STEP_START: &str = "step/start";
pub const STEP_END: &str = "step/end";
pub const USER_MESSAGE: &str = "user/message";
pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
pub const ASSISTANT_MESSAGE: &str = "assistant/message";
pub const TOOL_CALL: &str = "tool/call";
pub const TOOL_RESULT: &str = "tool/result";
pub const TODO_WRITE: &str = "todo/write";
pub const REQUEST_HEADER: &str = "request/header";
pub const REQUEST_CONTEXT: &str = "request/context";
pub const END_SEED: &str = "session/end-seed";
pub const INBOX_SPLICED: &str = "agent/inbox/spliced";
pub const LLM_RETRY: &str = "llm/retry";
pub const LLM_RETRY_STARTED: &str = "llm/retry-started";

/// The retired delta codec for request headers; refused everywhere.
pub const LEGACY_REQUEST_HEADER_DELTA: &str = "request/header-delta";

/// Types this crate models with a typed payload; an `Other` payload may not use them.
pub const MODELLED_EVENT_TYPES: &[&str] = &[
    TURN_START,
    TURN_END,
    STEP_START,
    STEP_END,
    USER_MESSAGE,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    TOOL_CALL,
    TOOL_RESULT,
    TODO_WRITE,
    REQUEST_HEADER,
    REQUEST_CONTEXT,
    END_SEED,
    INBOX_SPLICED,
    LLM_RETRY,
    LLM_RETRY_STARTED,
];

/// Every event type this build understands (sorted, for binary search): the modelled core
/// types plus the plugin-owned types of the first-party plugins.
pub const KNOWN_EVENT_TYPES: &[&str] = &[
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "assistant/chunk",
    "assistant/message",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "request/context",
    "request/header",
    "sandbox/mode",
    "schedule/change",
    "session/end-seed",
    "session/title",
    "session/title-llm-request",
    "step/end",
    "step/start",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "todo/write",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/call",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "tool/result",
    "turn/end",
    "turn/start",
    "user/message",
    "web/deepseek-search-llm-request",
];

/// Whether this build understands `type_name`.
pub fn is_known_event_type(type_name: &str) -> bool {
    KNOWN_EVENT_TYPES.binary_search(&type_name).is_ok()
}

/// Whether `type_name` is one of the typed core types.
pub fn is_modelled_event_type(type_name: &str) -> bool {
    MODELLED_EVENT_TYPES.contains(&type_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_list_is_sorted_and_covers_the_modelled_types() {
        assert!(KNOWN_EVENT_TYPES.windows(2).all(|w| w[0] < w[1]));
        for name in MODELLED_EVENT_TYPES {
            assert!(is_known_event_type(name), "{name}");
        }
        assert!(!is_known_event_type(LEGACY_REQUEST_HEADER_DELTA));
    }
}
