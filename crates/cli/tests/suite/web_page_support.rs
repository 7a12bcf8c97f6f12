//! The real `dsh web` for the browser tests: started in a [`Sandbox`] on a free port, its
//! tokenised URL read from stdout, stopped (SIGTERM, then waited for) when dropped.

use super::run_support::Sandbox;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

pub struct WebServer {
    child: Child,
    /// `http://127.0.0.1:PORT/?token=...`, as printed.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl WebServer {
    /// `dsh web --no-open --port 0` in the sandbox's workspace.
    pub fn start(sandbox: &Sandbox) -> WebServer {
        let mut command = sandbox.command(&["web", "--no-open", "--port", "0"]);
        command.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = match lines.next() {
                Some(Ok(line)) => line,
                _ => {
                    let _ = child.kill();
                    panic!("dsh web exited before printing its URL: {:?}", child.wait());
                }
            };
            if let Some(url) = line.strip_prefix("dsh web: ") {
                break url.trim().to_owned();
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let base = url.split("/?").next().unwrap_or(&url).to_owned();
        WebServer { child, url, base }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: signalling the server this test started.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = self.child.wait();
    }
}
