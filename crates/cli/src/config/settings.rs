//! The effective settings: built-in defaults, then the settings file, then environment
//! variables, then command-line flags, each value remembering which layer set it.

use super::compaction::CompactionSettings;
use super::composition::{default_composition, patch_composition};
use super::env::Env;
use super::error::{closest, ConfigError};
use super::file::{check_url, FileLayer, ProviderLayer, KNOWN_TOOLS, URL_EXPECTED};
use super::reader::At;
use super::source::{Location, Source, Sourced};
use dsh_kernel::Composition;
use dsh_llm::{ContextWindowSource, Modality};
use dsh_llm_openai::{MaxTokensField, ModelEntry, ReasoningReplay};
use dsh_protocol::words;
use dsh_tools_builtin::approval::{ApprovalPolicy, ApprovalRule};
use dsh_tools_builtin::SandboxMode;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The DeepSeek route's name.
pub const DEEPSEEK_ROUTE: &str = "deepseek-official";
/// The generic OpenAI-compatible route's name.
pub const OPENAI_ROUTE: &str = "openai-compatible";
/// The model used when nothing names one.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";

/// Values the command line sets; they beat every other layer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// `--home`
    pub home: Option<PathBuf>,
    /// `--provider`
    pub provider: Option<String>,
    /// `--model`
    pub model: Option<String>,
    /// `--sandbox`; `danger-full-access` also means approval `never` unless `--approval`
    /// says otherwise.
    pub sandbox: Option<SandboxMode>,
    /// `--approval`
    pub approval: Option<ApprovalPolicy>,
    /// `--base-url`: the endpoint of the selected route (after `--provider`).
    pub base_url: Option<String>,
}

/// The complete effective configuration. Built only when every layer is valid.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `$DSH_HOME`.
    pub home: Sourced<PathBuf>,
    /// `$DSH_HOME/settings.toml`.
    pub settings_path: PathBuf,
    /// Whether that file existed.
    pub settings_present: bool,
    pub model: ModelChoice,
    /// Built-in routes first, then routes the file adds, in file order.
    pub providers: Vec<Provider>,
    pub approval: ApprovalSettings,
    pub sandbox: SandboxSettings,
    pub tools: ToolSettings,
    pub compaction: CompactionSettings,
    /// `[store]`: which backend stores sessions, and where.
    pub store: super::store::StoreSettings,
    pub skills: SkillSettings,
    /// `[ui]`: the terminal UI.
    pub ui: UiSettings,
    /// `[prices]`: what models cost, for the status line (none built in).
    pub prices: super::prices::PriceSettings,
    /// `[mcp_servers.NAME]` tables, in file order (the JSON files are read at boot, with the
    /// workspace: [`crate::mcp_config::resolve`]).
    pub mcp_servers: Vec<crate::mcp_config::McpServer>,
    /// One per skipped `[mcp_servers.NAME]` table; the rest of the settings loaded.
    pub mcp_problems: Vec<crate::mcp_config::McpProblem>,
    /// The plugin rows to mount, after the file's `[[plugins]]` patches.
    pub composition: Composition,
    /// Which layer last touched each row, by row id.
    pub row_sources: BTreeMap<String, Source>,
}

impl Settings {
    /// The route named `name`.
    pub fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.route == name)
    }

    /// The catalogue entry for `model` on route `route`.
    pub fn model_entry(&self, route: &str, model: &str) -> Option<&ModelEntry> {
        self.provider(route)?
            .models
            .iter()
            .map(|m| &m.value)
            .find(|m| m.id == model)
    }

    /// The route requests go to by default.
    pub fn active_provider(&self) -> Option<&Provider> {
        self.provider(&self.model.provider.value)
    }
}

/// `[model]`: the default route and model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelChoice {
    pub provider: Sourced<String>,
    pub model: Sourced<String>,
}

/// One provider route.
#[derive(Clone, Debug, PartialEq)]
pub struct Provider {
    pub route: String,
    /// Built in, or the line of its `[providers.<route>]` table.
    pub defined: Source,
    pub base_url: Sourced<String>,
    /// The variable holding the key; `None` for routes that need no key.
    pub api_key_env: Sourced<Option<String>>,
    /// Whether that variable is set. The value itself is never read into settings.
    pub api_key: ApiKeyStatus,
    /// The route's model catalogue, each entry with the layer that last changed it: the
    /// built-in entries, then the file's entries merged over them by id (a file entry
    /// changes only the fields it sets, so `{ id = "deepseek-v4-flash", context_window =
    /// 16000 }` keeps that model's other facts and the rest of the catalogue).
    pub models: Vec<Sourced<ModelEntry>>,
    /// Extra request headers; values may be credentials and are hidden when shown.
    pub headers: BTreeMap<String, Sourced<HeaderValue>>,
    pub compat: CompatSettings,
    pub limits: StreamLimits,
}

/// How much of one response a route reads before it gives up on it (the adapter's
/// `RESPONSE_TOO_LARGE`): bounds on what a broken or hostile server can make dsh hold.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamLimits {
    /// The longest event-stream line, and the largest event, in bytes.
    pub max_sse_line_bytes: Sourced<u64>,
    /// The most body bytes of one response.
    pub max_response_bytes: Sourced<u64>,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_sse_line_bytes: Sourced::default_value(dsh_llm_openai::DEFAULT_MAX_SSE_LINE_BYTES),
            max_response_bytes: Sourced::default_value(dsh_llm_openai::DEFAULT_MAX_RESPONSE_BYTES),
        }
    }
}

/// Gateway differences of a route.
#[derive(Clone, Debug, PartialEq)]
pub struct CompatSettings {
    pub max_tokens_field: Sourced<MaxTokensField>,
    pub send_thinking: Sourced<bool>,
    pub replay_reasoning: Sourced<ReasoningReplay>,
}

/// A header value, which `Debug` never shows.
#[derive(Clone, PartialEq, Eq)]
pub struct HeaderValue(String);

impl HeaderValue {
    /// The value, for building requests.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HeaderValue(<hidden>)")
    }
}

/// Whether a route's API key is available, without the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiKeyStatus {
    Set {
        var: String,
    },
    NotSet {
        var: String,
    },
    /// The route names no key variable.
    NotUsed,
}

impl fmt::Display for ApiKeyStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Set { var } => write!(f, "set (from env {var})"),
            Self::NotSet { .. } => f.write_str("not set"),
            Self::NotUsed => f.write_str("not used"),
        }
    }
}

/// `[approval]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalSettings {
    pub policy: Sourced<ApprovalPolicy>,
    /// In file order; the approval plugin decides with them (any matching deny wins, see
    /// `dsh_tools_builtin::approval::decide`).
    pub rules: Vec<Sourced<ApprovalRule>>,
}

/// `[sandbox]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SandboxSettings {
    pub mode: Sourced<SandboxMode>,
}

/// `[skills]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillSettings {
    /// Extra skill roots, searched after the workspace's and before `$DSH_HOME/skills`, in
    /// order. A leading `~/` is the home directory; a relative path is relative to
    /// `$DSH_HOME` (where the settings file is).
    pub dirs: Sourced<Vec<PathBuf>>,
}

/// `[ui]`.
#[derive(Clone, Debug, PartialEq)]
pub struct UiSettings {
    /// The palette: `auto` (dark unless `COLORFGBG` says the background is light), `dark`
    /// or `light`. `NO_COLOR` beats it.
    pub theme: Sourced<crate::tui::theme::ThemeChoice>,
    /// Clickable links (OSC 8): `auto` (terminals known to support them, never inside
    /// tmux or screen), `on` or `off`.
    pub hyperlinks: Sourced<crate::tui::hyperlink::HyperlinkChoice>,
}

/// `[tools]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSettings {
    /// Every known tool, in [`KNOWN_TOOLS`] order.
    pub enabled: Vec<(String, Sourced<bool>)>,
    /// Whether `web_fetch` may reach private and loopback addresses.
    pub web_fetch_allow_private: Sourced<bool>,
}

impl ToolSettings {
    pub fn is_enabled(&self, tool: &str) -> bool {
        self.enabled
            .iter()
            .any(|(name, on)| name == tool && on.value)
    }
}

fn deepseek_models() -> Vec<ModelEntry> {
    let entry = |id: &str, input: &[Modality]| ModelEntry {
        context_window: Some(1_000_000),
        context_window_source: Some(ContextWindowSource::Known),
        max_tokens: Some(256_000),
        reasoning_efforts: Some(["off", "low", "high", "max"].map(String::from).to_vec()),
        default_effort: Some("high".into()),
        input: Some(input.to_vec()),
        ..ModelEntry::new(id)
    };
    vec![
        entry("deepseek-v4-flash", &[Modality::Text]),
        entry("deepseek-v4-pro", &[Modality::Text]),
        entry(
            "deepseek-v4-flash-vision-exp",
            &[Modality::Text, Modality::Image],
        ),
    ]
}

fn builtin_provider(route: &str) -> Option<Provider> {
    match route {
        DEEPSEEK_ROUTE => Some(Provider {
            base_url: Sourced::default_value("https://api.deepseek.com".into()),
            api_key_env: Sourced::default_value(Some("DEEPSEEK_API_KEY".into())),
            models: deepseek_models()
                .into_iter()
                .map(Sourced::default_value)
                .collect(),
            compat: CompatSettings {
                max_tokens_field: Sourced::default_value(MaxTokensField::MaxTokens),
                send_thinking: Sourced::default_value(true),
                replay_reasoning: Sourced::default_value(ReasoningReplay::Always),
            },
            ..openai_style(route)
        }),
        OPENAI_ROUTE => Some(openai_style(route)),
        _ => None,
    }
}

/// A plain OpenAI-style route: the built-in `openai-compatible` one, and the starting point
/// of routes the settings file adds.
fn openai_style(route: &str) -> Provider {
    Provider {
        route: route.to_owned(),
        defined: Source::Default,
        base_url: Sourced::default_value("https://api.openai.com/v1".into()),
        api_key_env: Sourced::default_value(Some("OPENAI_API_KEY".into())),
        api_key: ApiKeyStatus::NotUsed,
        models: Vec::new(),
        headers: BTreeMap::new(),
        compat: CompatSettings {
            max_tokens_field: Sourced::default_value(MaxTokensField::MaxTokens),
            send_thinking: Sourced::default_value(false),
            replay_reasoning: Sourced::default_value(ReasoningReplay::Off),
        },
        limits: StreamLimits::default(),
    }
}

/// Merges the layers. `file` is `None` when there is no settings file.
pub(crate) fn resolve(
    home: Sourced<PathBuf>,
    settings_path: PathBuf,
    file: Option<FileLayer>,
    env: &dyn Env,
    flags: &Overrides,
) -> Result<Settings, ConfigError> {
    let settings_present = file.is_some();
    let file = file.unwrap_or_default();
    let line = |line: u32| Source::File { line };
    let at = |source: Source| Location::of(source, &settings_path);

    // Providers: built-ins, then the file's tables over them (or as new routes).
    let mut providers: Vec<Provider> = [DEEPSEEK_ROUTE, OPENAI_ROUTE]
        .iter()
        .filter_map(|r| builtin_provider(r))
        .collect();
    for layer in &file.providers {
        apply_provider_layer(&mut providers, layer, &settings_path)?;
    }
    for (var, route) in [
        ("DEEPSEEK_BASE_URL", DEEPSEEK_ROUTE),
        ("OPENAI_BASE_URL", OPENAI_ROUTE),
    ] {
        if let Some(url) = env_text(env, var)? {
            if let Err(found) = check_url(&url) {
                return Err(ConfigError::InvalidValue {
                    at: Location::Env { var },
                    key: format!("providers.{route}.base_url"),
                    expected: URL_EXPECTED.into(),
                    found,
                });
            }
            if let Some(provider) = providers.iter_mut().find(|p| p.route == route) {
                provider.base_url = Sourced::new(url, Source::Env { var });
            }
        }
    }
    for provider in &mut providers {
        provider.api_key = match &provider.api_key_env.value {
            Some(var) if env.is_set(var) => ApiKeyStatus::Set { var: var.clone() },
            Some(var) => ApiKeyStatus::NotSet { var: var.clone() },
            None => ApiKeyStatus::NotUsed,
        };
    }

    // Route and model.
    let mut model = ModelChoice {
        provider: Sourced::default_value(DEEPSEEK_ROUTE.to_owned()),
        model: Sourced::default_value(DEFAULT_MODEL.to_owned()),
    };
    if let Some(p) = &file.provider {
        model.provider = Sourced::new(p.value.clone(), line(p.line));
    }
    if let Some(m) = &file.model {
        model.model = Sourced::new(m.value.clone(), line(m.line));
    }
    let env_provider = "DSH_PROVIDER";
    model.provider.set(
        env_text(env, env_provider)?,
        Source::Env { var: env_provider },
    );
    model.model.set(
        env_text(env, "DSH_MODEL")?,
        Source::Env { var: "DSH_MODEL" },
    );
    model
        .provider
        .set(flags.provider.clone(), Source::Flag { flag: "--provider" });
    model
        .model
        .set(flags.model.clone(), Source::Flag { flag: "--model" });
    if let Some(url) = &flags.base_url {
        let flag = Source::Flag { flag: "--base-url" };
        if let Err(found) = check_url(url) {
            return Err(ConfigError::InvalidValue {
                at: Location::Flag { flag: "--base-url" },
                key: format!("providers.{}.base_url", model.provider.value),
                expected: URL_EXPECTED.into(),
                found,
            });
        }
        if let Some(provider) = providers
            .iter_mut()
            .find(|p| p.route == model.provider.value)
        {
            provider.base_url = Sourced::new(url.clone(), flag);
        }
    }
    if !providers.iter().any(|p| p.route == model.provider.value) {
        let routes: Vec<&str> = providers.iter().map(|p| p.route.as_str()).collect();
        let hint = match closest(&model.provider.value, &routes) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("known routes: {}", quote_all(&routes)),
        };
        return Err(ConfigError::Inconsistent {
            at: at(model.provider.source),
            key: "model.provider".into(),
            message: format!("unknown provider route {:?}; {hint}", model.provider.value),
        });
    }

    // Sandbox and approval. A layer choosing full access also means "never ask" unless the
    // same layer names an approval policy itself.
    let mut sandbox = Sourced::default_value(SandboxMode::WorkspaceWrite);
    let mut policy = Sourced::default_value(ApprovalPolicy::Ask);
    let mut layer = |mode: Option<(SandboxMode, Source)>,
                     approval: Option<(ApprovalPolicy, Source)>| {
        if let Some((mode, source)) = mode {
            sandbox = Sourced::new(mode, source);
            if mode == SandboxMode::DangerFullAccess && approval.is_none() {
                policy = Sourced::new(ApprovalPolicy::Never, source);
            }
        }
        if let Some((value, source)) = approval {
            policy = Sourced::new(value, source);
        }
    };
    layer(
        file.sandbox_mode.as_ref().map(|m| (m.value, line(m.line))),
        file.approval_policy
            .as_ref()
            .map(|p| (p.value, line(p.line))),
    );
    let permission_var = "DSH_PERMISSION_MODE";
    let env_mode = match env_text(env, permission_var)? {
        None => None,
        Some(word) => match word.parse::<SandboxMode>() {
            Ok(mode) => Some((
                mode,
                Source::Env {
                    var: permission_var,
                },
            )),
            Err(_) => {
                return Err(ConfigError::InvalidValue {
                    at: Location::Env {
                        var: permission_var,
                    },
                    key: "sandbox.mode".into(),
                    expected: words::expected::<SandboxMode>(),
                    found: format!("{word:?}"),
                })
            }
        },
    };
    layer(env_mode, None);
    layer(
        flags
            .sandbox
            .map(|m| (m, Source::Flag { flag: "--sandbox" })),
        flags
            .approval
            .map(|p| (p, Source::Flag { flag: "--approval" })),
    );

    // Tools: all known tools on except web_fetch, then the file's switches.
    let mut enabled: Vec<(String, Sourced<bool>)> = KNOWN_TOOLS
        .iter()
        .map(|t| ((*t).to_owned(), Sourced::default_value(*t != "web_fetch")))
        .collect();
    for (name, on) in &file.tools {
        if let Some((_, slot)) = enabled.iter_mut().find(|(n, _)| n == name) {
            *slot = Sourced::new(on.value, line(on.line));
        }
    }
    let mut allow_private = Sourced::default_value(false);
    if let Some(v) = &file.web_fetch_allow_private {
        allow_private = Sourced::new(v.value, line(v.line));
    }

    let compaction = super::compaction::resolve(&file.compaction, &providers, &settings_path)?;

    let store = super::store::resolve(
        &file.store,
        env_text(env, super::store::DATABASE_URL_ENV)?,
        &settings_path,
    )?;

    let mut composition = default_composition();
    if store.backend.value == super::store::StoreBackend::Postgres {
        super::composition::select_postgres(&mut composition);
    }
    let mut row_sources: BTreeMap<String, Source> = composition
        .rows
        .iter()
        .map(|r| (r.id.clone(), Source::Default))
        .collect();
    patch_composition(
        &mut composition,
        &mut row_sources,
        &file.plugins,
        &settings_path,
    )?;

    let skills = SkillSettings {
        dirs: match &file.skills_dirs {
            Some(dirs) => Sourced::new(
                dirs.value
                    .iter()
                    .map(|d| skill_dir(d, &home.value, env))
                    .collect(),
                line(dirs.line),
            ),
            None => Sourced::default_value(Vec::new()),
        },
    };
    Ok(Settings {
        home,
        settings_path,
        settings_present,
        model,
        providers,
        approval: ApprovalSettings {
            policy,
            rules: file
                .approval_rules
                .into_iter()
                .map(|r| Sourced::new(r.value, line(r.line)))
                .collect(),
        },
        sandbox: SandboxSettings { mode: sandbox },
        tools: ToolSettings {
            enabled,
            web_fetch_allow_private: allow_private,
        },
        compaction,
        store,
        skills,
        ui: UiSettings {
            theme: match &file.ui_theme {
                Some(theme) => Sourced::new(theme.value, line(theme.line)),
                None => Sourced::default_value(crate::tui::theme::ThemeChoice::Auto),
            },
            hyperlinks: match &file.ui_hyperlinks {
                Some(choice) => Sourced::new(choice.value, line(choice.line)),
                None => Sourced::default_value(crate::tui::hyperlink::HyperlinkChoice::Auto),
            },
        },
        prices: super::prices::resolve(file.prices),
        mcp_servers: file.mcp.servers,
        mcp_problems: file.mcp.problems,
        composition,
        row_sources,
    })
}

fn apply_provider_layer(
    providers: &mut Vec<Provider>,
    layer: &ProviderLayer,
    settings_path: &std::path::Path,
) -> Result<(), ConfigError> {
    let line = |line: u32| Source::File { line };
    let index = match providers.iter().position(|p| p.route == layer.route) {
        Some(index) => index,
        None => {
            let Some(base_url) = &layer.base_url else {
                return Err(ConfigError::Inconsistent {
                    at: Location::File {
                        path: settings_path.to_path_buf(),
                        line: layer.line,
                    },
                    key: format!("providers.{}.base_url", layer.route),
                    message: format!(
                        "the new provider route `{}` needs a base_url (built-in routes: {})",
                        layer.route,
                        quote_all(&[DEEPSEEK_ROUTE, OPENAI_ROUTE])
                    ),
                });
            };
            // A custom route starts from plain OpenAI-style defaults and no key.
            let mut provider = openai_style(&layer.route);
            provider.defined = line(layer.line);
            provider.base_url = Sourced::new(base_url.value.clone(), line(base_url.line));
            provider.api_key_env = Sourced::new(None, line(layer.line));
            providers.push(provider);
            providers.len() - 1
        }
    };
    let provider = &mut providers[index];
    if let Some(url) = &layer.base_url {
        provider.base_url = Sourced::new(url.value.clone(), line(url.line));
    }
    if let Some(var) = &layer.api_key_env {
        provider.api_key_env = Sourced::new(Some(var.value.clone()), line(var.line));
    }
    if let Some(models) = &layer.models {
        for entry in &models.value {
            merge_model(&mut provider.models, entry);
        }
    }
    for (name, value) in &layer.headers {
        provider.headers.insert(
            name.clone(),
            Sourced::new(HeaderValue(value.value.clone()), line(value.line)),
        );
    }
    let compat = &mut provider.compat;
    set_at(&mut compat.max_tokens_field, &layer.max_tokens_field);
    set_at(&mut compat.send_thinking, &layer.send_thinking);
    set_at(&mut compat.replay_reasoning, &layer.replay_reasoning);
    let limits = &mut provider.limits;
    set_at(&mut limits.max_sse_line_bytes, &layer.max_sse_line_bytes);
    set_at(&mut limits.max_response_bytes, &layer.max_response_bytes);
    Ok(())
}

/// Puts a file's model entry into a catalogue: over the entry with the same id (only the
/// fields it sets), else at the end.
fn merge_model(models: &mut Vec<Sourced<ModelEntry>>, entry: &At<ModelEntry>) {
    let source = Source::File { line: entry.line };
    let new = &entry.value;
    let Some(slot) = models.iter_mut().find(|m| m.value.id == new.id) else {
        models.push(Sourced::new(new.clone(), source));
        return;
    };
    let old = &mut slot.value;
    if new.context_window.is_some() {
        old.context_window = new.context_window;
        old.context_window_source = new.context_window_source;
    }
    if new.max_tokens.is_some() {
        old.max_tokens = new.max_tokens;
    }
    if new.reasoning_efforts.is_some() {
        old.reasoning_efforts.clone_from(&new.reasoning_efforts);
        // An effort list without a default of its own keeps the old default only if it is
        // still listed.
        if new.default_effort.is_none() {
            let listed = |effort: &String| {
                new.reasoning_efforts
                    .as_ref()
                    .is_some_and(|efforts| efforts.contains(effort))
            };
            if !old.default_effort.as_ref().is_some_and(listed) {
                old.default_effort = None;
            }
        }
    }
    if new.default_effort.is_some() {
        old.default_effort.clone_from(&new.default_effort);
    }
    if new.input.is_some() {
        old.input.clone_from(&new.input);
    }
    slot.source = source;
}

fn set_at<T: Clone>(slot: &mut Sourced<T>, value: &Option<At<T>>) {
    if let Some(value) = value {
        *slot = Sourced::new(value.value.clone(), Source::File { line: value.line });
    }
}

/// A text variable; empty counts as unset, and non-UTF-8 is refused rather than guessed at.
fn env_text(env: &dyn Env, var: &'static str) -> Result<Option<String>, ConfigError> {
    match env.get(var) {
        None => Ok(None),
        Some(raw) if raw.is_empty() => Ok(None),
        Some(raw) => match raw.into_string() {
            Ok(text) => Ok(Some(text)),
            Err(_) => Err(ConfigError::InvalidValue {
                at: Location::Env { var },
                key: var.to_owned(),
                expected: "UTF-8 text".into(),
                found: "bytes that are not UTF-8".into(),
            }),
        },
    }
}

fn quote_all(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `[skills] dirs` entry as a path: `~/...` under `$HOME`, a relative path under
/// `$DSH_HOME`.
fn skill_dir(dir: &str, home: &Path, env: &dyn Env) -> PathBuf {
    if let Some(rest) = dir.strip_prefix("~/") {
        if let Some(user_home) = env.get("HOME").filter(|h| !h.is_empty()) {
            return PathBuf::from(user_home).join(rest);
        }
    }
    let path = PathBuf::from(dir);
    if path.is_absolute() {
        path
    } else {
        home.join(path)
    }
}
