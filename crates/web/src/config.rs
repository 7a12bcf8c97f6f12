//! What one launch of `dsh web` decides.

use std::fmt;
use std::net::SocketAddr;

/// The request body cap (docs/web-api.md "Request bodies"): 8 MiB; past it, 413.
pub const MAX_BODY_BYTES: usize = 8 << 20;

/// Why a launch's configuration is refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A `--trusted-host` entry that is not a canonical bare `host[:port]`.
    #[error("--trusted-host {0:?} is not a bare host[:port] (lowercase, no scheme, no path), e.g. dsh.example.com or box.lan:3080")]
    TrustedHost(String),
}

impl ConfigError {
    /// A stable code for logs and tests.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TrustedHost(_) => "trusted_host_invalid",
        }
    }
}

/// One `--trusted-host` entry: a hostname, and a port when the entry names one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedHost {
    pub hostname: String,
    pub port: Option<u16>,
}

impl TrustedHost {
    /// Parses an entry; it must re-render to exactly itself (so `Evil.com`, `x:080`,
    /// `http://x` and `x/` are refused rather than silently meaning something else).
    pub fn parse(entry: &str) -> Result<Self, ConfigError> {
        let refused = || ConfigError::TrustedHost(entry.to_owned());
        let (hostname, port) = crate::fence::split_host(entry).ok_or_else(refused)?;
        let parsed = Self { hostname, port };
        if parsed.to_string() != entry {
            return Err(refused());
        }
        Ok(parsed)
    }
}

impl fmt::Display for TrustedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.hostname),
            None => f.write_str(&self.hostname),
        }
    }
}

/// A launch's settings.
#[derive(Clone)]
pub struct WebConfig {
    /// Where to listen; port 0 picks a free one.
    pub addr: SocketAddr,
    /// `--trusted-host` entries, besides loopback names.
    pub trusted: Vec<TrustedHost>,
    /// The per-launch secret.
    pub token: String,
    /// The program's version, for `GET /api/host`.
    pub version: String,
    /// Body cap in bytes.
    pub max_body: usize,
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field("addr", &self.addr)
            .field("trusted", &self.trusted)
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl WebConfig {
    /// A loopback configuration with a fresh token and the default cap.
    pub fn new(addr: SocketAddr, version: impl Into<String>) -> Self {
        Self {
            addr,
            trusted: Vec::new(),
            token: new_token(),
            version: version.into(),
            max_body: MAX_BODY_BYTES,
        }
    }
}

/// 64 hex characters from two v4 UUIDs' random bits (the OS generator).
pub fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_hosts_must_be_canonical() {
        assert_eq!(
            TrustedHost::parse("box.lan:3080").ok(),
            Some(TrustedHost {
                hostname: "box.lan".into(),
                port: Some(3080)
            })
        );
        assert!(TrustedHost::parse("dsh.example.com").is_ok());
        assert!(TrustedHost::parse("[::1]:80").is_ok());
        for bad in [
            "", "Evil.com", "http://x", "x/", "x:080", "x:99999", "a b", "x:", "u@x",
        ] {
            assert!(TrustedHost::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn tokens_are_long_and_fresh() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
