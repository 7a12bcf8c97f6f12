//! `read`: line-numbered text, a window at a time, and the observation the edit guard needs.

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;
use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::observe::{ContentHasher, Observation};
use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::output::truncate_chars;
use crate::tool::{lenient_u64, run_blocking, tool_env, ToolOutput, BACKSTOP_TIMEOUT};

/// The `read` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Read;

/// Arguments of `read`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ReadArgs {
    pub file_path: String,
    /// 1-based first line.
    #[serde(default, deserialize_with = "lenient_u64::deserialize")]
    pub offset: Option<u64>,
    /// Lines to return.
    #[serde(default, deserialize_with = "lenient_u64::deserialize")]
    pub limit: Option<u64>,
}

const DESCRIPTION: &str = "Read a UTF-8 text file and return its lines numbered from 1, as \
`N: text`. Returns up to 2000 lines per call; use offset (1-based first line) and limit to page \
through longer files. Very long lines are shortened. Binary files are refused, and a directory \
path returns a listing of its entries. Reading a file is required before write or edit may change it.";

/// How much of the start of a file is inspected to tell text from binary.
const SNIFF_BYTES: usize = 8192;
/// Entries listed for a directory.
const MAX_DIR_ENTRIES: usize = 1000;

impl Read {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "read";

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: ReadArgs,
        env: &ToolEnv,
        _cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let path = crate::paths::resolve_for_read(env, &args.file_path)?;
        let env = env.clone();
        match env.files().cloned() {
            // Directories are listed from the disk.
            Some(files) if !path.is_dir() => {
                let text = files
                    .read_text(&path)
                    .await
                    .map_err(|e| ToolError::io("reading", &path, e))?;
                run_blocking("reading", move || {
                    read_window(&env, &args, &path, std::io::Cursor::new(text), None)
                })
                .await
            }
            _ => run_blocking("reading", move || read_blocking(&env, &args, &path)).await,
        }
    }
}

impl TypedTool for Read {
    type Args = ReadArgs;
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
                "file_path": {"type": "string", "description": "Path of the file to read; relative paths resolve against the workspace."},
                "offset": {"type": "number", "description": "1-based first line to return. Defaults to 1."},
                "limit": {"type": "number", "description": "Maximum number of lines to return. Defaults to 2000 (also the maximum)."}
            },
            "required": ["file_path"]
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
        args: ReadArgs,
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

fn read_blocking(env: &ToolEnv, args: &ReadArgs, path: &Path) -> Result<ToolOutput, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| ToolError::io("reading", path, e))?;
    if meta.is_dir() {
        return list_directory(path);
    }
    let file = File::open(path).map_err(|e| ToolError::io("reading", path, e))?;
    read_window(env, args, path, file, meta.modified().ok())
}

/// The requested window of `source` (the file's content, `modified` at that time), recorded
/// as the session's observation of `path`.
fn read_window(
    env: &ToolEnv,
    args: &ReadArgs,
    path: &Path,
    source: impl std::io::Read,
    modified: Option<std::time::SystemTime>,
) -> Result<ToolOutput, ToolError> {
    let limits = env.limits();
    let offset = usize::try_from(args.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
    let limit = match args.limit {
        Some(0) => return Err(ToolError::invalid(Read::NAME, "limit must be at least 1")),
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(limits.read_default_lines),
        None => limits.read_default_lines,
    };
    let mut reader = BufReader::new(source);
    let mut sniff = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)
        .map_err(|e| ToolError::io("reading", path, e))?;
    refuse_non_text(env, path, &sniff)?;

    // The sniffed prefix is replayed in front of the rest, so each byte is seen (and hashed)
    // exactly once.
    let mut hasher = ContentHasher::new();
    let mut stream = BufReader::new(std::io::Cursor::new(sniff).chain(reader));
    let mut window = Window::new(
        offset,
        limit,
        limits.read_max_line_chars,
        limits.read_max_bytes,
    );
    let mut raw = Vec::new();
    let mut total_lines = 0usize;
    let mut size = 0u64;
    loop {
        raw.clear();
        let n = stream
            .read_until(b'\n', &mut raw)
            .map_err(|e| ToolError::io("reading", path, e))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&raw);
        total_lines += 1;
        window.offer(total_lines, &raw);
    }
    env.observations().record(
        path,
        Observation {
            modified,
            size,
            hash: hasher.finish(),
        },
    );
    if offset > total_lines.max(1) {
        return Err(ToolError::OffsetOutOfRange {
            path: path.to_path_buf(),
            offset,
            total: total_lines,
        });
    }
    Ok(render(path, offset, total_lines, window))
}

/// Collects the requested lines within the byte budget.
struct Window {
    offset: usize,
    limit: usize,
    max_line_chars: usize,
    byte_budget: usize,
    lines: Vec<(usize, String)>,
    bytes: usize,
    capped: bool,
}

impl Window {
    fn new(offset: usize, limit: usize, max_line_chars: usize, byte_budget: usize) -> Self {
        Self {
            offset,
            limit,
            max_line_chars,
            byte_budget,
            lines: Vec::new(),
            bytes: 0,
            capped: false,
        }
    }

    fn offer(&mut self, number: usize, raw: &[u8]) {
        if number < self.offset || self.lines.len() >= self.limit || self.capped {
            return;
        }
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        let (kept, cut) = truncate_chars(text, self.max_line_chars);
        let line = if cut {
            format!(
                "{kept}… (line truncated to {} characters)",
                self.max_line_chars
            )
        } else {
            kept.to_string()
        };
        if self.bytes + line.len() > self.byte_budget && !self.lines.is_empty() {
            self.capped = true;
            return;
        }
        self.bytes += line.len() + 1;
        self.lines.push((number, line));
    }
}

fn render(path: &Path, offset: usize, total: usize, window: Window) -> ToolOutput {
    let mut body = String::new();
    for (number, text) in &window.lines {
        body.push_str(&format!("{number}: {text}\n"));
    }
    let last = window
        .lines
        .last()
        .map_or(offset.saturating_sub(1), |(n, _)| *n);
    let footer = if total == 0 {
        "(File is empty)".to_string()
    } else if last >= total {
        format!("\n(End of file - total {total} lines)")
    } else if window.capped {
        format!(
            "\n(Output capped at {} bytes: showing lines {offset}-{last} of {total}. Use offset={} to continue.)",
            window.byte_budget,
            last + 1
        )
    } else {
        format!(
            "\n(Showing lines {offset}-{last} of {total}. Use offset={} to continue.)",
            last + 1
        )
    };
    let content = format!(
        "<path>{}</path>\n<type>file</type>\n<content>\n{body}{footer}\n</content>",
        path.display()
    );
    let lines: Vec<Value> = window
        .lines
        .iter()
        .map(|(n, t)| json!({"number": n, "text": t}))
        .collect();
    let mut metadata = json!({
        "path": path.display().to_string(),
        "offset": offset,
        "lines": lines,
        "totalLines": total,
    });
    if let Some(lang) = language_of(path) {
        metadata["lang"] = json!(lang);
    }
    if last < total {
        metadata["nextOffset"] = json!(last + 1);
    }
    ToolOutput { content, metadata }
}

/// Refuses images and binary content, with a message that says what to do instead.
fn refuse_non_text(env: &ToolEnv, path: &Path, sniff: &[u8]) -> Result<(), ToolError> {
    if let Some(format) = image_format(path, sniff) {
        let hint = if env.model_accepts_images() {
            "the read tool returns text only; use the read_image tool to view it"
        } else {
            "the current model does not accept images, so its content cannot be shown"
        };
        return Err(ToolError::ImageFile {
            path: path.to_path_buf(),
            format,
            hint,
        });
    }
    let binary = |reason: &str| ToolError::BinaryFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    };
    if sniff.contains(&0) {
        return Err(binary("it contains NUL bytes"));
    }
    if let Err(err) = std::str::from_utf8(sniff) {
        // A multi-byte character cut by the sniff boundary is not evidence of binary data.
        let cut_at_end = err.error_len().is_none() && sniff.len() == SNIFF_BYTES;
        if !cut_at_end {
            return Err(binary("it is not valid UTF-8"));
        }
    }
    let ext = extension(path);
    if BINARY_EXTENSIONS.contains(&ext.as_str()) {
        return Err(binary(&format!(
            "the .{ext} extension marks a binary format"
        )));
    }
    Ok(())
}

const BINARY_EXTENSIONS: &[&str] = &[
    "pdf", "zip", "gz", "tgz", "xz", "zst", "7z", "jar", "class", "exe", "dll", "so", "dylib", "o",
    "a", "wasm", "pyc",
];

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

fn image_format(path: &Path, sniff: &[u8]) -> Option<&'static str> {
    let magic: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "png"),
        (b"\xff\xd8\xff", "jpeg"),
        (b"GIF87a", "gif"),
        (b"GIF89a", "gif"),
    ];
    if let Some((_, format)) = magic.iter().find(|(m, _)| sniff.starts_with(m)) {
        return Some(format);
    }
    if sniff.len() >= 12 && &sniff[..4] == b"RIFF" && &sniff[8..12] == b"WEBP" {
        return Some("webp");
    }
    match extension(path).as_str() {
        "png" => Some("png"),
        "jpg" | "jpeg" => Some("jpeg"),
        "gif" => Some("gif"),
        "webp" => Some("webp"),
        "bmp" => Some("bmp"),
        "ico" => Some("ico"),
        "tif" | "tiff" => Some("tiff"),
        _ => None,
    }
}

/// A language tag for the UI's highlighter, from the extension (plain text has none).
fn language_of(path: &Path) -> Option<String> {
    const CODE: &[&str] = &[
        "rs", "md", "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "go", "java", "kt", "c", "h",
        "cc", "cpp", "hpp", "cs", "rb", "php", "swift", "sh", "bash", "zsh", "json", "yaml", "yml",
        "toml", "html", "css", "scss", "sql", "xml", "lua", "zig", "ex", "exs", "hs", "ml",
        "scala", "dart", "vue", "svelte",
    ];
    let ext = extension(path);
    CODE.contains(&ext.as_str()).then_some(ext)
}

fn list_directory(path: &Path) -> Result<ToolOutput, ToolError> {
    let entries = std::fs::read_dir(path).map_err(|e| ToolError::io("listing", path, e))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_DIR_ENTRIES);
    let more = if total > MAX_DIR_ENTRIES {
        format!("\n({} more entries not shown)", total - MAX_DIR_ENTRIES)
    } else {
        String::new()
    };
    let content = format!(
        "<path>{}</path>\n<type>directory</type>\n<entries>\n{}{more}\n({total} entries)\n</entries>",
        path.display(),
        names.join("\n")
    );
    Ok(ToolOutput {
        content,
        metadata: json!({"path": path.display().to_string(), "entries": total, "directory": true}),
    })
}
