//! The HTTP client behind Streamable HTTP servers (the workspace's one reqwest).

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::BTreeMap;

/// Installs ring as rustls's process-wide provider (the workspace builds reqwest without
/// its aws-lc-rs default); idempotent.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client that sends `headers` on every request.
pub(crate) fn client(headers: &BTreeMap<String, String>) -> Result<reqwest::Client, String> {
    install_tls_provider();
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| format!("invalid header name `{name}`: {error}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|error| format!("invalid value for header `{name}`: {error}"))?;
        map.insert(name, value);
    }
    reqwest::Client::builder()
        .default_headers(map)
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))
}
