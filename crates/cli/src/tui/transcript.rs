//! The transcript view-model: what a person sees of a session, folded from its events.
//!
//! The fold reads only the log ([`SessionEvent`]s), so a live session and a replayed one look
//! the same. Streamed chunks build entries as they arrive; the assembled `assistant/message`
//! then settles them (or creates them, when a log carries no chunks).
//!
//! Every text an entry holds is terminal-safe: what came from the log went through
//! [`crate::sanitize`] on the way in (per streamed block, so a sequence split across deltas
//! goes whole), since the view's text ends up on the person's terminal.

mod compaction;
mod subagents;

pub use compaction::{Compacted, CompactionCard, CompactionState, PruneNote};
pub use subagents::{
    card_lines as subagent_card_lines, child_transcript_lines, live_child_lines, LiveChild,
    Settlement, SubagentCard, SubagentEvent, REPORT_PREVIEW_LINES,
};

use super::context::ContextFill;
use super::cost::ModelTokens;
use super::text::args_summary;
use crate::sanitize::{sanitize, TerminalSanitizer};
use dsh_protocol::{
    CallId, ContentBlock, FinishReason, LlmFailure, MessageSource, StreamChunk, TokenUsage,
};
use dsh_session::{EventData, SessionEvent, SurfaceOp, Todo, TurnEndCancelCause, TurnEndReason};
use std::collections::{BTreeMap, HashMap};

/// One visible item of the transcript.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// A prompt the person typed.
    User {
        text: String,
    },
    /// Assistant text.
    Assistant {
        text: String,
        streaming: bool,
        interrupted: bool,
    },
    /// The model's reasoning, shown dimmed and collapsed unless expanded.
    Reasoning {
        text: String,
        streaming: bool,
    },
    Tool(ToolCard),
    Retry(RetryNotice),
    /// A todo list as written by `todo_write`.
    Todos(Vec<Todo>),
    /// A compaction of older history (or a failed attempt).
    Compaction(CompactionCard),
    /// Old tool results cut to their head and tail.
    Pruned(PruneNote),
    /// A background subagent started, settled or reported.
    Subagent(SubagentCard),
    /// `@session` references of the prompt above: what was brought in, what was skipped.
    Referenced(Vec<String>),
    TurnEnd {
        turn: u64,
        outcome: TurnOutcome,
    },
}

/// A tool call and, once it finished, its result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCard {
    pub call_id: CallId,
    pub name: String,
    /// One line describing the arguments.
    pub summary: String,
    pub state: ToolState,
    /// What the tool reported beside its output (`tool/result`'s `meta`): a diff, an exit
    /// code, counts. Its texts are not sanitized; the card does that.
    pub meta: Option<serde_json::Value>,
    /// When the call was logged (ms), and how long it took once it finished.
    pub started_ms: u64,
    pub duration_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolState {
    Running,
    Done {
        output: String,
    },
    Failed {
        output: String,
        code: Option<String>,
    },
}

/// A failed model request the retry policy will try again.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryNotice {
    pub retry: u64,
    pub max_retries: Option<u64>,
    pub delay_ms: f64,
    pub failure: LlmFailure,
    /// The retried request has begun.
    pub started: bool,
}

/// How a turn ended, in words a person reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnOutcome {
    Completed,
    /// Cancelled; the text says by whom.
    Cancelled(String),
    Blocked,
    Failed(LlmFailure),
    MaxTokens,
    /// Closed by crash repair.
    Interrupted,
    /// A reason this build does not know.
    Other(String),
}

/// What the agent is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Idle,
    Running {
        turn: u64,
        step: Option<u64>,
    },
    /// Waiting out a retry delay.
    Retrying {
        turn: u64,
        retry: u64,
        max_retries: Option<u64>,
    },
}

/// Token accounting for the status line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// Prompt tokens over all calls, cached ones included.
    pub input: u64,
    pub output: u64,
    /// Prompt tokens of the latest call (input + cached): how full the context is.
    pub last_prompt: Option<u64>,
}

/// The folded transcript.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    provider: Option<String>,
    model: Option<String>,
    context_window: Option<u64>,
    usage: UsageTotals,
    /// Tokens by model, for the cost (`tui::cost`).
    tokens_by_model: BTreeMap<String, ModelTokens>,
    run: Option<RunState>,
    todos: Vec<Todo>,
    reasoning_expanded: bool,
    compaction_expanded: bool,
    /// The latest measurement of the context, from the application's token meter.
    context_fill: Option<ContextFill>,
    stream: StreamState,
}

/// Bookkeeping of the model call in flight.
#[derive(Clone, Debug, Default)]
struct StreamState {
    /// Block index to entry index, for the call in flight.
    blocks: HashMap<u32, usize>,
    /// Block index to the sanitizer of its streamed text.
    sanitizers: HashMap<u32, TerminalSanitizer>,
    /// Whether the call in flight has produced visible entries from chunks.
    streamed: bool,
    /// Usage seen in chunks and not yet counted.
    pending_usage: Option<TokenUsage>,
}

impl Transcript {
    pub fn new() -> Self {
        Self::default()
    }

    /// A transcript of all `events`.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a SessionEvent>) -> Self {
        let mut transcript = Self::new();
        for event in events {
            transcript.apply(event);
        }
        transcript
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }

    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    /// Where requests go, before the log says: the configured route.
    pub fn set_route(
        &mut self,
        provider: impl Into<String>,
        model: impl Into<String>,
        context_window: Option<u64>,
    ) {
        self.provider = Some(provider.into());
        self.model = Some(model.into());
        self.context_window = context_window;
    }

    pub fn usage(&self) -> UsageTotals {
        self.usage
    }

    /// Tokens used by each model, split as prices are (uncached, cached, output).
    pub fn tokens_by_model(&self) -> &BTreeMap<String, ModelTokens> {
        &self.tokens_by_model
    }

    pub fn run_state(&self) -> RunState {
        self.run.unwrap_or(RunState::Idle)
    }

    /// The latest todo list.
    pub fn todos(&self) -> &[Todo] {
        &self.todos
    }

    pub fn reasoning_expanded(&self) -> bool {
        self.reasoning_expanded
    }

    /// Shows reasoning in full (`true`) or as one dimmed line per block (`false`).
    pub fn set_reasoning_expanded(&mut self, expanded: bool) {
        self.reasoning_expanded = expanded;
    }

    pub fn compaction_expanded(&self) -> bool {
        self.compaction_expanded
    }

    /// Shows compaction cards with their summary (`true`) or as one line (`false`).
    pub fn set_compaction_expanded(&mut self, expanded: bool) {
        self.compaction_expanded = expanded;
    }

    /// How full the context is: the meter's latest measurement when there is one, else the
    /// prompt the provider reported for the latest call, against the known window.
    pub fn context_fill(&self) -> ContextFill {
        match self.context_fill {
            Some(fill) => ContextFill {
                window: fill.window.or(self.context_window),
                ..fill
            },
            None => ContextFill {
                tokens: self.usage.last_prompt.unwrap_or(0),
                window: self.context_window,
                window_guessed: false,
            },
        }
    }

    /// Records the meter's measurement (`None`: nothing measures this session).
    pub fn set_context_fill(&mut self, fill: Option<ContextFill>) {
        self.context_fill = fill;
    }

    /// Folds one event in. Events the view does not show are ignored.
    pub fn apply(&mut self, event: &SessionEvent) {
        match &event.data {
            EventData::TurnStart(start) => {
                self.run = Some(RunState::Running {
                    turn: start.turn,
                    step: None,
                });
            }
            EventData::StepStart(step) => {
                self.run = Some(RunState::Running {
                    turn: step.turn,
                    step: Some(step.step),
                });
                self.stream = StreamState::default();
            }
            EventData::UserMessage(message) if is_replace(event) => {
                self.replaced_user_message(message);
            }
            EventData::UserMessage(message) => {
                if matches!(message.source, MessageSource::User { .. }) {
                    let mut text = clean(&message.text());
                    for block in &message.content {
                        if matches!(block, ContentBlock::Image { .. }) {
                            text.push_str(if text.is_empty() {
                                "[image]"
                            } else {
                                " [image]"
                            });
                        }
                    }
                    self.entries.push(Entry::User { text });
                } else {
                    let lines = dsh_memory::reference_lines(message);
                    if !lines.is_empty() {
                        self.entries.push(Entry::Referenced(lines));
                    }
                }
            }
            EventData::AssistantChunk(chunk) => self.apply_chunk(&chunk.chunk),
            EventData::AssistantMessage(assistant) => {
                if self.stream.streamed {
                    self.settle_stream(assistant.interrupted);
                } else {
                    for block in &assistant.message.content {
                        match block {
                            ContentBlock::Reasoning { text } if !text.trim().is_empty() => {
                                self.entries.push(Entry::Reasoning {
                                    text: clean(text),
                                    streaming: false,
                                });
                            }
                            ContentBlock::Text { text } if !text.trim().is_empty() => {
                                self.entries.push(Entry::Assistant {
                                    text: clean(text),
                                    streaming: false,
                                    interrupted: assistant.interrupted,
                                });
                            }
                            _ => {}
                        }
                    }
                }
                let usage = assistant.usage.or(self.stream.pending_usage);
                self.count_usage(usage);
                if let MessageSource::Model {
                    provider, model, ..
                } = &assistant.message.source
                {
                    self.provider = Some(provider.clone());
                    self.model = Some(model.clone());
                }
                self.stream = StreamState::default();
            }
            EventData::ToolCall(call) => self.entries.push(Entry::Tool(ToolCard {
                call_id: call.call_id.clone(),
                name: clean(&call.name),
                summary: clean(&args_summary(&call.name, &call.arguments)),
                state: ToolState::Running,
                meta: None,
                started_ms: event.time,
                duration_ms: None,
            })),
            EventData::ToolResult(result) if is_replace(event) => {
                self.replaced_tool_result(&result.message);
            }
            EventData::ToolResult(result) => {
                let (call_id, output, is_error) = match result.message.content.as_slice() {
                    [ContentBlock::ToolResult {
                        tool_call_id,
                        content,
                        is_error,
                    }] => {
                        // An image shows as what it is (type, size, id): the card has
                        // no pixels, but the person sees that the model got one.
                        let text: Vec<String> = content
                            .iter()
                            .filter_map(|block| match block {
                                ContentBlock::Image { attachment } => Some(format!(
                                    "[image: {}]",
                                    dsh_attachments::text::describe_value(attachment)
                                        .unwrap_or_else(|| "unknown reference".into())
                                )),
                                other => other.as_text().map(str::to_owned),
                            })
                            .collect();
                        (
                            tool_call_id.clone(),
                            clean(&text.join("\n")),
                            is_error.unwrap_or(false),
                        )
                    }
                    _ => return,
                };
                let failed = is_error || result.error.is_some();
                let state = if failed {
                    ToolState::Failed {
                        output,
                        code: result.error.as_ref().map(|e| e.code.clone()),
                    }
                } else {
                    ToolState::Done { output }
                };
                let card = self.entries.iter_mut().rev().find_map(|entry| match entry {
                    Entry::Tool(card) if card.call_id == call_id => Some(card),
                    _ => None,
                });
                let meta = result.meta.as_ref().map(|m| m.to_value());
                if let Some(card) = card {
                    card.state = state;
                    card.meta = meta.clone();
                    card.duration_ms = Some(event.time.saturating_sub(card.started_ms));
                }
                self.apply_subagent_link(meta.as_ref());
            }
            EventData::TodoWrite(write) => {
                let mut todos = write.todos.clone();
                for todo in &mut todos {
                    todo.content = clean(&todo.content);
                }
                self.todos = todos.clone();
                self.entries.push(Entry::Todos(todos));
            }
            EventData::RequestContext(context) => {
                self.provider = Some(context.provider.clone());
                self.model = Some(context.model.clone());
                self.context_window = context.context_window;
            }
            EventData::LlmRetry(retry) => {
                self.stream = StreamState::default();
                self.run = Some(RunState::Retrying {
                    turn: retry.turn,
                    retry: retry.retry,
                    max_retries: retry.max_retries,
                });
                self.entries.push(Entry::Retry(RetryNotice {
                    retry: retry.retry,
                    max_retries: retry.max_retries,
                    delay_ms: retry.delay_ms,
                    failure: clean_failure(&retry.failure),
                    started: false,
                }));
            }
            EventData::LlmRetryStarted(started) => {
                self.run = Some(RunState::Running {
                    turn: started.turn,
                    step: Some(started.step),
                });
                if let Some(Entry::Retry(notice)) = self
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| matches!(e, Entry::Retry(n) if n.retry == started.retry))
                {
                    notice.started = true;
                }
            }
            EventData::InboxSpliced(splice) => self.apply_subagent_splice(splice),
            EventData::EndSeed => self.abandon_compactions(),
            EventData::Other { .. } => {
                self.apply_compaction(event);
            }
            EventData::TurnEnd(end) => {
                if matches!(end.reason, TurnEndReason::Interrupted) {
                    self.abandon_compactions();
                }
                self.settle_stream(false);
                self.stream = StreamState::default();
                self.run = Some(RunState::Idle);
                self.entries.push(Entry::TurnEnd {
                    turn: end.turn,
                    outcome: outcome(&end.reason),
                });
            }
            _ => {}
        }
    }

    fn apply_chunk(&mut self, chunk: &StreamChunk) {
        match chunk {
            StreamChunk::BlockStart { index, block_type } => {
                let entry = match block_type {
                    dsh_protocol::BlockType::Text => Entry::Assistant {
                        text: String::new(),
                        streaming: true,
                        interrupted: false,
                    },
                    dsh_protocol::BlockType::Reasoning => Entry::Reasoning {
                        text: String::new(),
                        streaming: true,
                    },
                    _ => return,
                };
                self.entries.push(entry);
                self.stream.blocks.insert(*index, self.entries.len() - 1);
                self.stream
                    .sanitizers
                    .insert(*index, TerminalSanitizer::new());
                self.stream.streamed = true;
            }
            StreamChunk::TextDelta { index, text }
            | StreamChunk::ReasoningDelta { index, text } => {
                let shown = self
                    .stream
                    .sanitizers
                    .get_mut(index)
                    .map(|sanitizer| sanitizer.clean(text));
                if let (Some(shown), Some(slot)) = (shown, self.block_text(*index)) {
                    slot.push_str(&shown);
                }
            }
            StreamChunk::BlockEnd { index, block } => {
                if let (Some(slot), Some(text)) = (self.block_text(*index), block.as_text()) {
                    // The assembled block is authoritative.
                    *slot = clean(text);
                }
            }
            StreamChunk::Usage { usage } => {
                self.stream.pending_usage = Some(*usage);
                self.usage.last_prompt = Some(prompt_tokens(usage));
            }
            StreamChunk::Finish { reason, .. } => {
                if matches!(
                    reason,
                    FinishReason::Error { .. } | FinishReason::Aborted { .. }
                ) {
                    // No assistant message follows a failed call; count what it used now.
                    let pending = self.stream.pending_usage.take();
                    self.count_usage(pending);
                    self.settle_stream(matches!(reason, FinishReason::Aborted { .. }));
                }
            }
            StreamChunk::ToolCallDelta { .. } => {}
        }
    }

    fn block_text(&mut self, index: u32) -> Option<&mut String> {
        let at = *self.stream.blocks.get(&index)?;
        match self.entries.get_mut(at)? {
            Entry::Assistant { text, .. } | Entry::Reasoning { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Marks the entries of the call in flight as finished; drops blocks that stayed empty.
    fn settle_stream(&mut self, interrupted: bool) {
        let mut indexes: Vec<usize> = self.stream.blocks.values().copied().collect();
        indexes.sort_unstable();
        for &at in indexes.iter().rev() {
            let empty = match self.entries.get_mut(at) {
                Some(Entry::Assistant {
                    text,
                    streaming,
                    interrupted: cut,
                }) => {
                    *streaming = false;
                    *cut = interrupted;
                    text.trim().is_empty()
                }
                Some(Entry::Reasoning { text, streaming }) => {
                    *streaming = false;
                    text.trim().is_empty()
                }
                _ => false,
            };
            if empty {
                self.entries.remove(at);
            }
        }
        self.stream.blocks.clear();
        self.stream.sanitizers.clear();
    }

    fn count_usage(&mut self, usage: Option<TokenUsage>) {
        if let Some(usage) = usage {
            let prompt = prompt_tokens(&usage);
            self.usage.input += prompt;
            self.usage.output += usage.output_tokens;
            self.usage.last_prompt = Some(prompt);
            let model = self.model.clone().unwrap_or_default();
            self.tokens_by_model.entry(model).or_default().add(&usage);
        }
    }
}

/// Whether a surface event replaces earlier nodes (a checkpoint, a pruned result) instead of
/// adding to the conversation.
fn is_replace(event: &SessionEvent) -> bool {
    matches!(event.surface_op, Some(SurfaceOp::Replace { .. }))
}

/// `text` as the view may show it.
fn clean(text: &str) -> String {
    sanitize(text).into_owned()
}

/// `failure` with its message made safe to show (it may quote the provider or the model).
fn clean_failure(failure: &LlmFailure) -> LlmFailure {
    LlmFailure {
        message: clean(&failure.message),
        code: clean(&failure.code),
        ..failure.clone()
    }
}

fn prompt_tokens(usage: &TokenUsage) -> u64 {
    usage.input_tokens + usage.cache_read_tokens.unwrap_or(0)
}

fn outcome(reason: &TurnEndReason) -> TurnOutcome {
    match reason {
        TurnEndReason::Completed => TurnOutcome::Completed,
        TurnEndReason::Blocked => TurnOutcome::Blocked,
        TurnEndReason::Aborted { reason } => TurnOutcome::Cancelled(match reason {
            TurnEndCancelCause::User => "by you".into(),
            TurnEndCancelCause::Parent => "by the parent agent".into(),
            TurnEndCancelCause::Hook { reason } => format!("by a hook: {}", clean(reason)),
            TurnEndCancelCause::Disposed => "because the agent shut down".into(),
            TurnEndCancelCause::Legacy => "(by an older dsh)".into(),
        }),
        TurnEndReason::Error { error } => TurnOutcome::Failed(clean_failure(error)),
        TurnEndReason::MaxTokens => TurnOutcome::MaxTokens,
        TurnEndReason::Interrupted => TurnOutcome::Interrupted,
        TurnEndReason::Other(fields) => TurnOutcome::Other(clean(
            fields
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unknown"),
        )),
    }
}
