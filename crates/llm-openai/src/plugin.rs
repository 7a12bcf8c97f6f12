//! The plugin that registers the configured chat-completions routes.

use crate::adapter::register_routes;
use crate::config::{EnvLookup, OpenAiConfig, ProcessEnv};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_llm::LlmRuntime;
use std::sync::Arc;

/// An environment source other plugins (or tests) may provide; without one, the process
/// environment is read.
pub struct EnvSource(pub Arc<dyn EnvLookup>);

/// Registers one adapter per configured route on the [`LlmRuntime`]; the registrations
/// unwind with the plugin's fiber, and are made again if the runtime is replaced.
#[derive(Debug)]
pub struct OpenAiPlugin;

impl Plugin for OpenAiPlugin {
    const NAME: &'static str = "llm-openai";
    type Config = OpenAiConfig;

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<LlmRuntime>()]
    }

    fn apply(ctx: &Context, config: Self::Config) -> Result<(), BoxError> {
        let runtime = ctx.require::<LlmRuntime>()?;
        let env: Arc<dyn EnvLookup> = match ctx.get::<EnvSource>() {
            Some(source) => source.0.clone(),
            None => Arc::new(ProcessEnv),
        };
        // The handles are not needed: each registration is an effect of `ctx`'s fiber.
        register_routes(ctx, &runtime, &config, env)?;
        Ok(())
    }
}
