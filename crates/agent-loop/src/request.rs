//! Building the frozen request of one attempt (spec §4.6) and logging what the model sees.
//!
//! Everything in the request is reconstructable from the log: messages are the session's
//! derived history, and config, system prompt and tools are the latest `request/header`,
//! which is logged here whenever it changes (and on the first request of this loop).

use crate::agent::ReactLoopAgent;
use crate::driver::race;
use crate::error::{fail, Interrupt, LoopError, OrFail};
use dsh_agent::{AbortSignal, AgentRequest, RequestArgs};
use dsh_kernel::BoxError;
use dsh_llm::{LlmRequest, PreparedCall, RequestPurpose};
use dsh_protocol::{codes, EpochHeader, LlmCallConfig, ToolSchema};
use dsh_session::{header_equals, EventData, HeaderReason, RequestContext, RequestHeader};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One attempt's request plus its prepared call (absent when no adapter serves the route
/// and an `llm/stream` listener is expected to own it).
pub(crate) struct BuiltRequest {
    pub(crate) request: Arc<LlmRequest>,
    pub(crate) prepared: Option<PreparedCall>,
}

impl ReactLoopAgent {
    /// The config proposal `agent/request` starts from.
    fn seed_config(&self) -> LlmCallConfig {
        let persisted = self.session.request_header();
        if self.header_logged.load(Ordering::SeqCst) {
            if let Some(header) = &persisted {
                // Keep this loop's choices, but let the adapter re-materialize its defaults.
                let mut config = header.config.clone();
                let defaults = header.adapter_defaults.unwrap_or_default();
                if defaults.reasoning_effort {
                    config.reasoning_effort = None;
                }
                if defaults.max_tokens {
                    config.max_tokens = None;
                }
                return config;
            }
        }
        let provider = self.options.provider.clone().unwrap_or_default();
        let model = self.options.model.clone().unwrap_or_default();
        // An effort chosen earlier on this same route survives a resume.
        let reasoning_effort = persisted.as_ref().and_then(|header| {
            let same_route = header.config.provider == provider && header.config.model == model;
            let defaulted = header.adapter_defaults.unwrap_or_default().reasoning_effort;
            (same_route && !defaulted)
                .then(|| header.config.reasoning_effort.clone())
                .flatten()
        });
        LlmCallConfig {
            provider,
            model,
            reasoning_effort,
            max_tokens: self.options.max_tokens,
            ..LlmCallConfig::default()
        }
    }

    pub(crate) async fn build_request(
        self: &Arc<Self>,
        turn: u64,
        step: u64,
        tools: &[ToolSchema],
        system: &Arc<str>,
        signal: &AbortSignal,
    ) -> Result<BuiltRequest, Interrupt> {
        let seed = self.seed_config();
        let proposal = self.events.waterfall::<AgentRequest, _, _, _>(
            RequestArgs {
                turn,
                step,
                signal: signal.clone(),
            },
            move |_| async move { Ok::<_, BoxError>(seed) },
        );
        let config = race(signal, proposal).await?.or_fail()?;
        if config.provider.is_empty() {
            return Err(fail(LoopError::MissingRoute { field: "provider" }));
        }
        if config.model.is_empty() {
            return Err(fail(LoopError::MissingRoute { field: "model" }));
        }
        let cancel = signal.child_token();
        let prepared = match race(
            signal,
            self.services.llm.prepare_call(config.clone(), &cancel),
        )
        .await?
        {
            Ok(prepared) => Some(prepared),
            Err(error) if error.code() == codes::NO_ADAPTER => None,
            Err(error) => return Err(fail(error)),
        };
        // Built in canonical form (empty parts absent), so nothing is copied twice.
        let header = EpochHeader {
            config: prepared.as_ref().map_or(config, |p| p.config().clone()),
            adapter_defaults: prepared
                .as_ref()
                .map(PreparedCall::adapter_defaults)
                .filter(|d| !d.is_empty()),
            system: (!system.is_empty()).then(|| Arc::clone(system)),
            tools: (!tools.is_empty()).then(|| tools.to_vec()),
        };
        self.log_header(&header)?;
        let context = RequestContext {
            provider: header.config.provider.clone(),
            model: header.config.model.clone(),
            context_window: prepared.as_ref().and_then(PreparedCall::context_window),
        };
        if self.session.request_context().as_ref() != Some(&context) {
            self.append(EventData::RequestContext(context))?;
        }
        let request = LlmRequest {
            config: header.config,
            messages: self.session.derive_messages(),
            system: header.system,
            tools: header.tools,
            session_id: Some(self.session.id().clone()),
            purpose: RequestPurpose::Step,
            cancel,
        };
        Ok(BuiltRequest {
            request: Arc::new(request),
            prepared,
        })
    }

    /// `initial`/`resume` on this loop's first request; `change` later iff it differs.
    fn log_header(&self, header: &EpochHeader) -> Result<(), Interrupt> {
        let previous = self.session.request_header();
        let reason = if !self.header_logged.load(Ordering::SeqCst) {
            Some(if previous.is_some() {
                HeaderReason::Resume
            } else {
                HeaderReason::Initial
            })
        } else if previous.is_none_or(|previous| !header_equals(&previous, header)) {
            Some(HeaderReason::Change)
        } else {
            None
        };
        if let Some(reason) = reason {
            self.append(EventData::RequestHeader(Box::new(RequestHeader {
                header: header.clone(),
                reason,
            })))?;
            self.header_logged.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}
