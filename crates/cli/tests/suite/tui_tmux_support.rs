//! The tmux driver behind the `tui_tmux*` suites: the real `dsh` binary in a private tmux
//! server's pane, with waits on what the pane shows, and readers for the sessions it stored.

use super::run_support::{Sandbox, FAKE_KEY};
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_store::{JsonlBackend, JsonlConfig, SessionPersistence, StoredSession};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A tmux server on its own socket, killed when dropped.
pub(super) struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub(super) fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    pub(super) fn pane(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "dsh"]).stdout).into_owned()
    }

    /// The pane with the scrollback above it (up to 500 lines).
    pub(super) fn history(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-S", "-500", "-t", "dsh"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the pane shows `text` and has stopped changing (a capture can land in
    /// the middle of a redraw); panics with the pane after a generous limit.
    pub(super) fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        let mut previous = String::new();
        loop {
            let pane = self.pane();
            if pane.contains(text) && pane == previous {
                return pane;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{text:?} never appeared; the pane shows:\n{pane}"
            );
            previous = pane;
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the pane satisfies `ready`; panics with the pane after a generous limit.
    pub(super) fn wait_until(&self, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if ready(&pane) {
                return pane;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the pane never got ready:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn alive(&self) -> bool {
        self.run(&["has-session", "-t", "dsh"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

pub(super) fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The shell command tmux runs: `dsh <args>` in the workspace with a clean environment (and
/// the sandbox's extra variables).
fn dsh_command(sandbox: &Sandbox, args: &[&str]) -> String {
    let mut env = vec![
        format!(
            "DSH_HOME={}",
            quote(&sandbox.home.path().display().to_string())
        ),
        format!("HOME={}", quote(&sandbox.home.path().display().to_string())),
        format!("PATH={}", quote(&std::env::var("PATH").unwrap_or_default())),
        "TERM=xterm-256color".to_owned(),
        format!("DEEPSEEK_API_KEY={FAKE_KEY}"),
    ];
    if let Some(url) = &sandbox.base_url {
        env.push(format!("DEEPSEEK_BASE_URL={}", quote(url)));
    }
    for (key, value) in &sandbox.env {
        env.push(format!("{key}={}", quote(value)));
    }
    let args: Vec<String> = args.iter().map(|arg| quote(arg)).collect();
    format!(
        "cd {} && exec env -i {} {} {}",
        quote(&sandbox.cwd.path().display().to_string()),
        env.join(" "),
        quote(env!("CARGO_BIN_EXE_dsh")),
        args.join(" ")
    )
}

/// Every stored session, oldest first.
pub(super) fn stored(root: &Path) -> Vec<StoredSession> {
    let store = JsonlBackend::new(JsonlConfig::new(root));
    let mut sessions = store.list().unwrap();
    sessions.sort_by_key(|s| s.created_at);
    sessions
        .iter()
        .map(|s| store.load(&SessionId::new(s.id.clone())).unwrap())
        .collect()
}

pub(super) fn turn_end_kinds(events: &[Arc<SessionEvent>]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.type_name() == "turn/end")
        .map(|e| {
            e.data.to_value()["reason"]["kind"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect()
}

impl Tmux {
    /// Starts `dsh` for `sandbox` in a 90x24 pane and waits for its input box.
    pub(super) fn start(sandbox: &Sandbox) -> Self {
        Self::start_with(sandbox, &[])
    }

    /// [`start`](Self::start) with `args` on dsh's command line.
    pub(super) fn start_with(sandbox: &Sandbox, args: &[&str]) -> Self {
        let tmux = Self::launch(sandbox, args);
        tmux.wait_for("type a task; Enter sends");
        tmux
    }

    /// Starts `dsh <args>` in a 90x24 pane without waiting for anything.
    pub(super) fn launch(sandbox: &Sandbox, args: &[&str]) -> Self {
        let tmux = Tmux {
            socket: sandbox.home.path().join("tmux.sock"),
        };
        let command = dsh_command(sandbox, args);
        let started = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "dsh",
            "-x",
            "90",
            "-y",
            "24",
            &command,
        ]);
        assert!(started.status.success(), "{started:?}");
        tmux
    }

    /// Types `text` and presses Enter.
    pub(super) fn enter(&self, text: &str) {
        self.run(&["send-keys", "-t", "dsh", "-l", text]);
        self.run(&["send-keys", "-t", "dsh", "Enter"]);
    }

    /// Types `text` literally, without Enter.
    pub(super) fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "dsh", "-l", text]);
    }

    pub(super) fn keys(&self, keys: &str) {
        self.run(&["send-keys", "-t", "dsh", keys]);
    }

    /// Resizes the pane's window to `width` x `height`, as a terminal window resize does.
    pub(super) fn resize(&self, width: u16, height: u16) {
        let (width, height) = (width.to_string(), height.to_string());
        let out = self.run(&["resize-window", "-t", "dsh", "-x", &width, "-y", &height]);
        assert!(out.status.success(), "{out:?}");
    }

    /// Ctrl-C twice; true when dsh then exited.
    pub(super) fn quit(&self) -> bool {
        self.keys("C-c");
        self.wait_for("press Ctrl-C again to quit");
        self.keys("C-c");
        let start = Instant::now();
        while self.alive() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        !self.alive()
    }
}

/// The pane's lines from the one equal to `first`, `count` of them.
pub(super) fn lines_from(pane: &str, first: &str, count: usize) -> Vec<String> {
    let lines: Vec<&str> = pane.lines().map(str::trim_end).collect();
    let from = lines
        .iter()
        .position(|l| *l == first)
        .unwrap_or_else(|| panic!("no line {first:?} in:\n{pane}"));
    lines[from..(from + count).min(lines.len())]
        .iter()
        .map(|l| l.to_string())
        .collect()
}
