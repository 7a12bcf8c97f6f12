//! The summarization request (spec §2.5).
//!
//! One direct `LlmRuntime` call, not a loop step: no `agent/request`, no retry listener. The
//! request replays the last `request/header`'s system prompt and tools byte for byte and sends
//! the shadowed messages in surface order, so it extends the conversation's last request as a
//! prefix and the provider's prompt cache is reused up to the instruction. It carries the
//! session id and `purpose: compaction` (DeepSeek's route adds `x-deepseek-harness-compact: 1`).
//!
//! Reasoning (spec §9.8): the summary asks for reasoning effort `off` when the model offers
//! it, so thinking cannot eat the output cap and leave an empty, truncated summary; a model
//! without an `off` effort gets its default. The effort is part of the call config, not of the
//! message prefix, so the prompt cache is unaffected.

use crate::failure::AttemptError;
use dsh_agent::AbortSignal;
use dsh_llm::{BlockAssembler, LlmError, LlmRequest, LlmRuntime, RequestPurpose};
use dsh_protocol::{
    codes, ContentBlock, EpochHeader, FinishReason, LlmCallConfig, Message, MessageSource,
    SessionId, TokenUsage,
};
use futures_util::StreamExt;
use std::sync::Arc;

/// Failure code of a summary cut off at the output cap.
pub const MAX_TOKENS: &str = "MAX_TOKENS";
/// Failure code of a summary with no text.
pub const EMPTY_SUMMARY: &str = "EMPTY_SUMMARY";

/// The plugin named in the instruction message's source.
pub const INSTRUCTION_PLUGIN: &str = "dsh-compaction";

/// The effort asked for when the model offers it.
pub const SUMMARY_REASONING_EFFORT: &str = "off";

/// What the summarizer is told, after the messages it condenses.
pub const COMPACTION_INSTRUCTION: &str = "\
Stop working on the task for this one reply. Your job now is to compact the conversation \
above into a checkpoint: a condensed record from which another model, seeing only the \
checkpoint and the newest messages, can pick the work up without losing anything that \
matters.

Reply with exactly these eight Markdown sections, in this order, every one present. Use \
short bullet points; write (none) under a section that has nothing to record.

## Primary Request and Intent
## Key Technical Concepts
## Files and Code
## Errors and Fixes
## Pending Jobs
## Current Work
## Next Step
## Critical Context

Rules:
- Write plain English engineering notes. Keep file paths, commands, error messages, \
identifiers and numbers exactly as they appeared.
- Record what the user asked for, and every correction or preference they gave, faithfully \
and in their sense.
- If the conversation already starts with a <compacted-summary> checkpoint, fold its content \
into your sections so the result is one up-to-date summary; do not copy it forward as a \
separate block.
- Do not mention that this is a summary or a compaction, and do not call any tools.";

/// What to summarize and with which model.
pub struct SummaryInput {
    pub session_id: SessionId,
    pub provider: String,
    pub model: String,
    pub max_tokens: u64,
    /// The last logged request header (system prompt and tools are replayed from it).
    pub header: Option<Arc<EpochHeader>>,
    /// The shadowed nodes' messages, in surface order.
    pub messages: Vec<Arc<Message>>,
}

/// A usable summary.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryOutput {
    /// The text blocks of the answer.
    pub summary: Vec<ContentBlock>,
    /// Every block the model returned.
    pub raw_output: Vec<ContentBlock>,
    pub provider: String,
    pub model: String,
    pub max_tokens: u64,
    pub usage: Option<TokenUsage>,
}

/// The instruction message appended after the shadowed messages.
pub fn instruction_message() -> Message {
    Message::new(
        dsh_protocol::Role::User,
        vec![ContentBlock::text(COMPACTION_INSTRUCTION)],
        MessageSource::plugin(INSTRUCTION_PLUGIN),
    )
}

/// The request for `input` under `config` (the prepared call's config).
pub fn summary_request(
    input: &SummaryInput,
    config: LlmCallConfig,
    signal: &AbortSignal,
) -> LlmRequest {
    let mut messages = input.messages.clone();
    messages.push(Arc::new(instruction_message()));
    let mut request = LlmRequest::new(config, messages);
    if let Some(header) = &input.header {
        request.system = header.system.clone();
        request.tools = header.tools.clone();
    }
    request.session_id = Some(input.session_id.clone());
    request.purpose = RequestPurpose::Compaction;
    request.cancel = signal.child_token();
    request
}

/// Asks the model for a summary of `input`; every way it can fail is an
/// [`AttemptError::Summary`] (or [`AttemptError::Aborted`] when `signal` fired).
pub async fn summarize(
    llm: &LlmRuntime,
    input: SummaryInput,
    signal: &AbortSignal,
) -> Result<SummaryOutput, AttemptError> {
    let summary_error = AttemptError::Summary;
    let cancel = signal.child_token();
    let base = LlmCallConfig {
        provider: input.provider.clone(),
        model: input.model.clone(),
        max_tokens: Some(input.max_tokens),
        ..LlmCallConfig::default()
    };
    let quiet = LlmCallConfig {
        reasoning_effort: Some(SUMMARY_REASONING_EFFORT.into()),
        ..base.clone()
    };
    let prepared = match llm.prepare_call(quiet, &cancel).await {
        Err(e) if e.failure.code == codes::UNSUPPORTED_REASONING_EFFORT => {
            llm.prepare_call(base, &cancel).await
        }
        other => other,
    };
    if signal.is_aborted() {
        return Err(AttemptError::Aborted);
    }
    let prepared = prepared.map_err(summary_error)?;
    let request = Arc::new(summary_request(&input, prepared.config().clone(), signal));
    let mut stream = prepared.stream(request).await.map_err(summary_error)?;
    let mut assembler = BlockAssembler::new();
    loop {
        let next = tokio::select! {
            biased;
            () = signal.cancelled() => return Err(AttemptError::Aborted),
            next = stream.next() => next,
        };
        match next {
            Some(Ok(chunk)) => assembler.push(&chunk),
            Some(Err(error)) => return Err(summary_error(error)),
            None => break,
        }
    }
    if signal.is_aborted() {
        return Err(AttemptError::Aborted);
    }
    match assembler.finish() {
        FinishReason::Error { failure } | FinishReason::Aborted { failure } => {
            return Err(summary_error(LlmError::from_failure(*failure)));
        }
        FinishReason::MaxTokens => {
            return Err(summary_error(LlmError::new(
                MAX_TOKENS,
                "summarization truncated at the token cap (incomplete checkpoint)",
            )));
        }
        FinishReason::Stop | FinishReason::ToolCalls => {}
    }
    let raw_output = assembler
        .blocks()
        .map_err(|e| summary_error(LlmError::new(codes::MALFORMED_RESPONSE, e.to_string())))?;
    if raw_output
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }))
    {
        return Err(summary_error(LlmError::new(
            codes::UNSUPPORTED_CONTENT,
            "summarization returned an image",
        )));
    }
    let summary: Vec<ContentBlock> = raw_output
        .iter()
        .filter(|b| matches!(b, ContentBlock::Text { .. }))
        .cloned()
        .collect();
    let has_text = summary
        .iter()
        .any(|b| matches!(b, ContentBlock::Text { text } if !text.trim().is_empty()));
    if !has_text {
        return Err(summary_error(LlmError::new(
            EMPTY_SUMMARY,
            "summarization produced no text summary content",
        )));
    }
    Ok(SummaryOutput {
        summary,
        raw_output,
        provider: prepared.config().provider.clone(),
        model: prepared.config().model.clone(),
        max_tokens: prepared.config().max_tokens.unwrap_or(input.max_tokens),
        usage: assembler.usage(),
    })
}
