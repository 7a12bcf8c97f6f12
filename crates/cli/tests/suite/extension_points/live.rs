//! The compiled half of the check: every extension point as its type says (name, mode,
//! payload), and the listeners a real boot registers.

use dsh_cli::app::{AgentStart, BootOptions, Runtime};
use dsh_cli::config::{default_composition, load, Overrides};
use dsh_kernel::{DispatchMode, Notification, Parallel, Serial, Waterfall};
use std::any::type_name;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// One extension point, as the compiler knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub name: &'static str,
    pub mode: DispatchMode,
    /// `std::any::type_name` of the type (`dsh_agent::events::PreStep`).
    pub rust: &'static str,
    /// What listeners get, and (serial, waterfall) what they give back, short-named.
    pub payload: String,
}

impl Point {
    /// The package that declares it (`dsh-agent`).
    pub fn krate(&self) -> String {
        self.rust.split("::").next().unwrap_or("").replace('_', "-")
    }
    /// The type's own name (`PreStep`).
    pub fn ident(&self) -> &'static str {
        self.rust.rsplit("::").next().unwrap_or(self.rust)
    }
}

fn notification<E: Notification>() -> Point {
    Point {
        name: E::NAME,
        mode: DispatchMode::Notification,
        rust: type_name::<E>(),
        payload: short(type_name::<E::Payload>()),
    }
}

fn serial<E: Serial>() -> Point {
    Point {
        name: E::NAME,
        mode: DispatchMode::Serial,
        rust: type_name::<E>(),
        payload: format!(
            "{} → Option<{}>",
            short(type_name::<E::Args>()),
            short(type_name::<E::Output>())
        ),
    }
}

fn parallel<E: Parallel>() -> Point {
    Point {
        name: E::NAME,
        mode: DispatchMode::Parallel,
        rust: type_name::<E>(),
        payload: short(type_name::<E::Args>()),
    }
}

fn waterfall<E: Waterfall>() -> Point {
    Point {
        name: E::NAME,
        mode: DispatchMode::Waterfall,
        rust: type_name::<E>(),
        payload: format!(
            "{} → {}",
            short(type_name::<E::Args>()),
            short(type_name::<E::Output>())
        ),
    }
}

/// Every extension point of the production crates. Rust cannot enumerate a trait's
/// implementations, so this list is written by hand; the source scan fails the check when
/// it finds a declaration that is missing here, and the compiler when an entry's mode is
/// wrong or its type is gone.
pub fn declared_points() -> Vec<Point> {
    vec![
        // dsh-session
        notification::<dsh_session::SessionCreated>(),
        notification::<dsh_session::SessionEventPublished>(),
        parallel::<dsh_session::SessionFlush>(),
        notification::<dsh_session::SessionDisposed>(),
        // dsh-llm
        waterfall::<dsh_llm::LlmStream>(),
        notification::<dsh_llm::AdaptersUpdated>(),
        // dsh-prompt
        waterfall::<dsh_prompt::SystemPromptAssemble>(),
        // dsh-tools
        waterfall::<dsh_tools::PreExecute>(),
        waterfall::<dsh_tools::Execute>(),
        waterfall::<dsh_tools::PostExecute>(),
        notification::<dsh_tools::ToolResultEvent>(),
        notification::<dsh_tools::ToolsChange>(),
        // dsh-agent
        notification::<dsh_agent::AgentCreated>(),
        notification::<dsh_agent::AgentDisposed>(),
        parallel::<dsh_agent::AgentDisposing>(),
        notification::<dsh_agent::AgentStatusChanged>(),
        notification::<dsh_agent::InboxInserted>(),
        notification::<dsh_agent::InboxClaimed>(),
        notification::<dsh_agent::InboxDiscarded>(),
        notification::<dsh_agent::SessionStart>(),
        notification::<dsh_agent::AgentErrorEvent>(),
        waterfall::<dsh_agent::PreStep>(),
        waterfall::<dsh_agent::AgentRequest>(),
        waterfall::<dsh_agent::RequestError>(),
        serial::<dsh_agent::TurnStopping>(),
        notification::<dsh_agent::ConfigStartFailed>(),
        notification::<dsh_subagents::SubagentStart>(),
        notification::<dsh_subagents::SubagentEnd>(),
        notification::<dsh_modes::goal::GoalChanged>(),
    ]
}

/// A type name without its module paths: `alloc::sync::Arc<dsh_protocol::Message>` →
/// `Arc<Message>`.
pub fn short(full: &str) -> String {
    let mut out = String::new();
    let mut path_start = 0;
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            out.truncate(path_start);
        } else if c == '_' || c.is_alphanumeric() {
            out.push(c);
        } else {
            out.push(c);
            path_start = out.len();
        }
    }
    out
}

/// One live listener, its owner made stable across runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    pub event: &'static str,
    /// Its place in the kernel's list for its extension point: the dispatch order
    /// (outermost first for a waterfall), which is registration order at boot.
    pub order: usize,
    /// The owning fiber's path with per-run ids replaced (`agent:session-<uuid>`).
    pub owner: String,
    /// Its composition row is mounted by the check but not by the default composition.
    pub opt_in: bool,
    /// `scoped` (hears its own scope and descendants), `unscoped` or `global`.
    pub scope: &'static str,
    /// `crates/<dir>/src/<file>.rs:<line>`.
    pub file: String,
    pub line: u32,
}

/// Rows the binary can mount that the default composition does not: the check mounts them
/// too (one row each, id = plugin name, default config) so their listeners are listed, marked
/// as opt-in. Empty today: the default composition mounts every plugin in the table.
pub fn opt_in_plugins() -> Vec<&'static str> {
    let defaults = default_composition();
    dsh_cli::app::plugin_table()
        .names()
        .into_iter()
        // The PostgreSQL store replaces the file store rather than adding to it, and needs a
        // server: its listeners are the file store's, so the map boots without it.
        .filter(|name| *name != "session-persistence-postgres")
        .filter(|name| {
            !defaults
                .rows
                .iter()
                .any(|row| row.plugin == *name && !row.disabled)
        })
        .collect()
}

/// Boots the production composition the way the surfaces do and lists its listeners: one
/// agent set up as `dsh run --max-turns` sets it up (its session subscribed, the step cap
/// installed), plus the model switching the interactive UI installs on its agent.
pub async fn production_listeners(root: &std::path::Path) -> Vec<Live> {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let opt_in = opt_in_plugins();
    if !opt_in.is_empty() {
        let rows: String = opt_in
            .iter()
            .map(|p| format!("[[plugins]]\nid = \"{p}\"\nplugin = \"{p}\"\n"))
            .collect();
        std::fs::write(home.path().join("settings.toml"), rows).unwrap();
    }
    let env: BTreeMap<String, String> = [
        ("DSH_HOME".to_owned(), home.path().display().to_string()),
        (
            "DEEPSEEK_API_KEY".to_owned(),
            "sk-extension-points".to_owned(),
        ),
    ]
    .into();
    let settings = load(&env, &Overrides::default()).unwrap();
    let env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    let runtime = Runtime::boot(
        settings,
        BootOptions {
            cwd: cwd.path().to_path_buf(),
            env,
        },
    )
    .unwrap();
    let id = Runtime::new_session_id();
    let subscription = runtime.subscribe(id.clone(), |_| {}).unwrap();
    let handle = runtime
        .create_agent(AgentStart {
            session_id: Some(id),
            max_steps: Some(1),
            step_cap_hit: Some(Arc::new(AtomicBool::new(false))),
            resume_changes: None,
        })
        .await
        .unwrap();
    let selection = Arc::new(dsh_agent::ModelSelectionRef::new(None));
    for disposer in dsh_agent::install_model_selection(handle.agent().ctx(), selection).unwrap() {
        disposer.forget();
    }

    let mut live: Vec<Live> = runtime
        .ctx()
        .listeners()
        .into_iter()
        .enumerate()
        .map(|(order, l)| {
            let row = l.owner.split('/').nth(1).unwrap_or("");
            Live {
                event: l.event,
                order,
                owner: stable_owner(&l.owner),
                opt_in: opt_in.contains(&row),
                scope: match (l.global, l.scoped) {
                    (true, _) => "global",
                    (false, true) => "scoped",
                    (false, false) => "unscoped",
                },
                file: workspace_relative(l.registered_at.file(), root),
                line: l.registered_at.line(),
            }
        })
        .collect();
    // One row per site and owner, even if a plugin registered the same closure twice.
    live.dedup_by(|b, a| {
        (a.event, &a.owner, &a.file, a.line) == (b.event, &b.owner, &b.file, b.line)
    });

    subscription.dispose();
    handle.dispose().await;
    runtime.shutdown();
    live
}

/// A fiber path with every UUID (agents are scoped by their session id) replaced by
/// `<uuid>`.
pub fn stable_owner(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while !rest.is_empty() {
        if is_uuid_at(rest) {
            out.push_str("<uuid>");
            rest = &rest[36..];
        } else {
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
    out
}

fn is_uuid_at(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 36
        && b[..36].iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// `Location::file()` is workspace-relative for workspace members; strip the root if a
/// build made it absolute.
fn workspace_relative(file: &str, root: &std::path::Path) -> String {
    let file = file.replace('\\', "/");
    let root = root.to_string_lossy().replace('\\', "/");
    file.strip_prefix(&format!("{root}/"))
        .map(str::to_owned)
        .unwrap_or(file)
}
