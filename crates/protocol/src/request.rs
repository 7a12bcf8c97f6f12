use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The model-call configuration a step uses; logged inside `request/header`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmCallConfig {
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
}

/// Markers for config fields the adapter filled in (not chosen by the agent), so a later
/// request can tell an inherited default from an explicit choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterDefaults {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasoning_effort: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub max_tokens: bool,
}

impl AdapterDefaults {
    /// True when no field is marked.
    pub fn is_empty(&self) -> bool {
        !self.reasoning_effort && !self.max_tokens
    }
}

/// What a model sees besides messages: config, system prompt and tool schemas. Logged as
/// `request/header` whenever it changes, so every request can be rebuilt from the log.
///
/// The system prompt is shared (`Arc<str>`) like the tool schemas: every step puts it in
/// the header and the request, and compares it with the last header, so an unchanged
/// prompt travels as one allocation and compares by pointer. It serializes as a string.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochHeader {
    pub config: LlmCallConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter_defaults: Option<AdapterDefaults>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolSchema>>,
}

/// The part of a tool definition a model is shown.
///
/// Every step shows the model its tools, and the schemas travel through the prompt
/// assembly, the request header and the request; the description and the parameters are
/// shared (`Arc`) so those copies are reference-count bumps, not deep copies of the JSON.
/// They serialize exactly as the plain string and value would.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: Arc<str>,
    /// A JSON Schema object.
    pub parameters: Arc<Value>,
}

impl ToolSchema {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<Arc<str>>,
        parameters: impl Into<Arc<Value>>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: parameters.into(),
        }
    }
}
