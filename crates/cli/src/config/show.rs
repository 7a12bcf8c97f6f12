//! `dsh config show`: the effective settings with provenance, as text or JSON.
//!
//! Nothing secret is printed: API keys appear only as set/not set, header values and
//! secret-looking plugin config fields as `<hidden>`.

use super::compaction::{CompactionSettings, Retention};
use super::settings::{Provider, Settings};
use super::source::Sourced;
use dsh_llm_openai::ModelEntry;
use dsh_tools_builtin::approval::{ApprovalRule, RuleMatcher};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

const HIDDEN: &str = "<hidden>";
/// Longest plugin config shown inline in the text form (the JSON form shows it whole).
const INLINE_CONFIG_CHARS: usize = 72;

/// Human-readable form: TOML-like `key = value` lines, each followed by `# <source>`.
pub fn render_text(settings: &Settings) -> String {
    let mut blocks = Vec::new();
    let mut head = Block::new(None);
    head.line(
        format!("home = {:?}", settings.home.value.display().to_string()),
        Some(settings.home.source.to_string()),
    );
    let presence = if settings.settings_present {
        "present"
    } else {
        "absent, using defaults"
    };
    head.line(
        format!(
            "settings_file = {:?}",
            settings.settings_path.display().to_string()
        ),
        Some(presence.to_owned()),
    );
    blocks.push(head);

    let mut model = Block::new(Some("[model]".into()));
    model.sourced("provider", &settings.model.provider, |v| format!("{v:?}"));
    model.sourced("model", &settings.model.model, |v| format!("{v:?}"));
    blocks.push(model);

    for provider in &settings.providers {
        blocks.push(provider_block(provider));
    }

    let mut approval = Block::new(Some("[approval]".into()));
    approval.sourced("policy", &settings.approval.policy, |v| format!("\"{v}\""));
    for (i, rule) in settings.approval.rules.iter().enumerate() {
        approval.line(
            format!("rules[{i}] = {}", rule_text(&rule.value)),
            Some(rule.source.to_string()),
        );
    }
    blocks.push(approval);

    let mut sandbox = Block::new(Some("[sandbox]".into()));
    sandbox.sourced("mode", &settings.sandbox.mode, |v| format!("\"{v}\""));
    blocks.push(sandbox);

    let mut tools = Block::new(Some("[tools]".into()));
    for (name, enabled) in &settings.tools.enabled {
        tools.sourced(&format!("{name}.enabled"), enabled, ToString::to_string);
    }
    tools.sourced(
        "web_fetch.allow_private",
        &settings.tools.web_fetch_allow_private,
        ToString::to_string,
    );
    blocks.push(tools);
    blocks.push(compaction_block(&settings.compaction));
    blocks.push(store_block(&settings.store));

    let mut skills = Block::new(Some("[skills]".into()));
    skills.sourced("dirs", &settings.skills.dirs, |dirs| {
        let quoted: Vec<String> = dirs
            .iter()
            .map(|d| format!("{:?}", d.display().to_string()))
            .collect();
        format!("[{}]", quoted.join(", "))
    });
    blocks.push(skills);

    let mut ui = Block::new(Some("[ui]".into()));
    ui.sourced("theme", &settings.ui.theme, |v| format!("\"{v}\""));
    ui.sourced("hyperlinks", &settings.ui.hyperlinks, |v| {
        format!("\"{v}\"")
    });
    blocks.push(ui);
    blocks.push(prices_block(&settings.prices));

    let mut plugins = Block::new(Some(
        "# composition (mount order; patch rows with [[plugins]])".into(),
    ));
    for (i, row) in settings.composition.rows.iter().enumerate() {
        let mut config = serde_json::to_string(&redact(&row.config)).unwrap_or_default();
        if row.config.is_null() && super::DERIVED_ROWS.contains(&row.id.as_str()) {
            config = "built from these settings".into();
        }
        if config.chars().count() > INLINE_CONFIG_CHARS {
            config = config.chars().take(INLINE_CONFIG_CHARS).collect::<String>() + "…";
        }
        let disabled = if row.disabled { ", disabled" } else { "" };
        let source = settings.row_sources.get(&row.id).map(ToString::to_string);
        plugins.line(
            format!(
                "plugins[{i}] = {:?} plugin {:?}{disabled}, config {config}",
                row.id, row.plugin
            ),
            source,
        );
    }
    blocks.push(plugins);

    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        block.render(&mut out);
    }
    out
}

fn provider_block(provider: &Provider) -> Block {
    let defined = match provider.defined {
        super::Source::Default => "built in".to_owned(),
        other => other.to_string(),
    };
    let mut block = Block::new(Some(format!("[providers.{}]  # {defined}", provider.route)));
    block.sourced("base_url", &provider.base_url, |v| format!("{v:?}"));
    block.sourced("api_key_env", &provider.api_key_env, |v| match v {
        Some(var) => format!("{var:?}"),
        None => "none".into(),
    });
    block.line(format!("api_key = {}", provider.api_key), None);
    if provider.models.is_empty() {
        block.line(
            "models = [] (any model id is accepted)".into(),
            Some(super::Source::Default.to_string()),
        );
    }
    for (i, entry) in provider.models.iter().enumerate() {
        block.line(
            format!("models[{i}] = {}", model_text(&entry.value)),
            Some(entry.source.to_string()),
        );
    }
    for (name, value) in &provider.headers {
        block.line(
            format!("headers.{name} = {HIDDEN}"),
            Some(value.source.to_string()),
        );
    }
    let compat = &provider.compat;
    block.sourced("compat.max_tokens_field", &compat.max_tokens_field, |v| {
        format!("\"{v}\"")
    });
    block.sourced(
        "compat.send_thinking",
        &compat.send_thinking,
        ToString::to_string,
    );
    block.sourced("compat.replay_reasoning", &compat.replay_reasoning, |v| {
        format!("\"{v}\"")
    });
    let limits = &provider.limits;
    block.sourced(
        "max_sse_line_bytes",
        &limits.max_sse_line_bytes,
        ToString::to_string,
    );
    block.sourced(
        "max_response_bytes",
        &limits.max_response_bytes,
        ToString::to_string,
    );
    block
}

/// `[store]`: the URL with its password hidden.
fn store_block(store: &super::StoreSettings) -> Block {
    let mut block = Block::new(Some("[store]".into()));
    block.sourced("backend", &store.backend, |v| format!("\"{v}\""));
    block.sourced("url", &store.url, |v| match v {
        Some(url) => format!("{:?}", url.masked()),
        None => "none".into(),
    });
    block.sourced("password_env", &store.password_env, |v| match v {
        Some(var) => format!("{var:?}"),
        None => "none (the URL, PGPASSWORD or ~/.pgpass)".into(),
    });
    block
}

fn compaction_block(compaction: &CompactionSettings) -> Block {
    let mut block = Block::new(Some("[compaction]".into()));
    block.sourced("auto", &compaction.auto, ToString::to_string);
    block.sourced(
        "threshold_ratio",
        &compaction.threshold_ratio,
        ToString::to_string,
    );
    let retain = &compaction.retain;
    match retain.value {
        Retention::Ratio(ratio) => block.line(
            format!("retain_ratio = {ratio}"),
            Some(retain.source.to_string()),
        ),
        Retention::Tokens(tokens) => block.line(
            format!("retain_tokens = {tokens}"),
            Some(retain.source.to_string()),
        ),
    }
    block.sourced("max_tokens", &compaction.max_tokens, ToString::to_string);
    block.sourced("retries", &compaction.retries, ToString::to_string);
    block.sourced(
        "overflow_retries",
        &compaction.overflow_retries,
        ToString::to_string,
    );
    match &compaction.summarizer.value {
        Some(route) => {
            let source = Some(compaction.summarizer.source.to_string());
            block.line(format!("provider = {:?}", route.provider), source.clone());
            block.line(format!("model = {:?}", route.model), source);
        }
        None => block.line(
            "provider, model = the conversation's own".into(),
            Some(compaction.summarizer.source.to_string()),
        ),
    }
    block
}

fn compaction_json(compaction: &CompactionSettings) -> Value {
    let sourced = |value: Value, source: &super::Source| json!({ "value": value, "source": source.to_string() });
    let retain = &compaction.retain;
    let (retain_key, retain_value) = match retain.value {
        Retention::Ratio(ratio) => ("retain_ratio", json!(ratio)),
        Retention::Tokens(tokens) => ("retain_tokens", json!(tokens)),
    };
    let summarizer = &compaction.summarizer;
    let (provider, model) = match &summarizer.value {
        Some(route) => (json!(route.provider), json!(route.model)),
        None => (Value::Null, Value::Null),
    };
    let mut object = Map::new();
    for (key, value, source) in [
        (
            "auto",
            json!(compaction.auto.value),
            &compaction.auto.source,
        ),
        (
            "threshold_ratio",
            json!(compaction.threshold_ratio.value),
            &compaction.threshold_ratio.source,
        ),
        (retain_key, retain_value, &retain.source),
        (
            "max_tokens",
            json!(compaction.max_tokens.value),
            &compaction.max_tokens.source,
        ),
        (
            "retries",
            json!(compaction.retries.value),
            &compaction.retries.source,
        ),
        (
            "overflow_retries",
            json!(compaction.overflow_retries.value),
            &compaction.overflow_retries.source,
        ),
        ("provider", provider, &summarizer.source),
        ("model", model, &summarizer.source),
    ] {
        object.insert(key.into(), sourced(value, source));
    }
    Value::Object(object)
}

/// `[prices]`: the currency and each priced model; a note when none is, since then the
/// status line shows no cost.
fn prices_block(prices: &super::PriceSettings) -> Block {
    let mut block = Block::new(Some(
        "[prices]  # per million tokens; the status line's cost".into(),
    ));
    block.sourced("currency", &prices.currency, |v| format!("{v:?}"));
    if prices.models.is_empty() {
        block.line("# no model priced: no cost is shown".into(), None);
    }
    for (model, price) in &prices.models {
        block.sourced(&format!("{model:?}"), price, super::PriceSettings::describe);
    }
    block
}

fn model_text(entry: &ModelEntry) -> String {
    let mut text = format!("{:?}", entry.id);
    if let Some(n) = entry.context_window {
        let _ = write!(text, " context_window={n}");
    }
    if let Some(n) = entry.max_tokens {
        let _ = write!(text, " max_output_tokens={n}");
    }
    if let Some(efforts) = &entry.reasoning_efforts {
        let _ = write!(text, " reasoning_efforts={}", efforts.join(","));
    }
    if let Some(effort) = &entry.default_effort {
        let _ = write!(text, " default_effort={effort}");
    }
    if let Some(input) = &entry.input {
        let words: Vec<&str> = input.iter().map(|m| m.as_str()).collect();
        let _ = write!(text, " input={}", words.join(","));
    }
    text
}

fn rule_text(rule: &ApprovalRule) -> String {
    let matcher = match &rule.matcher {
        RuleMatcher::AnyCall => "every call".to_owned(),
        RuleMatcher::CommandPrefix(prefix) => format!("command_prefix {prefix:?}"),
        RuleMatcher::PathGlob(glob) => format!("path {:?}", glob.glob().glob()),
    };
    format!("{} {} {matcher}", rule.action, rule.tool)
}

/// Machine-readable form: every value as `{value, source}`.
pub fn render_json(settings: &Settings) -> Value {
    fn sourced<T>(v: &Sourced<T>, f: impl Fn(&T) -> Value) -> Value {
        json!({ "value": f(&v.value), "source": v.source.to_string() })
    }
    let text = |s: &String| Value::String(s.clone());
    let word = |s: &dyn std::fmt::Display| Value::String(s.to_string());
    let providers: Vec<Value> = settings
        .providers
        .iter()
        .map(|p| {
            let api_key = match &p.api_key {
                super::ApiKeyStatus::Set { var } => json!({"status": "set", "env": var}),
                super::ApiKeyStatus::NotSet { var } => json!({"status": "not set", "env": var}),
                super::ApiKeyStatus::NotUsed => json!({"status": "not used"}),
            };
            let headers: Map<String, Value> = p
                .headers
                .iter()
                .map(|(name, v)| (name.clone(), sourced(v, |_| json!(HIDDEN))))
                .collect();
            json!({
                "route": p.route,
                "defined": p.defined.to_string(),
                "base_url": sourced(&p.base_url, text),
                "api_key_env": sourced(&p.api_key_env, |v| json!(v)),
                "api_key": api_key,
                "models": p.models.iter().map(|m| sourced(m, model_json)).collect::<Vec<_>>(),
                "headers": headers,
                "compat": {
                    "max_tokens_field": sourced(&p.compat.max_tokens_field, |v| word(v)),
                    "send_thinking": sourced(&p.compat.send_thinking, |v| json!(v)),
                    "replay_reasoning": sourced(&p.compat.replay_reasoning, |v| word(v)),
                },
                "max_sse_line_bytes": sourced(&p.limits.max_sse_line_bytes, |v| json!(v)),
                "max_response_bytes": sourced(&p.limits.max_response_bytes, |v| json!(v)),
            })
        })
        .collect();
    let mut tools = Map::new();
    for (name, enabled) in &settings.tools.enabled {
        tools.insert(
            name.clone(),
            json!({ "enabled": sourced(enabled, |v| json!(v)) }),
        );
    }
    if let Some(Value::Object(web_fetch)) = tools.get_mut("web_fetch") {
        web_fetch.insert(
            "allow_private".into(),
            sourced(&settings.tools.web_fetch_allow_private, |v| json!(v)),
        );
    }
    let rules: Vec<Value> = settings
        .approval
        .rules
        .iter()
        .map(|r| sourced(r, rule_json))
        .collect();
    let composition: Vec<Value> = settings
        .composition
        .rows
        .iter()
        .map(|row| {
            json!({
                "id": row.id,
                "plugin": row.plugin,
                "config": redact(&row.config),
                "disabled": row.disabled,
                "source": settings.row_sources.get(&row.id).map(ToString::to_string),
            })
        })
        .collect();
    json!({
        "home": sourced(&settings.home, |p| json!(p.display().to_string())),
        "settings_file": {
            "path": settings.settings_path.display().to_string(),
            "present": settings.settings_present,
        },
        "model": {
            "provider": sourced(&settings.model.provider, text),
            "model": sourced(&settings.model.model, text),
        },
        "providers": providers,
        "approval": {
            "policy": sourced(&settings.approval.policy, |v| word(v)),
            "rules": rules,
        },
        "sandbox": { "mode": sourced(&settings.sandbox.mode, |v| word(v)) },
        "tools": tools,
        "compaction": compaction_json(&settings.compaction),
        "store": {
            "backend": sourced(&settings.store.backend, |v| word(v)),
            "url": sourced(&settings.store.url, |v| json!(v.as_ref().map(|u| u.masked()))),
            "password_env": sourced(&settings.store.password_env, |v| json!(v)),
        },
        "skills": {
            "dirs": sourced(&settings.skills.dirs, |dirs| {
                json!(dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>())
            }),
        },
        "ui": {
            "theme": sourced(&settings.ui.theme, |v| word(v)),
            "hyperlinks": sourced(&settings.ui.hyperlinks, |v| word(v)),
        },
        "prices": {
            "currency": sourced(&settings.prices.currency, text),
            "models": settings.prices.models.iter().map(|(model, price)| {
                (model.clone(), sourced(price, |p| json!({
                    "input": p.input, "cached_input": p.cached_input, "output": p.output,
                })))
            }).collect::<Map<String, Value>>(),
        },
        "composition": composition,
    })
}

fn model_json(entry: &ModelEntry) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), json!(entry.id));
    let optional = [
        ("context_window", entry.context_window.map(|v| json!(v))),
        ("max_output_tokens", entry.max_tokens.map(|v| json!(v))),
        (
            "reasoning_efforts",
            entry.reasoning_efforts.as_ref().map(|v| json!(v)),
        ),
        (
            "default_effort",
            entry.default_effort.as_ref().map(|v| json!(v)),
        ),
        (
            "input",
            entry
                .input
                .as_ref()
                .map(|v| json!(v.iter().map(|m| m.as_str()).collect::<Vec<_>>())),
        ),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            object.insert(key.into(), value);
        }
    }
    Value::Object(object)
}

/// The rule as its `[[approval.rules]]` entry.
fn rule_json(rule: &ApprovalRule) -> Value {
    serde_json::to_value(rule).unwrap_or(Value::Null)
}

/// A copy of a plugin config with secret-looking fields hidden. Plugin configs are free-form,
/// so this goes by name: keys mentioning a key, token, secret, password or authorization,
/// except the `*_env` / `*Env` fields that only name a variable.
pub(crate) fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let shown = if is_secret_name(k) && !v.is_null() {
                        json!(HIDDEN)
                    } else if let Value::String(url) = v {
                        // A connection URL (`[store]`'s, in a patched row) may hold a
                        // password in its userinfo or query.
                        Value::String(super::store::mask_url(url))
                    } else {
                        redact(v)
                    };
                    (k.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("env") {
        return false;
    }
    let squashed: String = lower
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    [
        "apikey",
        "token",
        "secret",
        "password",
        "authorization",
        "credential",
    ]
    .iter()
    .any(|word| squashed.contains(word))
}

/// Lines longer than this are not used to align comments (they would push all comments far
/// right).
const ALIGN_LIMIT: usize = 48;

/// A titled group of `left  # comment` lines, with comments aligned.
struct Block {
    title: Option<String>,
    lines: Vec<(String, Option<String>)>,
}

impl Block {
    fn new(title: Option<String>) -> Self {
        Self {
            title,
            lines: Vec::new(),
        }
    }

    fn line(&mut self, left: String, comment: Option<String>) {
        self.lines.push((left, comment));
    }

    fn sourced<T>(&mut self, key: &str, value: &Sourced<T>, show: impl Fn(&T) -> String) {
        self.line(
            format!("{key} = {}", show(&value.value)),
            Some(value.source.to_string()),
        );
    }

    fn render(&self, out: &mut String) {
        if let Some(title) = &self.title {
            out.push_str(title);
            out.push('\n');
        }
        let width = self
            .lines
            .iter()
            .filter(|(_, c)| c.is_some())
            .map(|(l, _)| l.chars().count())
            .filter(|len| *len <= ALIGN_LIMIT)
            .max()
            .unwrap_or(0);
        for (left, comment) in &self.lines {
            match comment {
                Some(comment) => {
                    let _ = writeln!(out, "{left:<width$}  # {comment}");
                }
                None => {
                    out.push_str(left);
                    out.push('\n');
                }
            }
        }
    }
}
