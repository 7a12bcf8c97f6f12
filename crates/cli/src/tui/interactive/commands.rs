//! The slash-command directory of the interactive UI: the built-in commands and what the
//! `skills` row adds (custom commands, user-invocable skills), listed together in `/help` and
//! offered as completions while a `/name` is typed.
//!
//! Built-ins are the commands [`slash::HELP`] lists (its one source of truth), so a built-in
//! added there is listed and completed here too. A custom command or skill whose name a
//! built-in has is shadowed by it; a custom command shadows a skill of its name (commands are
//! checked first, as in the original's `/` menu). A line naming a custom command or a skill
//! is sent as a prompt: the `skills` row expands it on the agent's side, so `dsh run` and the
//! UI behave the same.

use super::slash;
use dsh_skills::Scan;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// The most completions shown under the input.
pub const MAX_COMPLETIONS: usize = 6;

/// What a directory entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    Builtin,
    /// A `.dsh/commands` / `.claude/commands` prompt file.
    Custom,
    /// A user-invocable skill (`/name` brings it into the prompt).
    Skill,
}

/// One `/name` the UI knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandEntry {
    pub name: String,
    /// The arguments, as `/help` shows them (`[NAME]`, an `argument-hint`).
    pub hint: String,
    pub description: String,
    pub kind: CommandKind,
}

/// Built-ins and extensions, built-ins first, each group sorted as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandDirectory {
    entries: Vec<CommandEntry>,
}

impl Default for CommandDirectory {
    fn default() -> Self {
        Self::builtins()
    }
}

/// The built-in entries, read from the command lines of [`slash::HELP`]
/// (`"  /name ARGS   description"`, up to its `keys:` section).
fn builtin_entries() -> Vec<CommandEntry> {
    slash::HELP
        .iter()
        .take_while(|line| **line != "keys:")
        .filter_map(|line| line.strip_prefix("  /"))
        .filter_map(|rest| {
            let (usage, description) = rest.split_once("  ")?;
            let mut words = usage.splitn(2, ' ');
            let name = words.next()?.to_owned();
            if !dsh_skills::command::is_command_name(&name) {
                return None;
            }
            Some(CommandEntry {
                name,
                hint: words.next().unwrap_or("").trim().to_owned(),
                description: description.trim().to_owned(),
                kind: CommandKind::Builtin,
            })
        })
        .collect()
}

impl CommandDirectory {
    /// The built-in commands only.
    pub fn builtins() -> Self {
        Self {
            entries: builtin_entries(),
        }
    }

    /// The built-ins plus `scan`'s custom commands and user-invocable skills.
    pub fn with_extensions(scan: &Scan) -> Self {
        let mut entries = builtin_entries();
        let taken = |entries: &[CommandEntry], name: &str| entries.iter().any(|e| e.name == name);
        for command in &scan.commands {
            if !taken(&entries, &command.name) {
                entries.push(CommandEntry {
                    name: command.name.clone(),
                    hint: command.argument_hint.clone().unwrap_or_default(),
                    description: command.description.clone(),
                    kind: CommandKind::Custom,
                });
            }
        }
        for skill in scan.skills.iter().filter(|s| s.user_invocable) {
            if !taken(&entries, &skill.name) {
                entries.push(CommandEntry {
                    name: skill.name.clone(),
                    hint: String::new(),
                    description: skill
                        .description
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    kind: CommandKind::Skill,
                });
            }
        }
        Self { entries }
    }

    pub fn entries(&self) -> &[CommandEntry] {
        &self.entries
    }

    /// Whether `/name` is sent to the agent as a prompt (a custom command or a skill).
    pub fn sends_prompt(&self, name: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.name == name && e.kind != CommandKind::Builtin)
    }

    /// Entries whose name starts with `prefix`, in directory order.
    pub fn matching(&self, prefix: &str) -> Vec<&CommandEntry> {
        self.entries
            .iter()
            .filter(|e| e.name.starts_with(prefix))
            .collect()
    }

    /// The completions for the input `text`: only while it is `/` plus part of a name.
    pub fn completions(&self, text: &str) -> Vec<&CommandEntry> {
        match completion_prefix(text) {
            Some(prefix) => self.matching(prefix),
            None => Vec::new(),
        }
    }

    /// What Tab turns `text` into: the only match's name plus a space, or the longest
    /// prefix all matches share when that is longer than what is typed; `None` otherwise.
    pub fn complete(&self, text: &str) -> Option<String> {
        let prefix = completion_prefix(text)?;
        let matches = self.matching(prefix);
        let first = matches.first()?;
        if matches.len() == 1 {
            return Some(format!("/{} ", first.name));
        }
        let mut common = first.name.as_str();
        for entry in &matches[1..] {
            let shared = common
                .char_indices()
                .zip(entry.name.chars())
                .take_while(|((_, a), b)| a == b)
                .last()
                .map_or(0, |((i, a), _)| i + a.len_utf8());
            common = &common[..shared];
        }
        (common.len() > prefix.len()).then(|| format!("/{common}"))
    }

    /// The `/help` lines for the extensions (nothing when there are none).
    pub fn help_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (kind, title) in [
            (
                CommandKind::Custom,
                "custom commands (prompts from .dsh/commands, .claude/commands):",
            ),
            (
                CommandKind::Skill,
                "skills (/name in a prompt brings the skill along):",
            ),
        ] {
            let group: Vec<&CommandEntry> =
                self.entries.iter().filter(|e| e.kind == kind).collect();
            if group.is_empty() {
                continue;
            }
            lines.push(title.to_owned());
            for entry in group {
                let usage = format!("/{} {}", entry.name, entry.hint);
                lines.push(format!("  {:<19} {}", usage.trim_end(), entry.description));
            }
        }
        lines
    }
}

/// The name part of `text` while it is `/` followed by a partial name (no space yet).
pub fn completion_prefix(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('/')?;
    let partial = rest
        .bytes()
        .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b':'));
    partial.then_some(rest)
}

/// The completion list drawn under the input box.
#[derive(Clone, Debug)]
pub struct CompletionView<'a> {
    entries: Vec<&'a CommandEntry>,
}

impl<'a> CompletionView<'a> {
    pub fn new(mut entries: Vec<&'a CommandEntry>) -> Self {
        entries.truncate(MAX_COMPLETIONS);
        Self { entries }
    }

    /// Rows it needs.
    pub fn height(&self) -> u16 {
        u16::try_from(self.entries.len()).unwrap_or(0)
    }
}

impl Widget for CompletionView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let dim = Style::new().add_modifier(Modifier::DIM);
        for (entry, y) in self.entries.iter().zip(area.y..area.bottom()) {
            let usage = format!("/{} {}", entry.name, entry.hint);
            let line = Line::from(vec![
                Span::raw(format!("  {:<20}", usage.trim_end())),
                Span::styled(entry.description.clone(), dim),
            ]);
            buf.set_line(area.x, y, &line, area.width);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use dsh_skills::{Command, Skill};
    use std::path::PathBuf;

    fn scan() -> Scan {
        let command = |name: &str, hint: Option<&str>| Command {
            name: name.into(),
            description: format!("the {name} command"),
            argument_hint: hint.map(str::to_owned),
            file: PathBuf::from(format!("/w/.claude/commands/{name}.md")),
            source: "project-claude".into(),
            body: "do it".into(),
        };
        let skill = |name: &str, user: bool| Skill {
            name: name.into(),
            description: format!("the {name}\n skill"),
            when_to_use: None,
            model_invocable: true,
            user_invocable: user,
            file: PathBuf::from("/w/SKILL.md"),
            base_dir: PathBuf::from("/w"),
            source: "project-dsh".into(),
            body: String::new(),
        };
        Scan {
            skills: vec![
                skill("deploy", true),
                skill("fix-issue", true),
                skill("quiet", false),
            ],
            commands: vec![command("fix-issue", Some("NUMBER")), command("model", None)],
            notices: Vec::new(),
        }
    }

    #[test]
    fn builtins_come_from_the_help_table() {
        let names: Vec<String> = CommandDirectory::builtins()
            .entries()
            .iter()
            .map(|e| e.name.clone())
            .collect();
        assert!(
            names.starts_with(&["help".to_owned(), "model".to_owned()]),
            "{names:?}"
        );
        assert!(names.contains(&"quit".to_owned()));
        // Only the commands section counts (not `//text` from the keys section).
        assert!(names.iter().all(|n| !n.starts_with('/')), "{names:?}");
    }

    #[test]
    fn extensions_join_without_shadowing_builtins() {
        let directory = CommandDirectory::with_extensions(&scan());
        assert!(directory.sends_prompt("fix-issue"));
        assert!(directory.sends_prompt("deploy"));
        assert!(!directory.sends_prompt("model"), "a built-in wins");
        assert!(!directory.sends_prompt("quiet"), "not user-invocable");
        let fix: Vec<_> = directory.matching("fix").into_iter().cloned().collect();
        assert_eq!(fix.len(), 1, "the command shadows the skill: {fix:?}");
        assert_eq!(fix[0].kind, CommandKind::Custom);
        assert_eq!(
            directory.help_lines(),
            [
                "custom commands (prompts from .dsh/commands, .claude/commands):",
                "  /fix-issue NUMBER   the fix-issue command",
                "skills (/name in a prompt brings the skill along):",
                "  /deploy             the deploy skill",
            ]
        );
    }

    #[test]
    fn completion_follows_the_typed_prefix() {
        let directory = CommandDirectory::with_extensions(&scan());
        assert_eq!(directory.complete("/fi"), Some("/fix-issue ".into()));
        assert_eq!(directory.complete("/de"), Some("/deploy ".into()));
        assert_eq!(directory.complete("/fix-issue 1"), None);
        assert_eq!(directory.complete("plain"), None);
        assert_eq!(directory.complete("/zzz"), None);
        let names: Vec<&str> = directory
            .completions("/")
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert!(
            names.contains(&"help") && names.contains(&"fix-issue"),
            "{names:?}"
        );
        assert!(directory.completions("/fix-issue now").is_empty());
    }
}
