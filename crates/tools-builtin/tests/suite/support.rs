//! Shared fixtures: a workspace under /tmp, a private temp dir, a controllable base env.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_tools_builtin::scrub::env_pair;
use dsh_tools_builtin::{Limits, SandboxMode, SessionFacts, ToolEnv, ToolEnvBuilder};

pub struct Fixture {
    pub root: tempfile::TempDir,
    pub env: ToolEnv,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with(|b| b)
    }

    pub fn mode(mode: SandboxMode) -> Self {
        Self::with(|b| b.sandbox_mode(mode))
    }

    pub fn with(configure: impl FnOnce(ToolEnvBuilder) -> ToolEnvBuilder) -> Self {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let builder = ToolEnv::builder(&ws)
            .temp_dir(root.path().join("session-tmp"))
            .spill_dir(root.path().join("spill"))
            .base_env(base_env())
            .facts(SessionFacts {
                session_id: Some("sess-1".into()),
                dsh_home: None,
            })
            .limits(fast_limits());
        let env = configure(builder).build().unwrap();
        Self { root, env }
    }

    pub fn ws(&self) -> &Path {
        self.env.workspace()
    }

    pub fn outside(&self) -> PathBuf {
        self.root.path().canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.ws().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }
}

pub fn base_env() -> Vec<(OsString, OsString)> {
    vec![
        env_pair(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        ),
        env_pair("HOME", "/root"),
        env_pair("LANG", "C"),
    ]
}

pub fn fast_limits() -> Limits {
    Limits {
        kill_grace: Duration::from_millis(300),
        exit_drain: Duration::from_millis(200),
        ..Limits::default()
    }
}

/// Whether a process is gone (no such pid, or only a zombie waiting for a reaper).
pub fn process_gone(pid: i32) -> bool {
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

/// Polls `cond` for up to five seconds.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}
