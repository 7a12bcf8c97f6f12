//! Wire names of the core event types, and which types this build knows.
//!
//! A type is *known* when it is
//! - a core type: one of the names below, modelled by an [`EventData`](crate::EventData)
//!   variant ([`CORE_EVENT_TYPES`]);
//! - one of the original's plugin-owned types ([`ORIGINAL_PLUGIN_EVENT_TYPES`]); or
//! - declared by a plugin crate and registered
//!   ([`register_event_types`](crate::register_event_types)).
//!
//! Readers refuse a log holding a type outside all three unless that event is marked
//! `ignorable`: such a log was written by a newer build, and skipping a required event would
//! rebuild a wrong session. `Session::append` applies the same rule, so anything the log
//! accepts can be read back. A plugin adding a type declares it in its own crate
//! ([`PluginEvent`](crate::PluginEvent)); nothing here changes.

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

/// The core types, modelled with a typed payload; an `Other` payload may not use them.
pub const CORE_EVENT_TYPES: &[&str] = &[
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

/// The original dsh's plugin-owned types (its `known-event-types.ts` minus the core), sorted
/// for binary search.
///
/// They are known without any registration, so a log the original wrote loads in every build
/// of this one — also in a binary or test that does not link the crate that declares the type,
/// and whichever plugins a composition mounts. A name stays here when a crate of ours declares
/// it ([`PluginEvent`](crate::PluginEvent), as the approval module does for `approval/*`,
/// `sandbox/mode` and `permission/preset`): the declaration adds a typed payload and
/// validation, this list keeps the compatibility promise. Types this implementation adds are
/// never listed here; registering their declaration is what makes them known.
pub const ORIGINAL_PLUGIN_EVENT_TYPES: &[&str] = &[
    "agent-preset/selected",
    "approval/asked",
    "approval/decided",
    "approval/policy",
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
    "permission/preset",
    "plan/mode",
    "sandbox/mode",
    "schedule/change",
    "session/title",
    "session/title-llm-request",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "web/deepseek-search-llm-request",
];

/// Whether this build knows `type_name` (core, the original's, or registered).
pub fn is_known_event_type(type_name: &str) -> bool {
    is_core_event_type(type_name)
        || is_original_plugin_event_type(type_name)
        || crate::declared_event_type(type_name).is_some()
}

/// Whether `type_name` is one of the typed core types.
pub fn is_core_event_type(type_name: &str) -> bool {
    CORE_EVENT_TYPES.contains(&type_name)
}

/// Whether `type_name` is one of the original's plugin-owned types.
pub fn is_original_plugin_event_type(type_name: &str) -> bool {
    ORIGINAL_PLUGIN_EVENT_TYPES
        .binary_search(&type_name)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_disjoint_and_the_original_list_is_sorted() {
        assert!(ORIGINAL_PLUGIN_EVENT_TYPES.windows(2).all(|w| w[0] < w[1]));
        for name in CORE_EVENT_TYPES {
            assert!(is_known_event_type(name), "{name}");
            assert!(!is_original_plugin_event_type(name), "{name}");
        }
        assert!(!is_known_event_type(LEGACY_REQUEST_HEADER_DELTA));
        assert!(!is_known_event_type("future/required"));
    }

    /// Together the lists are exactly the original's known-event-types list (48 names).
    #[test]
    fn core_and_original_lists_cover_the_original_vocabulary() {
        assert_eq!(
            CORE_EVENT_TYPES.len() + ORIGINAL_PLUGIN_EVENT_TYPES.len(),
            48
        );
    }
}
