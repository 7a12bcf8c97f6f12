//! Running the real `dsh` binary against an in-process mock model server, with a temporary
//! `$DSH_HOME`, a temporary workspace and a clean environment holding a fake key.

use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_store::{JsonlBackend, JsonlConfig, SessionPersistence};
use dsh_testkit::mock_llm::{MockServer, Script};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

pub const FAKE_KEY: &str = "sk-fake-test-key";

/// A home, a workspace and (usually) a mock server.
pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub cwd: tempfile::TempDir,
    pub base_url: Option<String>,
    /// Extra environment for every command.
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
            base_url: None,
            env: vec![("DEEPSEEK_API_KEY".into(), FAKE_KEY.into())],
        }
    }

    /// Points the DeepSeek route at `server`.
    pub fn with_server(mut self, server: &MockServer) -> Self {
        self.base_url = Some(server.base_url());
        self
    }

    /// The canonical workspace path, as sessions record it.
    pub fn workspace(&self) -> PathBuf {
        self.cwd.path().canonicalize().unwrap()
    }

    /// `dsh <args>` in the workspace, with a clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dsh"));
        command
            .env_clear()
            .env("DSH_HOME", self.home.path())
            .env("HOME", self.home.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(self.cwd.path())
            .args(args)
            .stdin(Stdio::null());
        if let Some(url) = &self.base_url {
            command.env("DEEPSEEK_BASE_URL", url);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    /// Runs `dsh <args>` to completion off the async thread, so the mock keeps serving.
    pub async fn dsh(&self, args: &[&str]) -> Output {
        let mut command = self.command(args);
        tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap()
    }

    /// Like [`dsh`](Self::dsh), with `input` on stdin.
    pub async fn dsh_with_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut command = self.command(args);
        command.stdin(Stdio::piped());
        let input = input.to_owned();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.home.path().join("sessions")
    }

    /// The store runs write to (zstd unless `plain`).
    pub fn store(&self) -> JsonlBackend {
        JsonlBackend::new(JsonlConfig::new(self.sessions_root()))
    }

    /// A stored session's events.
    pub fn events(&self, id: &str) -> Vec<Arc<SessionEvent>> {
        self.store().load(&SessionId::new(id)).unwrap().events
    }

    /// Copies the original's `<scenario>/<form>/sessions` fixture into `$DSH_HOME/sessions`.
    pub fn with_fixture(self, scenario: &str, form: &str) -> Self {
        let from = fixtures().join(scenario).join(form).join("sessions");
        copy_dir(&from, &self.sessions_root());
        self
    }
}

/// The original's session logs (read-only; always copied before use).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0")
}

/// The id of the one session a fixture scenario holds.
pub fn fixture_id(scenario: &str, form: &str) -> String {
    let root = fixtures().join(scenario).join(form).join("sessions");
    let project = std::fs::read_dir(root)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let session = std::fs::read_dir(project).unwrap().next().unwrap().unwrap();
    session.file_name().to_string_lossy().into_owned()
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

pub async fn serve(script: Script) -> MockServer {
    MockServer::start(script).await.unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// The session id named by the last stderr line of a human-mode run.
pub fn session_of(output: &Output) -> String {
    let stderr = text(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    last.strip_prefix("session: ")
        .unwrap_or_else(|| panic!("last stderr line names no session:\n{stderr}"))
        .to_owned()
}

/// Each stdout line as JSON.
pub fn json_lines(output: &Output) -> Vec<Value> {
    text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The `turn/end` reasons of a log, as JSON.
pub fn turn_ends(events: &[Arc<SessionEvent>]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.type_name() == "turn/end")
        .map(|e| e.data.to_value()["reason"].clone())
        .collect()
}
