//! `@path` completion: the workspace's files (as `.gitignore` and friends leave them, walked
//! with the `ignore` crate), matched against what follows an `@` at the cursor.
//!
//! The walk is done once, when an `@` is first typed, and capped at [`MAX_FILES`] so a huge
//! tree cannot stall the UI or fill memory; completing replaces `@query` with the path.

use std::path::Path;

/// The most files indexed.
pub const MAX_FILES: usize = 50_000;

/// The most matches offered.
pub const MAX_MATCHES: usize = 6;

/// The workspace's files, relative paths with `/` separators, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileIndex {
    files: Vec<String>,
    /// The walk stopped at [`MAX_FILES`].
    pub capped: bool,
}

impl FileIndex {
    pub fn new(mut files: Vec<String>) -> Self {
        files.sort();
        Self {
            files,
            capped: false,
        }
    }

    /// Walks `root` honouring `.gitignore`, `.ignore` and git's excludes; hidden files and
    /// directories are left out, as `git ls-files` users expect. Blocks on disk I/O.
    pub fn walk(root: &Path) -> Self {
        let mut files = Vec::new();
        let mut capped = false;
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .require_git(false)
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(root) else {
                continue;
            };
            if files.len() == MAX_FILES {
                capped = true;
                break;
            }
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
        let mut index = Self::new(files);
        index.capped = capped;
        index
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Files matching `query`, best first, at most [`MAX_MATCHES`]: case-insensitive, a
    /// file name starting with the query first, then a path starting with it, then a path
    /// containing it; shorter paths first within each.
    pub fn matches(&self, query: &str) -> Vec<&str> {
        let query = query.to_lowercase();
        let mut found: Vec<(u8, usize, &str)> = self
            .files
            .iter()
            .filter_map(|path| {
                let lower = path.to_lowercase();
                let name = lower.rsplit('/').next().unwrap_or(&lower);
                let rank = if name.starts_with(&query) {
                    0
                } else if lower.starts_with(&query) {
                    1
                } else if lower.contains(&query) {
                    2
                } else {
                    return None;
                };
                Some((rank, path.len(), path.as_str()))
            })
            .collect();
        found.sort();
        found
            .into_iter()
            .take(MAX_MATCHES)
            .map(|(_, _, p)| p)
            .collect()
    }
}

/// The `@query` the cursor is at the end of: its byte offset and the query. An `@` counts
/// at the start or after whitespace (so `me@example.com` is not one), and the query runs to
/// the cursor without whitespace.
pub fn at_token(text: &str, cursor: usize) -> Option<(usize, &str)> {
    let before = text.get(..cursor)?;
    let start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    let query = word.strip_prefix('@')?;
    Some((start, query))
}

/// `text` with the `@query` at `start` (ending at `cursor`) replaced by `path` and a space;
/// returns the new text and cursor.
pub fn complete_at(text: &str, start: usize, cursor: usize, path: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len() + path.len() + 1);
    out.push_str(&text[..start]);
    out.push_str(path);
    out.push(' ');
    let at = out.len();
    out.push_str(text[cursor..].strip_prefix(' ').unwrap_or(&text[cursor..]));
    (out, at)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_token_is_an_at_word_ending_at_the_cursor() {
        assert_eq!(at_token("look at @src/ma", 15), Some((8, "src/ma")));
        assert_eq!(at_token("@", 1), Some((0, "")));
        assert_eq!(at_token("mail me@example.com", 19), None);
        assert_eq!(at_token("@src done", 9), None);
        assert_eq!(at_token("@src done", 4), Some((0, "src")));
    }

    #[test]
    fn completing_replaces_the_token() {
        assert_eq!(
            complete_at("see @ma now", 4, 7, "src/main.rs"),
            ("see src/main.rs now".into(), 16)
        );
    }

    #[test]
    fn names_rank_before_paths_and_ignored_files_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "src/main.rs",
            "src/lib.rs",
            "docs/main-notes.md",
            "target/debug/main",
            "domain.txt",
            ".hidden/main.rs",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let index = FileIndex::walk(root);
        assert_eq!(
            index.matches("main"),
            ["src/main.rs", "docs/main-notes.md", "domain.txt"]
        );
        assert_eq!(index.matches("SRC/"), ["src/lib.rs", "src/main.rs"]);
        assert!(!index.capped);
    }
}
