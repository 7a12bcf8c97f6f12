//! `hooks`: the kernel plugin that loads the configured hook files and bridges them.

use crate::bridge;
use crate::config::HooksConfig;
use crate::hooks::Hooks;
use dsh_kernel::{BoxError, Context, Plugin};
use std::ffi::OsString;
use std::sync::Arc;

/// Loads [`HooksConfig`]'s sources, provides the [`Hooks`] table (surfaces print its
/// [`notices`](Hooks::notices)) and installs the bridges. Hooks start from this process's
/// environment, credentials scrubbed.
#[derive(Debug)]
pub struct HooksPlugin;

impl Plugin for HooksPlugin {
    const NAME: &'static str = "hooks";
    type Config = HooksConfig;

    fn apply(ctx: &Context, config: HooksConfig) -> Result<(), BoxError> {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let hooks = Arc::new(Hooks::load(config, &env));
        for notice in hooks.notices() {
            tracing::warn!("{notice}");
        }
        ctx.provide(hooks.clone())?.forget();
        bridge::install(ctx, hooks)
    }
}
