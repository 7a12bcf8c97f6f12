//! The model layer's extension points.

use crate::adapter::{ChunkStream, LlmRequest};
use dsh_kernel::{Event, Notification, Waterfall};

/// `llm/stream`: middleware around every model call.
///
/// Listeners get the request and a `next`; calling `next` yields the stream from the inner
/// listeners and finally the adapter boundary. A listener may wrap that stream, replace it, or
/// veto the call by not calling `next` (returning its own stream or an error). Errors from
/// listeners are not turned into `finish` chunks: they reach the caller as errors.
/// Dispatched without a scope carrier.
#[derive(Debug)]
pub struct LlmStream;

impl Event for LlmStream {
    const NAME: &'static str = "llm/stream";
}

impl Waterfall for LlmStream {
    type Args = LlmRequest;
    type Output = ChunkStream;
}

/// `llm/adapters-updated`: the set of served provider routes changed.
#[derive(Debug)]
pub struct AdaptersUpdated;

/// The routes served after the change, sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdaptersUpdatedPayload {
    pub routes: Vec<String>,
}

impl Event for AdaptersUpdated {
    const NAME: &'static str = "llm/adapters-updated";
}

impl Notification for AdaptersUpdated {
    type Payload = AdaptersUpdatedPayload;
}
