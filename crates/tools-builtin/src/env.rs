//! Everything a tool body needs to know about the session it runs in.

use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::ToolError;
use crate::fs_tools::{ObservationStore, WorkspaceFiles};
use crate::output::CollectorLimits;
use crate::sandbox::{SandboxMode, SandboxPolicy, UnconfinedFallback};
use crate::scrub::SecretScrubber;

/// Sizes and durations the tools enforce. `Default` gives the product defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// bash: timeout when the call names none.
    pub bash_default_timeout: Duration,
    /// bash: the longest timeout a call may ask for; longer requests are clamped.
    pub bash_max_timeout: Duration,
    /// bash: how long a process group gets between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// bash: after the shell exits, how long leftover background processes may keep the
    /// output pipe open before their group is terminated.
    pub exit_drain: Duration,
    /// Output up to this many bytes is returned whole (bash, glob and grep listings).
    pub inline_output_bytes: usize,
    /// Preview sizes for spilled output.
    pub preview_head_bytes: usize,
    pub preview_tail_bytes: usize,
    /// A spill file stops growing at this size.
    pub spill_max_bytes: u64,
    /// read: lines returned when the call names no limit (also the maximum).
    pub read_default_lines: usize,
    /// read: characters kept per line.
    pub read_max_line_chars: usize,
    /// read: total bytes of line text per call.
    pub read_max_bytes: usize,
    /// edit/write: the largest file they operate on.
    pub edit_max_file_bytes: u64,
    /// glob: paths listed inline.
    pub glob_max_results: usize,
    /// grep: matches listed inline.
    pub grep_max_matches: usize,
    /// grep: characters kept per matching line.
    pub grep_max_line_chars: usize,
    /// web_fetch: characters of text returned.
    pub web_fetch_max_chars: usize,
    /// web_fetch: raw bytes downloaded at most.
    pub web_fetch_max_bytes: usize,
    /// web_fetch: whole-request timeout.
    pub web_fetch_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            bash_default_timeout: Duration::from_secs(120),
            bash_max_timeout: Duration::from_secs(600),
            kill_grace: Duration::from_secs(2),
            exit_drain: Duration::from_millis(500),
            inline_output_bytes: 50_000,
            preview_head_bytes: 10_000,
            preview_tail_bytes: 30_000,
            spill_max_bytes: 64 * 1024 * 1024,
            read_default_lines: 2_000,
            read_max_line_chars: 2_000,
            read_max_bytes: 100_000,
            edit_max_file_bytes: 16 * 1024 * 1024,
            glob_max_results: 100,
            grep_max_matches: 250,
            grep_max_line_chars: 500,
            web_fetch_max_chars: 200_000,
            web_fetch_max_bytes: 8 * 1024 * 1024,
            web_fetch_timeout: Duration::from_secs(30),
        }
    }
}

impl Limits {
    pub(crate) fn collector(&self) -> CollectorLimits {
        CollectorLimits {
            inline: self.inline_output_bytes,
            head: self.preview_head_bytes,
            tail: self.preview_tail_bytes,
            spill_max: self.spill_max_bytes,
        }
    }
}

/// Harness facts exported to commands as `DSH_*` variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionFacts {
    /// Exported as `DSH_SESSION_ID`.
    pub session_id: Option<String>,
    /// Exported as `DSH_HOME`.
    pub dsh_home: Option<PathBuf>,
}

/// web_fetch settings. Off unless a configuration turns it on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebFetchConfig {
    pub enabled: bool,
    /// Allow private, loopback and link-local destinations (tests, intranet setups).
    pub allow_private_addresses: bool,
}

/// The per-session environment of the built-in tools. Cheap to clone.
///
/// `Debug` shows variable *names* of the base environment only, never values, so logging an
/// environment cannot leak a credential.
#[derive(Clone)]
pub struct ToolEnv {
    workspace: PathBuf,
    temp_dir: PathBuf,
    spill_dir: PathBuf,
    sandbox: SandboxPolicy,
    observations: Arc<ObservationStore>,
    scrubber: Arc<SecretScrubber>,
    limits: Arc<Limits>,
    base_env: Arc<Vec<(OsString, OsString)>>,
    facts: Arc<SessionFacts>,
    model_accepts_images: bool,
    web_fetch: WebFetchConfig,
    notice_shown: Arc<AtomicBool>,
    /// Where the file tools get and put text; `None`: the disk.
    files: Option<Arc<dyn WorkspaceFiles>>,
}

impl std::fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.base_env.iter().map(|(name, _)| name).collect();
        f.debug_struct("ToolEnv")
            .field("workspace", &self.workspace)
            .field("temp_dir", &self.temp_dir)
            .field("spill_dir", &self.spill_dir)
            .field("sandbox", &self.sandbox)
            .field("scrubber", &self.scrubber)
            .field("limits", &self.limits)
            .field("base_env_names", &names)
            .field("facts", &self.facts)
            .field("model_accepts_images", &self.model_accepts_images)
            .field("web_fetch", &self.web_fetch)
            .field("client_files", &self.files.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolEnv {
    /// Starts a builder for a session working in `workspace` (which must exist).
    pub fn builder(workspace: impl Into<PathBuf>) -> ToolEnvBuilder {
        ToolEnvBuilder::new(workspace.into())
    }

    /// The canonical workspace root (the session cwd).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The private per-session temp dir, exported to commands as `TMPDIR`.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// Where oversized outputs are saved.
    pub fn spill_dir(&self) -> &Path {
        &self.spill_dir
    }

    pub fn sandbox(&self) -> &SandboxPolicy {
        &self.sandbox
    }

    pub fn observations(&self) -> &ObservationStore {
        &self.observations
    }

    pub fn scrubber(&self) -> &SecretScrubber {
        &self.scrubber
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The environment commands start from, before scrubbing.
    pub fn base_env(&self) -> &[(OsString, OsString)] {
        &self.base_env
    }

    pub fn facts(&self) -> &SessionFacts {
        &self.facts
    }

    pub fn model_accepts_images(&self) -> bool {
        self.model_accepts_images
    }

    pub fn web_fetch(&self) -> &WebFetchConfig {
        &self.web_fetch
    }

    /// The same session under another sandbox mode (an approved escalation). Observations,
    /// secrets and the notice latch are shared.
    pub fn with_sandbox_mode(&self, mode: SandboxMode) -> Self {
        Self {
            sandbox: self.sandbox.with_mode(mode),
            ..self.clone()
        }
    }

    /// The environment of a delegated child session working beside this one: the same
    /// workspace, sandbox, secrets, limits and temp dir (the child works for this session),
    /// with its own session facts, its own read-before-edit observations and its own sandbox
    /// notice latch.
    pub fn for_child_session(&self, session_id: &str) -> Self {
        let facts = SessionFacts {
            session_id: Some(session_id.to_owned()),
            dsh_home: self.facts.dsh_home.clone(),
        };
        Self {
            observations: Arc::new(ObservationStore::new()),
            facts: Arc::new(facts),
            notice_shown: Arc::new(AtomicBool::new(false)),
            ..self.clone()
        }
    }

    /// The same session with another unconfined-fallback choice.
    pub fn with_unconfined_fallback(&self, fallback: UnconfinedFallback) -> Self {
        Self {
            sandbox: self.sandbox.with_fallback(fallback),
            ..self.clone()
        }
    }

    /// The same session with other web_fetch settings (the registration's, which override
    /// whatever the session was built with).
    pub fn with_web_fetch(&self, config: WebFetchConfig) -> Self {
        Self {
            web_fetch: config,
            ..self.clone()
        }
    }

    /// Where `read`, `write` and `edit` get and put text, when not the disk.
    pub fn files(&self) -> Option<&Arc<dyn WorkspaceFiles>> {
        self.files.as_ref()
    }

    /// The same session with its file text served by `files` (an editor's buffers). Paths
    /// are still resolved and checked against the sandbox by the tools first; environments
    /// derived from this one (another sandbox mode, a child session) keep it.
    pub fn with_files(&self, files: Arc<dyn WorkspaceFiles>) -> Self {
        Self {
            files: Some(files),
            ..self.clone()
        }
    }

    /// True exactly once per session: whether a sandbox notice still has to be shown.
    pub(crate) fn take_notice_slot(&self) -> bool {
        !self.notice_shown.swap(true, Ordering::SeqCst)
    }
}

/// Builds a [`ToolEnv`]; see the setters for defaults. (No `Debug`: it holds secrets.)
pub struct ToolEnvBuilder {
    workspace: PathBuf,
    temp_dir: Option<PathBuf>,
    spill_dir: Option<PathBuf>,
    mode: SandboxMode,
    fallback: UnconfinedFallback,
    extra_writable: Vec<PathBuf>,
    secrets: Vec<String>,
    limits: Limits,
    base_env: Option<Vec<(OsString, OsString)>>,
    facts: SessionFacts,
    model_accepts_images: bool,
    web_fetch: WebFetchConfig,
}

impl ToolEnvBuilder {
    fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            temp_dir: None,
            spill_dir: None,
            mode: SandboxMode::default(),
            fallback: UnconfinedFallback::default(),
            extra_writable: Vec::new(),
            secrets: Vec::new(),
            limits: Limits::default(),
            base_env: None,
            facts: SessionFacts::default(),
            model_accepts_images: false,
            web_fetch: WebFetchConfig::default(),
        }
    }

    /// The private temp dir (created 0700 if missing). Default: a fresh
    /// `dsh-<session or random id>` directory under the system temp dir.
    pub fn temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// The spill dir (created if missing). Default: `spill` beside the private temp dir.
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(dir.into());
        self
    }

    /// Default: `workspace-write`.
    pub fn sandbox_mode(mut self, mode: SandboxMode) -> Self {
        self.mode = mode;
        self
    }

    /// Default: refuse to run unconfined when the kernel cannot confine.
    pub fn unconfined_fallback(mut self, fallback: UnconfinedFallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Another directory writable in `workspace-write` mode (must exist).
    pub fn writable_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.extra_writable.push(dir.into());
        self
    }

    /// A value to redact from tool output (an API key the session holds).
    pub fn secret(mut self, value: impl Into<String>) -> Self {
        self.secrets.push(value.into());
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The environment commands start from. Default: this process's environment.
    pub fn base_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.base_env = Some(env);
        self
    }

    pub fn facts(mut self, facts: SessionFacts) -> Self {
        self.facts = facts;
        self
    }

    pub fn model_accepts_images(mut self, yes: bool) -> Self {
        self.model_accepts_images = yes;
        self
    }

    pub fn web_fetch(mut self, config: WebFetchConfig) -> Self {
        self.web_fetch = config;
        self
    }

    /// Creates the directories and resolves every root to its canonical form.
    pub fn build(self) -> Result<ToolEnv, ToolError> {
        let workspace = canonical_dir(&self.workspace)?;
        let temp_dir = match self.temp_dir {
            Some(dir) => dir,
            None => {
                let id = self
                    .facts
                    .session_id
                    .clone()
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                std::env::temp_dir().join(format!("dsh-{id}"))
            }
        };
        create_private_dir(&temp_dir)?;
        let temp_dir = canonical_dir(&temp_dir)?;
        let spill_dir = self
            .spill_dir
            .unwrap_or_else(|| temp_dir.with_extension("spill"));
        create_private_dir(&spill_dir)?;
        let spill_dir = canonical_dir(&spill_dir)?;
        let extra = self
            .extra_writable
            .iter()
            .map(|dir| canonical_dir(dir))
            .collect::<Result<Vec<_>, _>>()?;
        let sandbox = SandboxPolicy::new(self.mode, &workspace, &temp_dir, &extra, self.fallback);
        let base_env = self
            .base_env
            .unwrap_or_else(|| std::env::vars_os().collect());
        let scrubber = SecretScrubber::new(self.secrets).with_env_secrets(&base_env);
        Ok(ToolEnv {
            workspace,
            temp_dir,
            spill_dir,
            sandbox,
            observations: Arc::new(ObservationStore::new()),
            scrubber: Arc::new(scrubber),
            limits: Arc::new(self.limits),
            base_env: Arc::new(base_env),
            facts: Arc::new(self.facts),
            model_accepts_images: self.model_accepts_images,
            web_fetch: self.web_fetch,
            notice_shown: Arc::new(AtomicBool::new(false)),
            files: None,
        })
    }
}

fn canonical_dir(dir: &Path) -> Result<PathBuf, ToolError> {
    let canonical = dir
        .canonicalize()
        .map_err(|e| ToolError::io("resolving", dir, e))?;
    if !canonical.is_dir() {
        return Err(ToolError::io(
            "opening directory",
            dir,
            std::io::Error::other("not a directory"),
        ));
    }
    Ok(canonical)
}

fn create_private_dir(dir: &Path) -> Result<(), ToolError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ToolError::io("creating directory", dir, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn build_canonicalizes_and_creates_private_dirs() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let env = ToolEnv::builder(root.path().join("ws/../ws"))
            .temp_dir(root.path().join("tmp/s1"))
            .base_env(vec![])
            .build()
            .unwrap();
        let canonical_root = root.path().canonicalize().unwrap();
        assert_eq!(env.workspace(), canonical_root.join("ws"));
        assert_eq!(env.temp_dir(), canonical_root.join("tmp/s1"));
        assert_eq!(env.spill_dir(), canonical_root.join("tmp/s1.spill"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.temp_dir())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            env.sandbox().writable_roots(),
            &[canonical_root.join("ws"), canonical_root.join("tmp/s1")]
        );
    }

    #[test]
    fn debug_output_never_shows_secret_values() {
        let root = tempfile::tempdir().unwrap();
        let env = ToolEnv::builder(root.path())
            .temp_dir(root.path().join("t"))
            .base_env(vec![crate::scrub::env_pair(
                "FOO_API_KEY",
                "sk-very-secret-value",
            )])
            .secret("configured-secret-value")
            .build()
            .unwrap();
        let shown = format!("{env:?}");
        assert!(shown.contains("FOO_API_KEY"));
        assert!(!shown.contains("sk-very-secret-value"));
        assert!(!shown.contains("configured-secret-value"));
    }

    #[test]
    fn missing_workspace_is_an_error() {
        let err = ToolEnv::builder("/nonexistent-dsh-ws")
            .base_env(vec![])
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "FILE_NOT_FOUND");
    }

    #[test]
    fn notice_slot_is_taken_once_across_clones() {
        let root = tempfile::tempdir().unwrap();
        let env = ToolEnv::builder(root.path())
            .temp_dir(root.path().join("t"))
            .base_env(vec![])
            .build()
            .unwrap();
        let other = env.with_sandbox_mode(SandboxMode::ReadOnly);
        assert!(other.take_notice_slot());
        assert!(!env.take_notice_slot());
    }
}
