//! The per-launch token: `Authorization: Bearer <token>` from programs, the `dsh_token`
//! HttpOnly SameSite=Strict cookie from the page (set by `GET /?token=`).

use axum::http::{header, HeaderMap, HeaderValue};

/// The cookie's name.
pub const COOKIE: &str = "dsh_token";

/// Equal lengths and bytes, in time independent of where they differ.
pub fn same_secret(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the request carries the token as a bearer header or as the cookie.
pub fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
        .any(|given| same_secret(given.trim(), token));
    bearer
        || headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == COOKIE && same_secret(value, token))
}

/// The `Set-Cookie` value that hands the page its credential.
pub fn cookie(token: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    ))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_or_cookie() {
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, "abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abd"),
        );
        assert!(!authorized(&h, "abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert!(authorized(&h, "abc"));
        let mut c = HeaderMap::new();
        c.insert(
            header::COOKIE,
            HeaderValue::from_static("x=1; dsh_token=abc"),
        );
        assert!(authorized(&c, "abc"));
        c.insert(header::COOKIE, HeaderValue::from_static("dsh_token=ab"));
        assert!(!authorized(&c, "abc"));
    }
}
