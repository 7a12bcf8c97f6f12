//! The retry plugin: an `agent/request-error` listener that re-issues failed model requests
//! according to the serving adapter's retry policy.
//!
//! Retries are counted from the log (`llm/retry` events of the same turn, step, provider and
//! policy), so a resumed session continues the count instead of starting over, and every
//! retry is visible in the log before its delay starts.

use dsh_agent::{AgentEvent, RequestError, RequestErrorAction, RequestErrorArgs};
use dsh_kernel::{BoxError, Context, Plugin};
use dsh_llm::ResolvedRetryPolicy;
use dsh_session::{AppendOptions, EventData, LlmRetry, LlmRetryStarted, Session};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Settings of [`RetryPlugin`].
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RetryPluginConfig {
    /// Used when the failed call was not prepared through an adapter registration (a route
    /// served by an `llm/stream` listener), so no registration policy is known.
    pub fallback_policy: ResolvedRetryPolicy,
}

/// Retries retryable in-band model failures with backoff; see the module docs.
#[derive(Debug)]
pub struct RetryPlugin;

impl Plugin for RetryPlugin {
    const NAME: &'static str = "llm-retry";
    type Config = RetryPluginConfig;

    fn apply(ctx: &Context, config: Self::Config) -> Result<(), BoxError> {
        let fallback = Arc::new(config.fallback_policy);
        ctx.on_waterfall::<RequestError, _, _>(move |args, next| {
            let fallback = fallback.clone();
            async move {
                match plan_retry(&args, &fallback)? {
                    Some(plan) => run_retry(&args, plan).await,
                    None => next.run().await,
                }
            }
        })?
        .forget();
        Ok(())
    }
}

/// A retry that is allowed and about to be logged.
struct Plan {
    policy: ResolvedRetryPolicy,
    policy_key: String,
    retry: u64,
}

/// Decides whether this failure gets a retry; `None` leaves it to inner listeners.
fn plan_retry(
    args: &AgentEvent<RequestErrorArgs>,
    fallback: &ResolvedRetryPolicy,
) -> Result<Option<Plan>, BoxError> {
    let policy = args
        .retry_policy
        .clone()
        .unwrap_or_else(|| fallback.clone());
    if !policy.is_retryable(&args.failure.code) {
        return Ok(None);
    }
    let policy_key = policy.policy_key();
    let prior = prior_retries(args.agent.session(), args, &policy_key);
    if policy
        .max_retries()
        .is_some_and(|max| prior >= u64::from(max))
    {
        return Ok(None);
    }
    Ok(Some(Plan {
        policy,
        policy_key,
        retry: prior + 1,
    }))
}

fn prior_retries(session: &Session, args: &RequestErrorArgs, policy_key: &str) -> u64 {
    session
        .events()
        .iter()
        .filter(|event| {
            matches!(&event.data, EventData::LlmRetry(r)
                if r.turn == args.turn && r.step == args.step
                    && r.provider == args.provider && r.policy_key == policy_key)
        })
        .count() as u64
}

/// Logs the retry, waits, logs its start and asks for it. Cancellation during the wait ends
/// without a retry (the turn's abort path takes over).
async fn run_retry(
    args: &AgentEvent<RequestErrorArgs>,
    plan: Plan,
) -> Result<Option<RequestErrorAction>, BoxError> {
    if args.signal.is_aborted() {
        return Ok(None);
    }
    let session = args.agent.session();
    let retry_number = u32::try_from(plan.retry).unwrap_or(u32::MAX);
    let delay_ms = plan
        .policy
        .delay_for(retry_number, args.failure.provider_retry_after_ms);
    let retry_id = uuid::Uuid::new_v4().to_string();
    session.append(
        EventData::LlmRetry(Box::new(LlmRetry {
            retry_id: retry_id.clone(),
            turn: args.turn,
            step: args.step,
            provider: args.provider.clone(),
            mode: plan.policy.mode().to_string(),
            policy_key: plan.policy_key,
            retry: plan.retry,
            max_retries: plan.policy.max_retries().map(u64::from),
            delay_ms,
            failure: args.failure.clone(),
        })),
        AppendOptions::default(),
    )?;
    let delay = Duration::from_secs_f64(delay_ms.max(0.0) / 1000.0);
    tokio::select! {
        biased;
        () = args.signal.cancelled() => return Ok(None),
        () = tokio::time::sleep(delay) => {}
    }
    session.append(
        EventData::LlmRetryStarted(LlmRetryStarted {
            retry_id,
            turn: args.turn,
            step: args.step,
            retry: plan.retry,
        }),
        AppendOptions::default(),
    )?;
    Ok(Some(RequestErrorAction::Retry))
}
