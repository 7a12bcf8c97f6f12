//! [`McpStatusBoard`]: what every configured server is doing, for `dsh mcp list`, the TUI and
//! the headless stderr notices.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;
use tokio::sync::watch;

/// Notices kept for readers that have not caught up; older ones are dropped.
const MAX_NOTICES: usize = 256;

/// A server's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpState {
    /// Connecting, initializing or listing tools (first attempt or a reconnect).
    Starting,
    /// Connected; its tools are registered.
    Ready,
    /// The last attempt failed or the connection was lost (see `last_error`).
    Failed,
    /// Configured with `enabled = false`; never started.
    Disabled,
}

/// One server's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// Server name.
    pub name: String,
    /// Where it was configured.
    pub source: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command line or URL.
    pub target: String,
    /// Current state.
    pub state: McpState,
    /// Tools currently registered for it.
    pub tool_count: usize,
    /// The last error, kept after a recovery until the next one.
    pub last_error: Option<String>,
    /// `true` once it stopped reconnecting for good.
    pub gave_up: bool,
}

/// A one-line message for the person: a server failed, was lost or gave up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McpNotice {
    /// The server it is about.
    pub server: String,
    /// The text, starting `MCP server "<name>"`.
    pub message: String,
}

#[derive(Default)]
struct Inner {
    servers: BTreeMap<String, McpServerStatus>,
    notices: Vec<McpNotice>,
    /// Sequence number of `notices[0]`.
    first_seq: u64,
}

/// The kernel service (`ctx.get::<McpStatusBoard>()`) holding every server's status and the
/// notices emitted so far.
pub struct McpStatusBoard {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

impl Default for McpStatusBoard {
    fn default() -> Self {
        McpStatusBoard {
            inner: Mutex::new(Inner::default()),
            changed: watch::channel(0).0,
        }
    }
}

impl std::fmt::Debug for McpStatusBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpStatusBoard")
            .field("servers", &self.servers())
            .finish()
    }
}

impl McpStatusBoard {
    /// An empty board.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Every server, by name.
    pub fn servers(&self) -> Vec<McpServerStatus> {
        self.lock().servers.values().cloned().collect()
    }

    /// One server.
    pub fn server(&self, name: &str) -> Option<McpServerStatus> {
        self.lock().servers.get(name).cloned()
    }

    /// A receiver that changes whenever a status or notice changes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Notices from sequence number `*cursor` on; advances the cursor. Start at 0.
    pub fn notices_since(&self, cursor: &mut u64) -> Vec<McpNotice> {
        let inner = self.lock();
        let start = (*cursor).max(inner.first_seq);
        let skip = usize::try_from(start - inner.first_seq).unwrap_or(usize::MAX);
        let out: Vec<McpNotice> = inner.notices.iter().skip(skip).cloned().collect();
        *cursor = inner.first_seq + inner.notices.len() as u64;
        out
    }

    /// Waits for the next notices after `*cursor` (returns at once when some are pending).
    pub async fn next_notices(&self, cursor: &mut u64) -> Vec<McpNotice> {
        let mut rx = self.subscribe();
        loop {
            let notices = self.notices_since(cursor);
            if !notices.is_empty() {
                return notices;
            }
            if rx.changed().await.is_err() {
                return Vec::new();
            }
        }
    }

    pub(crate) fn insert(&self, status: McpServerStatus) {
        self.lock().servers.insert(status.name.clone(), status);
        self.bump();
    }

    pub(crate) fn update(&self, name: &str, f: impl FnOnce(&mut McpServerStatus)) {
        if let Some(status) = self.lock().servers.get_mut(name) {
            f(status);
        }
        self.bump();
    }

    pub(crate) fn notice(&self, server: &str, message: String) {
        tracing::warn!(target: "dsh_mcp", "{message}");
        {
            let mut inner = self.lock();
            inner.notices.push(McpNotice {
                server: server.to_owned(),
                message,
            });
            if inner.notices.len() > MAX_NOTICES {
                inner.notices.remove(0);
                inner.first_seq += 1;
            }
        }
        self.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_read_once_per_cursor() {
        let board = McpStatusBoard::new();
        board.notice("a", "one".into());
        board.notice("a", "two".into());
        let mut cursor = 0;
        assert_eq!(board.notices_since(&mut cursor).len(), 2);
        assert!(board.notices_since(&mut cursor).is_empty());
        board.notice("b", "three".into());
        assert_eq!(board.notices_since(&mut cursor)[0].message, "three");
        let mut late = 0;
        assert_eq!(board.notices_since(&mut late).len(), 3);
    }
}
