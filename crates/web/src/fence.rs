//! The trust fence (docs/web-api.md "Trust fence"), as the original's
//! `api-request-trust.ts`: a request is served only when its `Host` is loopback or
//! trusted, it is not a cross-site fetch, and its `Origin` (when sent) is the same host.
//! This is what stops DNS rebinding (`evil.com` resolving to 127.0.0.1 sends
//! `Host: evil.com:3080`) and other web pages (their `Origin`) from reaching the API.

use crate::config::TrustedHost;
use axum::http::HeaderMap;
use std::net::{IpAddr, Ipv4Addr};

/// Why the fence refused; the text goes into the 403 body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    MissingHost,
    UntrustedHost,
    CrossSite,
    BadOrigin,
    ForeignOrigin,
    NotLoopback,
}

impl Refusal {
    pub fn message(self) -> &'static str {
        match self {
            Self::MissingHost => "the Host header is missing or malformed",
            Self::UntrustedHost => {
                "the Host header names neither a loopback address nor a --trusted-host"
            }
            Self::CrossSite => "cross-site requests are refused (Sec-Fetch-Site: cross-site)",
            Self::BadOrigin => "the Origin header is not a URL origin (\"null\" included)",
            Self::ForeignOrigin => "the Origin header names another host than the Host header",
            Self::NotLoopback => "configuration is served to loopback clients only",
        }
    }
}

/// `host[:port]` split into a lowercase hostname and a port; `None` when malformed (no
/// scheme, path, user info, spaces or empty parts allowed). IPv6 stays bracketed.
pub fn split_host(text: &str) -> Option<(String, Option<u16>)> {
    if text.is_empty() || text.len() > 255 {
        return None;
    }
    let (hostname, port) = if let Some(rest) = text.strip_prefix('[') {
        let close = rest.find(']')?;
        let inner = &rest[..close];
        if inner.is_empty()
            || !inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return None;
        }
        let after = &rest[close + 1..];
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (format!("[{}]", inner.to_ascii_lowercase()), port)
    } else {
        let (hostname, port) = match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        };
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
        if hostname.is_empty() || !hostname.chars().all(allowed) {
            return None;
        }
        (hostname.to_ascii_lowercase(), port)
    };
    let port = match port {
        None => None,
        Some(digits) => {
            if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((hostname, port))
}

/// The WHATWG URL parser's IPv4 reading of a hostname (`127.1`, `0x7f.0.0.1` and
/// `2130706433` are all 127.0.0.1); `None` when the hostname is not an IPv4 address.
pub fn whatwg_ipv4(hostname: &str) -> Option<Ipv4Addr> {
    let trimmed = hostname.strip_suffix('.').unwrap_or(hostname);
    let parts: Vec<&str> = trimmed.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        numbers.push(ipv4_number(part)?);
    }
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|n| *n > 255) {
        return None;
    }
    let width = 5 - numbers.len();
    if *last >= 256u64.pow(u32::try_from(width).ok()?) {
        return None;
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value += n * 256u64.pow(u32::try_from(3 - i).ok()?);
    }
    Some(Ipv4Addr::from(u32::try_from(value).ok()?))
}

fn ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `localhost`, `[::1]`, or an IPv4 address in 127.0.0.0/8 (WHATWG-normalised).
pub fn is_loopback_name(hostname: &str) -> bool {
    hostname == "localhost"
        || hostname == "[::1]"
        || whatwg_ipv4(hostname).is_some_and(|ip| ip.octets()[0] == 127)
}

/// A port of 80 is the default of `http:` and compares equal to none.
fn normal_port(port: Option<u16>) -> Option<u16> {
    port.filter(|p| *p != 80)
}

/// An `Origin` header's `host[:port]`, default ports dropped; `None` when it is not an
/// http(s) origin (`null` included).
fn origin_host(origin: &str) -> Option<(String, Option<u16>)> {
    let (scheme, rest) = origin.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (hostname, port) = split_host(rest)?;
    Some((hostname, port.filter(|p| *p != default)))
}

/// Runs the fence on a request's headers. `trusted` is empty for loopback-only routes.
pub fn check(headers: &HeaderMap, trusted: &[TrustedHost]) -> Result<(), Refusal> {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .ok_or(Refusal::MissingHost)?;
    let (hostname, port) = split_host(host).ok_or(Refusal::MissingHost)?;
    let is_trusted = trusted.iter().any(|entry| {
        entry.hostname == hostname
            && match entry.port {
                None => true,
                Some(p) => normal_port(Some(p)) == normal_port(port),
            }
    });
    if !is_loopback_name(&hostname) && !is_trusted {
        return Err(Refusal::UntrustedHost);
    }
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("cross-site"))
    {
        return Err(Refusal::CrossSite);
    }
    if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| Refusal::BadOrigin)?;
        let (origin_name, origin_port) = origin_host(origin).ok_or(Refusal::BadOrigin)?;
        // An https origin in front of a TLS proxy keeps its Host; compare host and the
        // explicit port only.
        if origin_name != hostname || origin_port != normal_port(port) {
            return Err(Refusal::ForeignOrigin);
        }
    }
    Ok(())
}

/// The loopback-only rule: the fence with no trusted hosts, and a loopback peer.
pub fn check_loopback(headers: &HeaderMap, peer: IpAddr) -> Result<(), Refusal> {
    check(headers, &[])?;
    let loopback = match peer {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    };
    if loopback {
        Ok(())
    } else {
        Err(Refusal::NotLoopback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.insert(*name, value);
            }
        }
        map
    }

    #[test]
    fn loopback_names_follow_whatwg() {
        for name in [
            "localhost",
            "127.0.0.1",
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "127.255.255.255",
            "[::1]",
            "127.0.0.1.",
        ] {
            assert!(is_loopback_name(name), "{name}");
        }
        for name in [
            "127.0.0.1.evil.com",
            "evil.com",
            "128.0.0.1",
            "10.0.0.1",
            "127.256.0.1",
            "localhost.evil",
            "[::2]",
            "0177.0.0.1.x",
        ] {
            assert!(!is_loopback_name(name), "{name}");
        }
        assert_eq!(whatwg_ipv4("0177.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
    }

    #[test]
    fn the_fence_refuses_rebinding_and_foreign_origins() {
        let ok = |h: &[(&'static str, &str)]| check(&headers(h), &[]);
        assert_eq!(ok(&[("host", "127.0.0.1:3080")]), Ok(()));
        assert_eq!(
            ok(&[
                ("host", "localhost:3080"),
                ("origin", "http://localhost:3080")
            ]),
            Ok(())
        );
        assert_eq!(
            ok(&[("host", "127.0.0.1"), ("origin", "http://127.0.0.1:80")]),
            Ok(())
        );
        assert_eq!(ok(&[]), Err(Refusal::MissingHost));
        assert_eq!(
            ok(&[("host", "evil.com:3080")]),
            Err(Refusal::UntrustedHost)
        );
        assert_eq!(
            ok(&[("host", "127.0.0.1.evil.com")]),
            Err(Refusal::UntrustedHost)
        );
        assert_eq!(
            ok(&[("host", "127.0.0.1:3080"), ("sec-fetch-site", "cross-site")]),
            Err(Refusal::CrossSite)
        );
        assert_eq!(
            ok(&[
                ("host", "127.0.0.1:3080"),
                ("sec-fetch-site", "same-origin")
            ]),
            Ok(())
        );
        assert_eq!(
            ok(&[("host", "127.0.0.1:3080"), ("origin", "null")]),
            Err(Refusal::BadOrigin)
        );
        assert_eq!(
            ok(&[("host", "127.0.0.1:3080"), ("origin", "http://evil.com")]),
            Err(Refusal::ForeignOrigin)
        );
        assert_eq!(
            ok(&[
                ("host", "127.0.0.1:3080"),
                ("origin", "http://127.0.0.1:4000")
            ]),
            Err(Refusal::ForeignOrigin)
        );
        assert_eq!(
            ok(&[("host", "127.0.0.1:3080/x")]),
            Err(Refusal::MissingHost)
        );
    }

    #[test]
    fn trusted_hosts_match_by_name_or_name_and_port() {
        let any_port = [TrustedHost {
            hostname: "box.lan".into(),
            port: None,
        }];
        let one_port = [TrustedHost {
            hostname: "box.lan".into(),
            port: Some(3080),
        }];
        assert_eq!(check(&headers(&[("host", "box.lan:9")]), &any_port), Ok(()));
        assert_eq!(
            check(&headers(&[("host", "box.lan:3080")]), &one_port),
            Ok(())
        );
        assert_eq!(
            check(&headers(&[("host", "box.lan:9")]), &one_port),
            Err(Refusal::UntrustedHost)
        );
        assert_eq!(
            check(
                &headers(&[("host", "box.lan"), ("origin", "https://box.lan")]),
                &any_port
            ),
            Ok(())
        );
    }

    #[test]
    fn loopback_only_needs_a_loopback_peer_and_name() {
        let h = headers(&[("host", "127.0.0.1:3080")]);
        assert_eq!(check_loopback(&h, IpAddr::V4(Ipv4Addr::LOCALHOST)), Ok(()));
        assert_eq!(
            check_loopback(&h, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))),
            Err(Refusal::NotLoopback)
        );
    }
}
