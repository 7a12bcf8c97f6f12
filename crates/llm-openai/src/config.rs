//! Route configuration: endpoints, credentials, model catalogs and gateway quirks.
//!
//! Secrets are never configuration values: a route names the environment variable holding
//! its key, and the key is looked up through an injectable [`EnvLookup`] for each request.

use dsh_llm::{ContextWindowSource, Modality, ModelInfo, ReasoningInfo, ResolvedRetryPolicy};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The DeepSeek route's name.
pub const DEEPSEEK_ROUTE: &str = "deepseek-official";
/// The generic OpenAI-compatible route's name.
pub const OPENAI_COMPATIBLE_ROUTE: &str = "openai-compatible";
/// How long a stream may stay silent before the call fails with `TIMEOUT`.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;
/// The longest event-stream line, and the largest event (its data lines joined), a response
/// may send: 16 MiB. A delta is usually a few hundred bytes; the largest real ones are whole
/// tool-call argument strings (a file to write) from gateways that do not stream them.
pub const DEFAULT_MAX_SSE_LINE_BYTES: u64 = 16 * 1024 * 1024;
/// The most body bytes one response may send: 128 MiB. DeepSeek's largest output (256k
/// tokens) streamed one token per event, at about 300 bytes of JSON per event, is under
/// 80 MB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 128 * 1024 * 1024;

/// The context window assumed for an OpenAI-compatible model nothing describes: 128k tokens,
/// reported as [`ContextWindowSource::Guessed`].
///
/// Compaction starts at a share of this figure, so a guess that is too large lets a session
/// run into the server's real limit (one context-overflow recovery, then a failed turn),
/// while one that is too small only compacts earlier than needed. 128k is the window of most
/// current hosted and open-weight chat models (and at least twice the 32k default output
/// cap), so it is rarely too large for a hosted model; a local server started with a smaller
/// context needs `context_window` in its model entry, which the TUI's "(guess)" points at.
pub const DEFAULT_GUESSED_CONTEXT_WINDOW: u64 = 131_072;

/// Where environment variables come from. Injected so tests (and embedders with their own
/// credential stores) never depend on the process environment.
pub trait EnvLookup: Send + Sync + 'static {
    /// The value of `name`, if set.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessEnv;

impl EnvLookup for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl EnvLookup for HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        HashMap::get(self, name).cloned()
    }
}

impl EnvLookup for BTreeMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        BTreeMap::get(self, name).cloned()
    }
}

/// The `thinking` switch DeepSeek accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    Enabled,
    Disabled,
}

impl Thinking {
    pub(crate) fn wire(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
        }
    }
}

dsh_protocol::word_enum! {
    /// Which body field carries the output cap (a route's `compat.max_tokens_field`).
    pub enum MaxTokensField {
        MaxTokens = "max_tokens",
        MaxCompletionTokens = "max_completion_tokens",
    }
}

dsh_protocol::word_enum! {
    /// When assistant reasoning is sent back as `reasoning_content` (a route's
    /// `compat.replay_reasoning`).
    pub enum ReasoningReplay {
        /// Never (gateways that reject the field).
        Off = "off",
        /// Only on turns that called tools.
        ToolCallTurns = "tool-call-turns",
        /// Whenever the message has reasoning (DeepSeek refuses tool-call turns without it).
        Always = "always",
    }
}

/// Per-route switches for gateway differences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Compat {
    pub max_tokens_field: MaxTokensField,
    /// Whether to send DeepSeek's `thinking: {type}` object.
    pub send_thinking: bool,
    pub reasoning_replay: ReasoningReplay,
}

impl Compat {
    /// DeepSeek's own API.
    pub fn deepseek() -> Self {
        Self {
            max_tokens_field: MaxTokensField::MaxTokens,
            send_thinking: true,
            reasoning_replay: ReasoningReplay::Always,
        }
    }

    /// A plain OpenAI-style gateway.
    pub fn openai() -> Self {
        Self {
            max_tokens_field: MaxTokensField::MaxTokens,
            send_thinking: false,
            reasoning_replay: ReasoningReplay::Off,
        }
    }
}

/// One catalogued model; unset fields fall back to the catalog defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelEntry {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// What `context_window` is. Unset means [`ContextWindowSource::Configured`]: someone
    /// wrote the figure down for this deployment. Built-in catalogue entries say `known`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window_source: Option<ContextWindowSource>,
    /// Output cap (used as the default and as the upper bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_efforts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<Modality>>,
}

impl ModelEntry {
    /// An entry with just an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            context_window: None,
            context_window_source: None,
            max_tokens: None,
            reasoning_efforts: None,
            default_effort: None,
            input: None,
        }
    }
}

/// Facts used for models the catalog does not list, and for unset entry fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelDefaults {
    pub context_window: u64,
    /// What the default window is: `known` when the provider publishes one window for all
    /// its models, `guessed` (the default) when it is a conservative stand-in.
    #[serde(default = "guessed")]
    pub context_window_source: ContextWindowSource,
    pub max_tokens: u64,
    /// Empty means the models have no reasoning controls.
    #[serde(default)]
    pub reasoning_efforts: Vec<String>,
    #[serde(default)]
    pub default_effort: Option<String>,
    #[serde(default = "text_only")]
    pub input: Vec<Modality>,
}

fn guessed() -> ContextWindowSource {
    ContextWindowSource::Guessed
}

fn text_only() -> Vec<Modality> {
    vec![Modality::Text]
}

/// The models a route serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelCatalog {
    #[serde(default)]
    pub models: Vec<ModelEntry>,
    /// Whether ids not in `models` are accepted (with `defaults`).
    #[serde(default = "yes")]
    pub accept_unlisted: bool,
    pub defaults: ModelDefaults,
}

fn yes() -> bool {
    true
}

impl ModelCatalog {
    /// Facts for `model`, or `None` when the catalog does not accept it. `thinking_disabled`
    /// narrows reasoning to `off` (a deployment with thinking switched off has nothing else).
    pub fn resolve(&self, model: &str, thinking_disabled: bool) -> Option<ModelInfo> {
        let entry = self.models.iter().find(|entry| entry.id == model);
        if entry.is_none() && !self.accept_unlisted {
            return None;
        }
        let defaults = &self.defaults;
        let max_tokens = entry
            .and_then(|e| e.max_tokens)
            .unwrap_or(defaults.max_tokens);
        let efforts = entry
            .and_then(|e| e.reasoning_efforts.clone())
            .unwrap_or_else(|| defaults.reasoning_efforts.clone());
        let default_effort = entry
            .and_then(|e| e.default_effort.clone())
            .or_else(|| defaults.default_effort.clone());
        let reasoning = if thinking_disabled {
            Some(ReasoningInfo {
                efforts: vec!["off".into()],
                default_effort: Some("off".into()),
            })
        } else if efforts.is_empty() {
            None
        } else {
            Some(ReasoningInfo {
                efforts,
                default_effort,
            })
        };
        let (context_window, context_window_source) = match entry
            .and_then(|e| e.context_window.map(|w| (w, e.context_window_source)))
        {
            Some((window, source)) => (window, source.unwrap_or(ContextWindowSource::Configured)),
            None => (defaults.context_window, defaults.context_window_source),
        };
        Some(ModelInfo {
            context_window: Some(context_window),
            context_window_source: Some(context_window_source),
            default_max_tokens: Some(max_tokens),
            max_output_tokens: Some(max_tokens),
            reasoning,
            input_modalities: entry
                .and_then(|e| e.input.clone())
                .unwrap_or_else(|| defaults.input.clone()),
        })
    }
}

/// One provider route served by the chat-completions adapter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouteConfig {
    /// The provider route name requests select (`deepseek-official`).
    pub route: String,
    /// Endpoint base; `/chat/completions` is appended. Wins over `base_url_env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Environment variable that may override `default_base_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url_env: Option<String>,
    pub default_base_url: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Whether a missing key fails the call (`INVALID_CREDENTIAL`) rather than sending none.
    #[serde(default = "yes")]
    pub api_key_required: bool,
    /// Extra request headers. A configured `user-agent` replaces the adapter's own.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Whether to send the installation's anonymous id as `x-deepseek-harness-user-id`.
    /// Unset means "only on the DeepSeek route": the id identifies an installation across
    /// sessions, so it goes to third-party gateways only when someone asks for it. (The
    /// per-session `x-deepseek-harness-session-id` is sent on every route, as before.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_user_id: Option<bool>,
    pub catalog: ModelCatalog,
    pub compat: Compat,
    /// The deployment's thinking mode when a request names no effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    #[serde(default = "default_idle")]
    pub stream_idle_timeout_ms: u64,
    /// The longest event-stream line or event a response may send; a longer one ends the
    /// attempt with `RESPONSE_TOO_LARGE`.
    #[serde(default = "default_max_line")]
    pub max_sse_line_bytes: u64,
    /// The most body bytes one response may send; more ends the attempt with
    /// `RESPONSE_TOO_LARGE`.
    #[serde(default = "default_max_response")]
    pub max_response_bytes: u64,
    #[serde(default)]
    pub retry_policy: ResolvedRetryPolicy,
}

fn default_idle() -> u64 {
    DEFAULT_STREAM_IDLE_TIMEOUT_MS
}

fn default_max_line() -> u64 {
    DEFAULT_MAX_SSE_LINE_BYTES
}

fn default_max_response() -> u64 {
    DEFAULT_MAX_RESPONSE_BYTES
}

/// Checks that `url` can be a route's endpoint base: an absolute `http` or `https` URL with
/// a host, without whitespace, a query or a fragment (`/chat/completions` is appended to
/// it). The error says what is wrong, in words for a configuration message.
pub fn check_base_url(url: &str) -> Result<(), String> {
    if url.chars().any(char::is_whitespace) {
        return Err("it contains whitespace".into());
    }
    let parsed = reqwest::Url::parse(url).map_err(|error| error.to_string())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("the scheme is `{}`", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("it names no host".into());
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("it has a query or fragment, which `/chat/completions` cannot follow".into());
    }
    Ok(())
}

impl RouteConfig {
    /// DeepSeek's public API: key from `DEEPSEEK_API_KEY`, endpoint overridable with
    /// `DEEPSEEK_BASE_URL`, the three V4 models with a 1M context and 256k output cap.
    pub fn deepseek() -> Self {
        let vision = ModelEntry {
            input: Some(vec![Modality::Text, Modality::Image]),
            ..ModelEntry::new("deepseek-v4-flash-vision-exp")
        };
        Self {
            route: DEEPSEEK_ROUTE.into(),
            base_url: None,
            base_url_env: Some("DEEPSEEK_BASE_URL".into()),
            default_base_url: "https://api.deepseek.com".into(),
            api_key_env: "DEEPSEEK_API_KEY".into(),
            api_key_required: true,
            headers: BTreeMap::new(),
            send_user_id: None,
            catalog: ModelCatalog {
                models: vec![
                    ModelEntry::new("deepseek-v4-flash"),
                    ModelEntry::new("deepseek-v4-pro"),
                    vision,
                ],
                accept_unlisted: true,
                defaults: ModelDefaults {
                    context_window: 1_000_000,
                    context_window_source: ContextWindowSource::Known,
                    max_tokens: 256_000,
                    reasoning_efforts: ["off", "low", "high", "max"].map(String::from).to_vec(),
                    default_effort: Some("high".into()),
                    input: text_only(),
                },
            },
            compat: Compat::deepseek(),
            thinking: None,
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            max_sse_line_bytes: DEFAULT_MAX_SSE_LINE_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            retry_policy: ResolvedRetryPolicy::default(),
        }
    }

    /// Any OpenAI-compatible endpoint: `OPENAI_BASE_URL` and `OPENAI_API_KEY` (optional, for
    /// local servers), every model id accepted with the catalog defaults.
    pub fn openai_compatible() -> Self {
        Self {
            route: OPENAI_COMPATIBLE_ROUTE.into(),
            base_url: None,
            base_url_env: Some("OPENAI_BASE_URL".into()),
            default_base_url: "https://api.openai.com/v1".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            api_key_required: false,
            headers: BTreeMap::new(),
            send_user_id: None,
            catalog: ModelCatalog {
                models: Vec::new(),
                accept_unlisted: true,
                defaults: ModelDefaults {
                    context_window: DEFAULT_GUESSED_CONTEXT_WINDOW,
                    context_window_source: ContextWindowSource::Guessed,
                    max_tokens: 32_768,
                    reasoning_efforts: Vec::new(),
                    default_effort: None,
                    input: text_only(),
                },
            },
            compat: Compat::openai(),
            thinking: None,
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            max_sse_line_bytes: DEFAULT_MAX_SSE_LINE_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            retry_policy: ResolvedRetryPolicy::default(),
        }
    }

    /// The endpoint base: explicit config, else the env override, else the default; without a
    /// trailing slash.
    pub fn resolve_base_url(&self, env: &dyn EnvLookup) -> String {
        let base = self
            .base_url
            .clone()
            .or_else(|| {
                self.base_url_env
                    .as_deref()
                    .and_then(|name| env.get(name))
                    .filter(|value| !value.trim().is_empty())
            })
            .unwrap_or_else(|| self.default_base_url.clone());
        base.trim().trim_end_matches('/').to_string()
    }

    /// Whether requests carry `x-deepseek-harness-user-id`: as configured, else only on the
    /// DeepSeek route.
    pub fn sends_user_id(&self) -> bool {
        self.send_user_id.unwrap_or(self.route == DEEPSEEK_ROUTE)
    }

    /// Facts for `model` on this route.
    pub fn resolve_model(&self, model: &str) -> Option<ModelInfo> {
        self.catalog
            .resolve(model, self.thinking == Some(Thinking::Disabled))
    }
}

/// The adapter plugin's configuration: the routes to register (both built-in routes when
/// `routes` is not given) and the installation's anonymous id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OpenAiConfig {
    pub routes: Vec<RouteConfig>,
    /// The anonymous installation id (`$DSH_HOME/.anonymous-user-id`), sent as
    /// `x-deepseek-harness-user-id` by routes that send harness headers. Not a secret, but
    /// not a credential either: nothing fails without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            routes: vec![RouteConfig::deepseek(), RouteConfig::openai_compatible()],
            user_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn base_url_precedence() {
        let mut route = RouteConfig::deepseek();
        assert_eq!(
            route.resolve_base_url(&env(&[])),
            "https://api.deepseek.com"
        );
        let overridden = env(&[("DEEPSEEK_BASE_URL", "http://127.0.0.1:9/v1/")]);
        assert_eq!(route.resolve_base_url(&overridden), "http://127.0.0.1:9/v1");
        route.base_url = Some("http://explicit".into());
        assert_eq!(route.resolve_base_url(&overridden), "http://explicit");
    }

    #[test]
    fn base_urls_are_checked_like_the_adapter_will_use_them() {
        for good in [
            "http://127.0.0.1:8080/v1",
            "https://api.deepseek.com",
            "http://[::1]:9/v1/",
            "https://user:pw@gateway.example/openai",
        ] {
            assert_eq!(check_base_url(good), Ok(()), "{good}");
        }
        let reason = |url: &str| check_base_url(url).unwrap_err();
        assert_eq!(reason("http://[::1"), "invalid IPv6 address");
        assert_eq!(reason("localhost:8080"), "the scheme is `localhost`");
        assert_eq!(reason("ftp://h"), "the scheme is `ftp`");
        assert_eq!(reason("127.0.0.1:8080"), "relative URL without a base");
        assert_eq!(reason("http://"), "empty host");
        assert_eq!(reason("http://h:99999"), "invalid port number");
        assert_eq!(reason("http://h /v1"), "it contains whitespace");
        assert_eq!(
            reason("http://h/v1?key=1"),
            "it has a query or fragment, which `/chat/completions` cannot follow"
        );
    }

    #[test]
    fn limits_default_when_a_config_omits_them() {
        let mut value = serde_json::to_value(RouteConfig::deepseek()).unwrap();
        assert_eq!(value["maxSseLineBytes"], json!(16 * 1024 * 1024));
        assert_eq!(value["maxResponseBytes"], json!(128 * 1024 * 1024));
        let object = value.as_object_mut().unwrap();
        object.remove("maxSseLineBytes");
        object.remove("maxResponseBytes");
        let back: RouteConfig = serde_json::from_value(value).unwrap();
        assert_eq!(back, RouteConfig::deepseek());
    }

    #[test]
    fn deepseek_catalog_facts() {
        let route = RouteConfig::deepseek();
        let flash = route.resolve_model("deepseek-v4-flash").unwrap();
        assert_eq!(
            serde_json::to_value(&flash).unwrap(),
            json!({"contextWindow":1000000,"contextWindowSource":"known","defaultMaxTokens":256000,"maxOutputTokens":256000,
                "reasoning":{"efforts":["off","low","high","max"],"defaultEffort":"high"},
                "inputModalities":["text"]})
        );
        let vision = route.resolve_model("deepseek-v4-flash-vision-exp").unwrap();
        assert!(vision.accepts_images());
        let disabled = RouteConfig {
            thinking: Some(Thinking::Disabled),
            ..RouteConfig::deepseek()
        };
        let reasoning = disabled.resolve_model("deepseek-v4-pro").unwrap().reasoning;
        assert_eq!(
            reasoning,
            Some(ReasoningInfo {
                efforts: vec!["off".into()],
                default_effort: Some("off".into())
            })
        );
    }

    #[test]
    fn a_window_is_known_configured_or_guessed() {
        let mut catalog = RouteConfig::openai_compatible().catalog;
        catalog.models = vec![
            ModelEntry {
                context_window: Some(32_768),
                ..ModelEntry::new("qwen3-coder")
            },
            ModelEntry {
                context_window: Some(200_000),
                context_window_source: Some(ContextWindowSource::Known),
                ..ModelEntry::new("listed")
            },
            ModelEntry {
                max_tokens: Some(1024),
                ..ModelEntry::new("no-window")
            },
        ];
        let window = |model: &str| {
            let info = catalog.resolve(model, false).unwrap();
            (info.context_window, info.context_window_source)
        };
        assert_eq!(
            window("qwen3-coder"),
            (Some(32_768), Some(ContextWindowSource::Configured))
        );
        assert_eq!(
            window("listed"),
            (Some(200_000), Some(ContextWindowSource::Known))
        );
        for unknown in ["no-window", "unlisted"] {
            assert_eq!(
                window(unknown),
                (
                    Some(DEFAULT_GUESSED_CONTEXT_WINDOW),
                    Some(ContextWindowSource::Guessed)
                )
            );
        }
        // A hand-written defaults block that does not say otherwise is a guess.
        let defaults: ModelDefaults =
            serde_json::from_value(json!({"contextWindow": 4096, "maxTokens": 512})).unwrap();
        assert_eq!(defaults.context_window_source, ContextWindowSource::Guessed);
    }

    #[test]
    fn open_catalog_accepts_any_model_and_closed_one_refuses() {
        let route = RouteConfig::openai_compatible();
        let info = route.resolve_model("llama-3-70b").unwrap();
        assert_eq!(info.default_max_tokens, Some(32_768));
        assert_eq!(info.reasoning, None);
        assert_eq!(info.context_window, Some(DEFAULT_GUESSED_CONTEXT_WINDOW));
        assert!(info.context_window_guessed());
        let mut closed = route.catalog.clone();
        closed.accept_unlisted = false;
        assert_eq!(closed.resolve("llama-3-70b", false), None);
    }

    #[test]
    fn config_round_trips_and_refuses_unknown_switches() {
        let config = OpenAiConfig::default();
        let value = serde_json::to_value(&config).unwrap();
        let back: OpenAiConfig = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back, config);
        let mut bad = value;
        bad["routes"][0]["compat"]["supportsMagic"] = json!(true);
        assert!(serde_json::from_value::<OpenAiConfig>(bad).is_err());
    }

    #[test]
    fn user_id_defaults_to_the_deepseek_route_only() {
        assert!(RouteConfig::deepseek().sends_user_id());
        assert!(!RouteConfig::openai_compatible().sends_user_id());
        let renamed = RouteConfig {
            route: "my-deepseek".into(),
            ..RouteConfig::deepseek()
        };
        assert!(!renamed.sends_user_id());
        let opted_in = RouteConfig {
            send_user_id: Some(true),
            ..RouteConfig::openai_compatible()
        };
        assert!(opted_in.sends_user_id());
    }

    #[test]
    fn user_id_and_its_switch_round_trip_and_stay_optional() {
        let config = OpenAiConfig {
            routes: vec![RouteConfig {
                send_user_id: Some(false),
                ..RouteConfig::deepseek()
            }],
            user_id: Some("u-1".into()),
        };
        let value = serde_json::to_value(&config).unwrap();
        assert_eq!(value["userId"], json!("u-1"));
        assert_eq!(value["routes"][0]["sendUserId"], json!(false));
        let back: OpenAiConfig = serde_json::from_value(value).unwrap();
        assert_eq!(back, config);
        let plain = serde_json::to_value(OpenAiConfig::default()).unwrap();
        assert!(plain.get("userId").is_none());
        assert!(plain["routes"][0].get("sendUserId").is_none());
        assert_eq!(
            serde_json::from_value::<OpenAiConfig>(json!({})).unwrap(),
            OpenAiConfig::default()
        );
    }
}
