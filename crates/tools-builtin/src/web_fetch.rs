//! `web_fetch`: one URL to readable text, refusing private destinations.
//!
//! Off unless configured. Before each request (and each redirect hop) the host is resolved and
//! *every* address checked; the connection is then pinned to exactly those addresses, so a DNS
//! answer that changes between check and connect (rebinding) cannot reach a private address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use reqwest::Url;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::env::{ToolEnv, WebFetchConfig};
use crate::error::ToolError;
use crate::output::truncate_chars;
use crate::tool::{tool_env, ToolOutput, BACKSTOP_TIMEOUT};

/// The `web_fetch` tool. It follows the session's [`ToolEnv`] settings unless it was
/// registered with its own ([`WebFetch::configured`], as the plugin registers it).
#[derive(Clone, Debug, Default)]
pub struct WebFetch {
    config: Option<WebFetchConfig>,
}

/// Arguments of `web_fetch`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct WebFetchArgs {
    pub url: String,
}

const DESCRIPTION: &str = "Fetch an http(s) URL and return its content as text: HTML pages are \
reduced to their readable text, and text formats (plain text, JSON, XML, ...) are returned as \
they are. At most 200000 characters are returned. Private, loopback and link-local addresses \
cannot be fetched.";

const MAX_REDIRECTS: usize = 5;
const USER_AGENT: &str = concat!("dsh/", env!("CARGO_PKG_VERSION"), " (web_fetch)");

impl WebFetch {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "web_fetch";

    /// A `web_fetch` that runs every call with `config` instead of the session's settings.
    pub fn configured(config: WebFetchConfig) -> Self {
        Self {
            config: Some(config),
        }
    }

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: WebFetchArgs,
        env: &ToolEnv,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        if !env.web_fetch().enabled {
            return Err(ToolError::WebFetchDisabled);
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ToolError::Cancelled),
            result = fetch(env, &args.url) => result,
        }
    }
}

impl TypedTool for WebFetch {
    type Args = WebFetchArgs;
    type Output = ToolOutput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The absolute http:// or https:// URL to fetch."}
            },
            "required": ["url"]
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(BACKSTOP_TIMEOUT)
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: WebFetchArgs,
        exec: &ToolExecution,
    ) -> Result<ToolOutput, ToolFailure> {
        let env = match &self.config {
            Some(config) => tool_env(exec)?.with_web_fetch(config.clone()),
            None => tool_env(exec)?,
        };
        Ok(self.run(args, &env, exec.signal().clone()).await?)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        ToolOutput::render_value(value)
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        ToolOutput::value_meta(value)
    }
}

async fn fetch(env: &ToolEnv, raw_url: &str) -> Result<ToolOutput, ToolError> {
    let limits = env.limits();
    let deadline = Instant::now() + limits.web_fetch_timeout;
    let mut url = parse_url(raw_url)?;
    let mut hops = 0;
    let response = loop {
        let response = request(env, &url, deadline).await?;
        if !response.status().is_redirection() {
            break response;
        }
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| http_error(&url, "a redirect without a Location header"))?;
        let next = url
            .join(location)
            .map_err(|e| http_error(&url, &format!("bad redirect: {e}")))?;
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(http_error(
                &url,
                &format!("more than {MAX_REDIRECTS} redirects"),
            ));
        }
        url = parse_url(next.as_str())?;
    };
    let status = response.status().as_u16();
    if status >= 400 {
        return Err(ToolError::HttpStatus {
            url: url.to_string(),
            status,
            hint: status_hint(status).to_string(),
        });
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (body, bytes_truncated) =
        read_body(response, &url, limits.web_fetch_max_bytes, deadline).await?;
    let text = decode(&url, &content_type, &body)?;
    let text = env.scrubber().scrub(&text).into_owned();
    let total_chars = text.chars().count();
    let (kept, chars_truncated) = truncate_chars(&text, limits.web_fetch_max_chars);
    let mut content = kept.to_string();
    if chars_truncated {
        content.push_str(&format!(
            "\n\n[content truncated: showing the first {} of {total_chars} characters]",
            limits.web_fetch_max_chars
        ));
    } else if bytes_truncated {
        content.push_str(&format!(
            "\n\n[content truncated: the download stopped at {} bytes]",
            limits.web_fetch_max_bytes
        ));
    }
    Ok(ToolOutput::text(content).with_metadata(json!({
        "url": raw_url,
        "finalUrl": url.as_str(),
        "status": status,
        "contentType": content_type,
        "chars": total_chars,
        "truncated": chars_truncated || bytes_truncated,
    })))
}

fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let invalid = |reason: &str| ToolError::InvalidUrl {
        url: raw.to_string(),
        reason: reason.to_string(),
    };
    let url = Url::parse(raw.trim()).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(&format!(
            "the {} scheme is not supported",
            url.scheme()
        )));
    }
    if url.host().is_none() {
        return Err(invalid("it has no host"));
    }
    Ok(url)
}

fn http_error(url: &Url, reason: &str) -> ToolError {
    ToolError::Http {
        url: url.to_string(),
        reason: reason.to_string(),
    }
}

/// Resolves, checks and pins the destination, then sends one GET without following redirects.
async fn request(
    env: &ToolEnv,
    url: &Url,
    deadline: Instant,
) -> Result<reqwest::Response, ToolError> {
    let port = url.port_or_known_default().unwrap_or(80);
    let host = url.host_str().unwrap_or_default().to_string();
    let literal: Option<IpAddr> = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok();
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::time::timeout_at(deadline, tokio::net::lookup_host((host.as_str(), port)))
            .await
            .map_err(|_| http_error(url, "timed out resolving the host"))?
            .map_err(|e| http_error(url, &format!("could not resolve {host}: {e}")))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(http_error(url, &format!("{host} has no addresses")));
    }
    if !env.web_fetch().allow_private_addresses {
        if let Some(blocked) = addrs.iter().find(|a| is_forbidden(a.ip())) {
            return Err(ToolError::AddressBlocked {
                host,
                addr: blocked.ip(),
            });
        }
    }
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    // A client per fetch: the system roots are read once per process, not per client.
    let mut builder = dsh_http_client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(remaining)
        .user_agent(USER_AGENT)
        .no_proxy();
    if literal.is_none() {
        builder = builder.resolve_to_addrs(&host, &addrs);
    }
    let client = builder
        .build()
        .map_err(|e| http_error(url, &e.to_string()))?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/plain, application/json, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| http_error(url, &describe(&e)))
}

fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "the request timed out".to_string()
    } else if err.is_connect() {
        format!("could not connect ({err})")
    } else {
        err.to_string()
    }
}

async fn read_body(
    mut response: reqwest::Response,
    url: &Url,
    max_bytes: usize,
    deadline: Instant,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .map_err(|_| http_error(url, "timed out reading the response"))?
            .map_err(|e| http_error(url, &describe(&e)))?;
        let Some(chunk) = chunk else {
            return Ok((body, false));
        };
        let room = max_bytes - body.len();
        if chunk.len() >= room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
}

/// Text of a response body, by content type (sniffing when the server names none).
fn decode(url: &Url, content_type: &str, body: &[u8]) -> Result<String, ToolError> {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let text = String::from_utf8_lossy(body);
    let textual = essence.starts_with("text/")
        || [
            "json",
            "xml",
            "javascript",
            "yaml",
            "csv",
            "toml",
            "markdown",
        ]
        .iter()
        .any(|kind| essence.contains(kind));
    if essence.contains("html") {
        return Ok(crate::html::to_text(&text));
    }
    if textual {
        return Ok(text.into_owned());
    }
    if essence.is_empty() && !body.iter().take(1024).any(|&b| b == 0) {
        let head = text
            .trim_start()
            .get(..15)
            .unwrap_or("")
            .to_ascii_lowercase();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            return Ok(crate::html::to_text(&text));
        }
        return Ok(text.into_owned());
    }
    Err(ToolError::UnsupportedContent {
        url: url.to_string(),
        content_type: essence.to_string(),
    })
}

fn status_hint(status: u16) -> &'static str {
    match status {
        404 | 410 => "The page does not exist; check the URL.",
        401 | 403 => "The site refused access; the content is not publicly readable.",
        429 => "The site is rate limiting requests; try again later.",
        500..=599 => "The server failed; trying again later may help.",
        _ => "The request was not successful.",
    }
}

/// Addresses a fetch may not reach: loopback, private, link-local, shared, multicast,
/// unspecified and reserved ranges (and IPv6 forms that embed such IPv4 addresses).
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..=127).contains(&b)) // shared address space (carrier NAT)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let segments = ip.segments();
    // NAT64 (64:ff9b::/96) carries an IPv4 destination in its last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        let v4 = Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
        return forbidden_v4(v4);
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local
        || (segments[0] & 0xffc0) == 0xfe80 // link local
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn forbidden_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(is_forbidden(ip.parse::<IpAddr>().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(!is_forbidden(ip.parse::<IpAddr>().unwrap()), "{ip}");
        }
    }

    #[test]
    fn urls_must_be_http() {
        assert_eq!(
            parse_url("ftp://x.org/a").map_err(|e| e.code()).err(),
            Some("INVALID_URL")
        );
        assert_eq!(
            parse_url("not a url").map_err(|e| e.code()).err(),
            Some("INVALID_URL")
        );
        assert!(parse_url("https://example.org/a").is_ok());
    }
}
