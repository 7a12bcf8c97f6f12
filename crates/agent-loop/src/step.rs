//! One step (spec §4.4): request, stream, record, retry in place, dispatch tools.

use crate::agent::ReactLoopAgent;
use crate::driver::race;
use crate::error::{fail, Interrupt, OrFail};
use crate::request::BuiltRequest;
use crate::tool_calls::PlannedCall;
use dsh_agent::{AbortSignal, RequestError, RequestErrorAction, RequestErrorArgs};
use dsh_kernel::BoxError;
use dsh_llm::{BlockAssembler, LlmError};
use dsh_prompt::Assembly;
use dsh_protocol::{FinishReason, Message, MessageSource};
use dsh_session::{AppendOptions, AssistantChunk, AssistantMessage, EventData, TurnEndReason};
use futures_util::StreamExt;
use std::sync::Arc;

/// One attempt's stream state. If the attempt is cut off (aborted, or its future dropped),
/// the visible prefix is recorded as an interrupted assistant message citing exactly this
/// attempt's chunks.
struct Attempt {
    agent: Arc<ReactLoopAgent>,
    turn: u64,
    step: u64,
    provider: String,
    model: String,
    assembler: BlockAssembler,
    chunk_seqs: Vec<u64>,
    armed: bool,
}

impl Attempt {
    fn interrupt(&mut self) {
        if !std::mem::take(&mut self.armed) {
            return;
        }
        let blocks = self.assembler.interrupted_blocks();
        if blocks.is_empty() {
            return;
        }
        let message = Message::assistant(
            blocks,
            MessageSource::model(self.provider.clone(), self.model.clone()),
        );
        let data = EventData::AssistantMessage(AssistantMessage {
            turn: self.turn,
            step: self.step,
            message: Arc::new(message),
            usage: self.assembler.usage(),
            interrupted: true,
        });
        let opts = AppendOptions::surface_append().sources(self.chunk_seqs.clone());
        if let Err(error) = self.agent.session.append(data, opts) {
            tracing::warn!(%error, "could not record the interrupted assistant message");
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        self.interrupt();
    }
}

impl ReactLoopAgent {
    /// Returns the step's end: `Some(completed | max-tokens)`, or `None` when tool results
    /// are owed another request.
    pub(crate) async fn step(
        self: &Arc<Self>,
        turn: u64,
        step: u64,
        assembly: &Assembly,
        signal: &AbortSignal,
    ) -> Result<Option<TurnEndReason>, Interrupt> {
        let system = self.prompt.render(assembly).or_fail()?;
        loop {
            let built = self
                .build_request(turn, step, &assembly.tools, &system, signal)
                .await?;
            let mut attempt = Attempt {
                agent: self.clone(),
                turn,
                step,
                provider: built.request.config.provider.clone(),
                model: built.request.config.model.clone(),
                assembler: BlockAssembler::new(),
                chunk_seqs: Vec::new(),
                armed: true,
            };
            if let Err(interrupt) = self.stream_attempt(&built, &mut attempt, signal).await {
                if signal.is_aborted() {
                    attempt.interrupt();
                }
                attempt.armed = false;
                return Err(interrupt);
            }
            attempt.armed = false;
            let finish = attempt.assembler.finish();
            if let Some(failure) = finish.failure() {
                let offered = self.events.waterfall::<RequestError, _, _, _>(
                    RequestErrorArgs {
                        turn,
                        step,
                        provider: attempt.provider.clone(),
                        failure: failure.clone(),
                        retry_policy: built.prepared.as_ref().map(|p| p.retry_policy().clone()),
                        signal: signal.clone(),
                    },
                    |_| async { Ok::<_, BoxError>(None) },
                );
                let action = race(signal, offered).await?.or_fail()?;
                signal.check()?; // cancellation beats a retry
                if action != Some(RequestErrorAction::Retry) {
                    return Err(fail(LlmError::from_failure(failure.clone())));
                }
                continue; // the failed attempt's chunks stay log-only
            }
            let assembled = attempt.assembler.assemble().or_fail()?;
            let message = Arc::new(Message::assistant(
                assembled.blocks,
                MessageSource::Model {
                    // The attempt is disarmed; nothing reads its route any more.
                    provider: std::mem::take(&mut attempt.provider),
                    model: std::mem::take(&mut attempt.model),
                    replay_state: assembled.replay_state,
                },
            ));
            self.session
                .append(
                    EventData::AssistantMessage(AssistantMessage {
                        turn,
                        step,
                        message: message.clone(),
                        usage: attempt.assembler.usage(),
                        interrupted: false,
                    }),
                    AppendOptions::surface_append()
                        .sources(std::mem::take(&mut attempt.chunk_seqs)),
                )
                .or_fail()?;
            if finish == FinishReason::MaxTokens {
                return Ok(Some(TurnEndReason::MaxTokens)); // tool calls were dropped
            }
            let calls: Vec<PlannedCall> = message
                .tool_calls()
                .map(|(id, name, arguments)| PlannedCall {
                    call_id: id.clone(),
                    name: name.to_owned(),
                    arguments: arguments.to_owned(),
                })
                .collect();
            if calls.is_empty() {
                return Ok(Some(TurnEndReason::Completed));
            }
            let concluded = self.execute_tool_calls(turn, step, calls, signal).await?;
            return Ok(concluded.then_some(TurnEndReason::Completed));
        }
    }

    async fn stream_attempt(
        &self,
        built: &BuiltRequest,
        attempt: &mut Attempt,
        signal: &AbortSignal,
    ) -> Result<(), Interrupt> {
        let request = built.request.clone();
        let opened = match &built.prepared {
            Some(prepared) => race(signal, prepared.stream(request)).await?,
            None => race(signal, self.services.llm.stream(request)).await?,
        };
        let mut stream = opened.or_fail()?;
        signal.check()?;
        while let Some(next) = race(signal, stream.next()).await? {
            let chunk = next.or_fail()?;
            signal.check()?;
            let event = self.append(EventData::AssistantChunk(AssistantChunk {
                turn: attempt.turn,
                step: attempt.step,
                chunk,
            }))?;
            attempt.chunk_seqs.push(event.seq);
            // Assembled from the logged copy: the chunk is moved into the log, not cloned.
            if let EventData::AssistantChunk(logged) = &event.data {
                attempt.assembler.push(&logged.chunk);
            }
        }
        signal.check()?;
        Ok(())
    }
}
