//! Custom commands: loading, precedence, and `$ARGUMENTS` / `$1`..`$9` substitution.

use super::support::*;
use dsh_skills::{expand, split_arguments, Skills};

#[test]
fn substitution_vectors() {
    let cases: &[(&str, &str, &str)] = &[
        ("Fix $ARGUMENTS.", "the login bug", "Fix the login bug."),
        ("Fix #$1 at $2.", "123 high", "Fix #123 at high."),
        (
            "A=$1 B=$2",
            "\"two words\" 'and more'",
            "A=two words B=and more",
        ),
        ("$1|$2|$3", "a", "a||"),
        ("$ARGUMENTS", "  spaced   out  ", "spaced   out"),
        (
            "No placeholders.",
            "extra words",
            "No placeholders.\n\nARGUMENTS: extra words",
        ),
        ("No placeholders.", "", "No placeholders."),
        ("Cost $5 and $0 and $$1", "x", "Cost  and $0 and $x"),
        ("$10", "a b", "a0"),
        ("$1 $1", "same", "same same"),
        ("$9", "1 2 3 4 5 6 7 8 9", "9"),
        ("Q: $1", "it\\'s", "Q: it's"),
    ];
    for (body, args, want) in cases {
        assert_eq!(&expand(body, args), want, "body {body:?} args {args:?}");
    }
    assert_eq!(
        split_arguments(r#"a "b c" 'd "e"' f\ g "unclosed"#),
        ["a", "b c", "d \"e\"", "f g", "unclosed"]
    );
}

#[test]
fn commands_load_with_frontmatter_or_without_and_the_nearest_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, config) = roots(dir.path());
    let project = &config.command_roots[0].path;
    let user = &config.command_roots[1].path;
    write(
        &project.join("fix-issue.md"),
        "---\ndescription: Fix a tracked issue\nargument-hint: NUMBER [PRIORITY]\nallowed-tools: Bash(git:*)\n---\nFix #$1.\n",
    );
    write(&user.join("fix-issue.md"), "User's version.\n");
    write(
        &user.join("review.md"),
        "# Review the diff carefully\n\nLook at $ARGUMENTS.\n",
    );
    write(&user.join("Bad Name.md"), "x");
    write(
        &user.join("broken.md"),
        "---\ndescription: \"open\n---\nx\n",
    );
    write(&user.join("notes.txt"), "not a command");
    let skills = Skills::new(&config);
    let scan = skills.current();
    let found: Vec<(&str, &str, Option<&str>, &str)> = scan
        .commands
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.description.as_str(),
                c.argument_hint.as_deref(),
                c.body.as_str(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "fix-issue",
                "Fix a tracked issue",
                Some("NUMBER [PRIORITY]"),
                "Fix #$1."
            ),
            (
                "review",
                "Review the diff carefully",
                None,
                "# Review the diff carefully\n\nLook at $ARGUMENTS."
            ),
        ]
    );
    let notices: Vec<String> = skills
        .take_notices()
        .iter()
        .map(ToString::to_string)
        .collect();
    let at = |p: &std::path::Path, f: &str| p.join(f).display().to_string();
    assert_eq!(
        notices,
        [
            format!("{}: skipped: \"Bad Name\" is not a command name (lowercase letters, digits, `-`, `_`, starting with a letter)", at(user, "Bad Name.md")),
            format!("{}: skipped: line 2: unterminated double-quoted string", at(user, "broken.md")),
            format!("{}: command `/fix-issue` is hidden by {}, which takes precedence", at(user, "fix-issue.md"), at(project, "fix-issue.md")),
        ]
    );
    let expansion = skills.expand_line("/fix-issue 42 now").unwrap();
    assert_eq!(expansion.prompt, "Fix #42.");
    assert_eq!(expansion.args, "42 now");
    assert_eq!(skills.expand_line("/unknown 1"), None);
    assert_eq!(skills.expand_line("/fix-issue/x"), None);
    assert_eq!(skills.expand_line("fix-issue 1"), None);
}

#[test]
fn subdirectories_are_namespaces_joined_with_colons() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, config) = roots(dir.path());
    let project = &config.command_roots[0].path;
    write(
        &project.join("frontend/test.md"),
        "Run the frontend tests for $1.\n",
    );
    write(
        &project.join("frontend/forms/check.md"),
        "Check the forms.\n",
    );
    write(&project.join("test.md"), "Run every test.\n");
    write(&project.join(".hidden/x.md"), "never read\n");
    write(&project.join("Notes Dir/y.md"), "never read\n");
    let skills = Skills::new(&config);
    let names: Vec<String> = skills
        .current()
        .commands
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names, ["frontend:forms:check", "frontend:test", "test"]);
    let expansion = skills.expand_line("/frontend:test login").unwrap();
    assert_eq!(expansion.command, "frontend:test");
    assert_eq!(expansion.prompt, "Run the frontend tests for login.");
    assert_eq!(skills.expand_line("/frontend: x"), None);
    assert_eq!(skills.expand_line("/:test"), None);
}
