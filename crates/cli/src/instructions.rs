//! Workspace instructions: the `AGENTS.md` / `CLAUDE.md` files a person keeps for agents.
//!
//! Files are collected from `$DSH_HOME/AGENTS.md` (the user's standing instructions), then
//! from every directory between the repository root (the nearest ancestor holding `.git`,
//! or the working directory itself outside a repository) and the working directory, taking
//! `AGENTS.md` and then `CLAUDE.md` in each. A file whose content was already seen (a
//! `CLAUDE.md` symlinked to `AGENTS.md`, say) is named once with its twins. The total is
//! held to a byte budget; whatever does not fit is cut with a marker that says what was cut,
//! so the model never mistakes a partial file for a whole one.
//!
//! The rendered text reaches the model as one logged user message whose source marks it as
//! plugin-provided ([`Instructions::to_message`]), never as something the user typed.

use dsh_protocol::{ContentBlock, Message, MessageSource, Role};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The plugin name in the message source.
pub const INSTRUCTIONS_PLUGIN: &str = "dsh-instructions";
/// The `form` field of the message source.
pub const INSTRUCTIONS_FORM: &str = "instructions";
/// File names looked for in each directory, in order.
pub const CANDIDATE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];
/// Default limit on the instruction bytes sent to the model.
pub const DEFAULT_BUDGET: usize = 64 * 1024;
/// The largest instruction file read at all; a larger one is skipped (it could never be
/// shown whole, and is more likely a mistake than instructions).
pub const FILE_MAX_BYTES: u64 = 1 << 20;

/// One instruction file that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstructionFile {
    pub path: PathBuf,
    /// Other files with the same content, collapsed into this one.
    pub same_as: Vec<PathBuf>,
    /// Size of the content in bytes.
    pub bytes: usize,
    pub shown: Shown,
}

/// How much of a file made it into the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    Whole,
    /// Cut after this many bytes.
    Truncated {
        kept: usize,
    },
    /// Left out: the budget was spent.
    Omitted,
}

/// A candidate that exists but could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The collected instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    pub skipped: Vec<Skipped>,
    /// The rendered text; empty when no file was found.
    pub text: String,
}

impl Instructions {
    /// Finds and renders the instructions for `cwd` with the default budget.
    pub fn load(home: &Path, cwd: &Path) -> Self {
        Self::load_with_budget(home, cwd, DEFAULT_BUDGET)
    }

    /// Finds and renders the instructions for `cwd`, holding contents to `budget` bytes.
    pub fn load_with_budget(home: &Path, cwd: &Path, budget: usize) -> Self {
        let mut found: Vec<(InstructionFile, String)> = Vec::new();
        let mut skipped = Vec::new();
        let mut seen_paths: Vec<PathBuf> = Vec::new();
        for path in candidates(home, cwd) {
            // Only regular files are read, and only up to a limit: a FIFO named AGENTS.md
            // would hang the start of every session, a link to /dev/zero would fill memory.
            let content = match dsh_store::read_regular_file(&path, FILE_MAX_BYTES) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                // Missing files and directories are simply not instructions.
                Err(error) if error.is_not_found() || error.is_directory() => continue,
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "instruction file skipped");
                    skipped.push(Skipped {
                        path,
                        reason: error.reason(),
                    });
                    continue;
                }
            };
            // The same file reached twice (a symlinked twin, the home directory inside the
            // walk) counts once.
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen_paths.contains(&real) {
                continue;
            }
            seen_paths.push(real);
            if content.trim().is_empty() {
                continue;
            }
            let twin = found
                .iter_mut()
                .find(|(_, earlier)| earlier.trim() == content.trim());
            match twin {
                Some((earlier, _)) => earlier.same_as.push(path),
                None => found.push((
                    InstructionFile {
                        path,
                        same_as: Vec::new(),
                        bytes: content.len(),
                        shown: Shown::Whole,
                    },
                    content,
                )),
            }
        }
        let mut instructions = Self {
            files: Vec::new(),
            skipped,
            text: String::new(),
        };
        if found.is_empty() {
            return instructions;
        }
        instructions.text = render(&mut found, budget);
        instructions.files = found.into_iter().map(|(file, _)| file).collect();
        instructions
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The user message that delivers the instructions, or `None` when there are none.
    pub fn to_message(&self) -> Option<Message> {
        if self.is_empty() {
            return None;
        }
        let mut extra = Map::new();
        extra.insert("form".into(), Value::String(INSTRUCTIONS_FORM.into()));
        Some(Message::new(
            Role::User,
            vec![ContentBlock::text(self.text.clone())],
            MessageSource::Plugin {
                plugin: INSTRUCTIONS_PLUGIN.into(),
                extra,
            },
        ))
    }
}

/// The nearest ancestor of `cwd` (itself included) that holds `.git`.
pub fn repository_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// Every path that may hold instructions for `cwd`, in reading order.
pub fn candidates(home: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut paths = vec![home.join(CANDIDATE_NAMES[0])];
    let root = repository_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .collect();
    dirs.reverse();
    for dir in dirs {
        paths.extend(CANDIDATE_NAMES.iter().map(|name| dir.join(name)));
    }
    paths
}

fn render(found: &mut [(InstructionFile, String)], budget: usize) -> String {
    let budget_label = if budget.is_multiple_of(1024) {
        format!("{} KiB", budget / 1024)
    } else {
        format!("{budget} byte")
    };
    let mut text = String::from(
        "Instructions for this workspace, from the user's and the project's AGENTS.md and \
         CLAUDE.md files. Files listed later are closer to the working directory and more \
         specific.",
    );
    let mut left = budget;
    for (file, content) in found.iter_mut() {
        text.push_str("\n\n## ");
        text.push_str(&file.path.display().to_string());
        if !file.same_as.is_empty() {
            let twins: Vec<String> = file
                .same_as
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            text.push_str(&format!(" (same content as {})", twins.join(", ")));
        }
        text.push('\n');
        let body = content.trim_end();
        if left == 0 {
            file.shown = Shown::Omitted;
            text.push_str(&format!(
                "\n[dsh: this file ({} bytes) was left out: the {budget_label} instruction budget was used up]",
                file.bytes
            ));
            continue;
        }
        if body.len() <= left {
            text.push('\n');
            text.push_str(body);
            left -= body.len();
            continue;
        }
        let kept = cut_point(body, left);
        file.shown = Shown::Truncated { kept };
        text.push('\n');
        text.push_str(&body[..kept]);
        text.push_str(&format!(
            "\n[dsh: {} was cut here, after {kept} of {} bytes, to fit the {budget_label} instruction budget]",
            file.path.display(),
            file.bytes
        ));
        left = 0;
    }
    text
}

/// Where to cut `body` to keep at most `limit` bytes: at the last line break that keeps at
/// least half of the allowance, else at the last character boundary.
fn cut_point(body: &str, limit: usize) -> usize {
    let mut end = limit.min(body.len());
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    match body[..end].rfind('\n') {
        Some(newline) if newline >= end / 2 => newline,
        _ => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    struct Tree {
        _dir: tempfile::TempDir,
        base: PathBuf,
    }

    impl Tree {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let base = fs::canonicalize(dir.path()).unwrap();
            Self { _dir: dir, base }
        }

        fn write(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.base.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
            path
        }

        fn dir(&self, rel: &str) -> PathBuf {
            let path = self.base.join(rel);
            fs::create_dir_all(&path).unwrap();
            path
        }
    }

    const HEAD: &str = "Instructions for this workspace, from the user's and the project's AGENTS.md and \
         CLAUDE.md files. Files listed later are closer to the working directory and more specific.";

    #[test]
    fn fifos_devices_and_huge_files_are_skipped_unread() {
        let t = Tree::new();
        t.dir("repo/.git");
        // A FIFO would block every session's start; /dev/zero would fill memory.
        let fifo = t.base.join("repo/AGENTS.md");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let zero = t.base.join("repo/CLAUDE.md");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let huge = t.write("repo/sub/AGENTS.md", "");
        fs::File::options()
            .write(true)
            .open(&huge)
            .unwrap()
            .set_len(FILE_MAX_BYTES + 1)
            .unwrap();
        t.write("repo/sub/CLAUDE.md", "Still read.\n");
        let instructions = Instructions::load(&t.base.join("home"), &t.base.join("repo/sub"));
        assert_eq!(
            instructions.skipped,
            [
                Skipped {
                    path: fifo,
                    reason: "it is a FIFO, not a regular file".into()
                },
                Skipped {
                    path: zero,
                    reason: "it is a character device, not a regular file".into()
                },
                Skipped {
                    path: huge,
                    reason: format!(
                        "it is larger than the limit of {FILE_MAX_BYTES} bytes for this file"
                    )
                },
            ]
        );
        assert!(
            instructions.text.ends_with("\n\nStill read."),
            "{}",
            instructions.text
        );
    }

    #[test]
    fn walks_from_home_then_repository_root_down_to_cwd() {
        let t = Tree::new();
        t.write("home/AGENTS.md", "Prefer short answers.\n");
        t.write("AGENTS.md", "Outside the repository: never read.\n");
        t.dir("repo/.git");
        t.write("repo/AGENTS.md", "Run cargo test before committing.\n");
        t.write("repo/CLAUDE.md", "Run cargo test before committing.\n");
        t.write("repo/crates/CLAUDE.md", "   \n");
        t.write("repo/crates/cli/CLAUDE.md", "This crate is the binary.\n");
        let cwd = t.dir("repo/crates/cli");
        let p = |rel: &str| t.base.join(rel).display().to_string();

        let instructions = Instructions::load(&t.base.join("home"), &cwd);
        let expected = format!(
            "{HEAD}\n\n## {}\n\nPrefer short answers.\n\n## {} (same content as {})\n\nRun cargo test before committing.\n\n## {}\n\nThis crate is the binary.",
            p("home/AGENTS.md"),
            p("repo/AGENTS.md"),
            p("repo/CLAUDE.md"),
            p("repo/crates/cli/CLAUDE.md"),
        );
        assert_eq!(instructions.text, expected);
        assert_eq!(instructions.files.len(), 3);
        assert!(instructions.files.iter().all(|f| f.shown == Shown::Whole));
        assert!(instructions.skipped.is_empty());
    }

    #[test]
    fn outside_a_repository_only_cwd_is_searched() {
        let t = Tree::new();
        t.write("AGENTS.md", "parent");
        t.write("work/AGENTS.md", "here");
        let cwd = t.base.join("work");
        assert_eq!(repository_root(&cwd), None);
        assert_eq!(
            candidates(&t.base.join("home"), &cwd),
            [
                t.base.join("home/AGENTS.md"),
                cwd.join("AGENTS.md"),
                cwd.join("CLAUDE.md")
            ]
        );
        let instructions = Instructions::load(&t.base.join("home"), &cwd);
        assert!(
            instructions.text.ends_with("/work/AGENTS.md\n\nhere"),
            "{}",
            instructions.text
        );
        assert!(!instructions.text.contains("parent"));
    }

    #[test]
    fn home_inside_the_walk_is_read_once() {
        let t = Tree::new();
        t.write("home/AGENTS.md", "Mine.");
        let instructions = Instructions::load(&t.base.join("home"), &t.base.join("home"));
        assert_eq!(instructions.files.len(), 1);
        assert!(instructions.files[0].same_as.is_empty());
    }

    #[test]
    fn a_symlinked_twin_is_read_once() {
        let t = Tree::new();
        t.dir("repo/.git");
        let agents = t.write("repo/AGENTS.md", "Be careful.");
        std::os::unix::fs::symlink(&agents, t.base.join("repo/CLAUDE.md")).unwrap();
        let instructions = Instructions::load(&t.base.join("home"), &t.base.join("repo"));
        assert_eq!(instructions.files.len(), 1);
        assert!(instructions.files[0].same_as.is_empty());
        assert_eq!(instructions.text.matches("Be careful.").count(), 1);
    }

    #[test]
    fn the_budget_cuts_with_markers_naming_what_was_cut() {
        let t = Tree::new();
        t.write("home/AGENTS.md", "line one\nline two\nline three\n");
        t.write("work/AGENTS.md", "project rules\n");
        let cwd = t.base.join("work");
        let instructions = Instructions::load_with_budget(&t.base.join("home"), &cwd, 20);
        let home_file = t.base.join("home/AGENTS.md").display().to_string();
        let expected = format!(
            "{HEAD}\n\n## {home_file}\n\nline one\nline two\n[dsh: {home_file} was cut here, after 17 of 29 bytes, to fit the 20 byte instruction budget]\n\n## {}\n\n[dsh: this file (14 bytes) was left out: the 20 byte instruction budget was used up]",
            cwd.join("AGENTS.md").display()
        );
        assert_eq!(instructions.text, expected);
        let shown: Vec<Shown> = instructions.files.iter().map(|f| f.shown).collect();
        assert_eq!(shown, [Shown::Truncated { kept: 17 }, Shown::Omitted]);
    }

    #[test]
    fn cuts_respect_characters() {
        assert_eq!(cut_point("héllo", 2), 1);
        assert_eq!(cut_point("abcd\nef", 6), 4);
        assert_eq!(cut_point("a\nbcdefgh", 8), 8);
    }

    #[test]
    fn delivered_as_a_plugin_sourced_user_message() {
        let t = Tree::new();
        t.write("home/AGENTS.md", "Prefer short answers.");
        let instructions = Instructions::load(&t.base.join("home"), &t.dir("work"));
        let message = instructions.to_message().unwrap();
        let mut value = serde_json::to_value(&message).unwrap();
        value.as_object_mut().unwrap().remove("id");
        assert_eq!(
            value,
            json!({
                "role": "user",
                "content": [{"type": "text", "text": instructions.text}],
                "source": {"kind": "plugin", "plugin": "dsh-instructions", "form": "instructions"},
            })
        );
        let none = Instructions::load(&t.base.join("nowhere"), &t.dir("empty"));
        assert!(none.is_empty() && none.to_message().is_none());
    }
}
