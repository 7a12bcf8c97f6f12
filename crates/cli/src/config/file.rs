//! The schema of `settings.toml`: reads the positioned tree into a [`FileLayer`], refusing
//! unknown keys and wrong values with the line and full key of the problem.

use super::error::ConfigError;
use super::reader::{found, join, to_json, At, Doc, Entries};
use super::tree::{self, Node};
use dsh_llm::Modality;
use dsh_llm_openai::{MaxTokensField, ModelEntry, ReasoningReplay};
use dsh_protocol::words;
use dsh_tools_builtin::approval::{ApprovalPolicy, ApprovalRule, RuleAction, RuleError};
use dsh_tools_builtin::SandboxMode;
use std::path::Path;

/// The tools `[tools.<name>]` may configure: the built-in tools this binary has (a switch
/// for a tool that does not exist would be shown, and believed, to do something).
pub const KNOWN_TOOLS: &[&str] = dsh_tools_builtin::BUILTIN_TOOL_NAMES;

/// Everything the settings file said, with lines. Absent keys are `None`.
#[derive(Debug, Default)]
pub(crate) struct FileLayer {
    pub provider: Option<At<String>>,
    pub model: Option<At<String>>,
    pub providers: Vec<ProviderLayer>,
    pub approval_policy: Option<At<ApprovalPolicy>>,
    pub approval_rules: Vec<At<ApprovalRule>>,
    pub sandbox_mode: Option<At<SandboxMode>>,
    pub tools: Vec<(String, At<bool>)>,
    pub web_fetch_allow_private: Option<At<bool>>,
    /// `[skills] dirs`, as written, with the line of the key.
    pub skills_dirs: Option<At<Vec<String>>>,
    /// `[ui] theme`.
    pub ui_theme: Option<At<crate::tui::theme::ThemeChoice>>,
    /// `[ui] hyperlinks`.
    pub ui_hyperlinks: Option<At<crate::tui::hyperlink::HyperlinkChoice>>,
    pub plugins: Vec<PluginPatch>,
    pub compaction: super::compaction::CompactionLayer,
    /// `[prices]`.
    pub prices: super::prices::PricesLayer,
    pub mcp: super::mcp::McpLayer,
    /// `[store]`.
    pub store: super::store::StoreLayer,
}

/// One `[providers.<route>]` table.
#[derive(Debug)]
pub(crate) struct ProviderLayer {
    pub route: String,
    pub line: u32,
    pub base_url: Option<At<String>>,
    pub api_key_env: Option<At<String>>,
    pub models: Option<At<Vec<At<ModelEntry>>>>,
    pub headers: Vec<(String, At<String>)>,
    pub max_tokens_field: Option<At<MaxTokensField>>,
    pub send_thinking: Option<At<bool>>,
    pub replay_reasoning: Option<At<ReasoningReplay>>,
    pub max_sse_line_bytes: Option<At<u64>>,
    pub max_response_bytes: Option<At<u64>>,
}

/// One `[[plugins]]` entry: a patch of the composition row `id`.
#[derive(Debug)]
pub(crate) struct PluginPatch {
    pub index: usize,
    pub id: At<String>,
    pub plugin: Option<At<String>>,
    pub config: Option<At<serde_json::Value>>,
    pub disabled: Option<At<bool>>,
}

const TOP: &[&str] = &[
    "model",
    "providers",
    "approval",
    "sandbox",
    "tools",
    "skills",
    "ui",
    "plugins",
    "compaction",
    "mcp_servers",
    "prices",
    "store",
];
const MODEL: &[&str] = &["provider", "model"];
const PROVIDER: &[&str] = &[
    "base_url",
    "api_key_env",
    "models",
    "headers",
    "compat",
    "max_sse_line_bytes",
    "max_response_bytes",
];
const MODEL_ENTRY: &[&str] = &[
    "id",
    "context_window",
    "max_output_tokens",
    "reasoning_efforts",
    "default_effort",
    "input",
];
const COMPAT: &[&str] = &["max_tokens_field", "send_thinking", "replay_reasoning"];
const APPROVAL: &[&str] = &["policy", "rules"];
const RULE: &[&str] = &["action", "tool", "command_prefix", "path"];
const SANDBOX: &[&str] = &["mode"];
const TOOL: &[&str] = &["enabled"];
const WEB_FETCH: &[&str] = &["enabled", "allow_private"];
const PLUGIN: &[&str] = &["id", "plugin", "config", "disabled"];
const SKILLS: &[&str] = &["dirs"];
const UI: &[&str] = &["theme", "hyperlinks"];

/// Parses and validates the settings file text.
pub(crate) fn read(path: &Path, text: &str) -> Result<FileLayer, ConfigError> {
    let root = tree::parse(text).map_err(|error| ConfigError::Syntax {
        path: path.to_path_buf(),
        line: error
            .span()
            .map_or(1, |span| tree::line_of(text, span.start)),
        message: error.message().trim().replace('\n', "; "),
    })?;
    let doc = Doc { path, text };
    let top = doc.table("", &root)?;
    doc.check_keys("", top, TOP)?;
    let mut layer = FileLayer::default();
    for (key, node) in top {
        match key.name.as_str() {
            "model" => read_model(&doc, node, &mut layer)?,
            "providers" => {
                for (route, table) in doc.table("providers", node)? {
                    layer.providers.push(read_provider(
                        &doc,
                        &route.name,
                        route.span.start,
                        table,
                    )?);
                }
            }
            "approval" => read_approval(&doc, node, &mut layer)?,
            "sandbox" => {
                let table = doc.table("sandbox", node)?;
                doc.check_keys("sandbox", table, SANDBOX)?;
                if let Some(node) = get(table, "mode") {
                    layer.sandbox_mode = Some(doc.word::<SandboxMode>("sandbox.mode", node)?);
                }
            }
            "tools" => read_tools(&doc, node, &mut layer)?,
            "compaction" => layer.compaction = super::compaction::read(&doc, node)?,
            "prices" => layer.prices = super::prices::read(&doc, node)?,
            "store" => layer.store = super::store::read(&doc, node)?,
            "skills" => {
                let table = doc.table("skills", node)?;
                doc.check_keys("skills", table, SKILLS)?;
                if let Some(node) = get(table, "dirs") {
                    layer.skills_dirs = Some(At {
                        value: doc.strings("skills.dirs", node)?,
                        line: doc.line(&node.span),
                    });
                }
            }
            "ui" => {
                let table = doc.table("ui", node)?;
                doc.check_keys("ui", table, UI)?;
                if let Some(node) = get(table, "theme") {
                    layer.ui_theme = Some(doc.word("ui.theme", node)?);
                }
                if let Some(node) = get(table, "hyperlinks") {
                    layer.ui_hyperlinks = Some(doc.word("ui.hyperlinks", node)?);
                }
            }
            "mcp_servers" => layer.mcp = super::mcp::read(&doc, node),
            "plugins" => {
                let items = doc.array("plugins", node)?;
                for (index, item) in items.iter().enumerate() {
                    layer.plugins.push(read_plugin(&doc, index, item)?);
                }
            }
            _ => {}
        }
    }
    Ok(layer)
}

fn get<'a>(entries: &'a Entries, name: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _)| k.name == name).map(|(_, v)| v)
}

fn read_model(doc: &Doc<'_>, node: &Node, layer: &mut FileLayer) -> Result<(), ConfigError> {
    let table = doc.table("model", node)?;
    doc.check_keys("model", table, MODEL)?;
    if let Some(node) = get(table, "provider") {
        layer.provider = Some(doc.text("model.provider", node)?);
    }
    if let Some(node) = get(table, "model") {
        layer.model = Some(doc.text("model.model", node)?);
    }
    Ok(())
}

fn read_provider(
    doc: &Doc<'_>,
    route: &str,
    offset: usize,
    node: &Node,
) -> Result<ProviderLayer, ConfigError> {
    let prefix = format!("providers.{route}");
    if !is_route_name(route) {
        return Err(doc.invalid(
            &(offset..offset),
            &prefix,
            "a route name of letters, digits, `.`, `_` and `-`",
            format!("{route:?}"),
        ));
    }
    let table = doc.table(&prefix, node)?;
    doc.check_keys(&prefix, table, PROVIDER)?;
    let mut provider = ProviderLayer {
        route: route.to_owned(),
        line: tree::line_of(doc.text, offset),
        base_url: None,
        api_key_env: None,
        models: None,
        headers: Vec::new(),
        max_tokens_field: None,
        send_thinking: None,
        replay_reasoning: None,
        max_sse_line_bytes: None,
        max_response_bytes: None,
    };
    if let Some(node) = get(table, "base_url") {
        let key = join(&prefix, "base_url");
        let url = doc.text(&key, node)?;
        if let Err(found) = check_url(&url.value) {
            return Err(doc.invalid(&node.span, &key, URL_EXPECTED, found));
        }
        provider.base_url = Some(url);
    }
    for (name, slot) in [
        ("max_sse_line_bytes", &mut provider.max_sse_line_bytes),
        ("max_response_bytes", &mut provider.max_response_bytes),
    ] {
        if let Some(node) = get(table, name) {
            *slot = Some(doc.positive(&join(&prefix, name), node)?);
        }
    }
    if let Some(node) = get(table, "api_key_env") {
        let key = join(&prefix, "api_key_env");
        let name = doc.text(&key, node)?;
        if !is_env_name(&name.value) {
            // Never echo it: a value that is not a variable name may be the key itself.
            return Err(doc.invalid(
                &node.span,
                &key,
                "the name of an environment variable (letters, digits and `_`)",
                "another string (not shown, in case it is a secret)".into(),
            ));
        }
        provider.api_key_env = Some(name);
    }
    if let Some(node) = get(table, "models") {
        let key = join(&prefix, "models");
        let items = doc.array(&key, node)?;
        let mut models: Vec<At<ModelEntry>> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let entry = read_model_entry(doc, &format!("{key}[{i}]"), item)?;
            if models.iter().any(|m| m.value.id == entry.value.id) {
                return Err(doc.inconsistent(
                    &item.span,
                    &format!("{key}[{i}].id"),
                    format!("model `{}` is listed twice", entry.value.id),
                ));
            }
            models.push(entry);
        }
        provider.models = Some(At {
            value: models,
            line: doc.line(&node.span),
        });
    }
    if let Some(node) = get(table, "headers") {
        let key = join(&prefix, "headers");
        for (name, value) in doc.table(&key, node)? {
            let header_key = join(&key, &name.name);
            match &value.value {
                tree::Value::String(_) => provider
                    .headers
                    .push((name.name.clone(), doc.string(&header_key, value)?)),
                // The kind only: header values are often credentials.
                other => {
                    return Err(doc.invalid(
                        &value.span,
                        &header_key,
                        "a string",
                        other.kind().to_owned(),
                    ))
                }
            }
        }
    }
    if let Some(node) = get(table, "compat") {
        let key = join(&prefix, "compat");
        let compat = doc.table(&key, node)?;
        doc.check_keys(&key, compat, COMPAT)?;
        if let Some(node) = get(compat, "max_tokens_field") {
            provider.max_tokens_field =
                Some(doc.word::<MaxTokensField>(&join(&key, "max_tokens_field"), node)?);
        }
        if let Some(node) = get(compat, "send_thinking") {
            provider.send_thinking = Some(doc.boolean(&join(&key, "send_thinking"), node)?);
        }
        if let Some(node) = get(compat, "replay_reasoning") {
            provider.replay_reasoning =
                Some(doc.word::<ReasoningReplay>(&join(&key, "replay_reasoning"), node)?);
        }
    }
    Ok(provider)
}

fn read_model_entry(doc: &Doc<'_>, key: &str, node: &Node) -> Result<At<ModelEntry>, ConfigError> {
    let table = doc.table(key, node)?;
    doc.check_keys(key, table, MODEL_ENTRY)?;
    let Some(id) = get(table, "id") else {
        return Err(doc.inconsistent(
            &node.span,
            &join(key, "id"),
            "every model entry needs an `id`".into(),
        ));
    };
    let id = doc.text(&join(key, "id"), id)?;
    let mut entry = ModelEntry::new(id.value);
    if let Some(node) = get(table, "context_window") {
        entry.context_window = Some(doc.positive(&join(key, "context_window"), node)?.value);
    }
    if let Some(node) = get(table, "max_output_tokens") {
        // The adapter calls the output cap `max_tokens`; settings keep the original's name.
        entry.max_tokens = Some(doc.positive(&join(key, "max_output_tokens"), node)?.value);
    }
    if let Some(node) = get(table, "reasoning_efforts") {
        entry.reasoning_efforts = Some(doc.strings(&join(key, "reasoning_efforts"), node)?);
    }
    if let Some(node) = get(table, "default_effort") {
        let effort = doc.text(&join(key, "default_effort"), node)?.value;
        if let Some(efforts) = &entry.reasoning_efforts {
            if !efforts.contains(&effort) {
                let listed: Vec<String> = efforts.iter().map(|e| format!("{e:?}")).collect();
                return Err(doc.invalid(
                    &node.span,
                    &join(key, "default_effort"),
                    &format!(
                        "one of the listed reasoning_efforts ({})",
                        listed.join(", ")
                    ),
                    format!("{effort:?}"),
                ));
            }
        }
        entry.default_effort = Some(effort);
    }
    if let Some(node) = get(table, "input") {
        let input_key = join(key, "input");
        let expected = format!("an array of {}", words::expected::<Modality>());
        let items = doc
            .array(&input_key, node)
            .map_err(|_| doc.invalid(&node.span, &input_key, &expected, found(&node.value)))?;
        let mut input = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let modality = doc.word::<Modality>(&format!("{input_key}[{i}]"), item)?;
            input.push(modality.value);
        }
        if input.is_empty() {
            return Err(doc.invalid(&node.span, &input_key, &expected, "an empty array".into()));
        }
        entry.input = Some(input);
    }
    Ok(At {
        value: entry,
        line: doc.line(&node.span),
    })
}

fn read_approval(doc: &Doc<'_>, node: &Node, layer: &mut FileLayer) -> Result<(), ConfigError> {
    let table = doc.table("approval", node)?;
    doc.check_keys("approval", table, APPROVAL)?;
    if let Some(node) = get(table, "policy") {
        // `auto` was a policy once; say where its meaning went rather than just "unknown".
        if matches!(&node.value, tree::Value::String(word) if word == "auto") {
            return Err(doc.invalid(
                &node.span,
                "approval.policy",
                &format!(
                    "{} (`auto` was removed: allow rules in [[approval.rules]] let calls run \
                     unasked, and under `ask` commands already run inside the sandbox without a \
                     prompt)",
                    words::expected::<ApprovalPolicy>()
                ),
                "\"auto\"".into(),
            ));
        }
        layer.approval_policy = Some(doc.word::<ApprovalPolicy>("approval.policy", node)?);
    }
    if let Some(node) = get(table, "rules") {
        for (i, item) in doc.array("approval.rules", node)?.iter().enumerate() {
            layer
                .approval_rules
                .push(read_rule(doc, &format!("approval.rules[{i}]"), item)?);
        }
    }
    Ok(())
}

fn read_rule(doc: &Doc<'_>, key: &str, node: &Node) -> Result<At<ApprovalRule>, ConfigError> {
    let table = doc.table(key, node)?;
    doc.check_keys(key, table, RULE)?;
    let required = |name: &str| {
        get(table, name).ok_or_else(|| {
            doc.inconsistent(
                &node.span,
                &join(key, name),
                format!("every approval rule needs `{name}`"),
            )
        })
    };
    let action = doc.word::<RuleAction>(&join(key, "action"), required("action")?)?;
    let tool = doc.text(&join(key, "tool"), required("tool")?)?.value;
    let action = action.value;
    let rule = match (get(table, "command_prefix"), get(table, "path")) {
        (Some(_), Some(path)) => {
            return Err(doc.inconsistent(
                &path.span,
                &join(key, "path"),
                RuleError::BothMatchers.to_string(),
            ))
        }
        (Some(prefix), None) => {
            let prefix_key = join(key, "command_prefix");
            let text = doc.text(&prefix_key, prefix)?.value;
            ApprovalRule::command_prefix(action, tool, text).map_err(|_| {
                doc.invalid(
                    &prefix.span,
                    &prefix_key,
                    "a command prefix (one or more words)",
                    found(&prefix.value),
                )
            })?
        }
        (None, Some(path)) => {
            let path_key = join(key, "path");
            let pattern = doc.text(&path_key, path)?.value;
            ApprovalRule::path_glob(action, tool, &pattern).map_err(|error| {
                let reason = match error {
                    RuleError::InvalidGlob { reason, .. } => reason,
                    other => other.to_string(),
                };
                doc.invalid(
                    &path.span,
                    &path_key,
                    "a glob pattern",
                    format!("{pattern:?} ({reason})"),
                )
            })?
        }
        (None, None) => ApprovalRule::any_call(action, tool),
    };
    Ok(At {
        value: rule,
        line: doc.line(&node.span),
    })
}

fn read_tools(doc: &Doc<'_>, node: &Node, layer: &mut FileLayer) -> Result<(), ConfigError> {
    let table = doc.table("tools", node)?;
    doc.check_keys("tools", table, KNOWN_TOOLS)?;
    for (name, node) in table {
        let prefix = join("tools", &name.name);
        let tool = doc.table(&prefix, node)?;
        let allowed = if name.name == "web_fetch" {
            WEB_FETCH
        } else {
            TOOL
        };
        doc.check_keys(&prefix, tool, allowed)?;
        if let Some(node) = get(tool, "enabled") {
            layer.tools.push((
                name.name.clone(),
                doc.boolean(&join(&prefix, "enabled"), node)?,
            ));
        }
        if let Some(node) = get(tool, "allow_private") {
            layer.web_fetch_allow_private =
                Some(doc.boolean(&join(&prefix, "allow_private"), node)?);
        }
    }
    Ok(())
}

fn read_plugin(doc: &Doc<'_>, index: usize, node: &Node) -> Result<PluginPatch, ConfigError> {
    let key = format!("plugins[{index}]");
    let table = doc.table(&key, node)?;
    doc.check_keys(&key, table, PLUGIN)?;
    let Some(id) = get(table, "id") else {
        return Err(doc.inconsistent(
            &node.span,
            &join(&key, "id"),
            "every plugin row needs an `id`".into(),
        ));
    };
    let mut patch = PluginPatch {
        index,
        id: doc.text(&join(&key, "id"), id)?,
        plugin: None,
        config: None,
        disabled: None,
    };
    if let Some(node) = get(table, "plugin") {
        patch.plugin = Some(doc.text(&join(&key, "plugin"), node)?);
    }
    if let Some(node) = get(table, "config") {
        let config_key = join(&key, "config");
        doc.table(&config_key, node)?;
        patch.config = Some(At {
            value: to_json(doc, &config_key, node)?,
            line: doc.line(&node.span),
        });
    }
    if let Some(node) = get(table, "disabled") {
        patch.disabled = Some(doc.boolean(&join(&key, "disabled"), node)?);
    }
    Ok(patch)
}

fn is_route_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

pub(crate) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a base URL must be, in configuration errors.
pub(crate) const URL_EXPECTED: &str = "an http:// or https:// URL";

/// Whether `url` can be a route's endpoint, checked as the adapter will use it; the error is
/// the `found` part of the configuration error (the value, and what is wrong with it when
/// that is more than "not http(s)").
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    match dsh_llm_openai::check_base_url(url) {
        Ok(()) => Ok(()),
        Err(_) if !scheme_ok => Err(format!("{url:?}")),
        Err(reason) => Err(format!("{url:?} ({reason})")),
    }
}
