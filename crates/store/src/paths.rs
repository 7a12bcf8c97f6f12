//! Where a session's log lives under the store root.
//!
//! The layout matches the original byte for byte so that logs written by either
//! implementation are found by the other:
//! `<root>/--<project-key>--/<escaped-id>/session.jsonl.zstd` (or `session.jsonl` without
//! compression), and `<root>/_no-cwd/<escaped-id>/...` for sessions without a workspace.
//!
//! A session directory holds its log in one encoding; which one is a property of the log,
//! not of the root: the configured compression only decides how *new* logs are written, and
//! readers find either file ([`existing_log`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::StoreError;

/// Directory used for sessions that have no working directory.
pub const NO_CWD_DIR: &str = "_no-cwd";
/// Project keys longer than this are cut (before the `--` wrapping) to stay under NAME_MAX.
const PROJECT_KEY_MAX: usize = 251;

/// How a log file is encoded.
///
/// Configured as `"zstd"` or `"none"`, as in the original's `compression` setting, which
/// picks the encoding of new logs; an existing log keeps the one it was written in.
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

    /// The encoding of the log at `path`, judged by its file name.
    pub fn of_path(path: &Path) -> Option<Compression> {
        Self::of_file_name(path.file_name()?.to_str()?)
    }

    /// The other encoding.
    pub fn other(self) -> Compression {
        match self {
            Compression::Zstd => Compression::None,
            Compression::None => Compression::Zstd,
        }
    }
}

/// The log file in a session directory, in whichever encoding it was written.
///
/// Both files side by side cannot be told apart safely (which one holds the newer events?),
/// so that is an error naming both, for a person to resolve.
pub(crate) fn existing_log(dir: &Path) -> Result<Option<PathBuf>, StoreError> {
    let zstd = dir.join(Compression::Zstd.file_name());
    let plain = dir.join(Compression::None.file_name());
    match (zstd.is_file(), plain.is_file()) {
        (true, true) => Err(StoreError::BothEncodings { plain, zstd }),
        (true, false) => Ok(Some(zstd)),
        (false, true) => Ok(Some(plain)),
        (false, false) => Ok(None),
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

/// Marks a byte of a workspace path that is not part of valid UTF-8 in [`recorded_cwd`].
/// NUL cannot occur in a path, so the mark never collides with a real character.
const RAW_BYTE_MARK: char = '\0';

/// The workspace path as a session header records it (and as listings compare it).
///
/// A UTF-8 path is recorded as it is, exactly as the original records it, so its project key
/// and its logs stay where the original puts them. In a path that is not UTF-8, each byte
/// outside valid UTF-8 becomes NUL and two uppercase hex digits: a lossy conversion would
/// give two paths that differ only in such bytes one string and one project key (and
/// `--continue` in one would resume the other's session). [`project_dir_key`] escapes the
/// NUL as `~0000` and keeps the digits, so the key stays distinct too.
pub fn recorded_cwd(path: &Path) -> String {
    recorded_os_str(path.as_os_str())
}

#[cfg(unix)]
fn recorded_os_str(path: &OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::with_capacity(path.len());
    for chunk in path.as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push(RAW_BYTE_MARK);
            out.push_str(&format!("{byte:02X}"));
        }
    }
    out
}

#[cfg(not(unix))]
fn recorded_os_str(path: &OsStr) -> String {
    path.to_string_lossy().into_owned()
}

/// A recorded workspace path for people to read: the raw bytes [`recorded_cwd`] marked are
/// shown as `\xHH` escapes instead of an invisible NUL.
pub fn display_cwd(cwd: &str) -> std::borrow::Cow<'_, str> {
    if !cwd.contains(RAW_BYTE_MARK) {
        return cwd.into();
    }
    cwd.replace(RAW_BYTE_MARK, "\\x").into()
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

/// Maps sessions to files under one root; the compression is the encoding of new logs.
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

    /// The log file a new session is written to (in the configured encoding; an existing
    /// log may be in the other one, see [`existing_log`]).
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

    #[cfg(unix)]
    #[test]
    fn workspaces_that_differ_only_in_raw_bytes_get_distinct_keys() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let path = |bytes: &[u8]| Path::new(OsStr::from_bytes(bytes)).to_owned();
        let (a, b) = (path(b"/tmp/w\xff"), path(b"/tmp/w\xfe"));
        assert_eq!(recorded_cwd(&a), "/tmp/w\u{0}FF");
        assert_eq!(recorded_cwd(&b), "/tmp/w\u{0}FE");
        // A lossy conversion gave both the same key; the recorded form does not.
        assert_eq!(
            project_dir_key(&a.to_string_lossy()),
            project_dir_key(&b.to_string_lossy())
        );
        assert_eq!(project_dir_key(&recorded_cwd(&a)), "--tmp-w~0000FF--");
        assert_eq!(project_dir_key(&recorded_cwd(&b)), "--tmp-w~0000FE--");
        // Valid UTF-8 around and between raw bytes is kept as it is.
        assert_eq!(
            recorded_cwd(&path("/é/x\u{1F600}".as_bytes())),
            "/é/x\u{1F600}"
        );
        assert_eq!(recorded_cwd(&path(b"/a\xc3/\xa9b")), "/a\u{0}C3/\u{0}A9b");
        assert_eq!(display_cwd(&recorded_cwd(&a)), "/tmp/w\\xFF");
        assert_eq!(display_cwd("/plain"), "/plain");
    }

    #[test]
    fn utf8_workspaces_are_recorded_as_the_original_records_them() {
        for cwd in ["/home/user/project", "/a/é", "/a/😀", "/home/me/my project"] {
            assert_eq!(recorded_cwd(Path::new(cwd)), cwd);
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
