//! Roots, precedence and the frontmatter rules, with the notices they give.

use super::support::*;
use dsh_skills::{Notice, Skills};

fn notices(skills: &Skills) -> Vec<String> {
    skills
        .take_notices()
        .iter()
        .map(Notice::to_string)
        .collect()
}

#[test]
fn bundles_and_flat_files_load_nearest_root_first() {
    let dir = tempfile::tempdir().unwrap();
    let (project, user, config) = roots(dir.path());
    write(
        &project.join("deploy/SKILL.md"),
        &skill("deploy", "Project deploy."),
    );
    write(&project.join("deploy/scripts/ship.sh"), "echo ship");
    write(&user.join("deploy.md"), &skill("deploy", "User deploy."));
    write(
        &user.join("review.md"),
        &skill("review", "Review a change."),
    );
    // Deeper than one level is not searched.
    write(&project.join("a/b/SKILL.md"), &skill("deep", "Too deep."));
    let skills = Skills::new(&config);
    let scan = skills.current();
    let found: Vec<(&str, &str, &str)> = scan
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str(), s.source.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("deploy", "Project deploy.", "project-dsh"),
            ("review", "Review a change.", "user-claude")
        ]
    );
    assert_eq!(scan.skills[0].base_dir, project.join("deploy"));
    assert_eq!(scan.skills[1].base_dir, user);
    assert_eq!(scan.skills[0].body, "The deploy steps.");
    assert_eq!(
        notices(&skills),
        [format!(
            "{}: `name`: skill `deploy` is hidden by the one in {}, which takes precedence",
            user.join("deploy.md").display(),
            project.join("deploy/SKILL.md").display()
        )]
    );
}

#[test]
fn bad_frontmatter_drops_only_that_skill_with_a_notice_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    let cases = [
        ("a-readme.md", "# Just a readme\n"),
        ("b-unclosed.md", "---\nname: b\ndescription: x\n"),
        ("c-syntax.md", "---\nname: c\ndescription x\n---\n"),
        (
            "d-flag.md",
            "---\nname: d\ndescription: x\ndisable-model-invocation: sometimes\n---\n",
        ),
        (
            "e-camel.md",
            "---\nname: e\ndescription: x\nuserInvocable: false\n---\n",
        ),
        ("f-name.md", "---\nname: Not_Kebab\ndescription: x\n---\n"),
        ("g-nodesc.md", "---\nname: g\n---\nbody\n"),
        ("h-emptydesc.md", "---\nname: h\ndescription: \"\"\n---\n"),
        (
            "i-listflag.md",
            "---\nname: i\ndescription: x\nuser-invocable:\n  - yes\n---\n",
        ),
    ];
    for (file, text) in cases {
        write(&project.join(file), text);
    }
    write(&project.join("ok.md"), &skill("ok", "Fine."));
    let skills = Skills::new(&config);
    let names: Vec<String> = skills
        .current()
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["ok"]);
    let at = |file: &str| project.join(file).display().to_string();
    assert_eq!(
        notices(&skills),
        [
            format!("{}: skipped: no frontmatter (the first line must be `---`)", at("a-readme.md")),
            format!("{}: skipped: the frontmatter opened on line 1 is never closed with `---`", at("b-unclosed.md")),
            format!("{}: skipped: line 3: expected `key: value`", at("c-syntax.md")),
            format!("{}: `disable-model-invocation`: skipped: must be a boolean (true/false, yes/no, on/off, 1/0)", at("d-flag.md")),
            format!("{}: `userInvocable`: skipped: camelCase spelling is not read; use `disable-model-invocation` or `user-invocable`", at("e-camel.md")),
            format!("{}: `name`: skipped: \"Not_Kebab\" is not kebab-case (a-z, 0-9, single hyphens)", at("f-name.md")),
            format!("{}: `description`: skipped: missing", at("g-nodesc.md")),
            format!("{}: `description`: skipped: must be a non-empty string", at("h-emptydesc.md")),
            format!("{}: `user-invocable`: skipped: must be a boolean (true/false, yes/no, on/off, 1/0)", at("i-listflag.md")),
        ]
    );
}

#[test]
fn invocation_flags_set_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    let with = |name: &str, extra: &str| {
        format!("---\nname: {name}\ndescription: d\n{extra}\n---\nbody\n")
    };
    write(&project.join("a.md"), &with("a", ""));
    write(
        &project.join("b.md"),
        &with("b", "disable-model-invocation: yes"),
    );
    write(&project.join("c.md"), &with("c", "user-invocable: \"OFF\""));
    write(
        &project.join("d.md"),
        &with("d", "disable-model-invocation: 1\nuser-invocable: 0"),
    );
    write(
        &project.join("e.md"),
        &with(
            "e",
            "whenToUse: when asked\nlicense: MIT\nallowed-tools: [bash]",
        ),
    );
    let skills = Skills::new(&config);
    let policy: Vec<(String, bool, bool)> = skills
        .current()
        .skills
        .iter()
        .map(|s| (s.name.clone(), s.model_invocable, s.user_invocable))
        .collect();
    let row = |n: &str, m, u| (n.to_owned(), m, u);
    assert_eq!(
        policy,
        [
            row("a", true, true),
            row("b", false, true),
            row("c", true, false),
            row("d", false, false),
            row("e", true, true)
        ]
    );
    assert_eq!(
        skills.current().skills[4].when_to_use.as_deref(),
        Some("when asked")
    );
    assert!(notices(&skills).is_empty());
}

#[test]
fn oversized_and_special_files_are_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    let big = format!(
        "{}{}",
        skill("big", "Big."),
        "x".repeat(dsh_skills::MAX_FILE_BYTES as usize)
    );
    write(&project.join("big.md"), &big);
    // A FIFO in a skill's place is never opened (opening it could block).
    let fifo = project.join("fifo.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let skills = Skills::new(&config);
    assert!(skills.current().skills.is_empty());
    let notices = notices(&skills);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("over the 262144-byte limit"),
        "{notices:?}"
    );
}
