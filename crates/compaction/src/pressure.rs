//! The pressure path (spec §2.3): an `agent/pre-step` listener that compacts before the step
//! when the next request would reach the threshold.
//!
//! Below `floor(window × thresholdRatio)` nothing happens, not even pruning. At or above it the
//! tool-result pruner runs first; if that is not enough, up to `1 + retries` compactions each
//! shadow the head of the surface and keep the newest `retain` tokens. A failure of any kind is
//! logged (`step compaction failed: …; continuing the turn`) and the step proceeds with
//! whatever surface is durable: compaction never fails a turn. A model whose window is unknown
//! is warned about once per provider/model.

use crate::engine::{CompactionEngine, CompactionResult};
use crate::failure::AttemptError;
use crate::pruner::prune_session;
use crate::region::{self, Owner, Region, Stability};
use dsh_agent::{AbortSignal, Agent, AgentEvent, PreStepArgs};
use dsh_llm::error_chain;
use dsh_protocol::LlmCallConfig;
use std::sync::Arc;

/// The listener body: relieve pressure, never fail the step.
pub(crate) async fn before_step(engine: &CompactionEngine, args: &AgentEvent<PreStepArgs>) {
    if args.signal.is_aborted() {
        return;
    }
    match relieve(engine, &args.agent, &args.signal).await {
        Ok(Some(result)) => tracing::info!(
            session = %args.agent.id(),
            "compaction (step pressure): shadowed {} surface nodes (seqs {}-{}, ~{} tokens)",
            result.shadowed_seqs.len(),
            result.shadowed_range.start,
            result.shadowed_range.end,
            result.shadowed_token_count
        ),
        Ok(None) => {}
        Err(AttemptError::TargetConfig {
            provider,
            model,
            reason,
        }) => {
            if engine.first_warning(format!("{provider}/{model}")) {
                tracing::warn!(
                    session = %args.agent.id(),
                    "automatic compaction is off for {provider}/{model}: {reason}"
                );
            }
        }
        Err(error) => tracing::warn!(
            session = %args.agent.id(),
            code = error.code(),
            "step compaction failed: {}; continuing the turn",
            error_chain(&error)
        ),
    }
}

/// `compact_if_needed(Pressure)`: `None` when below the threshold (or nothing compactable).
pub(crate) async fn relieve(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
    signal: &AbortSignal,
) -> Result<Option<CompactionResult>, AttemptError> {
    let session = agent.session();
    let Some(header) = session.request_header() else {
        return Ok(None);
    };
    let (provider, model) = (header.config.provider.clone(), header.config.model.clone());
    let total = engine.total_tokens(session)?;
    let window = context_window(engine, agent, &provider, &model, signal).await?;
    if let Some(reason) = engine.busy_reason(session) {
        return Err(AttemptError::Busy { reason });
    }
    let Some(window) = window else {
        return Err(AttemptError::TargetConfig {
            provider,
            model,
            reason: "the model's context window is unknown (set context_window for it)".into(),
        });
    };
    let pressure = engine
        .config
        .pressure(window)
        .map_err(|e| AttemptError::TargetConfig {
            provider: provider.clone(),
            model: model.clone(),
            reason: e.to_string(),
        })?;
    if total < pressure.threshold_tokens {
        return Ok(None);
    }
    prune_session(session, &engine.pruner)?;
    let mut total = engine.total_tokens(session)?;
    if total < pressure.threshold_tokens {
        return Ok(None);
    }
    let attempts = engine.config.retries.saturating_add(1);
    for attempt in 0..attempts {
        let Some(range) = engine.select(session, pressure.retain_tokens, engine.floor)? else {
            if attempt == 0 {
                return Ok(None);
            }
            break;
        };
        let region = Region {
            range,
            owner: Owner::OpenTurn,
            stability: Stability::WholeSurface,
            source_command_id: None,
        };
        let result = region::run(engine, agent, region, signal).await?;
        total = engine.total_tokens(session)?;
        if total < pressure.threshold_tokens {
            return Ok(Some(result));
        }
    }
    Err(AttemptError::StillAbove {
        attempts,
        total,
        threshold: pressure.threshold_tokens,
    })
}

/// The window of `provider/model`: from the session's `request/context` when it names that
/// model, else from the adapter's model facts.
async fn context_window(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
    provider: &str,
    model: &str,
    signal: &AbortSignal,
) -> Result<Option<u64>, AttemptError> {
    if let Some(context) = agent.session().request_context() {
        if context.provider == provider && context.model == model {
            if let Some(window) = context.context_window {
                return Ok(Some(window));
            }
        }
    }
    let llm = engine.llm()?;
    let config = LlmCallConfig {
        provider: provider.to_owned(),
        model: model.to_owned(),
        ..LlmCallConfig::default()
    };
    match llm.prepare_call(config, &signal.child_token()).await {
        Ok(prepared) => Ok(prepared.context_window()),
        Err(error) => Err(AttemptError::TargetConfig {
            provider: provider.to_owned(),
            model: model.to_owned(),
            reason: error.to_string(),
        }),
    }
}
