//! The side request that asks the model for a title.
//!
//! One direct `LlmRuntime` call, not a loop step: no `agent/request`, no retry, no tools.
//! It asks for reasoning effort `off` when the model offers it (thinking would eat the 64
//! token cap), carries the session id and purpose `title`, and has a deadline of its own.

use super::events::TitleRoute;
use dsh_llm::{BlockAssembler, LlmRequest, LlmRuntime, RequestPurpose};
use dsh_protocol::{
    codes, ContentBlock, FinishReason, LlmCallConfig, Message, MessageSource, SessionId,
};
use futures_util::StreamExt;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The plugin named in the request message's source (the original's).
pub const REQUEST_PLUGIN: &str = "dsh-session-title-llm";
/// The title provider recorded with model titles (the original's first-prompt provider).
pub const TITLE_PROVIDER: &str = "session-title-first-prompt-llm";

/// One human message as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TitleInput {
    pub seq: u64,
    pub text: String,
}

/// The system prompt: one plain line, in the messages' language, about so many words.
pub fn system_prompt(target_words: u64, target_cjk: u64) -> String {
    [
        "Create a concise title for an AI coding-assistant session from the supplied human messages.".to_owned(),
        "Return only the title on one line, in plain natural language, with no quotes, prefix, explanation, Markdown, XML, code or terminal control codes.".to_owned(),
        "Use the language of the messages.".to_owned(),
        format!("Aim for about {target_words} words in non-CJK languages or {target_cjk} CJK characters."),
    ]
    .join("\n")
}

/// The user message text: the inputs framed as JSON, so their text cannot break the frame.
pub fn framed_input(inputs: &[TitleInput]) -> String {
    let json = serde_json::to_string(inputs).unwrap_or_else(|_| "[]".into());
    format!("Generate the session title from this JSON array of human messages:\n{json}")
}

/// The request's one message.
pub fn request_message(framed: String) -> Message {
    Message::new(
        dsh_protocol::Role::User,
        vec![ContentBlock::text(framed)],
        MessageSource::plugin(REQUEST_PLUGIN),
    )
}

/// One side request.
#[derive(Clone, Debug)]
pub struct TitleCall {
    pub route: TitleRoute,
    pub session: SessionId,
    pub system: String,
    pub message: Message,
    pub max_tokens: u64,
    pub timeout: Duration,
}

/// Asks the call's route for a title; the raw text of its answer (text blocks joined with
/// spaces), or why there is none.
pub async fn ask_for_title(
    llm: &LlmRuntime,
    call: TitleCall,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let TitleCall {
        route,
        session,
        system,
        message,
        max_tokens,
        timeout,
    } = call;
    let call = async {
        let base = LlmCallConfig {
            provider: route.provider.clone(),
            model: route.model.clone(),
            max_tokens: Some(max_tokens),
            ..LlmCallConfig::default()
        };
        let quiet = LlmCallConfig {
            reasoning_effort: Some("off".into()),
            ..base.clone()
        };
        let prepared = match llm.prepare_call(quiet, cancel).await {
            Err(e) if e.failure.code == codes::UNSUPPORTED_REASONING_EFFORT => {
                llm.prepare_call(base, cancel).await
            }
            other => other,
        }
        .map_err(|e| e.to_string())?;
        let mut request = LlmRequest::new(prepared.config().clone(), vec![Arc::new(message)]);
        request.system = Some(system.into());
        request.session_id = Some(session.clone());
        request.purpose = RequestPurpose::Title;
        request.cancel = cancel.child_token();
        let mut stream = prepared
            .stream(Arc::new(request))
            .await
            .map_err(|e| e.to_string())?;
        let mut assembler = BlockAssembler::new();
        while let Some(chunk) = stream.next().await {
            assembler.push(&chunk.map_err(|e| e.to_string())?);
        }
        match assembler.finish() {
            FinishReason::Stop => {}
            FinishReason::MaxTokens => return Err("the title reached the output cap".into()),
            FinishReason::ToolCalls => return Err("the title model asked for a tool".into()),
            FinishReason::Error { failure } | FinishReason::Aborted { failure } => {
                return Err(failure.message)
            }
        }
        let blocks = assembler.blocks().map_err(|e| e.to_string())?;
        if blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { .. }))
        {
            return Err("the title output must be text only".into());
        }
        let text: Vec<&str> = blocks.iter().filter_map(ContentBlock::as_text).collect();
        Ok(text.join(" "))
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err("title generation was superseded".into()),
        outcome = tokio::time::timeout(timeout, call) => outcome
            .unwrap_or_else(|_| Err(format!("SESSION_TITLE_TIMEOUT: no title within {} s", timeout.as_secs()))),
    }
}
