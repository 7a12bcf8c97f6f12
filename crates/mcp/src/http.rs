//! The HTTP client behind Streamable HTTP servers (the workspace's one reqwest).

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::BTreeMap;

/// A client that sends `headers` on every request.
pub(crate) fn client(headers: &BTreeMap<String, String>) -> Result<reqwest::Client, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| format!("invalid header name `{name}`: {error}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|error| format!("invalid value for header `{name}`: {error}"))?;
        map.insert(name, value);
    }
    dsh_http_client::builder()
        .default_headers(map)
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))
}
