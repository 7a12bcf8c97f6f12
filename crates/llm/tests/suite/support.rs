//! A scripted in-test adapter.

use dsh_llm::{ChunkStream, LlmAdapter, LlmError, LlmRequest, ModelInfo, ReasoningInfo};
use dsh_protocol::{LlmCallConfig, StreamChunk};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use std::sync::{Arc, Mutex};

/// What one `stream` call does.
pub enum Script {
    /// Yield these items.
    Items(Vec<Result<StreamChunk, LlmError>>),
    /// Fail before streaming.
    Fail(LlmError),
    /// Never yield anything (until dropped).
    Hang,
}

#[derive(Default)]
pub struct ScriptedAdapter {
    pub info: Mutex<Option<Result<ModelInfo, (String, String)>>>,
    pub scripts: Mutex<Vec<Script>>,
    pub requests: Mutex<Vec<Arc<LlmRequest>>>,
}

impl ScriptedAdapter {
    pub fn new(info: ModelInfo, scripts: Vec<Script>) -> Arc<Self> {
        Arc::new(Self {
            info: Mutex::new(Some(Ok(info))),
            scripts: Mutex::new(scripts),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn received(&self) -> Vec<Arc<LlmRequest>> {
        self.requests.lock().unwrap().clone()
    }
}

/// DeepSeek-like model facts.
pub fn reasoning_model() -> ModelInfo {
    ModelInfo {
        context_window: Some(1_000_000),
        context_window_source: Some(dsh_llm::ContextWindowSource::Known),
        default_max_tokens: Some(256_000),
        max_output_tokens: Some(384_000),
        reasoning: Some(ReasoningInfo {
            efforts: ["off", "low", "high", "max"].map(String::from).to_vec(),
            default_effort: Some("high".into()),
        }),
        input_modalities: vec![dsh_llm::Modality::Text],
    }
}

impl LlmAdapter for ScriptedAdapter {
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        self.requests.lock().unwrap().push(request);
        let script = {
            let mut scripts = self.scripts.lock().unwrap();
            if scripts.is_empty() {
                Script::Items(Vec::new())
            } else {
                scripts.remove(0)
            }
        };
        Box::pin(async move {
            match script {
                Script::Items(items) => Ok(stream::iter(items).boxed()),
                Script::Fail(error) => Err(error),
                Script::Hang => Ok(stream::pending().boxed()),
            }
        })
    }

    fn resolve_model<'a>(
        &'a self,
        _config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>> {
        let info = match self.info.lock().unwrap().clone() {
            Some(Ok(info)) => Ok(info),
            Some(Err((code, message))) => Err(LlmError::new(code, message)),
            None => Ok(ModelInfo::default()),
        };
        Box::pin(async move { info })
    }
}

pub fn config(provider: &str, model: &str) -> LlmCallConfig {
    LlmCallConfig {
        provider: provider.into(),
        model: model.into(),
        ..LlmCallConfig::default()
    }
}

pub async fn collect(stream: ChunkStream) -> Vec<StreamChunk> {
    stream.map(|item| item.unwrap()).collect().await
}
