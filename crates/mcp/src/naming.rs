//! Public tool names: `mcp__<server>__<tool>`, sanitised, with a hash suffix when needed.
//!
//! A pure function of `(server, raw)` (spec extensions §1.4), so reloading a server recreates
//! identical names. Only the raw name is ever sent to the server; a public name is never parsed
//! back.

use sha2::{Digest, Sha256};

/// The longest public name the tool registry accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Characters of the sanitised name kept in front of the `_<hash>` suffix.
const KEPT_PREFIX: usize = 51;
/// Hex characters of the SHA-256 suffix.
const HASH_LEN: usize = 12;

/// Whether a server name is acceptable: `^[A-Za-z0-9_-]{1,32}$`.
pub fn is_valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The public (model-facing) name of `raw` on server `server`.
///
/// Every UTF-16 code unit outside `[A-Za-z0-9_-]` becomes `_` (so a character outside the
/// basic multilingual plane becomes `__`, as in the original). A name that needed no change and
/// fits in 64 characters is returned as is; otherwise the first 51 characters of the sanitised
/// name are followed by `_` and the first 12 hex digits of SHA-256(`server` NUL `raw`).
pub fn public_tool_name(server: &str, raw: &str) -> String {
    let joined = format!("mcp__{server}__{raw}");
    let mut norm = String::with_capacity(joined.len());
    for ch in joined.chars() {
        if ch.is_ascii() && is_name_byte(ch as u8) {
            norm.push(ch);
        } else {
            for _ in 0..ch.len_utf16() {
                norm.push('_');
            }
        }
    }
    // `norm` is ASCII, so bytes, chars and UTF-16 units all count the same.
    if norm == joined && norm.len() <= MAX_TOOL_NAME_LEN {
        return norm;
    }
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0u8]);
    hasher.update(raw.as_bytes());
    let digest = hasher.finalize();
    let mut hash = String::with_capacity(HASH_LEN);
    for byte in digest.iter() {
        if hash.len() >= HASH_LEN {
            break;
        }
        hash.push_str(&format!("{byte:02x}"));
    }
    hash.truncate(HASH_LEN);
    norm.truncate(KEPT_PREFIX);
    format!("{norm}_{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_vectors() {
        assert_eq!(
            public_tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(
            public_tool_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(
            public_tool_name("srv", "admin.reset"),
            "mcp__srv__admin_reset_3b185f786768"
        );
        let long = public_tool_name("srv", &"a".repeat(70));
        assert_eq!(long, format!("mcp__srv__{}_cf875271ff33", "a".repeat(41)));
        assert_eq!(long.len(), 64);
    }

    #[test]
    fn non_bmp_characters_count_as_two_units() {
        let name = public_tool_name("s", "a\u{1F600}b");
        assert!(name.starts_with("mcp__s__a__b_"), "{name}");
        assert_eq!(name.len(), "mcp__s__a__b_".len() + 12);
    }

    #[test]
    fn server_names() {
        assert!(is_valid_server_name("fs-1_x"));
        assert!(!is_valid_server_name(""));
        assert!(!is_valid_server_name("a.b"));
        assert!(!is_valid_server_name(&"a".repeat(33)));
    }
}
