//! read / write / edit: success paths, the read-before-edit guard, and every refusal.

use dsh_tools::TypedTool;
use dsh_tools_builtin::{
    Edit, EditArgs, Limits, Read, ReadArgs, SandboxMode, ToolError, ToolOutput, Write, WriteArgs,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{fast_limits, Fixture};

async fn read(fx: &Fixture, path: &str) -> Result<ToolOutput, ToolError> {
    read_window(fx, path, None, None).await
}

async fn read_window(
    fx: &Fixture,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    Read.run(
        ReadArgs {
            file_path: path.into(),
            offset,
            limit,
        },
        &fx.env,
        CancellationToken::new(),
    )
    .await
}

async fn write(fx: &Fixture, path: &str, content: &str) -> Result<ToolOutput, ToolError> {
    let args = WriteArgs {
        file_path: path.into(),
        content: content.into(),
    };
    Write.run(args, &fx.env, CancellationToken::new()).await
}

async fn edit(
    fx: &Fixture,
    path: &str,
    old: &str,
    new: &str,
    all: bool,
) -> Result<ToolOutput, ToolError> {
    let args = EditArgs {
        file_path: path.into(),
        old_string: old.into(),
        new_string: new.into(),
        replace_all: all,
    };
    Edit.run(args, &fx.env, CancellationToken::new()).await
}

#[tokio::test]
async fn read_matches_the_original_format_and_metadata() {
    let fx = Fixture::new();
    let path = fx.write("README.md", "# project\n\nA tiny sample.\n");
    let out = read(&fx, "README.md").await.unwrap();
    assert_eq!(
        out.content,
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n1: # project\n2: \n3: A tiny sample.\n\n(End of file - total 3 lines)\n</content>",
            path.display()
        )
    );
    assert_eq!(
        out.metadata,
        json!({
            "path": path.display().to_string(), "offset": 1,
            "lines": [{"number": 1, "text": "# project"}, {"number": 2, "text": ""}, {"number": 3, "text": "A tiny sample."}],
            "totalLines": 3, "lang": "md"
        })
    );
}

#[tokio::test]
async fn read_windows_and_caps() {
    let fx = Fixture::with(|b| {
        b.limits(Limits {
            read_max_line_chars: 10,
            read_default_lines: 5,
            ..fast_limits()
        })
    });
    let text: String =
        (1..=12).map(|i| format!("line {i}\n")).collect::<String>() + &"x".repeat(30);
    let path = fx.write("notes.txt", &text);
    let out = read_window(&fx, "notes.txt", Some(3), Some(2))
        .await
        .unwrap();
    assert_eq!(
        out.content,
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n3: line 3\n4: line 4\n\n(Showing lines 3-4 of 13. Use offset=5 to continue.)\n</content>",
            path.display()
        )
    );
    assert_eq!(out.metadata["nextOffset"], 5);
    // limit is capped by the default/maximum, and long lines are shortened
    let out = read_window(&fx, "notes.txt", Some(11), Some(100))
        .await
        .unwrap();
    assert!(
        out.content.contains(
            "13: xxxxxxxxxx… (line truncated to 10 characters)\n\n(End of file - total 13 lines)"
        ),
        "{}",
        out.content
    );
    let err = read_window(&fx, "notes.txt", Some(14), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OFFSET_OUT_OF_RANGE");
    assert!(err.to_string().contains("(13 lines)"));
}

#[tokio::test]
async fn read_byte_budget_stops_early_and_says_where_to_continue() {
    let fx = Fixture::with(|b| {
        b.limits(Limits {
            read_max_bytes: 20,
            ..fast_limits()
        })
    });
    fx.write("a.txt", "aaaaaaaa\nbbbbbbbb\ncccccccc\ndddddddd\n");
    let out = read(&fx, "a.txt").await.unwrap();
    assert!(out.content.contains("1: aaaaaaaa\n2: bbbbbbbb\n\n(Output capped at 20 bytes: showing lines 1-2 of 4. Use offset=3 to continue.)"), "{}", out.content);
}

#[tokio::test]
async fn read_errors_missing_binary_image_and_empty() {
    let fx = Fixture::new();
    assert_eq!(
        read(&fx, "nope.txt").await.unwrap_err().code(),
        "FILE_NOT_FOUND"
    );
    std::fs::write(fx.ws().join("blob.bin"), b"abc\0def").unwrap();
    let err = read(&fx, "blob.bin").await.unwrap_err();
    assert_eq!(err.code(), "BINARY_FILE");
    assert!(err.to_string().contains("contains NUL bytes"));
    std::fs::write(fx.ws().join("latin1.txt"), b"caf\xe9\n").unwrap();
    assert_eq!(
        read(&fx, "latin1.txt").await.unwrap_err().code(),
        "BINARY_FILE"
    );
    std::fs::write(fx.ws().join("pic.dat"), b"\x89PNG\r\n\x1a\nrest").unwrap();
    let err = read(&fx, "pic.dat").await.unwrap_err();
    assert_eq!(err.code(), "IMAGE_FILE");
    assert!(err.to_string().contains("does not accept images"));
    fx.write("empty.txt", "");
    let out = read(&fx, "empty.txt").await.unwrap();
    assert!(out
        .content
        .ends_with("<content>\n(File is empty)\n</content>"));
}

#[tokio::test]
async fn read_image_hint_depends_on_the_model() {
    let fx = Fixture::with(|b| b.model_accepts_images(true));
    std::fs::write(fx.ws().join("a.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    let err = read(&fx, "a.png").await.unwrap_err();
    assert!(err.to_string().contains("use the read_image tool"));
}

#[tokio::test]
async fn read_lists_directories() {
    let fx = Fixture::new();
    fx.write("src/main.rs", "fn main() {}\n");
    fx.write("b.txt", "");
    let out = read(&fx, ".").await.unwrap();
    assert_eq!(
        out.content,
        format!("<path>{}</path>\n<type>directory</type>\n<entries>\nb.txt\nsrc/\n(2 entries)\n</entries>", fx.ws().display())
    );
}

#[tokio::test]
async fn write_creates_new_files_with_parents() {
    let fx = Fixture::new();
    let out = write(&fx, "deep/dir/new.txt", "hello\n").await.unwrap();
    let path = fx.ws().join("deep/dir/new.txt");
    assert_eq!(
        out.content,
        format!("The file {} has been created successfully.", path.display())
    );
    assert_eq!(
        out.metadata,
        json!({"diffs": [{"path": "deep/dir/new.txt", "oldText": "", "newText": "hello"}],
               "path": path.display().to_string(), "created": true, "bytes": 6})
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
    // a file the tools wrote themselves can be rewritten without a read
    write(&fx, "deep/dir/new.txt", "again\n").await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "again\n");
}

#[tokio::test]
async fn write_requires_a_fresh_read_of_existing_files() {
    let fx = Fixture::new();
    let path = fx.write("a.txt", "original\n");
    let err = write(&fx, "a.txt", "new\n").await.unwrap_err();
    assert_eq!(err.code(), "FILE_NOT_READ");
    assert_eq!(
        err.to_string(),
        format!("{} exists but has not been read in this session. Read it with the read tool first, then retry.", path.display())
    );
    read(&fx, "a.txt").await.unwrap();
    std::fs::write(&path, "changed by someone else\n").unwrap();
    let err = write(&fx, "a.txt", "new\n").await.unwrap_err();
    assert_eq!(err.code(), "FILE_CHANGED");
    assert!(err.to_string().contains("Read it again"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "changed by someone else\n"
    );
    read(&fx, "a.txt").await.unwrap();
    let out = write(&fx, "a.txt", "new\n").await.unwrap();
    assert!(out.content.ends_with("has been overwritten successfully."));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
}

#[tokio::test]
async fn write_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let path = fx.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    read(&fx, "run.sh").await.unwrap();
    write(&fx, "run.sh", "#!/bin/sh\necho hi\n").await.unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[tokio::test]
async fn edit_replaces_a_unique_match_like_the_original() {
    let fx = Fixture::new();
    let path = fx.write(
        "notes.txt",
        "TODO: write more tests\nstatus: draft\nowner: nobody\n",
    );
    read(&fx, "notes.txt").await.unwrap();
    let out = edit(&fx, "notes.txt", "status: draft", "status: reviewed", false)
        .await
        .unwrap();
    assert_eq!(
        out.content,
        format!("The file {} has been updated successfully.", path.display())
    );
    assert_eq!(
        out.metadata,
        json!({"diffs": [{"path": "notes.txt",
            "oldText": "TODO: write more tests\nstatus: draft\nowner: nobody",
            "newText": "TODO: write more tests\nstatus: reviewed\nowner: nobody"}],
            "replacements": 1})
    );
    // consecutive edits need no re-read
    edit(&fx, "notes.txt", "owner: nobody", "owner: me", false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "TODO: write more tests\nstatus: reviewed\nowner: me\n"
    );
}

#[tokio::test]
async fn edit_ambiguous_and_replace_all() {
    let fx = Fixture::new();
    let path = fx.write("a.txt", "x = 1\ny = 2\nx = 1\n");
    read(&fx, "a.txt").await.unwrap();
    let err = edit(&fx, "a.txt", "x = 1", "x = 9", false)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "EDIT_AMBIGUOUS");
    assert!(err.to_string().starts_with(&format!(
        "old_string matches 2 times in {} (at lines 1, 3).",
        path.display()
    )));
    let out = edit(&fx, "a.txt", "x = 1", "x = 9", true).await.unwrap();
    assert!(out.content.ends_with("(2 occurrences replaced)"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 9\ny = 2\nx = 9\n"
    );
}

#[tokio::test]
async fn edit_not_found_offers_the_nearest_lines() {
    let fx = Fixture::new();
    let path = fx.write(
        "main.rs",
        "fn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n",
    );
    read(&fx, "main.rs").await.unwrap();
    let err = edit(
        &fx,
        "main.rs",
        "let totl = compute(1, 2);",
        "let t = 0;",
        false,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "EDIT_NO_MATCH");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "old_string was not found in {}. The most similar text in the file:\n--- line 2 ---\n    let total = compute(1, 2);",
            path.display()
        )),
        "{message}"
    );
    let err = edit(&fx, "main.rs", "let total  =  compute(1, 2);", "x", false)
        .await
        .unwrap_err();
    assert!(err
        .to_string()
        .contains("It does match if whitespace is ignored"));
}

#[tokio::test]
async fn edit_guards_and_argument_errors() {
    let fx = Fixture::new();
    let path = fx.write("a.txt", "hello\n");
    assert_eq!(
        edit(&fx, "a.txt", "hello", "bye", false)
            .await
            .unwrap_err()
            .code(),
        "FILE_NOT_READ"
    );
    read(&fx, "a.txt").await.unwrap();
    std::fs::write(&path, "hello world\n").unwrap();
    assert_eq!(
        edit(&fx, "a.txt", "hello", "bye", false)
            .await
            .unwrap_err()
            .code(),
        "FILE_CHANGED"
    );
    assert_eq!(
        edit(&fx, "a.txt", "", "bye", false)
            .await
            .unwrap_err()
            .code(),
        "EDIT_EMPTY_OLD_STRING"
    );
    assert_eq!(
        edit(&fx, "a.txt", "same", "same", false)
            .await
            .unwrap_err()
            .code(),
        "EDIT_NO_CHANGE"
    );
    assert_eq!(
        edit(&fx, "missing.txt", "a", "b", false)
            .await
            .unwrap_err()
            .code(),
        "FILE_NOT_FOUND"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello world\n");
}

#[tokio::test]
async fn file_tools_enforce_the_sandbox_roots() {
    let fx = Fixture::new();
    let outside = fx.outside().join("outside.txt");
    let err = write(&fx, outside.to_str().unwrap(), "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    assert!(!outside.exists());
    // .git is read-only in workspace-write
    let err = write(&fx, ".git/config", "x").await.unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    assert!(err.to_string().contains("git metadata is protected"));
    // the private temp dir is writable
    let tmp_file = fx.env.temp_dir().join("scratch.txt");
    write(&fx, tmp_file.to_str().unwrap(), "ok").await.unwrap();
    // a symlink inside the workspace that points outside cannot be written through
    std::os::unix::fs::symlink(fx.outside(), fx.ws().join("escape")).unwrap();
    let err = write(&fx, "escape/through-link.txt", "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    assert!(!fx.outside().join("through-link.txt").exists());
    // nor can `..` climb out
    assert_eq!(
        write(&fx, "../climb.txt", "x").await.unwrap_err().code(),
        "SANDBOX_DENIED"
    );
}

#[tokio::test]
async fn write_and_edit_break_a_hard_link_instead_of_writing_through_it() {
    use std::os::unix::fs::MetadataExt;
    let fx = Fixture::new();
    let outside = fx.outside().join("outside.txt");
    std::fs::write(&outside, "original\n").unwrap();
    std::fs::hard_link(&outside, fx.ws().join("alias.txt")).unwrap();
    std::fs::hard_link(&outside, fx.ws().join("alias2.txt")).unwrap();
    assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 3);

    // write replaces the workspace name with a new file; the outside one keeps its content
    read(&fx, "alias.txt").await.unwrap();
    write(&fx, "alias.txt", "written\n").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("alias.txt")).unwrap(),
        "written\n"
    );
    // edit does the same
    read(&fx, "alias2.txt").await.unwrap();
    edit(&fx, "alias2.txt", "original", "edited", false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("alias2.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original\n");
    assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
}

#[tokio::test]
async fn read_only_mode_refuses_every_write_but_reads() {
    let fx = Fixture::mode(SandboxMode::ReadOnly);
    fx.write("a.txt", "a\n");
    read(&fx, "a.txt").await.unwrap();
    let err = write(&fx, "a.txt", "b").await.unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    assert!(err.to_string().contains("read-only mode"));
    assert_eq!(
        edit(&fx, "a.txt", "a", "b", false)
            .await
            .unwrap_err()
            .code(),
        "SANDBOX_DENIED"
    );
    assert_eq!(
        std::fs::read_to_string(fx.ws().join("a.txt")).unwrap(),
        "a\n"
    );
}

#[tokio::test]
async fn schemas_and_concurrency_flags() {
    assert!(Read.is_concurrency_safe(&json!({})));
    assert!(!Write.is_concurrency_safe(&json!({})));
    assert!(!Edit.is_concurrency_safe(&json!({})));
    assert_eq!(Read.name(), "read");
    assert_eq!(
        Edit.parameters()["required"],
        json!(["file_path", "old_string", "new_string"])
    );
    let args: ReadArgs = serde_json::from_value(json!({"file_path": "a", "offset": 2.0})).unwrap();
    assert_eq!(
        args,
        ReadArgs {
            file_path: "a".into(),
            offset: Some(2),
            limit: None
        }
    );
}
