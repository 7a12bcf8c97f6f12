//! glob and grep: matching, ordering, caps with spill files, .gitignore and errors.

use std::time::{Duration, SystemTime};

use dsh_tools::TypedTool;
use dsh_tools_builtin::scrub::env_pair;
use dsh_tools_builtin::{Glob, GlobArgs, Grep, GrepArgs, Limits, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{base_env, fast_limits, Fixture};

async fn glob(fx: &Fixture, pattern: &str, path: Option<&str>) -> ToolOutput {
    let args = GlobArgs {
        pattern: pattern.into(),
        path: path.map(Into::into),
    };
    Glob.run(args, &fx.env, CancellationToken::new())
        .await
        .unwrap()
}

async fn grep(fx: &Fixture, pattern: &str, include: Option<&str>) -> ToolOutput {
    let args = GrepArgs {
        pattern: pattern.into(),
        path: None,
        include: include.map(Into::into),
    };
    Grep.run(args, &fx.env, CancellationToken::new())
        .await
        .unwrap()
}

/// Sets a file's mtime `age_secs` seconds in the past.
fn age(path: &std::path::Path, age_secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age_secs))
        .unwrap();
}

#[tokio::test]
async fn glob_lists_files_newest_first_and_respects_gitignore() {
    let fx = Fixture::new();
    let old = fx.write("src/old.rs", "");
    let new = fx.write("src/deep/new.rs", "");
    let hidden = fx.write(".config/h.rs", "");
    fx.write("target/debug/gen.rs", "");
    fx.write(".gitignore", "target/\n");
    fx.write(".git/x.rs", "");
    fx.write("notes.md", "");
    age(&old, 300);
    age(&new, 100);
    age(&hidden, 200);
    let out = glob(&fx, "*.rs", None).await;
    assert_eq!(
        out.content,
        [
            new.display().to_string(),
            hidden.display().to_string(),
            old.display().to_string()
        ]
        .join("\n")
    );
    assert_eq!(
        out.metadata,
        json!({"count": 3, "truncated": false, "spillPath": null})
    );
    // anchored patterns match relative paths
    assert_eq!(
        glob(&fx, "src/*.rs", None).await.content,
        old.display().to_string()
    );
    assert_eq!(
        glob(&fx, "*.rs", Some("src/deep")).await.content,
        new.display().to_string()
    );
}

#[tokio::test]
async fn glob_caps_at_the_limit_and_spills_the_full_list() {
    let fx = Fixture::with(|b| {
        b.limits(Limits {
            glob_max_results: 3,
            ..fast_limits()
        })
    });
    let mut paths = Vec::new();
    for i in 0..5 {
        let p = fx.write(&format!("f{i}.txt"), "");
        age(&p, 100 * (i + 1));
        paths.push(p.display().to_string());
    }
    let out = glob(&fx, "*.txt", None).await;
    let spill = out.metadata["spillPath"].as_str().unwrap().to_string();
    assert_eq!(
        out.content,
        format!(
            "{}\n\n(Showing the 3 most recently modified of 5 matching files. The complete list, in the same order, is saved at {spill}.)",
            paths[..3].join("\n")
        )
    );
    assert_eq!(
        std::fs::read_to_string(&spill).unwrap(),
        paths.join("\n") + "\n"
    );
    assert_eq!(out.metadata["truncated"], true);
}

#[tokio::test]
async fn glob_no_match_and_bad_pattern() {
    let fx = Fixture::new();
    let out = glob(&fx, "*.zig", None).await;
    assert_eq!(
        out.content,
        format!(
            "No files found matching pattern \"*.zig\" in {}.",
            fx.ws().display()
        )
    );
    let err = Glob
        .run(
            GlobArgs {
                pattern: "a[".into(),
                path: None,
            },
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_PATTERN");
    let err = Glob
        .run(
            GlobArgs {
                pattern: "*".into(),
                path: Some("missing".into()),
            },
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "FILE_NOT_FOUND");
}

#[tokio::test]
async fn grep_groups_matches_by_file_with_line_numbers() {
    let fx = Fixture::new();
    let a = fx.write("a.rs", "fn alpha() {}\nlet x = 1;\nfn beta() {}\n");
    let b = fx.write("sub/b.ts", "function gamma() {}\n");
    fx.write("ignored/c.rs", "fn hidden_by_gitignore() {}\n");
    fx.write(".gitignore", "ignored/\n");
    std::fs::write(fx.ws().join("blob.bin"), b"fn binary\0\n").unwrap();
    let out = grep(&fx, r"(fn|function) \w+", None).await;
    assert_eq!(
        out.content,
        format!(
            "Found 3 matches in 2 files\n\n{}\n1: fn alpha() {{}}\n3: fn beta() {{}}\n\n{}\n1: function gamma() {{}}\n",
            a.display(),
            b.display()
        )
    );
    assert_eq!(
        out.metadata,
        json!({"matches": 3, "files": 2, "truncated": false, "spillPath": null})
    );
    // include filters file names
    let out = grep(&fx, "alpha|gamma", Some("*.ts")).await;
    assert_eq!(out.metadata["matches"], 1);
}

#[tokio::test]
async fn grep_caps_matches_and_spills_the_full_list() {
    let fx = Fixture::with(|b| {
        b.limits(Limits {
            grep_max_matches: 2,
            ..fast_limits()
        })
    });
    let path = fx.write("many.txt", "hit 1\nhit 2\nhit 3\nmiss\nhit 4\n");
    let out = grep(&fx, "hit", None).await;
    let spill = out.metadata["spillPath"].as_str().unwrap().to_string();
    assert_eq!(
        out.content,
        format!("Found 4 matches in 1 files\n\n{}\n1: hit 1\n2: hit 2\n\n(Showing 2 of 4 matches. The complete list is saved at {spill}.)", path.display())
    );
    assert_eq!(
        std::fs::read_to_string(&spill).unwrap(),
        format!(
            "Found 4 matches in 1 files\n\n{}\n1: hit 1\n2: hit 2\n3: hit 3\n5: hit 4\n",
            path.display()
        )
    );
}

#[tokio::test]
async fn grep_scrubs_secrets_and_reports_no_match_and_bad_regex() {
    let fx = Fixture::with(|b| {
        let mut env = base_env();
        env.push(env_pair("MY_SERVICE_TOKEN", "tok-0123456789abcdef"));
        b.base_env(env)
    });
    fx.write(".env", "MY_SERVICE_TOKEN=tok-0123456789abcdef\n");
    let out = grep(&fx, "SERVICE", None).await;
    assert!(
        out.content.ends_with("1: MY_SERVICE_TOKEN=[REDACTED]\n"),
        "{}",
        out.content
    );
    let out = grep(&fx, "nothing-like-this", None).await;
    assert_eq!(
        out.content,
        format!(
            "No matches found for pattern \"nothing-like-this\" in {}.",
            fx.ws().display()
        )
    );
    let err = Grep
        .run(
            GrepArgs {
                pattern: "(".into(),
                path: None,
                include: None,
            },
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_PATTERN");
}

#[tokio::test]
async fn grep_searches_a_single_named_file() {
    let fx = Fixture::new();
    let a = fx.write("a.txt", "x\nneedle\n");
    fx.write("b.txt", "needle\n");
    let args = GrepArgs {
        pattern: "needle".into(),
        path: Some("a.txt".into()),
        include: Some("*.rs".into()),
    };
    let out = Grep
        .run(args, &fx.env, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.content,
        format!("Found 1 matches in 1 files\n\n{}\n2: needle\n", a.display())
    );
}

#[tokio::test]
async fn search_tools_are_concurrency_safe() {
    assert!(Glob.is_concurrency_safe(&json!({})));
    assert!(Grep.is_concurrency_safe(&json!({})));
}
