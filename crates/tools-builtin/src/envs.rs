//! [`ToolEnvs`]: which [`ToolEnv`] a call runs in, looked up by the call's scope.
//!
//! The built-in tools are registered once, globally, but every agent works in its own
//! session environment (workspace, private temp dir, sandbox mode, secrets). Whoever sets an
//! agent up registers that environment in the agent's scope; a call carrying the agent's
//! scope key then finds it, the nearest registration winning, and it goes away with the
//! agent's fiber.

use std::sync::atomic::{AtomicU64, Ordering};

use dsh_kernel::{Context, Disposer, KernelError, LayerUndo, ScopeKey, ScopedLayers};

use crate::env::ToolEnv;

/// The environment registered in one scope, tagged with the registration that put it there.
#[derive(Default)]
struct EnvLayer {
    current: Option<(u64, ToolEnv)>,
}

/// Per-scope tool environments; a kernel service provided by the `tools-builtin` plugin.
///
/// One environment per scope: a second [`set`](Self::set) in the same scope replaces the
/// first (the first registration's disposer then does nothing), which is how a session's
/// environment changes when its sandbox mode does.
pub struct ToolEnvs {
    layers: ScopedLayers<EnvLayer>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for ToolEnvs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEnvs").finish_non_exhaustive()
    }
}

impl Default for ToolEnvs {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolEnvs {
    pub fn new() -> Self {
        Self {
            layers: ScopedLayers::new(),
            next_id: AtomicU64::new(0),
        }
    }

    /// Makes `env` the environment of `ctx`'s scope (the global fallback when `ctx` has no
    /// scope), replacing any set there before. It stays until the disposer runs or `ctx`'s
    /// fiber unwinds; disposing a registration that was since replaced changes nothing.
    pub fn set(&self, ctx: &Context, env: ToolEnv) -> Result<Disposer, KernelError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.layers.effect(ctx, "tool-env", move |layer| {
            layer.current = Some((id, env));
            let undo: LayerUndo<EnvLayer> = Box::new(move |layer: &mut EnvLayer| {
                if layer
                    .current
                    .as_ref()
                    .is_some_and(|(current, _)| *current == id)
                {
                    layer.current = None;
                }
            });
            Ok(undo)
        })
    }

    /// The environment of the nearest scope on `scope`'s chain that has one, else the global
    /// one.
    pub fn resolve(&self, scope: Option<&ScopeKey>) -> Option<ToolEnv> {
        self.layers.with_chain(scope, |global, chain| {
            chain
                .iter()
                .rev()
                .chain(std::iter::once(&global))
                .find_map(|layer| layer.current.as_ref())
                .map(|(_, env)| env.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sandbox::SandboxMode;

    /// Environments whose workspaces are named directories under one temp dir.
    struct Dirs(tempfile::TempDir);

    impl Dirs {
        fn new() -> Self {
            Self(tempfile::tempdir().unwrap())
        }

        fn env(&self, name: &str) -> ToolEnv {
            let ws = self.0.path().join(name);
            std::fs::create_dir_all(&ws).unwrap();
            ToolEnv::builder(&ws)
                .temp_dir(self.0.path().join(format!("{name}.tmp")))
                .base_env(Vec::new())
                .build()
                .unwrap()
        }
    }

    /// The name of the resolved environment's workspace.
    fn workspace(envs: &ToolEnvs, scope: Option<&ScopeKey>) -> Option<String> {
        envs.resolve(scope).map(|env| {
            env.workspace()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
    }

    #[test]
    fn the_nearest_scope_wins_and_unscoped_calls_see_the_global_env() {
        let root = Context::root();
        let envs = ToolEnvs::new();
        let dirs = Dirs::new();
        let parent = ScopeKey::new("parent");
        let child = ScopeKey::new("child");
        let parent_ctx = root.create_scope(parent.clone(), None).unwrap();
        let child_ctx = parent_ctx
            .create_scope(child.clone(), Some(&parent))
            .unwrap();
        assert_eq!(workspace(&envs, Some(&child)), None);

        envs.set(&root, dirs.env("global")).unwrap().forget();
        envs.set(&parent_ctx, dirs.env("parent")).unwrap().forget();
        assert_eq!(workspace(&envs, None).as_deref(), Some("global"));
        assert_eq!(workspace(&envs, Some(&child)).as_deref(), Some("parent"));

        envs.set(&child_ctx, dirs.env("child")).unwrap().forget();
        assert_eq!(workspace(&envs, Some(&child)).as_deref(), Some("child"));
        assert_eq!(workspace(&envs, Some(&parent)).as_deref(), Some("parent"));
    }

    #[test]
    fn sibling_scopes_keep_their_own_envs() {
        let root = Context::root();
        let envs = ToolEnvs::new();
        let dirs = Dirs::new();
        let (a, b) = (ScopeKey::new("a"), ScopeKey::new("b"));
        let a_ctx = root.create_scope(a.clone(), None).unwrap();
        let b_ctx = root.create_scope(b.clone(), None).unwrap();
        envs.set(&a_ctx, dirs.env("a")).unwrap().forget();
        envs.set(&b_ctx, dirs.env("b")).unwrap().forget();
        assert_eq!(workspace(&envs, Some(&a)).as_deref(), Some("a"));
        assert_eq!(workspace(&envs, Some(&b)).as_deref(), Some("b"));
        assert_eq!(workspace(&envs, None), None);
    }

    #[test]
    fn disposal_and_fiber_unwinding_remove_the_env() {
        let root = Context::root();
        let envs = ToolEnvs::new();
        let dirs = Dirs::new();
        let key = ScopeKey::new("agent");
        let ctx = root.create_scope(key.clone(), None).unwrap();
        let disposer = envs.set(&ctx, dirs.env("ws")).unwrap();
        disposer.dispose();
        assert_eq!(workspace(&envs, Some(&key)), None);
        assert_eq!(envs.layers.scoped_layer_count(), 0);

        envs.set(&ctx, dirs.env("ws")).unwrap().forget();
        ctx.fiber().dispose();
        assert_eq!(workspace(&envs, Some(&key)), None);
        assert_eq!(envs.layers.scoped_layer_count(), 0);
        assert!(envs.set(&ctx, dirs.env("late")).is_err());
    }

    #[test]
    fn a_second_set_replaces_the_first_and_the_stale_disposer_is_inert() {
        let root = Context::root();
        let envs = ToolEnvs::new();
        let dirs = Dirs::new();
        let key = ScopeKey::new("agent");
        let ctx = root.create_scope(key.clone(), None).unwrap();
        let first = envs.set(&ctx, dirs.env("ws")).unwrap();
        let second = envs
            .set(
                &ctx,
                dirs.env("ws").with_sandbox_mode(SandboxMode::ReadOnly),
            )
            .unwrap();
        first.dispose();
        let mode = envs.resolve(Some(&key)).map(|e| e.sandbox().mode());
        assert_eq!(mode, Some(SandboxMode::ReadOnly));
        second.dispose();
        assert_eq!(workspace(&envs, Some(&key)), None);
        assert_eq!(envs.layers.scoped_layer_count(), 0);
    }
}
