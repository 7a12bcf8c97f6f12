//! The last step before an adapter: deterministic request projections and the guard that makes
//! every call end in exactly one `finish` chunk.
//!
//! Projections here only depend on the log and the model's facts, so a request rebuilt from
//! the log projects to the same thing ("model-visible ⇔ recorded" still holds).

use crate::adapter::{ChunkStream, LlmRequest};
use crate::error::{normalize_failure, LlmError};
use dsh_protocol::{codes, ContentBlock, LlmFailure, Message, MessageSource, StreamChunk};
use futures_util::stream::{self, StreamExt};
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The text an image becomes for a model that only reads text, when its reference names no
/// image this build can describe (a known reference gets [`dsh_attachments::text::text_only`]:
/// the same words plus the image's type, size and id).
pub const IMAGE_PLACEHOLDER: &str = dsh_attachments::text::TEXT_ONLY_UNKNOWN;

/// Returns `request` with two projections applied, or the same `Arc` when neither changes
/// anything:
/// - replay state is removed from assistant messages whose provider route is not served by the
///   dispatching adapter (`same_adapter(provider)` is false), since it is opaque data only the
///   producing adapter understands;
/// - when `accepts_images` is false, image blocks (also inside tool results) become a text
///   naming the image and its size ([`dsh_attachments::text::text_only`]), never a silent drop.
pub fn project_request(
    request: Arc<LlmRequest>,
    same_adapter: impl Fn(&str) -> bool,
    accepts_images: bool,
) -> Arc<LlmRequest> {
    // The common case changes nothing: find out without copying the message list, which
    // grows with the history and would otherwise be copied on every request.
    let needs_projection = |message: &Arc<Message>| {
        strips_replay(message, &same_adapter)
            || (!accepts_images && message.content.iter().any(has_image))
    };
    if !request.messages.iter().any(needs_projection) {
        return request;
    }
    let mut projected = (*request).clone();
    projected.messages = request
        .messages
        .iter()
        .map(|message| project_message(message, &same_adapter, accepts_images))
        .collect();
    Arc::new(projected)
}

fn strips_replay(message: &Message, same_adapter: &impl Fn(&str) -> bool) -> bool {
    matches!(&message.source,
        MessageSource::Model { provider, replay_state: Some(_), .. } if !same_adapter(provider))
}

fn project_message(
    message: &Arc<Message>,
    same_adapter: &impl Fn(&str) -> bool,
    accepts_images: bool,
) -> Arc<Message> {
    let strip = strips_replay(message, same_adapter);
    let replace = !accepts_images && message.content.iter().any(has_image);
    if !strip && !replace {
        return Arc::clone(message);
    }
    let mut copy = (**message).clone();
    if strip {
        if let MessageSource::Model { replay_state, .. } = &mut copy.source {
            *replay_state = None;
        }
    }
    if replace {
        copy.content = replace_images_in(copy.content);
    }
    Arc::new(copy)
}

fn has_image(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Image { .. } => true,
        ContentBlock::ToolResult { content, .. } => content.iter().any(has_image),
        _ => false,
    }
}

/// `blocks` with each image (also inside tool results) replaced by its text. A placeholder
/// between text blocks gets line breaks around it, since adapters join a message's text
/// blocks as they are.
fn replace_images_in(blocks: Vec<ContentBlock>) -> Vec<ContentBlock> {
    let ends_with_newline = |block: Option<&ContentBlock>| match block {
        Some(ContentBlock::Text { text }) => text.is_empty() || text.ends_with('\n'),
        _ => true,
    };
    let starts_with_newline = |block: Option<&ContentBlock>| match block {
        Some(ContentBlock::Text { text }) => text.is_empty() || text.starts_with('\n'),
        _ => true,
    };
    let mut out: Vec<ContentBlock> = Vec::with_capacity(blocks.len());
    let mut blocks = blocks.into_iter().peekable();
    while let Some(block) = blocks.next() {
        let replaced = match block {
            ContentBlock::Image { attachment } => {
                let mut text = dsh_attachments::text::text_only(&attachment);
                if !ends_with_newline(out.last()) {
                    text.insert(0, '\n');
                }
                if !starts_with_newline(blocks.peek()) {
                    text.push('\n');
                }
                ContentBlock::text(text)
            }
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => ContentBlock::ToolResult {
                tool_call_id,
                content: replace_images_in(content),
                is_error,
            },
            other => other,
        };
        out.push(replaced);
    }
    out
}

/// The terminal chunk for a failed call: `aborted` when the caller cancelled or the code says
/// so, `error` otherwise.
pub fn failure_chunk(error: LlmError, cancel: &CancellationToken) -> StreamChunk {
    let failure = normalize_failure(error.failure);
    if cancel.is_cancelled() || failure.code == codes::ABORTED {
        StreamChunk::aborted(failure)
    } else {
        StreamChunk::error(failure)
    }
}

fn aborted_failure() -> LlmFailure {
    LlmFailure::new(codes::ABORTED, "the model request was cancelled")
}

/// Runs `dispatch` and wraps what it yields so the caller sees chunks only:
/// a dispatch error or an item error becomes one terminal `finish` chunk; cancellation (while
/// dispatching or streaming) drops the adapter's stream at once and ends with `aborted`;
/// nothing is passed on after a `finish` chunk.
pub async fn guarded<F>(dispatch: F, cancel: CancellationToken) -> ChunkStream
where
    F: Future<Output = Result<ChunkStream, LlmError>> + Send,
{
    let started = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(LlmError::from_failure(aborted_failure())),
        result = dispatch => result,
    };
    let inner = match started {
        Ok(inner) => inner,
        Err(error) => {
            let chunk = failure_chunk(error, &cancel);
            return stream::iter([Ok(chunk)]).boxed();
        }
    };
    stream::unfold(Some(inner), move |state| {
        let cancel = cancel.clone();
        async move {
            let mut inner = state?;
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => Some(Err(LlmError::from_failure(aborted_failure()))),
                next = inner.next() => next,
            };
            match next {
                None => None,
                Some(Ok(chunk)) => {
                    let more = !matches!(chunk, StreamChunk::Finish { .. });
                    Some((Ok(chunk), more.then_some(inner)))
                }
                // Dropping `inner` here releases the adapter's connection immediately.
                Some(Err(error)) => Some((Ok(failure_chunk(error, &cancel)), None)),
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{FinishReason, LlmCallConfig, Role};
    use serde_json::json;

    fn model_message(provider: &str) -> Arc<Message> {
        Arc::new(Message::assistant(
            vec![ContentBlock::text("hi")],
            MessageSource::Model {
                provider: provider.into(),
                model: "m".into(),
                replay_state: Some(json!({"response":"r"})),
            },
        ))
    }

    #[test]
    fn foreign_replay_state_is_stripped_and_own_is_kept() {
        let own = model_message("mine");
        let foreign = model_message("theirs");
        let request = Arc::new(LlmRequest::new(
            LlmCallConfig::default(),
            vec![own.clone(), foreign.clone()],
        ));
        let projected = project_request(request, |p| p == "mine", true);
        assert!(Arc::ptr_eq(&projected.messages[0], &own));
        let mut expected = (*foreign).clone();
        expected.source = MessageSource::model("theirs", "m");
        assert_eq!(*projected.messages[1], expected);
    }

    #[test]
    fn unchanged_requests_are_passed_through() {
        let request = Arc::new(LlmRequest::new(
            LlmCallConfig::default(),
            vec![model_message("mine")],
        ));
        let projected = project_request(request.clone(), |_| true, false);
        assert!(Arc::ptr_eq(&projected, &request));
    }

    #[test]
    fn images_become_placeholders_for_text_only_models() {
        let image = ContentBlock::Image {
            attachment: json!({"id":"a1"}),
        };
        let known = ContentBlock::Image {
            attachment: json!({"attachmentId": "sha256:0123abcd", "mediaType": "image/gif",
                "bytes": 2048, "width": 3, "height": 4}),
        };
        let user = Arc::new(Message::new(
            Role::User,
            vec![ContentBlock::text("look"), image.clone()],
            MessageSource::user(),
        ));
        let tool = Arc::new(Message::tool_result(
            "c".into(),
            vec![ContentBlock::text("a"), known, ContentBlock::text("b")],
            false,
        ));
        let request = Arc::new(LlmRequest::new(LlmCallConfig::default(), vec![user, tool]));
        let kept = project_request(request.clone(), |_| true, true);
        assert!(Arc::ptr_eq(&kept, &request));
        let projected = project_request(request, |_| true, false);
        assert_eq!(
            serde_json::to_value(&projected.messages[0].content).unwrap(),
            json!([{"type":"text","text":"look"},{"type":"text","text":format!("\n{IMAGE_PLACEHOLDER}")}])
        );
        assert_eq!(
            serde_json::to_value(&projected.messages[1].content).unwrap(),
            json!([{"type":"tool-result","toolCallId":"c","isError":false,
                    "content":[{"type":"text","text":"a"},
                        {"type":"text","text":"\n[image omitted: this model does not accept \
                        image input; image/gif, 3x4 px, 2 KiB, sha256:0123abcd]\n"},
                        {"type":"text","text":"b"}]}])
        );
    }

    async fn collect(stream: ChunkStream) -> Vec<StreamChunk> {
        stream.map(|item| item.unwrap()).collect().await
    }

    #[tokio::test]
    async fn dispatch_errors_become_one_finish_chunk() {
        let cancel = CancellationToken::new();
        let failing = async { Err(LlmError::new(codes::SERVER, "down")) };
        let chunks = collect(guarded(failing, cancel).await).await;
        assert_eq!(
            chunks,
            vec![StreamChunk::error(LlmFailure::new(codes::SERVER, "down"))]
        );
    }

    #[tokio::test]
    async fn item_errors_end_the_stream_and_aborted_code_maps_to_aborted() {
        let cancel = CancellationToken::new();
        let items = vec![
            Ok(StreamChunk::TextDelta {
                index: 0,
                text: "a".into(),
            }),
            Err(LlmError::new(codes::ABORTED, "stop")),
            Ok(StreamChunk::finish(FinishReason::Stop)),
        ];
        let inner = stream::iter(items).boxed();
        let chunks = collect(guarded(async { Ok(inner) }, cancel).await).await;
        assert_eq!(
            chunks,
            vec![
                StreamChunk::TextDelta {
                    index: 0,
                    text: "a".into()
                },
                StreamChunk::aborted(LlmFailure::new(codes::ABORTED, "stop")),
            ]
        );
    }

    #[tokio::test]
    async fn nothing_follows_finish() {
        let items = vec![
            Ok(StreamChunk::finish(FinishReason::Stop)),
            Ok(StreamChunk::TextDelta {
                index: 0,
                text: "late".into(),
            }),
        ];
        let inner = stream::iter(items).boxed();
        let chunks = collect(guarded(async { Ok(inner) }, CancellationToken::new()).await).await;
        assert_eq!(chunks, vec![StreamChunk::finish(FinishReason::Stop)]);
    }

    #[tokio::test]
    async fn cancellation_mid_stream_drops_the_adapter_stream() {
        let cancel = CancellationToken::new();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<StreamChunk, LlmError>>();
        let inner = tokio_stream_from(rx);
        let mut out = guarded(async { Ok(inner) }, cancel.clone()).await;
        tx.send(Ok(StreamChunk::TextDelta {
            index: 0,
            text: "x".into(),
        }))
        .unwrap();
        assert!(matches!(
            out.next().await,
            Some(Ok(StreamChunk::TextDelta { .. }))
        ));
        cancel.cancel();
        let last = out.next().await.unwrap().unwrap();
        assert_eq!(last, StreamChunk::aborted(aborted_failure()));
        assert!(out.next().await.is_none());
        // The adapter's side was dropped: its sender sees a closed channel.
        assert!(tx.is_closed());
    }

    fn tokio_stream_from(
        rx: tokio::sync::mpsc::UnboundedReceiver<Result<StreamChunk, LlmError>>,
    ) -> ChunkStream {
        stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        })
        .boxed()
    }
}
