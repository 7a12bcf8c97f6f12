//! Overflow recovery (spec §2.7): an `agent/request-error` listener that answers a provider's
//! context-overflow refusal (`CONTEXT_WINDOW_EXCEEDED`) with one compaction and one retry of
//! the same request.
//!
//! Per request at most `overflowRetries` recoveries (default 1). The count lives in memory and
//! is cleared when the agent goes idle or an `assistant/message` lands (the request got
//! through). A retry is asked for only when the surface actually changed (its replace
//! generation advanced). When recovery cannot help (the count is used up, nothing is
//! compactable, or the compaction failed without changing anything) and no inner listener
//! retries, the turn ends with a `CONTEXT_WINDOW_EXCEEDED` error that says what to do.

use crate::engine::{CompactionEngine, CompactionResult};
use crate::failure::AttemptError;
use crate::pruner::prune_session;
use crate::region::{self, Owner, Region, Stability};
use crate::select::SelectFloor;
use dsh_agent::{AbortSignal, Agent, AgentEvent, RequestErrorAction, RequestErrorArgs};
use dsh_llm::{error_chain, LlmError};
use dsh_protocol::{codes, LlmFailure};
use std::sync::Arc;

/// What the listener decided before asking the inner listeners.
pub(crate) enum Verdict {
    /// Not ours: pass the failure on untouched.
    Pass,
    /// Recovered: retry the request.
    Retry,
    /// Ours, but recovery cannot help: pass on, and end the turn with advice if no one retries.
    Exhausted,
}

/// The listener body.
pub(crate) async fn on_request_error(
    engine: &CompactionEngine,
    args: &AgentEvent<RequestErrorArgs>,
) -> Verdict {
    if args.failure.code != codes::CONTEXT_WINDOW_EXCEEDED || args.signal.is_aborted() {
        return Verdict::Pass;
    }
    if engine.config.overflow_retries == 0 {
        return Verdict::Pass;
    }
    let session = args.agent.session();
    if session.request_header().is_none() {
        return Verdict::Pass;
    }
    let used = engine.with_track(session, |track| {
        let count = &mut track.overflow;
        if CompactionEngine::assistant_since(session, count.checked_len) {
            count.count = 0;
        }
        count.checked_len = session.len();
        count.count
    });
    if used >= engine.config.overflow_retries {
        return Verdict::Exhausted;
    }
    let generation = session.surface().replace_generation;
    let outcome = recover(engine, &args.agent, &args.signal).await;
    let advanced = session.surface().replace_generation > generation;
    if args.signal.is_aborted() {
        return Verdict::Pass;
    }
    match outcome {
        Ok(Some(result)) if advanced => {
            tracing::info!(
                session = %args.agent.id(),
                "compaction (context overflow): shadowed {} surface nodes (~{} tokens); retrying the request",
                result.shadowed_seqs.len(),
                result.shadowed_token_count
            );
        }
        Err(error) if advanced => tracing::warn!(
            session = %args.agent.id(),
            "overflow compaction failed after durable surface progress: {}; retrying the request",
            error_chain(&error)
        ),
        Ok(_) => {
            tracing::warn!(session = %args.agent.id(), "context overflow: nothing left to compact");
            return Verdict::Exhausted;
        }
        Err(error) => {
            tracing::warn!(
                session = %args.agent.id(),
                "overflow compaction failed: {}",
                error_chain(&error)
            );
            return Verdict::Exhausted;
        }
    }
    engine.with_track(session, |track| {
        track.overflow.count += 1;
        track.overflow.checked_len = session.len();
    });
    Verdict::Retry
}

/// `compact_if_needed(ContextOverflow)`: prune, then compact everything but the newest
/// balanced unit. No threshold and no window are needed: the provider proved the overflow.
pub(crate) async fn recover(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
    signal: &AbortSignal,
) -> Result<Option<CompactionResult>, AttemptError> {
    let session = agent.session();
    prune_session(session, &engine.pruner)?;
    let Some(range) = engine.select(session, 0, SelectFloor::framing())? else {
        return Ok(None);
    };
    let region = Region {
        range,
        owner: Owner::OpenTurn,
        stability: Stability::WholeSurface,
        source_command_id: None,
    };
    region::run(engine, agent, region, signal).await.map(Some)
}

/// The turn's error when the request is still too large: the provider's failure, typed, with
/// what the person can do about it.
pub fn still_too_large(failure: &LlmFailure) -> LlmError {
    let mut failure = failure.clone();
    failure.message = format!(
        "{}: the conversation is still too large for this model's context window after \
         compaction; run /compact, or switch to a model with a larger context window",
        failure.message
    );
    LlmError::from_failure(failure)
}

/// Maps the verdict (and the inner listeners' answer) to the listener's result.
pub(crate) fn finish(
    verdict: Verdict,
    inner: Option<RequestErrorAction>,
    failure: &LlmFailure,
) -> Result<Option<RequestErrorAction>, LlmError> {
    match (verdict, inner) {
        (Verdict::Retry, _) => Ok(Some(RequestErrorAction::Retry)),
        (_, Some(action)) => Ok(Some(action)),
        (Verdict::Pass, None) => Ok(None),
        (Verdict::Exhausted, None) => Err(still_too_large(failure)),
    }
}
