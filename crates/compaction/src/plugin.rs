//! `CompactionPlugin` (`"compaction"`): mounts the meter, the engine and the automatic
//! listeners.
//!
//! Provides [`MeterService`] and [`CompactionEngine`] as services. With `auto` (the default)
//! it adds the `agent/pre-step` pressure listener and the `agent/request-error` overflow
//! listener; with `auto = false` only manual compaction (`compact_now`) is available. Its row
//! sits early in the composition (after the LLM rows), so pressure is relieved before later
//! pre-step listeners decide on the step, and the retry row's listener (mounted before it)
//! sees a failure first and passes on what it does not retry.

use crate::config::CompactionConfig;
use crate::engine::CompactionEngine;
use crate::overflow::{self, Verdict};
use crate::pressure;
use crate::service::MeterService;
use dsh_agent::{AgentStatus, AgentStatusChanged, PreStep, RequestError};
use dsh_kernel::{BoxError, Context, Plugin};
use dsh_session::{SessionDisposed, SessionStore};
use std::sync::Arc;

/// The compaction plugin; see the module docs.
#[derive(Debug)]
pub struct CompactionPlugin;

impl Plugin for CompactionPlugin {
    const NAME: &'static str = "compaction";
    type Config = CompactionConfig;

    fn apply(ctx: &Context, config: Self::Config) -> Result<(), BoxError> {
        config.validate()?;
        let meters = MeterService::install(ctx)?;
        let sessions = ctx.require::<SessionStore>()?;
        let engine = CompactionEngine::new(ctx, config, meters, sessions);
        ctx.provide(Arc::clone(&engine))?.forget();
        let e = Arc::clone(&engine);
        ctx.on::<SessionDisposed>(move |session| {
            e.forget(session);
            Ok(())
        })?
        .forget();
        if !engine.config().auto {
            return Ok(());
        }
        let e = Arc::clone(&engine);
        ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
            let engine = Arc::clone(&e);
            async move {
                pressure::before_step(&engine, &args).await;
                next.run().await
            }
        })?
        .forget();
        let e = Arc::clone(&engine);
        ctx.on_waterfall::<RequestError, _, _>(move |args, next| {
            let engine = Arc::clone(&e);
            async move {
                let verdict = overflow::on_request_error(&engine, &args).await;
                let inner = match verdict {
                    Verdict::Retry => None,
                    Verdict::Pass | Verdict::Exhausted => next.run().await?,
                };
                Ok(overflow::finish(verdict, inner, &args.failure)?)
            }
        })?
        .forget();
        let e = Arc::clone(&engine);
        ctx.on::<AgentStatusChanged>(move |event| {
            if event.data == AgentStatus::Idle {
                e.reset_overflow(event.agent.session());
            }
            Ok(())
        })?
        .forget();
        Ok(())
    }
}
