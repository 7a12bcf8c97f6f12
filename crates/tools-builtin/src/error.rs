//! The one error type every tool body returns.
//!
//! Messages are written for the model: each says what went wrong *and* what to do next, because
//! the message text is what the model reads as the tool result. `code()` is the stable,
//! machine-readable part that logs and tests match on.

use std::path::PathBuf;

use crate::approval::escalation::EscalationRefusal;
use crate::sandbox::SandboxMode;

/// A nearby region of a file, offered when an edit's `old_string` was not found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditCandidate {
    /// 1-based first line of the region.
    pub first_line: usize,
    /// 1-based last line of the region (inclusive).
    pub last_line: usize,
    /// The region's text exactly as it stands in the file.
    pub text: String,
}

/// Why a tool call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments { tool: &'static str, reason: String },

    #[error("file not found: {}. Check the path (relative paths resolve against the workspace) or use glob to find the file.", path.display())]
    FileNotFound { path: PathBuf },

    #[error("{} is a directory, not a file. Use glob to list files, or read a file inside it.", path.display())]
    IsDirectory { path: PathBuf },

    #[error("{} looks like a binary file ({reason}); it cannot be shown as text. Use bash tools such as `file`, `xxd | head` or `strings` if you must inspect it.", path.display())]
    BinaryFile { path: PathBuf, reason: String },

    #[error("{} is an image ({format}); {hint}", path.display())]
    ImageFile {
        path: PathBuf,
        format: &'static str,
        hint: &'static str,
    },

    #[error("{} is not valid UTF-8 text, so it cannot be edited as text. Use write to replace it entirely, or bash for binary-safe changes.", path.display())]
    NotUtf8 { path: PathBuf },

    #[error("{} is {size} bytes, more than the {limit}-byte limit for this tool. Use bash (sed, head, tail, split) for files this large.", path.display())]
    FileTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },

    #[error("offset {offset} is past the end of {} ({total} lines). Use an offset between 1 and {total}.", path.display())]
    OffsetOutOfRange {
        path: PathBuf,
        offset: usize,
        total: usize,
    },

    #[error("{} exists but has not been read in this session. Read it with the read tool first, then retry.", path.display())]
    NotReadFirst { path: PathBuf },

    #[error("{} changed on disk since you last read it. Read it again to see the current content, then retry.", path.display())]
    ChangedOnDisk { path: PathBuf },

    #[error("{}", edit_no_match_message(path, candidates, *whitespace_hint))]
    EditNoMatch {
        path: PathBuf,
        candidates: Vec<EditCandidate>,
        whitespace_hint: bool,
    },

    #[error("old_string matches {count} times in {} (at lines {}). Add surrounding lines to old_string so it matches exactly once, or set replace_all to true to change every occurrence.", path.display(), join_lines(lines))]
    EditAmbiguous {
        path: PathBuf,
        count: usize,
        lines: Vec<usize>,
    },

    #[error("old_string and new_string are identical, so the edit would change nothing. Provide the text you want instead in new_string.")]
    EditNoChange,

    #[error(
        "old_string is empty. To create a file or replace all of its content, use the write tool."
    )]
    EditEmptyOldString,

    #[error("writing {} is denied under {mode} sandbox mode: {reason}.", path.display())]
    SandboxDenied {
        path: PathBuf,
        mode: SandboxMode,
        reason: String,
    },

    #[error("workdir {} is outside the directories commands may run in ({roots}). Use a directory inside the workspace.", path.display())]
    WorkdirOutsideRoots { path: PathBuf, roots: String },

    #[error("{notice}")]
    SandboxUnavailable { notice: String },

    #[error("the sandbox itself failed to start the command ({reason}); this is not a problem with your command. Report it to the user.")]
    SandboxFailed { reason: String },

    #[error("invalid {what} pattern {pattern:?}: {reason}")]
    InvalidPattern {
        what: &'static str,
        pattern: String,
        reason: String,
    },

    #[error("could not start the command: {reason}")]
    Spawn { reason: String },

    #[error("the command is too long to start: the operating system refused its argument list (E2BIG). The command and the environment come to {size} bytes; {limits}. Do not pass long content on the command line: write it to a file with the write tool and run a script (or redirect the file into the command) instead.")]
    ArgumentListTooLong {
        /// Bytes of the command line and the environment together.
        size: u64,
        /// What the system allows, spelled out.
        limits: String,
    },

    #[error("the tool call was cancelled")]
    Cancelled,

    #[error("web_fetch is disabled in this configuration. Tell the user if you need web access.")]
    WebFetchDisabled,

    #[error("invalid URL {url:?}: {reason}. Use an absolute http:// or https:// URL.")]
    InvalidUrl { url: String, reason: String },

    #[error("refusing to fetch {host}: it resolves to {addr}, a private, loopback or link-local address. Only public addresses can be fetched.")]
    AddressBlocked {
        host: String,
        addr: std::net::IpAddr,
    },

    #[error("fetching {url} failed: {reason}")]
    Http { url: String, reason: String },

    #[error("{url} answered HTTP {status}. {hint}")]
    HttpStatus {
        url: String,
        status: u16,
        hint: String,
    },

    #[error(
        "{url} returned {content_type}, which is not text; web_fetch only returns text content."
    )]
    UnsupportedContent { url: String, content_type: String },

    #[error("{action} {} failed: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A bash call's `sandbox_permissions` request that did not get a person's approval.
    #[error("{message}")]
    EscalationRefused {
        refusal: EscalationRefusal,
        message: String,
    },
}

impl ToolError {
    /// The stable code for logs, tests and the tool result's error info.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidArguments { .. } => "INVALID_TOOL_ARGUMENTS",
            Self::FileNotFound { .. } => "FILE_NOT_FOUND",
            Self::IsDirectory { .. } => "IS_DIRECTORY",
            Self::BinaryFile { .. } => "BINARY_FILE",
            Self::ImageFile { .. } => "IMAGE_FILE",
            Self::NotUtf8 { .. } => "NOT_UTF8",
            Self::FileTooLarge { .. } => "FILE_TOO_LARGE",
            Self::OffsetOutOfRange { .. } => "OFFSET_OUT_OF_RANGE",
            Self::NotReadFirst { .. } => "FILE_NOT_READ",
            Self::ChangedOnDisk { .. } => "FILE_CHANGED",
            Self::EditNoMatch { .. } => "EDIT_NO_MATCH",
            Self::EditAmbiguous { .. } => "EDIT_AMBIGUOUS",
            Self::EditNoChange => "EDIT_NO_CHANGE",
            Self::EditEmptyOldString => "EDIT_EMPTY_OLD_STRING",
            Self::SandboxDenied { .. } => "SANDBOX_DENIED",
            Self::WorkdirOutsideRoots { .. } => "WORKDIR_OUTSIDE_ROOTS",
            Self::SandboxUnavailable { .. } => "SANDBOX_UNAVAILABLE",
            Self::SandboxFailed { .. } => "SANDBOX_FAILED",
            Self::InvalidPattern { .. } => "INVALID_PATTERN",
            Self::Spawn { .. } => "SPAWN_FAILED",
            Self::ArgumentListTooLong { .. } => "ARGUMENT_LIST_TOO_LONG",
            Self::Cancelled => "ABORTED",
            Self::WebFetchDisabled => "WEB_FETCH_DISABLED",
            Self::InvalidUrl { .. } => "INVALID_URL",
            Self::AddressBlocked { .. } => "ADDRESS_BLOCKED",
            Self::Http { .. } => "HTTP_ERROR",
            Self::HttpStatus { .. } => "HTTP_STATUS",
            Self::UnsupportedContent { .. } => "UNSUPPORTED_CONTENT",
            Self::Io { .. } => "IO_ERROR",
            Self::EscalationRefused { refusal, .. } => refusal.code(),
        }
    }

    /// The error class name recorded beside the code in a tool result's error info.
    pub fn name(&self) -> &'static str {
        match self {
            Self::InvalidArguments { .. } => "InvalidToolArgumentsError",
            Self::FileNotFound { .. }
            | Self::IsDirectory { .. }
            | Self::BinaryFile { .. }
            | Self::ImageFile { .. }
            | Self::NotUtf8 { .. }
            | Self::FileTooLarge { .. }
            | Self::OffsetOutOfRange { .. } => "FileError",
            Self::NotReadFirst { .. } | Self::ChangedOnDisk { .. } => "FileObservationError",
            Self::EditNoMatch { .. }
            | Self::EditAmbiguous { .. }
            | Self::EditNoChange
            | Self::EditEmptyOldString => "EditError",
            Self::SandboxDenied { .. }
            | Self::WorkdirOutsideRoots { .. }
            | Self::SandboxUnavailable { .. }
            | Self::SandboxFailed { .. } => "SandboxError",
            Self::InvalidPattern { .. } => "InvalidPatternError",
            Self::Spawn { .. } | Self::ArgumentListTooLong { .. } => "SpawnError",
            Self::Cancelled => "AbortError",
            Self::WebFetchDisabled
            | Self::InvalidUrl { .. }
            | Self::AddressBlocked { .. }
            | Self::Http { .. }
            | Self::HttpStatus { .. }
            | Self::UnsupportedContent { .. } => "WebFetchError",
            Self::Io { .. } => "IoError",
            Self::EscalationRefused { .. } => "SandboxEscalationError",
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        let path = path.into();
        match source.kind() {
            std::io::ErrorKind::NotFound => Self::FileNotFound { path },
            _ => Self::Io {
                action,
                path,
                source,
            },
        }
    }

    pub(crate) fn invalid(tool: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidArguments {
            tool,
            reason: reason.into(),
        }
    }
}

fn join_lines(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn edit_no_match_message(
    path: &std::path::Path,
    candidates: &[EditCandidate],
    whitespace_hint: bool,
) -> String {
    let mut out = format!("old_string was not found in {}.", path.display());
    if whitespace_hint {
        out.push_str(" It does match if whitespace is ignored: copy the indentation and line breaks exactly as the file has them.");
    }
    if candidates.is_empty() {
        out.push_str(" Read the file again and copy the text exactly, including whitespace.");
        return out;
    }
    out.push_str(" The most similar text in the file:");
    for candidate in candidates {
        if candidate.first_line == candidate.last_line {
            out.push_str(&format!("\n--- line {} ---\n", candidate.first_line));
        } else {
            out.push_str(&format!(
                "\n--- lines {}-{} ---\n",
                candidate.first_line, candidate.last_line
            ));
        }
        out.push_str(&candidate.text);
    }
    out.push_str("\nCopy the intended text exactly (read the file again if unsure) and retry.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_match_message_lists_candidates_with_line_ranges() {
        let err = ToolError::EditNoMatch {
            path: PathBuf::from("/w/a.rs"),
            candidates: vec![
                EditCandidate {
                    first_line: 3,
                    last_line: 3,
                    text: "let x = 1;".into(),
                },
                EditCandidate {
                    first_line: 7,
                    last_line: 8,
                    text: "a\nb".into(),
                },
            ],
            whitespace_hint: false,
        };
        assert_eq!(
            err.to_string(),
            "old_string was not found in /w/a.rs. The most similar text in the file:\n\
             --- line 3 ---\nlet x = 1;\n--- lines 7-8 ---\na\nb\n\
             Copy the intended text exactly (read the file again if unsure) and retry."
        );
        assert_eq!(err.code(), "EDIT_NO_MATCH");
    }

    #[test]
    fn ambiguous_message_names_count_and_lines() {
        let err = ToolError::EditAmbiguous {
            path: "/w/a".into(),
            count: 2,
            lines: vec![1, 4],
        };
        assert!(err
            .to_string()
            .starts_with("old_string matches 2 times in /w/a (at lines 1, 4)."));
    }

    #[test]
    fn not_found_io_maps_to_file_not_found() {
        let err = ToolError::io("reading", "/nope", std::io::ErrorKind::NotFound.into());
        assert_eq!(err.code(), "FILE_NOT_FOUND");
    }
}
