//! Switching an agent's model at runtime without breaking "model-visible ⇔ recorded".
//!
//! The selection is snapshotted when a step's prompt is assembled (so `{{provider}}` and
//! `{{model}}` render the new choice) and applied to that same step's `agent/request`
//! config, which the loop then logs as a `request/header`. A switch in the middle of a step
//! therefore only affects later steps.

use crate::events::AgentRequest;
use dsh_kernel::{Context, Disposer, KernelError};
use dsh_prompt::SystemPromptAssemble;
use std::sync::{Arc, Mutex, PoisonError};

/// One model choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSelection {
    pub provider: String,
    pub model: String,
    /// `None` clears an inherited effort.
    pub reasoning_effort: Option<String>,
}

/// The current choice, shared between whoever switches models and the agent's listeners.
#[derive(Debug, Default)]
pub struct ModelSelectionRef {
    current: Mutex<Option<ModelSelection>>,
}

impl ModelSelectionRef {
    pub fn new(initial: Option<ModelSelection>) -> Self {
        Self {
            current: Mutex::new(initial),
        }
    }

    pub fn current(&self) -> Option<ModelSelection> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes effect from the next assembled step.
    pub fn set(&self, selection: Option<ModelSelection>) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = selection;
    }
}

/// Installs the two listeners through `agent_ctx` (so they hear that agent only); both
/// unwind with the agent or when the returned disposers run.
pub fn install_model_selection(
    agent_ctx: &Context,
    selection: Arc<ModelSelectionRef>,
) -> Result<[Disposer; 2], KernelError> {
    let snapshot: Arc<Mutex<Option<ModelSelection>>> = Arc::default();
    let assemble_snapshot = snapshot.clone();
    let on_assemble =
        agent_ctx.on_waterfall::<SystemPromptAssemble, _, _>(move |_args, next| {
            let current = selection.current();
            *assemble_snapshot
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = current.clone();
            async move {
                let mut assembly = next.run().await?;
                if let Some(current) = current {
                    assembly.variables.set("provider", Some(current.provider));
                    assembly.variables.set("model", Some(current.model));
                }
                Ok(assembly)
            }
        })?;
    let on_request = agent_ctx.on_waterfall::<AgentRequest, _, _>(move |_args, next| {
        let chosen = snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        async move {
            let mut config = next.run().await?;
            if let Some(chosen) = chosen {
                config.provider = chosen.provider;
                config.model = chosen.model;
                config.reasoning_effort = chosen.reasoning_effort;
            }
            Ok(config)
        }
    });
    match on_request {
        Ok(on_request) => Ok([on_assemble, on_request]),
        Err(error) => {
            on_assemble.dispose();
            Err(error)
        }
    }
}
