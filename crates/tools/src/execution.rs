//! A planned call (`ToolInvocation`) and the live execution a tool body sees (`ToolExecution`).

use crate::caller::ToolCaller;
use crate::definition::Tool;
use dsh_agent::Agent;
use dsh_kernel::ScopeKey;
use dsh_protocol::{CallId, Message};
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A type-keyed bag of values the caller hands to tools (session id, working directory, the
/// builtin tools' environment, ...). Cloning is cheap.
#[derive(Clone, Default)]
pub struct Extensions {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Extensions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value`, replacing any earlier value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> &mut Self {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// Builder form of [`Extensions::insert`].
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.values.len())
            .finish()
    }
}

/// One call as the scheduler plans it, with the raw argument text from the assistant message.
#[derive(Clone)]
pub struct ToolInvocation {
    pub(crate) call_id: CallId,
    pub(crate) name: String,
    pub(crate) arguments: String,
    pub(crate) scope: Option<ScopeKey>,
    pub(crate) signal: CancellationToken,
    pub(crate) caller: Option<ToolCaller>,
    pub(crate) parent: Option<Arc<ToolExecution>>,
    pub(crate) extensions: Extensions,
}

impl ToolInvocation {
    pub fn new(call_id: CallId, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            call_id,
            name: name.into(),
            arguments: arguments.into(),
            scope: None,
            signal: CancellationToken::new(),
            caller: None,
            parent: None,
            extensions: Extensions::new(),
        }
    }

    /// The calling agent's scope key: decides visibility, guards and event routing.
    pub fn scope(mut self, key: ScopeKey) -> Self {
        self.scope = Some(key);
        self
    }

    /// The caller's (turn's) cancellation signal.
    pub fn signal(mut self, token: CancellationToken) -> Self {
        self.signal = token;
        self
    }

    /// The agent the call runs for; its body reaches it through
    /// [`ToolExecution::caller`].
    pub fn caller(mut self, agent: Arc<dyn Agent>) -> Self {
        self.caller = Some(ToolCaller::new(agent));
        self
    }

    /// The execution this call is nested in (a program calling tools).
    pub fn parent(mut self, parent: Arc<ToolExecution>) -> Self {
        self.parent = Some(parent);
        self
    }

    pub fn extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    pub fn call_id(&self) -> &CallId {
        &self.call_id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn arguments(&self) -> &str {
        &self.arguments
    }

    pub fn scope_key(&self) -> Option<&ScopeKey> {
        self.scope.as_ref()
    }
}

impl fmt::Debug for ToolInvocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolInvocation")
            .field("call_id", &self.call_id)
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The live execution of one call. Shared (`Arc`) between the pipeline stages, hooks and the
/// tool body; immutable except for its two capabilities, [`ToolExecution::defer_context`] and
/// [`ToolExecution::conclude_turn`].
pub struct ToolExecution {
    call_id: CallId,
    root_call_id: CallId,
    name: String,
    raw_arguments: String,
    arguments: Value,
    scope: Option<ScopeKey>,
    caller_signal: CancellationToken,
    signal: CancellationToken,
    caller: Option<ToolCaller>,
    parent: Option<Arc<ToolExecution>>,
    extensions: Extensions,
    definition: Option<Arc<dyn Tool>>,
    deferred: Mutex<Vec<Message>>,
    concluded: AtomicBool,
}

impl ToolExecution {
    pub(crate) fn new(
        call: ToolInvocation,
        arguments: Value,
        definition: Option<Arc<dyn Tool>>,
    ) -> Self {
        let root_call_id = call.parent.as_ref().map_or_else(
            || call.call_id.clone(),
            |parent| parent.root_call_id.clone(),
        );
        Self {
            root_call_id,
            signal: call.signal.child_token(),
            caller_signal: call.signal,
            call_id: call.call_id,
            name: call.name,
            raw_arguments: call.arguments,
            arguments,
            scope: call.scope,
            caller: call.caller,
            parent: call.parent,
            extensions: call.extensions,
            definition,
            deferred: Mutex::new(Vec::new()),
            concluded: AtomicBool::new(false),
        }
    }

    pub fn call_id(&self) -> &CallId {
        &self.call_id
    }

    /// The call id of the outermost execution this one is nested in (its own when top-level).
    pub fn root_call_id(&self) -> &CallId {
        &self.root_call_id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The argument text exactly as the model produced it.
    pub fn raw_arguments(&self) -> &str {
        &self.raw_arguments
    }

    /// The parsed arguments (see [`crate::parse_arguments`]); validated when the body runs.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    pub fn scope(&self) -> Option<&ScopeKey> {
        self.scope.as_ref()
    }

    /// This execution's signal: cancelled with the caller's signal, with a signal installed
    /// by a `tools/execute` wrapper, or when the tool times out. Tools watch this one.
    pub fn signal(&self) -> &CancellationToken {
        &self.signal
    }

    pub(crate) fn caller_signal(&self) -> &CancellationToken {
        &self.caller_signal
    }

    /// The agent this call runs for (`None` for a call made outside any agent): its
    /// session, scoped context and the agent registry.
    pub fn caller(&self) -> Option<&ToolCaller> {
        self.caller.as_ref()
    }

    pub fn parent(&self) -> Option<&Arc<ToolExecution>> {
        self.parent.as_ref()
    }

    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The definition visible when the call was prepared; `None` for an unknown tool.
    pub fn definition(&self) -> Option<&Arc<dyn Tool>> {
        self.definition.as_ref()
    }

    /// Queues a user message for the next step; it leads the result's `additional_contexts`.
    pub fn defer_context(&self, message: Message) {
        lock(&self.deferred).push(message);
    }

    /// Marks the turn as concluded if this call succeeds.
    pub fn conclude_turn(&self) {
        self.concluded.store(true, Ordering::SeqCst);
    }

    pub(crate) fn take_deferred(&self) -> Vec<Message> {
        std::mem::take(&mut *lock(&self.deferred))
    }

    pub(crate) fn concludes_turn(&self) -> bool {
        self.concluded.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for ToolExecution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolExecution")
            .field("call_id", &self.call_id)
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

pub(crate) use dsh_kernel::sync::lock;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Cwd(&'static str);

    #[test]
    fn extensions_are_type_keyed() {
        let ext = Extensions::new().with(Cwd("/a")).with(7u32).with(Cwd("/b"));
        assert_eq!(ext.get::<Cwd>(), Some(&Cwd("/b")));
        assert_eq!(ext.get::<u32>(), Some(&7));
        assert_eq!(ext.get::<u64>(), None);
    }

    #[test]
    fn nested_executions_know_their_root_and_capabilities_work() {
        let outer = Arc::new(ToolExecution::new(
            ToolInvocation::new(CallId::from("outer"), "run", "{}"),
            Value::Null,
            None,
        ));
        let inner = ToolExecution::new(
            ToolInvocation::new(CallId::from("inner"), "read", "{}").parent(outer.clone()),
            Value::Null,
            None,
        );
        assert_eq!(inner.root_call_id().as_str(), "outer");
        assert!(outer.caller().is_none());
        inner.defer_context(Message::user_text("x"));
        inner.conclude_turn();
        assert!(inner.concludes_turn());
        assert_eq!(inner.take_deferred().len(), 1);
        assert!(inner.take_deferred().is_empty());
    }

    #[test]
    fn execution_signal_follows_the_caller_but_not_the_reverse() {
        let caller = CancellationToken::new();
        let exec = ToolExecution::new(
            ToolInvocation::new(CallId::from("c"), "t", "").signal(caller.clone()),
            Value::Null,
            None,
        );
        exec.signal().cancel();
        assert!(!caller.is_cancelled());
        let exec = ToolExecution::new(
            ToolInvocation::new(CallId::from("c"), "t", "").signal(caller.clone()),
            Value::Null,
            None,
        );
        caller.cancel();
        assert!(exec.signal().is_cancelled());
    }
}
