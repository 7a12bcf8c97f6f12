//! The `SystemPrompt` kernel service, its `system-prompt/assemble` waterfall and the plugin
//! that provides it.

use crate::assembly::{Assembly, Collected};
use crate::error::{PartKind, PromptError};
use crate::layer::{Duplicate, Plan, PromptLayer};
use crate::parts::{AssembleContext, ContextEntry, Section, ToolProvision};
use crate::render::is_valid_variable_name;
use crate::tool_order::ToolOrder;
use dsh_kernel::{
    BoxError, Context, Disposer, Event, KernelError, LayerUndo, Plugin, ScopeKey, ScopedLayers,
    Waterfall,
};
use serde::Deserialize;
use std::sync::Arc;

/// Name of the built-in section that introduces the harness.
pub const HARNESS_IDENTITY_SECTION: &str = "harness:identity";
/// The built-in identity text.
pub const HARNESS_IDENTITY: &str = "You are an AI agent powered by DeepSeek Harness.";
/// Name of the deployment persona section; presets register the same name in their scope to
/// replace it.
pub const PERSONA_SECTION: &str = "deployment:persona";

/// The `system-prompt/assemble` waterfall: listeners see the computed assembly and may return
/// a different one (for example with late-bound `provider`/`model` variables). It is
/// dispatched with the assembled scope as carrier, so agent-scoped listeners only hear their
/// own agents. Two guarantees survive it: an effective complete section stays the whole
/// prompt, and suppressed runtime context stays empty.
#[derive(Debug)]
pub struct SystemPromptAssemble;

impl Event for SystemPromptAssemble {
    const NAME: &'static str = "system-prompt/assemble";
}

impl Waterfall for SystemPromptAssemble {
    type Args = AssembleArgs;
    type Output = Assembly;
}

/// The arguments of [`SystemPromptAssemble`].
#[derive(Debug)]
pub struct AssembleArgs {
    /// What the registrations produced; the innermost default returns a copy of it.
    pub assembly: Assembly,
    pub context: AssembleContext,
}

/// The registry of system-prompt parts, provided as a kernel service by
/// [`SystemPromptPlugin`].
///
/// Every registration lands in the layer of the calling context's scope and is an effect of
/// that context's fiber: it is visible to that scope and its descendants (nearest wins by
/// name), and it disappears when the returned [`Disposer`] runs or the fiber unwinds.
pub struct SystemPrompt {
    layers: ScopedLayers<PromptLayer>,
    tool_order: Option<ToolOrder>,
}

impl std::fmt::Debug for SystemPrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemPrompt")
            .field("tool_order", &self.tool_order)
            .finish_non_exhaustive()
    }
}

impl SystemPrompt {
    /// An empty registry; `tool_order` fixes the order tools are shown in.
    pub fn new(tool_order: Option<ToolOrder>) -> Self {
        Self {
            layers: ScopedLayers::new(),
            tool_order,
        }
    }

    /// Registers a system-prompt section. A second same-named section in the same scope is
    /// refused; one in a nearer scope shadows it there.
    pub fn section(&self, ctx: &Context, section: Section) -> Result<Disposer, PromptError> {
        check_part(PartKind::Section, &section.name, section.order)?;
        let name = section.name.clone();
        let result = self
            .layers
            .effect(ctx, "system-prompt/section", move |layer| {
                let id = layer
                    .add_section(section)
                    .map_err(|Duplicate| duplicate(name))?;
                Ok(remove_entry(id))
            });
        result.map_err(|error| registration_error(PartKind::Section, error))
    }

    /// Registers a runtime-context entry (sent as a user-message snapshot, not in the system
    /// prompt).
    pub fn context(&self, ctx: &Context, context: ContextEntry) -> Result<Disposer, PromptError> {
        check_part(PartKind::Context, &context.name, context.order)?;
        let name = context.name.clone();
        let result = self
            .layers
            .effect(ctx, "system-prompt/context", move |layer| {
                let id = layer
                    .add_context(context)
                    .map_err(|Duplicate| duplicate(name))?;
                Ok(remove_entry(id))
            });
        result.map_err(|error| registration_error(PartKind::Context, error))
    }

    /// Drops all runtime context for the caller's scope (and its descendants) while in effect.
    pub fn suppress_runtime_context(&self, ctx: &Context) -> Result<Disposer, PromptError> {
        let result = self
            .layers
            .effect(ctx, "system-prompt/suppress-runtime-context", |layer| {
                Ok(remove_entry(layer.add_suppression()))
            });
        result.map_err(PromptError::Kernel)
    }

    /// Registers a tool-schema provider, asked at every assembly.
    pub fn tools(
        &self,
        ctx: &Context,
        provider: impl Fn(&AssembleContext) -> ToolProvision + Send + Sync + 'static,
    ) -> Result<Disposer, PromptError> {
        let provider = Arc::new(provider);
        let result = self
            .layers
            .effect(ctx, "system-prompt/tools", move |layer| {
                Ok(remove_entry(layer.add_tools(provider)))
            });
        result.map_err(PromptError::Kernel)
    }

    /// Registers the variable `name` (`^[a-z][a-z0-9_]*$`); its provider may have no value,
    /// which only fails rendering if something references it.
    pub fn variable(
        &self,
        ctx: &Context,
        name: impl Into<String>,
        provider: impl Fn(&AssembleContext) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Disposer, PromptError> {
        let name = name.into();
        if !is_valid_variable_name(&name) {
            return Err(PromptError::InvalidVariableName { name });
        }
        let provider = Arc::new(provider);
        let result = self
            .layers
            .effect(ctx, "system-prompt/variable", move |layer| {
                let id = layer
                    .add_variable(name.clone(), provider)
                    .map_err(|Duplicate| duplicate(name))?;
                Ok(remove_entry(id))
            });
        result.map_err(|error| registration_error(PartKind::Variable, error))
    }

    /// Assembles the prompt as `context.scope` sees it, then runs the
    /// [`SystemPromptAssemble`] waterfall through `ctx`'s kernel.
    pub async fn assemble(
        &self,
        ctx: &Context,
        context: AssembleContext,
    ) -> Result<Assembly, PromptError> {
        let plan = self
            .layers
            .with_chain(context.scope.as_ref(), |global, chain| {
                Plan::merge(global, chain)
            });
        let mut collected = Collected::evaluate(plan, &context, self.tool_order.as_ref())?;
        let carrier: Option<ScopeKey> = context.scope.clone();
        // Moved, not copied: `finish` needs only what the waterfall cannot override.
        let args = Arc::new(AssembleArgs {
            assembly: std::mem::take(&mut collected.assembly),
            context,
        });
        let result = ctx
            .waterfall::<SystemPromptAssemble, _, _>(carrier.as_ref(), args, |args| async move {
                // Every step assembles; when no listener kept the arguments, take the
                // assembly back instead of copying its texts.
                Ok(match Arc::try_unwrap(args) {
                    Ok(args) => args.assembly,
                    Err(args) => args.assembly.clone(),
                })
            })
            .await
            .map_err(PromptError::Listener)?;
        Ok(collected.finish(result))
    }

    /// Number of scoped layers alive, for tests that check nothing is left behind.
    #[doc(hidden)]
    pub fn scoped_layer_count(&self) -> usize {
        self.layers.scoped_layer_count()
    }
}

fn check_part(kind: PartKind, name: &str, order: f64) -> Result<(), PromptError> {
    if name.is_empty() {
        return Err(PromptError::EmptyName { kind });
    }
    if !order.is_finite() {
        return Err(PromptError::NonFiniteOrder {
            kind,
            name: name.to_owned(),
            order,
        });
    }
    Ok(())
}

fn remove_entry(id: u64) -> LayerUndo<PromptLayer> {
    Box::new(move |layer: &mut PromptLayer| layer.remove(id))
}

fn duplicate(name: String) -> KernelError {
    KernelError::DuplicateName { name }
}

fn registration_error(kind: PartKind, error: KernelError) -> PromptError {
    match error {
        KernelError::DuplicateName { name } => PromptError::DuplicateName { kind, name },
        other => PromptError::Kernel(other),
    }
}

/// Configuration of [`SystemPromptPlugin`] (camelCase keys, all optional).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SystemPromptConfig {
    /// Register the [`HARNESS_IDENTITY`] section (default true).
    pub include_harness_identity: bool,
    /// Template of the [`PERSONA_SECTION`] section; may reference `{{model}}`, `{{cwd}}`
    /// and other variables; empty renders nothing.
    pub persona: String,
    /// Explicit tool order; tools sort by name without it.
    pub tool_order: Option<ToolOrder>,
    /// When false, runtime context is suppressed globally (default true).
    pub include_runtime_context: bool,
}

impl Default for SystemPromptConfig {
    fn default() -> Self {
        Self {
            include_harness_identity: true,
            persona: String::new(),
            tool_order: None,
            include_runtime_context: true,
        }
    }
}

/// Provides the [`SystemPrompt`] service with its built-in sections.
#[derive(Debug)]
pub struct SystemPromptPlugin;

impl Plugin for SystemPromptPlugin {
    const NAME: &'static str = "system-prompt";
    type Config = SystemPromptConfig;

    fn apply(ctx: &Context, config: Self::Config) -> Result<(), BoxError> {
        let service = Arc::new(SystemPrompt::new(config.tool_order));
        if config.include_harness_identity {
            let identity = Section::new(HARNESS_IDENTITY_SECTION, -100.0, HARNESS_IDENTITY);
            service.section(ctx, identity)?.forget();
        }
        service
            .section(ctx, Section::new(PERSONA_SECTION, 0.0, config.persona))?
            .forget();
        if !config.include_runtime_context {
            service.suppress_runtime_context(ctx)?.forget();
        }
        ctx.provide(service)?.forget();
        Ok(())
    }
}
