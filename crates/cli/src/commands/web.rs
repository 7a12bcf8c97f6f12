//! `dsh web`: the HTTP API of `dsh-web` (docs/web-api.md) on the same boot as every other
//! surface: one [`RuntimeHost`] boots each workspace a client names with this invocation's
//! settings, so trust, sandbox, approval policy, rules, MCP servers, hooks and skills apply
//! exactly as in `dsh` there, and a session driven from the page resumes in the TUI.

use super::acp::RuntimeHost;
use super::interactive::{current_preset, default_preset};
use super::{stderr_line, GlobalArgs, UsageError};
use crate::app::BootOptions;
use crate::config::{load, Env, Source};
use dsh_acp::{AgentChoice, ClientMcpServer, Host, HostError, Workspace};
use dsh_agent::Agent;
use dsh_tools_builtin::approval::events::{fold_session_safety, log_sandbox_mode};
use dsh_tools_builtin::{PermissionPreset, SessionSafety};
use dsh_web::host::{Models, ProviderModels};
use dsh_web::{Hub, TrustedHost, WebConfig, WebHost};
use futures_util::future::BoxFuture;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `dsh web` options.
#[derive(Debug, Clone, clap::Args)]
pub struct WebArgs {
    /// The address to listen on (loopback unless --allow-remote)
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0 picks a free one; the printed URL shows it)
    #[arg(long, default_value_t = 3080)]
    pub port: u16,
    /// Also accept requests whose Host header is this host[:port] (repeatable), e.g. the
    /// name a reverse proxy forwards
    #[arg(long = "trusted-host", value_name = "HOST[:PORT]")]
    pub trusted_host: Vec<String>,
    /// Do not open the browser
    #[arg(long)]
    pub no_open: bool,
    /// Allow a non-loopback --host (plain HTTP: put TLS in front, docs/web-api.md)
    #[arg(long)]
    pub allow_remote: bool,
    /// Also write the launch token to this file (mode 0600), for scripts
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// The address `--host` names: an IP address, or `localhost`.
fn bind_ip(host: &str) -> Result<IpAddr, UsageError> {
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let trimmed = host.trim_start_matches('[').trim_end_matches(']');
    trimmed.parse().map_err(|_| {
        UsageError(format!(
            "--host {host:?} is not an IP address (use 127.0.0.1, ::1, or with --allow-remote an address of this machine)"
        ))
    })
}

/// Checks the flags: a non-loopback bind needs --allow-remote; trusted hosts must be
/// canonical.
fn config(args: &WebArgs) -> anyhow::Result<WebConfig> {
    let ip = bind_ip(&args.host)?;
    if !ip.is_loopback() && !args.allow_remote {
        return Err(UsageError(format!(
            "--host {} would serve sessions to other machines; dsh web listens on loopback \
             only unless you also pass --allow-remote (and put TLS in front: docs/web-api.md)",
            args.host
        ))
        .into());
    }
    let mut config = WebConfig::new(SocketAddr::new(ip, args.port), env!("CARGO_PKG_VERSION"));
    for entry in &args.trusted_host {
        config
            .trusted
            .push(TrustedHost::parse(entry).map_err(|e| UsageError(e.to_string()))?);
    }
    Ok(config)
}

/// Writes the token to `path`, readable by its owner only.
fn write_token(path: &Path, token: &str) -> anyhow::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write the token file {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(format!("{token}\n").as_bytes())?;
    Ok(())
}

/// Whether this looks like a session over SSH (no browser to open here).
fn over_ssh(env: &dyn Env) -> bool {
    ["SSH_CONNECTION", "SSH_TTY"]
        .iter()
        .any(|name| env.is_set(name))
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = spawned {
        stderr_line(format_args!(
            "dsh web: could not open a browser ({opener}: {error}); open the URL above"
        ));
    }
}

/// Runs the server until Ctrl-C or SIGTERM.
pub(super) fn serve(global: &GlobalArgs, args: &WebArgs, env: &dyn Env) -> anyhow::Result<u8> {
    let config = config(args)?;
    let settings = load(env, &global.overrides())?;
    let options = BootOptions::from_process(global.cwd.clone())?;
    // Two workers, unlike `dsh acp` (one client, one thread): this process serves every
    // session of every workspace to many pages, and the CPU-bound parts (rendering a long
    // history's markdown, encoding it, parsing model streams, diffing edits) run on the
    // runtime. On one thread a single busy session stalls every other session's stream and
    // the page's first byte; two workers let one stall while the other keeps serving, and
    // stay small on a small machine. Everything spawned is already `Send`.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("dsh-web")
        .enable_all()
        .build()?;
    let host = Arc::new(WebRuntimeHost {
        inner: RuntimeHost::new(settings, options),
    });
    let remote = !config.addr.ip().is_loopback();
    let ssh = over_ssh(env);
    let token = config.token.clone();
    runtime.block_on(async move {
        let hub = Hub::start(host)
            .await
            .map_err(|e| anyhow::anyhow!("dsh web: {e}"))?;
        let server = match dsh_web::serve(config, hub.clone()).await {
            Ok(server) => server,
            Err(error) => {
                hub.shutdown().await;
                return Err(anyhow::anyhow!(
                    "dsh web: cannot listen on {}:{}: {error}",
                    args.host,
                    args.port
                ));
            }
        };
        let addr = server.addr();
        let shown = match addr.ip() {
            ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            ip => ip,
        };
        let url = format!("http://{}/?token={token}", SocketAddr::new(shown, addr.port()));
        if let Some(path) = &args.token_file {
            write_token(path, &token)?;
        }
        if remote {
            stderr_line(format_args!(
                "dsh web: warning: listening on {addr} for other machines over plain HTTP: the \
                 token and every session cross the network in clear and anyone who gets the \
                 token can run commands here. Put TLS in front (docs/web-api.md, \"Reverse proxy\")."
            ));
        }
        // The one stdout line: scripts and tests read the URL (and the real port) from it.
        println!("dsh web: {url}");
        if !args.no_open && !ssh {
            stderr_line("dsh web: opening the default browser; pass --no-open to disable");
            open_browser(&url);
        }
        stop_signal().await;
        stderr_line("dsh web: stopping: ending every session's turn and flushing its log");
        server
            .shutdown()
            .await
            .map_err(|e| anyhow::anyhow!("dsh web: {e}"))?;
        Ok(super::exit::SUCCESS)
    })
}

/// Ctrl-C or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The CLI's host, with what the web surface adds.
struct WebRuntimeHost {
    inner: RuntimeHost,
}

impl Host for WebRuntimeHost {
    fn open<'a>(
        &'a self,
        cwd: &'a Path,
        mcp: &'a [ClientMcpServer],
    ) -> BoxFuture<'a, Result<Arc<dyn Workspace>, HostError>> {
        self.inner.open(cwd, mcp)
    }

    fn default_cwd(&self) -> PathBuf {
        self.inner.default_cwd()
    }

    fn check_choice(&self, choice: &AgentChoice) -> Result<(), HostError> {
        self.inner.check_choice(choice)
    }

    fn shutdown(&self) {
        self.inner.shutdown();
    }
}

impl WebHost for WebRuntimeHost {
    fn models(&self) -> Models {
        let settings = self.inner.settings();
        Models {
            provider: settings.model.provider.value.clone(),
            model: settings.model.model.value.clone(),
            providers: settings
                .providers
                .iter()
                .map(|p| ProviderModels {
                    id: p.route.clone(),
                    models: p.models.iter().map(|m| m.value.id.clone()).collect(),
                })
                .collect(),
        }
    }

    fn settings_view(&self) -> serde_json::Value {
        crate::config::render_json(self.inner.settings())
    }

    fn permission(&self, _workspace: &dyn Workspace, agent: &Arc<dyn Agent>) -> String {
        current_preset(&fold_session_safety(&agent.session().events()))
            .unwrap_or_else(|| default_preset(self.inner.settings()))
            .as_str()
            .to_owned()
    }

    /// As the TUI's `/permissions`: the preset's policy and sandbox logged on the session,
    /// unless a flag or the environment pins the sandbox, which stays in force.
    fn set_permission(
        &self,
        workspace: &dyn Workspace,
        agent: &Arc<dyn Agent>,
        preset: &str,
    ) -> Result<String, HostError> {
        let preset: PermissionPreset = preset.parse().map_err(|_| {
            HostError::Agent(format!(
                "no permission preset {preset:?}; the presets are read-only, workspace-write and danger-full-access"
            ))
        })?;
        let booted = self
            .inner
            .booted(workspace.root())
            .ok_or_else(|| HostError::Boot("the session's workspace is not booted".into()))?;
        let runtime = booted.runtime();
        let approvals = runtime.approvals().ok_or_else(|| {
            HostError::Agent("approval is not configured in this composition".into())
        })?;
        approvals
            .start_session(agent.session(), &SessionSafety::from_preset(preset))
            .map_err(|e| HostError::Agent(e.to_string()))?;
        let mode = &self.inner.settings().sandbox.mode;
        let pinned = matches!(mode.source, Source::Flag { .. } | Source::Env { .. })
            .then_some(mode.value)
            .filter(|pinned| *pinned != preset.sandbox_mode());
        let in_force = match pinned {
            Some(pinned) => {
                log_sandbox_mode(agent.session(), pinned)
                    .map_err(|e| HostError::Agent(e.to_string()))?;
                pinned
            }
            None => preset.sandbox_mode(),
        };
        runtime
            .set_sandbox_mode(agent.as_ref(), in_force)
            .map_err(|e| HostError::Agent(e.to_string()))?;
        let summary = format!(
            "permission: {} (sandbox {}, approval {})",
            preset.as_str(),
            preset.sandbox_mode().as_str(),
            preset.approval_policy()
        );
        Ok(match pinned {
            Some(pinned) => format!(
                "{summary}; but this run pins the sandbox to {} (--sandbox or \
                 DSH_PERMISSION_MODE), so it stays in force",
                pinned.as_str()
            ),
            None => summary,
        })
    }
}
