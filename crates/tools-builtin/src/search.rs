//! `glob` and `grep`, in-process with ripgrep's own crates.
//!
//! Both walk the tree the way ripgrep does: `.gitignore`, `.ignore` and `.git/info/exclude`
//! are respected (even outside a git repository), hidden files are included, and `.git` itself
//! is never entered. Results over the inline cap are listed in part, with the complete list
//! saved to a spill file the model can read.

use std::path::{Path, PathBuf};
use std::time::Duration;
use std::time::SystemTime;

use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::output::{spill_text, truncate_chars};
use crate::tool::{run_blocking, tool_env, ToolOutput, BACKSTOP_TIMEOUT};

/// Matches kept for the spill file; past this the search stops (and says so).
const MAX_COLLECTED_MATCHES: usize = 20_000;

/// The `glob` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Glob;

/// Arguments of `glob`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct GlobArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
}

/// The `grep` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Grep;

/// Arguments of `grep`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct GrepArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub include: Option<String>,
}

const GLOB_DESCRIPTION: &str = "Find files whose paths match a glob pattern. Returns file paths \
(never directories), most recently modified first. A pattern without \"/\" matches file names at \
any depth (\"*.rs\" finds every Rust file); include a \"/\" to match paths relative to the search \
directory (\"src/**/*.rs\"). Files excluded by .gitignore are skipped; hidden files are included. \
At most 100 paths are listed; for larger results the complete list is saved to a file whose path \
is reported.";

const GREP_DESCRIPTION: &str = "Search file contents with a regular expression (ripgrep syntax). \
Returns matching lines with their line numbers, grouped by file. Files excluded by .gitignore and \
binary files are skipped. At most 250 matches are listed; for larger results the complete list is \
saved to a file whose path is reported. Use read on a matching file for surrounding context.";

impl Glob {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "glob";

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: GlobArgs,
        env: &ToolEnv,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let env = env.clone();
        run_blocking("searching", move || glob_blocking(&env, &args, &cancel)).await
    }
}

impl TypedTool for Glob {
    type Args = GlobArgs;
    type Output = ToolOutput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        GLOB_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. \"**/*.ts\" or \"src/**/*.test.js\". Without a \"/\" it matches file names at any depth."},
                "path": {"type": "string", "description": "Directory to search. Defaults to the workspace; a relative path resolves against it."}
            },
            "required": ["pattern"]
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
        args: GlobArgs,
        exec: &ToolExecution,
    ) -> Result<ToolOutput, ToolFailure> {
        let env = tool_env(exec)?;
        Ok(self.run(args, &env, exec.signal().clone()).await?)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        ToolOutput::render_value(value)
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        ToolOutput::value_meta(value)
    }
}

impl Grep {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "grep";

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: GrepArgs,
        env: &ToolEnv,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let env = env.clone();
        run_blocking("searching", move || grep_blocking(&env, &args, &cancel)).await
    }
}

impl TypedTool for Grep {
    type Args = GrepArgs;
    type Output = ToolOutput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        GREP_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for (ripgrep syntax)."},
                "path": {"type": "string", "description": "File or directory to search. Defaults to the workspace; a relative path resolves against it."},
                "include": {"type": "string", "description": "One glob that file names must match, e.g. \"*.ts\" or \"*.{js,jsx}\"."}
            },
            "required": ["pattern"]
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
        args: GrepArgs,
        exec: &ToolExecution,
    ) -> Result<ToolOutput, ToolFailure> {
        let env = tool_env(exec)?;
        Ok(self.run(args, &env, exec.signal().clone()).await?)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        ToolOutput::render_value(value)
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        ToolOutput::value_meta(value)
    }
}

/// A glob that matches either file names (no `/` in the pattern) or relative paths.
struct PathGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathGlob {
    fn new(what: &'static str, pattern: &str) -> Result<Self, ToolError> {
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let matcher = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::InvalidPattern {
                what,
                pattern: pattern.to_string(),
                reason: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(Self {
            matcher,
            by_name: !trimmed.contains('/'),
        })
    }

    fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.by_name {
            return path
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name));
        }
        let relative = path.strip_prefix(root).unwrap_or(path);
        self.matcher.is_match(relative) || self.matcher.is_match(path)
    }
}

/// The ripgrep-style walker shared by both tools.
fn walker(root: &Path) -> ignore::Walk {
    WalkBuilder::new(root)
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
}

fn search_root(env: &ToolEnv, path: Option<&str>) -> Result<PathBuf, ToolError> {
    let raw = path.filter(|p| !p.trim().is_empty()).unwrap_or(".");
    let root = crate::paths::resolve_for_read(env, raw)?;
    std::fs::metadata(&root).map_err(|e| ToolError::io("searching", &root, e))?;
    Ok(root)
}

fn glob_blocking(
    env: &ToolEnv,
    args: &GlobArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let root = search_root(env, args.path.as_deref())?;
    if !root.is_dir() {
        return Err(ToolError::invalid(
            Glob::NAME,
            format!("path {} is not a directory", root.display()),
        ));
    }
    let glob = PathGlob::new("glob", &args.pattern)?;
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    for entry in walker(&root) {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) || !glob.is_match(&root, entry.path()) {
            continue;
        }
        let modified = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        found.push((modified, entry.into_path()));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    if total == 0 {
        return Ok(ToolOutput::text(format!(
            "No files found matching pattern \"{}\" in {}.",
            args.pattern,
            root.display()
        ))
        .with_metadata(json!({"count": 0, "truncated": false, "spillPath": null})));
    }
    let cap = env.limits().glob_max_results;
    let listed: Vec<String> = found.iter().map(|(_, p)| p.display().to_string()).collect();
    let mut content = listed
        .iter()
        .take(cap)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    let mut spill_path = None;
    if total > cap {
        let spilled = spill_text(env.spill_dir(), "glob", &(listed.join("\n") + "\n"));
        let saved = match &spilled {
            Ok(path) => format!(
                "The complete list, in the same order, is saved at {}.",
                path.display()
            ),
            Err(err) => format!("The complete list could not be saved: {err}."),
        };
        content.push_str(&format!(
            "\n\n(Showing the {cap} most recently modified of {total} matching files. {saved})"
        ));
        spill_path = spilled.ok().map(|p| p.display().to_string());
    }
    Ok(ToolOutput::text(content).with_metadata(json!({
        "count": total,
        "truncated": total > cap,
        "spillPath": spill_path,
    })))
}

/// One file's matching lines.
struct FileMatches {
    path: PathBuf,
    lines: Vec<(u64, String)>,
}

fn grep_blocking(
    env: &ToolEnv,
    args: &GrepArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let root = search_root(env, args.path.as_deref())?;
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| ToolError::InvalidPattern {
            what: "regex",
            pattern: args.pattern.clone(),
            reason: e.to_string(),
        })?;
    let include = args
        .include
        .as_deref()
        .filter(|i| !i.trim().is_empty())
        .map(|i| PathGlob::new("include", i))
        .transpose()?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let max_line = env.limits().grep_max_line_chars;
    let mut files: Vec<FileMatches> = Vec::new();
    let mut total = 0usize;
    let mut stopped_early = false;
    for entry in walker(&root) {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // An explicitly named file is searched even if a filter would skip it.
        let named = entry.depth() == 0;
        if !named
            && include
                .as_ref()
                .is_some_and(|g| !g.is_match(&root, entry.path()))
        {
            continue;
        }
        let mut lines = Vec::new();
        let sink = Lossy(|number, line: &str| {
            let text = line.trim_end_matches(['\n', '\r']);
            let (kept, cut) = truncate_chars(text, max_line);
            lines.push((
                number,
                if cut {
                    format!("{kept}…")
                } else {
                    kept.to_string()
                },
            ));
            Ok(total + lines.len() < MAX_COLLECTED_MATCHES)
        });
        // Unreadable files are skipped, as ripgrep does.
        if searcher.search_path(&matcher, entry.path(), sink).is_err() {
            continue;
        }
        if lines.is_empty() {
            continue;
        }
        total += lines.len();
        files.push(FileMatches {
            path: entry.into_path(),
            lines,
        });
        if total >= MAX_COLLECTED_MATCHES {
            stopped_early = true;
            break;
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    if total == 0 {
        return Ok(ToolOutput::text(format!(
            "No matches found for pattern \"{}\" in {}.",
            args.pattern,
            root.display()
        ))
        .with_metadata(json!({"matches": 0, "files": 0, "truncated": false, "spillPath": null})));
    }
    let cap = env.limits().grep_max_matches;
    let scrub = |s: String| env.scrubber().scrub(&s).into_owned();
    let header = format!("Found {total} matches in {} files", files.len());
    let mut content = format!("{header}\n{}", render_matches(&files, cap));
    let mut spill_path = None;
    if total > cap {
        let full = scrub(format!("{header}\n{}", render_matches(&files, usize::MAX)));
        let spilled = spill_text(env.spill_dir(), "grep", &full);
        let saved = match &spilled {
            Ok(path) => format!("The complete list is saved at {}.", path.display()),
            Err(err) => format!("The complete list could not be saved: {err}."),
        };
        let more = if stopped_early {
            format!(" The search stopped after {MAX_COLLECTED_MATCHES} matches.")
        } else {
            String::new()
        };
        content.push_str(&format!(
            "\n(Showing {cap} of {total} matches. {saved}{more})"
        ));
        spill_path = spilled.ok().map(|p| p.display().to_string());
    }
    Ok(ToolOutput::text(scrub(content)).with_metadata(json!({
        "matches": total,
        "files": files.len(),
        "truncated": total > cap,
        "spillPath": spill_path,
    })))
}

/// `path` headings followed by `N: line` rows, stopping after `cap` matches.
fn render_matches(files: &[FileMatches], cap: usize) -> String {
    let mut out = String::new();
    let mut shown = 0usize;
    for file in files {
        if shown >= cap {
            break;
        }
        out.push_str(&format!("\n{}\n", file.path.display()));
        for (number, text) in &file.lines {
            if shown >= cap {
                break;
            }
            out.push_str(&format!("{number}: {text}\n"));
            shown += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn name_globs_match_at_any_depth_and_path_globs_are_anchored() {
        let root = Path::new("/w");
        let by_name = PathGlob::new("glob", "*.rs").unwrap();
        assert!(by_name.is_match(root, Path::new("/w/a/b/c.rs")));
        let anchored = PathGlob::new("glob", "src/*.rs").unwrap();
        assert!(anchored.is_match(root, Path::new("/w/src/a.rs")));
        assert!(!anchored.is_match(root, Path::new("/w/src/deep/a.rs")));
        let deep = PathGlob::new("glob", "./src/**/*.rs").unwrap();
        assert!(deep.is_match(root, Path::new("/w/src/deep/a.rs")));
        let braces = PathGlob::new("include", "*.{js,jsx}").unwrap();
        assert!(braces.is_match(root, Path::new("/w/x.jsx")));
        assert_eq!(
            PathGlob::new("glob", "a[").err().map(|e| e.code()),
            Some("INVALID_PATTERN")
        );
    }
}
