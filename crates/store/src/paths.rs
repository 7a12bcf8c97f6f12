//! Where a session's log lives under the store root.
//!
//! The layout matches the original byte for byte so that logs written by either
//! implementation are found by the other:
//! `<root>/--<project-key>--/<escaped-id>/session.jsonl.zstd` (or `session.jsonl` without
//! compression), and `<root>/_no-cwd/<escaped-id>/...` for sessions without a workspace.

use std::path::{Path, PathBuf};

use crate::error::StoreError;

/// Directory used for sessions that have no working directory.
pub const NO_CWD_DIR: &str = "_no-cwd";
/// Project keys longer than this are cut (before the `--` wrapping) to stay under NAME_MAX.
const PROJECT_KEY_MAX: usize = 251;

/// How the log file is encoded. A root uses one encoding only.
///
/// Configured as `"zstd"` or `"none"`, as in the original's `compression` setting.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Concatenated zstd frames (`session.jsonl.zstd`), the original's default.
    #[default]
    Zstd,
    /// Plain JSON lines (`session.jsonl`).
    None,
}

impl Compression {
    /// The log's file name inside its session directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Compression::Zstd => "session.jsonl.zstd",
            Compression::None => "session.jsonl",
        }
    }

    /// The encoding a log file name belongs to, if it is a log at all.
    pub fn of_file_name(name: &str) -> Option<Compression> {
        match name {
            "session.jsonl.zstd" => Some(Compression::Zstd),
            "session.jsonl" => Some(Compression::None),
            _ => None,
        }
    }
}

fn is_kept(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn push_escaped(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        out.push_str(&format!("~{unit:04X}"));
    }
}

/// The directory key of a workspace: lossy, readable, and safe as one path component.
///
/// Runs of `/`, `\` and `:` become one `-`; other characters outside `[A-Za-z0-9._-]`
/// (including `~`) become `~XXXX` per UTF-16 code unit; leading dashes go; an empty result
/// becomes `root`; the key is cut to 251 characters and wrapped in `--`.
pub fn project_dir_key(cwd: &str) -> String {
    let mut key = String::with_capacity(cwd.len() + 4);
    let mut in_separator_run = false;
    for c in cwd.chars() {
        if matches!(c, '/' | '\\' | ':') {
            if !in_separator_run {
                key.push('-');
            }
            in_separator_run = true;
            continue;
        }
        in_separator_run = false;
        if is_kept(c) {
            key.push(c);
        } else {
            push_escaped(&mut key, c);
        }
    }
    let trimmed = key.trim_start_matches('-');
    let mut key = if trimmed.is_empty() {
        "root".to_owned()
    } else {
        trimmed.to_owned()
    };
    // Everything in the key is ASCII by now, so a byte cut is a character cut.
    key.truncate(PROJECT_KEY_MAX);
    format!("--{key}--")
}

/// The directory name of a session id: injective, so two ids never share a directory.
///
/// Characters outside `[A-Za-z0-9._-]` become `~XXXX` (so `~` itself is always escaped and
/// the mapping can be reversed); the ids `.` and `..` have their dots escaped too.
pub fn session_dir_name(id: &str) -> Result<String, StoreError> {
    if id.is_empty() {
        return Err(StoreError::InvalidId {
            id: id.to_owned(),
            reason: "a session id must not be empty",
        });
    }
    if id == "." || id == ".." {
        return Ok("~002E".repeat(id.len()));
    }
    let mut name = String::with_capacity(id.len());
    for c in id.chars() {
        if is_kept(c) {
            name.push(c);
        } else {
            push_escaped(&mut name, c);
        }
    }
    Ok(name)
}

/// Maps sessions to files under one root with one encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreLayout {
    root: PathBuf,
    compression: Compression,
}

impl StoreLayout {
    pub fn new(root: impl Into<PathBuf>, compression: Compression) -> Self {
        StoreLayout {
            root: root.into(),
            compression,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The project directory of a workspace (`_no-cwd` without one).
    pub fn project_dir(&self, cwd: Option<&str>) -> PathBuf {
        match cwd {
            Some(cwd) => self.root.join(project_dir_key(cwd)),
            None => self.root.join(NO_CWD_DIR),
        }
    }

    /// The directory that holds one session's log.
    pub fn session_dir(&self, cwd: Option<&str>, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.project_dir(cwd).join(session_dir_name(id)?))
    }

    /// The log file of one session in this root's encoding.
    pub fn session_file(&self, cwd: Option<&str>, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self
            .session_dir(cwd, id)?
            .join(self.compression.file_name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_keys_follow_the_original_rules() {
        let cases = [
            ("/home/user/project", "--home-user-project--"),
            ("/", "--root--"),
            ("", "--root--"),
            ("C:\\Users\\me\\src", "--C-Users-me-src--"),
            ("//a//b::c", "--a-b-c--"),
            ("/home/me/my project", "--home-me-my~0020project--"),
            ("/home/~me", "--home-~007Eme--"),
            ("/x/-y", "--x--y--"),
            ("/a/é", "--a-~00E9--"),
            ("/a/😀", "--a-~D83D~DE00--"),
            ("/keep/._-", "--keep-._---"),
        ];
        for (cwd, key) in cases {
            assert_eq!(project_dir_key(cwd), key, "cwd {cwd:?}");
        }
    }

    #[test]
    fn long_project_keys_are_cut_to_251_before_wrapping() {
        let cwd = format!("/{}", "a".repeat(400));
        let key = project_dir_key(&cwd);
        assert_eq!(key, format!("--{}--", "a".repeat(251)));
    }

    #[test]
    fn session_dir_names_are_injective_escapes() {
        let cases = [
            ("session-f5b4", "session-f5b4"),
            (".", "~002E"),
            ("..", "~002E~002E"),
            ("...", "..."),
            ("a/b", "a~002Fb"),
            ("a~002Fb", "a~007E002Fb"),
            ("a b", "a~0020b"),
        ];
        for (id, name) in cases {
            assert_eq!(session_dir_name(id).unwrap(), name, "id {id:?}");
        }
        assert_eq!(
            session_dir_name("").unwrap_err().code(),
            "SESSION_ID_INVALID"
        );
    }

    #[test]
    fn layout_places_logs_like_the_original() {
        let layout = StoreLayout::new("/home/user/.dsh/sessions", Compression::Zstd);
        assert_eq!(
            layout
                .session_file(Some("/home/user/project"), "session-1")
                .unwrap(),
            PathBuf::from(
                "/home/user/.dsh/sessions/--home-user-project--/session-1/session.jsonl.zstd"
            )
        );
        let plain = StoreLayout::new("/r", Compression::None);
        assert_eq!(
            plain.session_file(None, "s").unwrap(),
            PathBuf::from("/r/_no-cwd/s/session.jsonl")
        );
        assert_eq!(
            Compression::of_file_name("session.jsonl"),
            Some(Compression::None)
        );
        assert_eq!(Compression::of_file_name("session.jsonl.tmp"), None);
    }
}
