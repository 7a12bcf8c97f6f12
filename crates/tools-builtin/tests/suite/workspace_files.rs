//! The `WorkspaceFiles` seam: read / write / edit through a surface's files (an editor's
//! unsaved buffers), with the same output, limits, guard and edit rules as on the disk, and
//! the sandbox checked before the files are ever asked.

use dsh_tools_builtin::{
    Edit, EditArgs, Read, ReadArgs, ToolError, ToolOutput, WorkspaceFiles, Write, WriteArgs,
};
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

use super::support::Fixture;

/// In-memory buffers that record every call.
#[derive(Default)]
struct Buffers {
    texts: Mutex<HashMap<PathBuf, String>>,
    calls: Mutex<Vec<String>>,
}

impl Buffers {
    fn set(&self, path: &Path, text: &str) {
        self.texts
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), text.to_owned());
    }

    fn get(&self, path: &Path) -> Option<String> {
        self.texts.lock().unwrap().get(path).cloned()
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl WorkspaceFiles for Buffers {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, std::io::Result<String>> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("read {}", path.display()));
        let text = self.get(path);
        Box::pin(async move { text.ok_or_else(|| std::io::ErrorKind::NotFound.into()) })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, std::io::Result<()>> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("write {}", path.display()));
        self.set(path, text);
        Box::pin(async { Ok(()) })
    }
}

struct Setup {
    fx: Fixture,
    plain: dsh_tools_builtin::ToolEnv,
    buffers: Arc<Buffers>,
}

fn setup() -> Setup {
    let fx = Fixture::new();
    let buffers = Arc::new(Buffers::default());
    let plain = fx.env.clone();
    let mut fx = fx;
    fx.env = fx.env.with_files(buffers.clone());
    Setup { fx, plain, buffers }
}

async fn read(
    env: &dsh_tools_builtin::ToolEnv,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let args = ReadArgs {
        file_path: path.into(),
        offset,
        limit,
    };
    Read.run(args, env, CancellationToken::new()).await
}

async fn write(
    env: &dsh_tools_builtin::ToolEnv,
    path: &str,
    content: &str,
) -> Result<ToolOutput, ToolError> {
    let args = WriteArgs {
        file_path: path.into(),
        content: content.into(),
    };
    Write.run(args, env, CancellationToken::new()).await
}

async fn edit(
    env: &dsh_tools_builtin::ToolEnv,
    path: &str,
    old: &str,
    new: &str,
) -> Result<ToolOutput, ToolError> {
    let args = EditArgs {
        file_path: path.into(),
        old_string: old.into(),
        new_string: new.into(),
        replace_all: false,
    };
    Edit.run(args, env, CancellationToken::new()).await
}

#[tokio::test]
async fn read_serves_the_buffer_with_the_disk_reads_numbering_and_window() {
    let s = setup();
    let path = s.fx.write("a.txt", "on disk\n");
    let buffer = "one\ntwo\nthree\nfour\n";
    s.buffers.set(&path, buffer);
    // The same text on the disk, read the usual way, gives the very same output.
    s.fx.write("same.txt", buffer);
    for (offset, limit) in [(None, None), (Some(2), Some(2)), (Some(4), None)] {
        let through = read(&s.fx.env, "a.txt", offset, limit).await.unwrap();
        let disk = read(&s.plain, "same.txt", offset, limit).await.unwrap();
        assert_eq!(
            through.content.replace("a.txt", "X"),
            disk.content.replace("same.txt", "X")
        );
        assert_eq!(
            through.metadata["lines"], disk.metadata["lines"],
            "window {offset:?} {limit:?}"
        );
    }
    let out = read(&s.fx.env, "a.txt", Some(2), Some(2)).await.unwrap();
    assert!(
        out.content.contains("2: two\n3: three\n"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("on disk"));
    // Past the end, and a missing file, fail as on the disk.
    let past = read(&s.fx.env, "a.txt", Some(9), None).await.unwrap_err();
    assert_eq!(past.code(), "OFFSET_OUT_OF_RANGE");
    let missing = read(&s.fx.env, "missing.txt", None, None)
        .await
        .unwrap_err();
    assert_eq!(
        missing.code(),
        read(&s.plain, "missing.txt", None, None)
            .await
            .unwrap_err()
            .code()
    );
    // Directories are listed from the disk.
    let listing = read(&s.fx.env, ".", None, None).await.unwrap();
    assert!(listing.content.contains("<type>directory</type>"));
}

#[tokio::test]
async fn edit_and_write_go_through_the_buffers_with_the_same_guard_and_rules() {
    let s = setup();
    let path = s.fx.write("a.txt", "disk text\n");
    s.buffers.set(&path, "let x = 1;\nlet y = 1;\n");
    // Not read yet: refused, as on the disk.
    let err = edit(&s.fx.env, "a.txt", "x = 1", "x = 2")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "FILE_NOT_READ");
    read(&s.fx.env, "a.txt", None, None).await.unwrap();
    // Ambiguous and missing matches are judged on the buffer.
    let err = edit(&s.fx.env, "a.txt", "= 1", "= 2").await.unwrap_err();
    assert_eq!(err.code(), "EDIT_AMBIGUOUS");
    let err = edit(&s.fx.env, "a.txt", "disk text", "z")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "EDIT_NO_MATCH");
    let out = edit(&s.fx.env, "a.txt", "x = 1", "x = 2").await.unwrap();
    assert_eq!(
        out.metadata["diffs"][0]["newText"],
        "let x = 2;\nlet y = 1;"
    );
    assert_eq!(s.buffers.get(&path).unwrap(), "let x = 2;\nlet y = 1;\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "disk text\n");
    // The editor changes the buffer behind the session's back: the guard sees it.
    s.buffers.set(&path, "changed\n");
    let err = write(&s.fx.env, "a.txt", "new\n").await.unwrap_err();
    assert_eq!(err.code(), "FILE_CHANGED");
    read(&s.fx.env, "a.txt", None, None).await.unwrap();
    write(&s.fx.env, "a.txt", "new\n").await.unwrap();
    assert_eq!(s.buffers.get(&path).unwrap(), "new\n");
    // A new file is created through the buffers too.
    let created = write(&s.fx.env, "sub/new.txt", "fresh\n").await.unwrap();
    assert_eq!(created.metadata["created"], true);
    assert_eq!(
        s.buffers.get(&s.fx.ws().join("sub/new.txt")).unwrap(),
        "fresh\n"
    );
    assert!(!s.fx.ws().join("sub/new.txt").exists());
}

#[tokio::test]
async fn the_sandbox_is_checked_before_the_buffers_are_asked() {
    let s = setup();
    let outside = s.fx.outside().join("outside.txt");
    s.buffers.set(&outside, "secret\n");
    let err = write(&s.fx.env, outside.to_str().unwrap(), "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    let err = write(&s.fx.env, ".git/config", "x").await.unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    let err = edit(&s.fx.env, "../outside.txt", "secret", "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    assert_eq!(s.buffers.calls(), Vec::<String>::new());
    assert_eq!(s.buffers.get(&outside).unwrap(), "secret\n");
    // A read-only session never writes through them either.
    let ro = s
        .plain
        .with_sandbox_mode(dsh_tools_builtin::SandboxMode::ReadOnly)
        .with_files(s.buffers.clone());
    let err = write(&ro, "a.txt", "x").await.unwrap_err();
    assert_eq!(err.code(), "SANDBOX_DENIED");
    assert_eq!(s.buffers.calls(), Vec::<String>::new());
    // Derived environments keep the buffers.
    let child = s.fx.env.for_child_session("child-1");
    assert!(child.files().is_some());
}
