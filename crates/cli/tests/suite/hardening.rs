//! The real `dsh` against hostile surroundings: a repair racing a live writer, environment
//! variables and workspace paths that are not UTF-8, a closed terminal (SIGHUP), a full
//! disk on stdout, devices, FIFOs and directories where files belong, temp areas of killed
//! runs, an argument list the kernel refuses, and a plain log under the zstd default.

use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Fault, Reply, Script};
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::io::BufRead;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` to completion off the async thread; kills it and fails after `limit`
/// (the defects here include hangs).
async fn finish(mut command: Command, limit: Duration) -> Output {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid = child.id() as i32;
    let (sender, receiver) = std::sync::mpsc::channel();
    // Reading both pipes to the end while it runs: a child blocked on a full pipe never exits.
    std::thread::spawn(move || sender.send(child.wait_with_output().unwrap()));
    tokio::task::spawn_blocking(move || match receiver.recv_timeout(limit) {
        Ok(output) => output,
        Err(_) => {
            // SAFETY: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let output = receiver.recv().unwrap();
            let stderr = text(&output.stderr);
            let tail = &stderr[stderr.len().saturating_sub(2000)..];
            panic!("dsh did not finish within {limit:?}; stderr ends:\n{tail}");
        }
    })
    .await
    .unwrap()
}

const LIMIT: Duration = Duration::from_secs(60);

/// Polls `done` every 20 ms for up to 20 s.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

fn process_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks whether the process exists.
    unsafe { libc::kill(pid, 0) != 0 && *libc::__errno_location() == libc::ESRCH }
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

/// The events of a `--json` run's first line: its session id, read while it still runs.
fn first_json_line(child: &mut Child) -> Value {
    let stdout = child.stdout.as_mut().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A model that runs `command` in bash, then answers `done`.
async fn bash_then_done(command: &str) -> dsh_testkit::mock_llm::MockServer {
    serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": command, "description": "test"}),
            ))
            .respond(Reply::text("done")),
    )
    .await
}

#[tokio::test]
async fn repair_refuses_a_session_a_running_dsh_is_writing_and_leaves_it_alone() {
    let stalled = Reply::text("an answer that stalls half way through")
        .chunks(6)
        .with_fault(Fault::Stall {
            after_chunks: Some(2),
        });
    let server = serve(Script::new().respond(stalled)).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut command = sandbox.command(&["run", "--json", "start"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut live = command.spawn().unwrap();
    let id = first_json_line(&mut live)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    server.wait_for_requests(1).await;
    // The open turn is on disk (a checkpoint flushed it before the request).
    let session = dsh_protocol::SessionId::new(id.clone());
    assert!(eventually(|| sandbox.store().locate(&session).is_ok()).await);

    let repair = finish(sandbox.command(&["sessions", "repair", &id]), LIMIT).await;
    assert_eq!(repair.status.code(), Some(1), "{}", text(&repair.stdout));
    let said = text(&repair.stderr);
    assert!(
        said.contains(&format!(
            "session {id} is open for writing in another process (a running `dsh`);"
        )) && said.contains("was not touched"),
        "{said}"
    );
    assert_eq!(text(&repair.stdout), "");
    let log = sandbox.store().locate(&session).unwrap();
    assert_eq!(
        names_in(log.parent().unwrap()),
        ["session.jsonl.zstd"],
        "no backup, no temp file"
    );

    // The live run closes its turn normally and the log is sound.
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(live.id() as i32, libc::SIGTERM) }, 0);
    let status = tokio::task::spawn_blocking(move || live.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    assert!(text(&verify.stdout).starts_with(&format!("ok       {id}")));
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "aborted", "reason": {"kind": "user"}})]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_non_utf8_environment_reaches_commands_intact() {
    let server = bash_then_done("printf '%s|%s' \"$OLDPWD\" \"$RAW_BYTES_VAR\" > env.bin").await;
    let sandbox = Sandbox::new().with_server(&server);
    // OLDPWD after visiting a directory whose name is not UTF-8 (bash keeps an inherited
    // OLDPWD only when it names a directory).
    let visited = sandbox.cwd.path().join(OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&visited).unwrap();
    let raw = OsString::from_vec(b"\xff\xfeodd".to_vec());
    let mut command = sandbox.command(&["run", "--approval", "never", "show OLDPWD"]);
    command.env("OLDPWD", &visited).env("RAW_BYTES_VAR", &raw);
    // It used to panic: exit 101.
    let output = finish(command, LIMIT).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let mut expected = visited.as_os_str().as_bytes().to_vec();
    expected.push(b'|');
    expected.extend_from_slice(raw.as_bytes());
    assert_eq!(
        std::fs::read(sandbox.cwd.path().join("env.bin")).unwrap(),
        expected
    );

    // A diagnostics switch that is not text is ignored, and says so.
    let mut command = sandbox.command(&["config", "show"]);
    command.env("DSH_LOG", &raw);
    let output = finish(command, LIMIT).await;
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        text(&output.stderr),
        "dsh: warning: DSH_LOG is not valid UTF-8, so it is ignored\n"
    );

    // A variable dsh reads as text must be text, and the error says which one.
    let mut command = sandbox.command(&["run", "hello"]);
    command.env("DEEPSEEK_API_KEY", &raw);
    let output = finish(command, LIMIT).await;
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "dsh: error: environment variable DEEPSEEK_API_KEY is not valid UTF-8 (it holds the \
         API key of provider route `deepseek-official`); set it to UTF-8 text\n"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn workspaces_that_differ_only_in_non_utf8_bytes_keep_their_own_sessions() {
    let server = serve(
        Script::new()
            .respond(Reply::text("in a"))
            .respond(Reply::text("in b"))
            .respond(Reply::text("a again")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let dir = |bytes: &[u8]| {
        let path = sandbox.cwd.path().join(OsStr::from_bytes(bytes));
        std::fs::create_dir(&path).unwrap();
        path
    };
    let (a, b) = (dir(b"w\xff"), dir(b"w\xfe"));
    let in_dir = |path: &PathBuf, args: &[&str]| {
        let mut command = sandbox.command(args);
        command.current_dir(path);
        command
    };
    let first = finish(in_dir(&a, &["run", "one"]), LIMIT).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let in_a = session_of(&first);
    // Both paths read "w\u{FFFD}" lossily, so --continue in b resumed a's session.
    let refused = finish(in_dir(&b, &["run", "--continue", "two"]), LIMIT).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("no stored session ran in"));
    let second = finish(in_dir(&b, &["run", "two"]), LIMIT).await;
    let in_b = session_of(&second);
    assert_ne!(in_a, in_b);
    let again = finish(in_dir(&a, &["run", "--continue", "three"]), LIMIT).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(session_of(&again), in_a);
    // Two project directories, one per workspace.
    let projects: Vec<String> = names_in(&sandbox.sessions_root())
        .into_iter()
        .filter(|n| n.starts_with("--"))
        .collect();
    assert_eq!(projects.len(), 2, "{projects:?}");
    assert!(
        projects.iter().all(|p| p.contains("~0000F")),
        "{projects:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn sighup_closes_the_turn_stops_the_command_and_cleans_up() {
    let server = bash_then_done("echo $$ > pid; sleep 30; touch after").await;
    let mut sandbox = Sandbox::new().with_server(&server);
    let tmp = tempfile::tempdir().unwrap();
    sandbox
        .env
        .push(("TMPDIR".into(), tmp.path().display().to_string()));
    let mut command = sandbox.command(&["run", "--json", "--approval", "never", "wait"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid_file = sandbox.cwd.path().join("pid");
    let read_pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    assert!(
        eventually(|| read_pid().is_some()).await,
        "the command never started"
    );
    let command_pid = read_pid().unwrap();
    // SAFETY: signalling our own child, as a closing terminal would.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    // It used to die of the signal (exit 129) with the turn open and the command running.
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lines = json_lines(&output);
    let id = lines[0]["id"].as_str().unwrap().to_owned();
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "aborted", "reason": {"kind": "user"}})]
    );
    assert!(
        eventually(|| process_gone(command_pid)).await,
        "the command outlived dsh"
    );
    assert!(!sandbox.cwd.path().join("after").exists());
    assert_eq!(
        names_in(tmp.path()),
        Vec::<String>::new(),
        "temp areas left"
    );
    server.shutdown().await;
}

/// Runs every command that writes to stdout (two turns, show, export, list, verify) against
/// the `text` fixture with `stdout` as its standard output, and hands each command's
/// arguments, exit status and stderr to `check`.
async fn each_stdout_command(
    stdout: impl Fn() -> Stdio,
    check: impl Fn(&[&str], Option<i32>, &str),
) {
    let server = serve(
        Script::new()
            .respond(Reply::text("an answer nobody gets"))
            .respond(Reply::text("as JSON lines")),
    )
    .await;
    let sandbox = Sandbox::new()
        .with_server(&server)
        .with_fixture("text", "zstd");
    let id = fixture_id("text", "zstd");
    for args in [
        &["run", "hello"][..],
        &["run", "--json", "hello"],
        &["sessions", "show", &id],
        &["sessions", "show", "--json", &id],
        &["sessions", "export", &id, "-o", "-"],
        &["sessions", "list", "--all"],
        &["sessions", "verify", &id],
    ] {
        let mut command = sandbox.command(args);
        command.stderr(Stdio::piped()).stdout(stdout());
        let output = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        check(args, output.status.code(), &text(&output.stderr));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn stdout_on_a_full_device_is_an_error() {
    let full = || {
        Stdio::from(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    each_stdout_command(full, |args, status, said| {
        // `dsh run` used to exit 0.
        assert_eq!(status, Some(1), "{args:?}");
        assert!(
            said.contains("dsh: error: cannot write to stdout: No space left on device"),
            "{args:?}: {said}"
        );
    })
    .await;
}

/// `dsh sessions show ID | head -2`: the reader closes the pipe early. That is not an error:
/// every command stops quietly with status 0 (it used to print `dsh: error: Broken pipe`).
#[tokio::test]
async fn a_reader_that_stops_reading_ends_the_output_quietly() {
    // A pipe whose reader is gone before the first byte: every write is EPIPE.
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };
    each_stdout_command(closed, |args, status, said| {
        assert_eq!(status, Some(0), "{args:?}: {said}");
        assert!(!said.contains("error"), "{args:?}: {said}");
    })
    .await;
}

/// Limits the child's address space, so that a regression that reads `/dev/zero` fails
/// fast instead of eating the machine's memory.
fn cap_memory(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 4 << 30,
                rlim_max: 4 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
}

#[tokio::test]
async fn settings_and_instructions_that_are_devices_or_fifos_are_refused_unread() {
    let sandbox = Sandbox::new();
    let settings = sandbox.home.path().join("settings.toml");
    for kind in ["a character device", "a FIFO"] {
        if kind == "a FIFO" {
            mkfifo(&settings);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &settings).unwrap();
        }
        let mut command = sandbox.command(&["config", "show"]);
        cap_memory(&mut command);
        let output = finish(command, LIMIT).await;
        assert_eq!(output.status.code(), Some(2), "{kind}");
        assert_eq!(
            text(&output.stderr),
            format!(
                "dsh: error: {}: cannot read the settings file: it is {kind}, not a regular file\n",
                settings.display()
            )
        );
        std::fs::remove_file(&settings).unwrap();
    }

    // An AGENTS.md FIFO would block every new session; it is skipped, the run goes on.
    let server = serve(Script::new().respond(Reply::text("fine"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    mkfifo(&sandbox.cwd.path().join("AGENTS.md"));
    std::os::unix::fs::symlink("/dev/zero", sandbox.cwd.path().join("CLAUDE.md")).unwrap();
    let mut command = sandbox.command(&["run", "hello"]);
    cap_memory(&mut command);
    let output = finish(command, LIMIT).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "fine\n");
    server.shutdown().await;
}

#[tokio::test]
async fn an_index_that_is_a_fifo_a_device_or_a_directory_does_not_hang_or_litter() {
    for odd in ["fifo", "device", "directory"] {
        let sandbox = Sandbox::new().with_fixture("text", "zstd");
        let index = sandbox.sessions_root().join("index.jsonl");
        match odd {
            "fifo" => mkfifo(&index),
            "device" => std::os::unix::fs::symlink("/dev/zero", &index).unwrap(),
            _ => std::fs::create_dir(&index).unwrap(),
        }
        let before = names_in(&sandbox.sessions_root());
        for _ in 0..3 {
            let mut command = sandbox.command(&["sessions", "list", "--all"]);
            cap_memory(&mut command);
            let output = finish(command, LIMIT).await;
            assert_eq!(
                output.status.code(),
                Some(0),
                "{odd}: {}",
                text(&output.stderr)
            );
            assert!(
                text(&output.stdout).contains(&fixture_id("text", "zstd")),
                "{odd}"
            );
            let note = text(&output.stderr);
            if odd == "directory" {
                // It cannot be replaced: every listing says so, and scans.
                assert!(
                    note.starts_with("dsh: note: the session index ")
                        && note.contains("is a directory")
                        && note.ends_with("; listed by reading every session log instead\n"),
                    "{note}"
                );
            }
        }
        // A directory used to collect one index.jsonl.<pid>.tmp per command.
        let after = names_in(&sandbox.sessions_root());
        assert_eq!(after, before, "{odd}");
    }
}

#[tokio::test]
async fn a_twenty_megabyte_argument_is_reported_as_too_long_not_as_a_sandbox_failure() {
    let command = format!("echo {}", "x".repeat(20 << 20));
    let server = serve(
        Script::new()
            .respond(
                Reply::tool_call("bash", json!({"command": command, "description": "long"}))
                    .arg_chunks(64),
            )
            .respond(Reply::text("understood")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = finish(
        sandbox.command(&["run", "--approval", "never", "echo a lot"]),
        LIMIT,
    )
    .await;
    // (stderr echoes the 20 MB command: never print it)
    assert_eq!(output.status.code(), Some(0));
    let events = sandbox.events(&session_of(&output));
    let result = events
        .iter()
        .find_map(|e| match &e.data {
            dsh_session::EventData::ToolResult(result) => Some(result.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        result.error.as_ref().unwrap().code,
        "ARGUMENT_LIST_TOO_LONG"
    );
    let message = serde_json::to_value(&*result.message).unwrap();
    let said = message["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(said.contains("the command is too long to start"), "{said}");
    assert!(said.contains("write it to a file"), "{said}");
    assert!(!said.contains("sandbox"), "{said}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_plain_session_is_found_shown_resumed_and_forked_under_the_zstd_default() {
    let server = serve(Script::new().respond(Reply::text("continued"))).await;
    let sandbox = Sandbox::new()
        .with_server(&server)
        .with_fixture("text", "jsonl");
    let id = fixture_id("text", "jsonl");
    // The default settings: new logs are zstd. The plain log used to be invisible.
    let list = sandbox.dsh(&["sessions", "list", "--all"]).await;
    assert!(text(&list.stdout).contains(&id), "{}", text(&list.stderr));
    let show = sandbox.dsh(&["sessions", "show", &id]).await;
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    let resumed = sandbox.dsh(&["run", "--resume", &id, "go on"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), "continued\n");
    // The resumed session kept its own encoding.
    let dir = sandbox
        .sessions_root()
        .join("--home-user-project--")
        .join(&id);
    assert_eq!(names_in(&dir), ["session.jsonl"]);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events).len(), 2);
    // A fork is a new session: the configured encoding.
    let fork = sandbox.dsh(&["sessions", "fork", &id]).await;
    assert_eq!(fork.status.code(), Some(0), "{}", text(&fork.stderr));
    let child = text(&fork.stdout).trim().to_owned();
    let child_dir = sandbox
        .sessions_root()
        .join("--home-user-project--")
        .join(&child);
    assert_eq!(names_in(&child_dir), ["session.jsonl.zstd"]);

    // Both encodings side by side (the same log, compressed): an error naming both files.
    let zstd = dir.join("session.jsonl.zstd");
    let plain = std::fs::read(dir.join("session.jsonl")).unwrap();
    std::fs::write(&zstd, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let shown = sandbox.dsh(&["sessions", "show", &id]).await;
    assert_eq!(shown.status.code(), Some(1));
    let said = text(&shown.stderr);
    assert!(
        said.contains(&format!(
            "session log exists twice, as {} and as {}",
            dir.join("session.jsonl").display(),
            zstd.display()
        )),
        "{said}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn temp_areas_of_dead_runs_are_swept_and_nothing_else() {
    let server = serve(Script::new().respond(Reply::text("hi"))).await;
    let mut sandbox = Sandbox::new().with_server(&server);
    let tmp = tempfile::tempdir().unwrap();
    sandbox
        .env
        .push(("TMPDIR".into(), tmp.path().display().to_string()));
    // A pid no process has: one that just exited (and was reaped).
    let dead = || {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let area = |name: String| {
        let path = tmp.path().join(name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("spill.txt"), "x").unwrap();
        path
    };
    let stale = area(format!("dsh-{}-0123abcd", dead()));
    let stale_locked = area(format!("dsh-{}-4567abcd", dead()));
    std::fs::write(stale_locked.join(".owner"), "").unwrap();
    // Held by a live process the pid cannot show (another pid namespace, say).
    let held = area(format!("dsh-{}-89abcdef", dead()));
    let owner = std::fs::File::create(held.join(".owner")).unwrap();
    // SAFETY: flock on a descriptor `owner` keeps open.
    assert_eq!(
        unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(&owner), libc::LOCK_EX,) },
        0
    );
    let live = area(format!("dsh-{}-0000abcd", std::process::id()));
    let unlike = area(format!("dsh-{}-notmine", dead()));
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "x").unwrap();
    let link = tmp.path().join(format!("dsh-{}-fedcba98", dead()));
    std::os::unix::fs::symlink(outside.path(), &link).unwrap();

    let output = finish(sandbox.command(&["run", "hello"]), LIMIT).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let mut kept: Vec<PathBuf> = vec![held.clone(), live, unlike, link];
    kept.sort();
    let mut left: Vec<PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    left.sort();
    assert_eq!(left, kept, "swept: {stale:?} and {stale_locked:?} only");
    assert!(outside.path().join("keep.txt").exists());
    assert!(held.join("spill.txt").exists());
    drop(owner);
    server.shutdown().await;
}
