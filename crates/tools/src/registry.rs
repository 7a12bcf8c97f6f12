//! The scoped tool registry behind [`ToolRuntime`].
//!
//! One global layer plus one layer per scope key, created on first registration and deleted
//! when emptied. A scope's view is: global tools, then each ancestor's tools farthest first
//! (nearest shadows), filtered by every restriction on the chain; then the scope's own tools,
//! which shadow and are never filtered. Every mutation is an effect of the caller's fiber.

use crate::args::{check_parameters_schema, parse_arguments, validate_arguments};
use crate::definition::Tool;
use crate::error::RegistryError;
use crate::events::{ToolsChange, ToolsChanged};
use crate::execution::{lock, ToolExecution, ToolInvocation};
use dsh_kernel::{Context, Disposer, ScopeKey};
use dsh_protocol::ToolSchema;
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The transport name Code Mode reserves.
pub const RESERVED_TOOL_NAME: &str = "run_code";

/// How the scheduler may run a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionMode {
    /// May run beside other parallel calls.
    Parallel,
    /// Runs alone, as a barrier.
    Exclusive,
}

/// Narrows what a scope (and its descendants) inherit from above.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restriction {
    /// When set, only these inherited names stay visible.
    pub allow: Option<Vec<String>>,
    /// These inherited names are hidden.
    pub deny: Option<Vec<String>>,
}

/// A guard's verdict on one execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardDecision {
    Pass,
    Deny(String),
}

pub(crate) type GuardFn = dyn Fn(&ToolExecution) -> GuardDecision + Send + Sync;

/// A registered tool with its frozen schema.
pub(crate) struct Registered {
    pub(crate) schema: ToolSchema,
    pub(crate) tool: Arc<dyn Tool>,
}

#[derive(Default)]
struct Layer {
    tools: Vec<(u64, Arc<Registered>)>,
    restrictions: Vec<(u64, Restriction)>,
    guards: Vec<(u64, Arc<GuardFn>)>,
}

impl Layer {
    fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.restrictions.is_empty() && self.guards.is_empty()
    }

    fn remove(&mut self, id: u64) {
        self.tools.retain(|(entry, _)| *entry != id);
        self.restrictions.retain(|(entry, _)| *entry != id);
        self.guards.retain(|(entry, _)| *entry != id);
    }
}

#[derive(Default)]
struct Layers {
    global: Layer,
    scoped: HashMap<ScopeKey, Layer>,
    /// Views already built, per scope, until the next mutation. Every step asks for its
    /// scope's view (the prompt lists the tools), and rebuilding it (the scope chain, a name
    /// map, the restrictions) cost more than everything else the registry does in a step.
    views: HashMap<Option<ScopeKey>, Arc<[Arc<Registered>]>>,
}

/// Views kept at most; a registry serving more scopes than this between two mutations
/// starts over rather than grow.
const MAX_CACHED_VIEWS: usize = 256;

impl Layers {
    fn layer_mut(&mut self, scope: Option<&ScopeKey>) -> &mut Layer {
        match scope {
            None => &mut self.global,
            Some(key) => self.scoped.entry(key.clone()).or_default(),
        }
    }

    /// Global, then existing chain layers farthest first; the exact scope's layer last.
    fn chain(&self, scope: Option<&ScopeKey>) -> (Vec<&Layer>, Option<&Layer>) {
        let mut ancestors = Vec::new();
        ancestors.push(&self.global);
        let Some(key) = scope else {
            return (ancestors, None);
        };
        let chain = key.chain();
        for ancestor in chain.iter().skip(1).rev() {
            if let Some(layer) = self.scoped.get(ancestor) {
                ancestors.push(layer);
            }
        }
        (ancestors, self.scoped.get(key))
    }

    /// The inherited view (no restrictions applied) in first-seen order.
    fn inherited(&self, scope: Option<&ScopeKey>) -> Vec<Arc<Registered>> {
        let (ancestors, _) = self.chain(scope);
        let mut view = View::default();
        for layer in ancestors {
            for (_, entry) in &layer.tools {
                view.put(entry);
            }
        }
        view.owned()
    }

    /// [`build_view`](Self::build_view), kept until the next mutation.
    fn view(&mut self, scope: Option<&ScopeKey>) -> Arc<[Arc<Registered>]> {
        if let Some(view) = self.views.get(&scope.cloned()) {
            return Arc::clone(view);
        }
        let view: Arc<[Arc<Registered>]> = self.build_view(scope).into();
        if self.views.len() >= MAX_CACHED_VIEWS {
            self.views.clear();
        }
        self.views.insert(scope.cloned(), Arc::clone(&view));
        view
    }

    fn build_view(&self, scope: Option<&ScopeKey>) -> Vec<Arc<Registered>> {
        let (ancestors, own) = self.chain(scope);
        let restrictions: Vec<&Restriction> = ancestors
            .iter()
            .copied()
            .chain(own)
            .flat_map(|layer| layer.restrictions.iter().map(|(_, r)| r))
            .collect();
        let mut inherited = View::default();
        for layer in &ancestors {
            for (_, entry) in &layer.tools {
                inherited.put(entry);
            }
        }
        let mut view = View::default();
        for entry in inherited.entries {
            if restrictions.iter().all(|r| admits(r, &entry.schema.name)) {
                view.put(entry);
            }
        }
        if let Some(own) = own {
            for (_, entry) in &own.tools {
                view.put(entry);
            }
        }
        view.owned()
    }

    /// The entry `name` resolves to for `scope`, as [`view`](Self::view) would list it,
    /// without building the view (every tool call resolves its tool more than once).
    fn resolve(&self, scope: Option<&ScopeKey>, name: &str) -> Option<Arc<Registered>> {
        let (ancestors, own) = self.chain(scope);
        let last_in = |layer: &Layer| {
            layer
                .tools
                .iter()
                .rev()
                .find(|(_, e)| e.schema.name == name)
                .map(|(_, e)| e.clone())
        };
        if let Some(entry) = own.and_then(last_in) {
            return Some(entry); // the scope's own tools shadow and are never filtered
        }
        let entry = ancestors.iter().rev().find_map(|layer| last_in(layer))?;
        let admitted = ancestors
            .iter()
            .copied()
            .chain(own)
            .flat_map(|layer| layer.restrictions.iter().map(|(_, r)| r))
            .all(|r| admits(r, name));
        admitted.then_some(entry)
    }

    /// Guards in order: global, then the chain farthest first, the exact scope last.
    fn guards(&self, scope: Option<&ScopeKey>) -> Vec<Arc<GuardFn>> {
        let (ancestors, own) = self.chain(scope);
        ancestors
            .into_iter()
            .chain(own)
            .flat_map(|layer| layer.guards.iter().map(|(_, g)| g.clone()))
            .collect()
    }
}

fn admits(restriction: &Restriction, name: &str) -> bool {
    let allowed = restriction
        .allow
        .as_ref()
        .is_none_or(|allow| allow.iter().any(|n| n == name));
    let denied = restriction
        .deny
        .as_ref()
        .is_some_and(|deny| deny.iter().any(|n| n == name));
    allowed && !denied
}

/// An insertion-ordered name map where a later entry replaces an earlier one in place. It
/// borrows the registered entries (and their names) while the registry is locked, so
/// building a view allocates no names.
#[derive(Default)]
struct View<'a> {
    entries: Vec<&'a Arc<Registered>>,
    index: HashMap<&'a str, usize>,
}

impl<'a> View<'a> {
    fn put(&mut self, entry: &'a Arc<Registered>) {
        match self.index.get(entry.schema.name.as_str()) {
            Some(&slot) => self.entries[slot] = entry,
            None => {
                self.index
                    .insert(entry.schema.name.as_str(), self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    fn owned(self) -> Vec<Arc<Registered>> {
        self.entries.into_iter().cloned().collect()
    }
}

pub(crate) struct Inner {
    pub(crate) ctx: Context,
    layers: Mutex<Layers>,
    next_id: AtomicU64,
}

/// The `ctx.tools` service: the scoped registry and the per-call pipeline (see
/// `pipeline.rs`). Mutations take the caller's [`Context`]: the entry lands in
/// `ctx.scope()`'s layer (global when `None`) and is an effect of `ctx.fiber()`.
pub struct ToolRuntime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ToolRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRuntime").finish_non_exhaustive()
    }
}

impl ToolRuntime {
    /// A runtime that dispatches its `tools/*` events and finds the approval service
    /// through `ctx`.
    pub fn new(ctx: &Context) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::new(Inner {
                ctx: ctx.clone(),
                layers: Mutex::new(Layers::default()),
                next_id: AtomicU64::new(1),
            }),
        })
    }

    /// Registers `tool` in the caller's layer. Refuses invalid names, non-object parameter
    /// schemas, a zero timeout, the reserved `run_code` and a duplicate within the layer.
    pub fn register(&self, ctx: &Context, tool: Arc<dyn Tool>) -> Result<Disposer, RegistryError> {
        let schema = checked_schema(tool.as_ref())?;
        let name = schema.name.clone();
        let entry = Arc::new(Registered { schema, tool });
        self.mutate(ctx, "tools/register", move |layer| {
            if layer.tools.iter().any(|(_, e)| e.schema.name == name) {
                return Err(RegistryError::Duplicate { name });
            }
            Ok(Box::new(move |layer: &mut Layer, id| {
                layer.tools.push((id, entry))
            }))
        })
    }

    /// Narrows what the caller's scope inherits. Only from a scoped context; every named tool
    /// must be visible to the scope from above.
    pub fn restrict(
        &self,
        ctx: &Context,
        restriction: Restriction,
    ) -> Result<Disposer, RegistryError> {
        let scope = ctx.scope().ok_or(RegistryError::UnscopedRestriction)?;
        {
            let layers = lock(&self.inner.layers);
            let known: HashSet<String> = layers
                .inherited(Some(scope))
                .iter()
                .map(|e| e.schema.name.clone())
                .collect();
            let named = restriction
                .allow
                .iter()
                .chain(restriction.deny.iter())
                .flatten();
            if let Some(unknown) = named.into_iter().find(|n| !known.contains(*n)) {
                return Err(RegistryError::UnknownTool {
                    name: unknown.clone(),
                });
            }
        }
        self.mutate(ctx, "tools/restrict", move |_| {
            Ok(Box::new(move |layer: &mut Layer, id| {
                layer.restrictions.push((id, restriction))
            }))
        })
    }

    /// Adds a deny hook for executions in the caller's scope and its descendants (all
    /// executions when global). Guards only ever add denials.
    pub fn guard(
        &self,
        ctx: &Context,
        guard: impl Fn(&ToolExecution) -> GuardDecision + Send + Sync + 'static,
    ) -> Result<Disposer, RegistryError> {
        let guard: Arc<GuardFn> = Arc::new(guard);
        self.mutate(ctx, "tools/guard", move |_| {
            Ok(Box::new(move |layer: &mut Layer, id| {
                layer.guards.push((id, guard))
            }))
        })
    }

    /// The definition `name` resolves to for `scope`.
    pub fn get(&self, scope: Option<&ScopeKey>, name: &str) -> Option<Arc<dyn Tool>> {
        self.resolve(scope, name).map(|e| e.tool.clone())
    }

    /// The names visible to `scope`, in view order.
    pub fn names(&self, scope: Option<&ScopeKey>) -> Vec<String> {
        self.view(scope)
            .iter()
            .map(|e| e.schema.name.clone())
            .collect()
    }

    /// What the model is shown for `scope`: `{name, description, parameters}` only.
    pub fn schemas(&self, scope: Option<&ScopeKey>) -> Vec<ToolSchema> {
        self.view(scope).iter().map(|e| e.schema.clone()).collect()
    }

    /// Parallel only when the visible definition says so for these (valid) arguments;
    /// unknown tools, invalid arguments and panics are exclusive.
    pub fn execution_mode(&self, call: &ToolInvocation) -> ExecutionMode {
        let Some(entry) = self.resolve(call.scope_key(), call.name()) else {
            return ExecutionMode::Exclusive;
        };
        let args = parse_arguments(call.arguments());
        if validate_arguments(&entry.schema.parameters, &args).is_err() {
            return ExecutionMode::Exclusive;
        }
        let tool = entry.tool.as_ref();
        match catch_unwind(AssertUnwindSafe(|| tool.is_concurrency_safe(&args))) {
            Ok(true) => ExecutionMode::Parallel,
            _ => ExecutionMode::Exclusive,
        }
    }

    pub(crate) fn resolve(&self, scope: Option<&ScopeKey>, name: &str) -> Option<Arc<Registered>> {
        lock(&self.inner.layers).resolve(scope, name)
    }

    pub(crate) fn guards(&self, scope: Option<&ScopeKey>) -> Vec<Arc<GuardFn>> {
        lock(&self.inner.layers).guards(scope)
    }

    fn view(&self, scope: Option<&ScopeKey>) -> Arc<[Arc<Registered>]> {
        lock(&self.inner.layers).view(scope)
    }

    /// Runs one layer mutation as an effect of `ctx`'s fiber: `prepare` validates against the
    /// layer and returns the insertion; the undo removes exactly that entry, deletes an
    /// emptied scoped layer and announces the change (outside the lock).
    fn mutate(
        &self,
        ctx: &Context,
        label: &str,
        prepare: impl FnOnce(&Layer) -> Result<Box<dyn FnOnce(&mut Layer, u64) + Send>, RegistryError>,
    ) -> Result<Disposer, RegistryError> {
        let scope = ctx.scope().cloned();
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut layers = lock(&self.inner.layers);
            let empty = Layer::default();
            let current = match &scope {
                None => &layers.global,
                Some(key) => layers.scoped.get(key).unwrap_or(&empty),
            };
            let insert = prepare(current)?;
            insert(layers.layer_mut(scope.as_ref()), id);
            layers.views.clear();
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let undo_scope = scope.clone();
        // On a disposed fiber the kernel runs the undo at once and reports INACTIVE_EFFECT.
        let disposer = ctx.effect(label, move || {
            if let Some(inner) = weak.upgrade() {
                inner.remove(undo_scope, id);
            }
        })?;
        self.inner.changed(scope);
        Ok(disposer)
    }
}

impl Inner {
    fn remove(&self, scope: Option<ScopeKey>, id: u64) {
        {
            let mut layers = lock(&self.layers);
            layers.views.clear();
            match &scope {
                None => layers.global.remove(id),
                Some(key) => {
                    if let Some(layer) = layers.scoped.get_mut(key) {
                        layer.remove(id);
                        if layer.is_empty() {
                            layers.scoped.remove(key);
                        }
                    }
                }
            }
        }
        self.changed(scope);
    }

    fn changed(&self, scope: Option<ScopeKey>) {
        self.ctx.emit::<ToolsChange>(None, &ToolsChanged { scope });
    }

    /// Number of scoped layers alive; tests use it to prove disposal leaves nothing behind.
    pub(crate) fn scoped_layer_count(&self) -> usize {
        lock(&self.layers).scoped.len()
    }
}

impl ToolRuntime {
    /// Number of scoped layers currently alive (emptied layers are deleted).
    #[doc(hidden)]
    pub fn scoped_layer_count(&self) -> usize {
        self.inner.scoped_layer_count()
    }
}

fn checked_schema(tool: &dyn Tool) -> Result<ToolSchema, RegistryError> {
    let name = tool.name().to_owned();
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        return Err(RegistryError::InvalidName { name });
    }
    if name == RESERVED_TOOL_NAME {
        return Err(RegistryError::ReservedName { name });
    }
    if tool.timeout() == Some(Duration::ZERO) {
        return Err(RegistryError::InvalidTimeout { name });
    }
    let parameters = tool.parameters();
    if let Err(reason) = check_parameters_schema(&parameters) {
        return Err(RegistryError::InvalidParameters { name, reason });
    }
    Ok(ToolSchema::new(name, tool.description(), parameters))
}
