//! End to end: the real `dsh` binary in a pseudo-terminal (a private tmux server), talking
//! to the in-process mock model. Skipped, with a printed reason, when tmux is missing.

use super::run_support::{serve, Sandbox, FAKE_KEY};
use dsh_testkit::mock_llm::{Reply, Script};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server on its own socket, killed when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    fn pane(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "dsh"]).stdout).into_owned()
    }

    /// Waits until the pane shows `text`; panics with the pane after a generous limit.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if pane.contains(text) {
                return pane;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{text:?} never appeared; the pane shows:\n{pane}"
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

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The shell command tmux runs: `dsh` in the workspace with a clean environment.
fn dsh_command(sandbox: &Sandbox) -> String {
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
    format!(
        "cd {} && exec env -i {} {}",
        quote(&sandbox.cwd.path().display().to_string()),
        env.join(" "),
        quote(env!("CARGO_BIN_EXE_dsh"))
    )
}

fn stored_turn_ends(root: &Path) -> Vec<String> {
    let sandbox_store = dsh_store::JsonlBackend::new(dsh_store::JsonlConfig::new(root));
    use dsh_store::SessionPersistence;
    let sessions = sandbox_store.list().unwrap();
    sessions
        .iter()
        .flat_map(|s| {
            sandbox_store
                .load(&dsh_protocol::SessionId::new(s.id.clone()))
                .unwrap()
                .events
        })
        .filter(|e| e.type_name() == "turn/end")
        .map(|e| {
            e.data.to_value()["reason"]["kind"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_turn_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server =
        serve(Script::new().respond(Reply::text("Hello from the mock model.").chunks(3))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let command = dsh_command(&sandbox);
    let sessions = sandbox.sessions_root();
    let socket = sandbox.home.path().join("tmux.sock");
    // tmux and the polling block; the mock server needs this thread to keep serving.
    let (before, after, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux { socket };
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
        let before = tmux.wait_for("type a task; Enter sends");
        tmux.run(&["send-keys", "-t", "dsh", "-l", "say hello"]);
        tmux.run(&["send-keys", "-t", "dsh", "Enter"]);
        let after = tmux.wait_for("turn 1 completed");
        tmux.run(&["send-keys", "-t", "dsh", "C-c"]);
        tmux.wait_for("press Ctrl-C again to quit");
        tmux.run(&["send-keys", "-t", "dsh", "C-c"]);
        let start = Instant::now();
        while tmux.alive() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        (before, after, !tmux.alive())
    })
    .await
    .unwrap();
    assert!(before.contains("idle · deepseek-v4-flash"), "{before}");
    let lines: Vec<&str> = after.lines().map(str::trim_end).collect();
    let from = lines
        .iter()
        .position(|l| *l == "› say hello")
        .unwrap_or_else(|| panic!("{after}"));
    assert_eq!(
        lines[from..from + 5],
        [
            "› say hello",
            "",
            "• Hello from the mock model.",
            "",
            "─ turn 1 completed"
        ],
        "{after}"
    );
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    assert_eq!(stored_turn_ends(&sessions), ["completed"]);
}
