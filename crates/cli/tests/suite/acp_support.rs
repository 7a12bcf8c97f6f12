//! Driving `dsh acp` / `dsh sdk` over their stdio from a test: frames out, every stdout
//! line read on a thread and checked to be a JSON-RPC frame (nothing else may reach stdout).

use super::run_support::Sandbox;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a test waits for one frame before it fails (generous: a loaded CI machine).
const FRAME_WAIT: Duration = Duration::from_secs(60);

pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Value>,
    /// Notifications seen while waiting for responses, in order.
    pub notifications: Vec<Value>,
}

impl Server {
    /// `dsh <args>` in the sandbox's workspace.
    pub fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        let mut command = sandbox.command(args);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.unwrap();
                let frame: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carried a non-protocol line ({e}): {line}"));
                assert_eq!(frame["jsonrpc"], "2.0", "{line}");
                if tx.send(frame).is_err() {
                    return;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            frames,
            notifications: Vec::new(),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, frame: Value) {
        let mut bytes = serde_json::to_vec(&frame).unwrap();
        bytes.push(b'\n');
        self.send_raw(&bytes);
    }

    pub fn next(&mut self) -> Value {
        self.frames
            .recv_timeout(FRAME_WAIT)
            .unwrap_or_else(|e| panic!("no frame from dsh: {e}"))
    }

    /// The next frame that is a response (or a request to the client), keeping
    /// notifications.
    pub fn next_non_notification(&mut self) -> Value {
        loop {
            let frame = self.next();
            if frame.get("id").is_some() {
                return frame;
            }
            self.notifications.push(frame);
        }
    }

    /// Sends request `id` and returns its response (requests dsh sends meanwhile fail the
    /// test).
    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let frame = self.next_non_notification();
        assert_eq!(frame["id"], json!(id), "unexpected frame {frame}");
        assert!(frame.get("method").is_none(), "unexpected request {frame}");
        frame
    }

    /// Hangs up: closes dsh's stdin.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes stdin and waits for the exit status.
    pub fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        // Whatever remained on stdout was still checked by the reader thread.
        status.code()
    }
}

/// An error response's `error`.
pub fn error_of(frame: &Value) -> &Value {
    frame
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {frame}"))
}
