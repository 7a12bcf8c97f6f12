//! Crash durability of the real `dsh` binary: `dsh run --json` works through a multi-step,
//! tool-using turn against the mock model server and is killed with SIGKILL at a random
//! point. Whatever it leaves behind must
//!
//! 1. load with the store (a torn tail is cut off; anything else is corruption),
//! 2. repair to a log that passes every invariant checker,
//! 3. hold every event the process had made durable — each request the model server
//!    received proves its log prefix was flushed first (the checkpoint policy), so the
//!    request body must be rebuildable from the stored log — and agree event for event with
//!    what the process printed, and
//! 4. resume: `dsh run --resume` adds a completed turn to the same log, after the closers
//!    that end the interrupted one.
//!
//! Kill points come from a seeded RNG and are spread over the run: a delay after start, the
//! n-th JSON line printed (lands mid-stream and mid-tool), or a short delay after the n-th
//! model request. The default is CI-sized; `DSH_CRASH_ITERATIONS` raises it for soak runs
//! and `DSH_CRASH_SEED` replays a failing iteration (every failure names its seed).

use super::run_support::*;
use dsh_cli::app::openai_config;
use dsh_cli::config::{Overrides, OPENAI_ROUTE};
use dsh_llm::LlmRequest;
use dsh_llm_openai::{wire, RouteConfig};
use dsh_protocol::{SessionId, StreamChunk};
use dsh_session::{
    derive_messages, fold_request_header, interrupted_turn_closers, EventData, SessionEvent,
};
use dsh_store::{read_log, Compression, SessionPersistence};
use dsh_testkit::checks::{check_all, render};
use dsh_testkit::mock_llm::{MockServer, RecordedRequest, Reply, Script};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Iterations of the default `cargo test` run.
const DEFAULT_ITERATIONS: u64 = 50;
/// The base seed; iteration `i` runs with `seed + i`.
const DEFAULT_SEED: u64 = 0x00C0_FFEE_D5B0;
/// Upper bound for any single wait on the child or the server (a hang is a failure).
const PATIENCE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn sigkill_at_random_points_never_loses_a_flushed_event() {
    let iterations = env_number("DSH_CRASH_ITERATIONS").unwrap_or(DEFAULT_ITERATIONS);
    let seed = env_number("DSH_CRASH_SEED").unwrap_or(DEFAULT_SEED);
    let calibration = calibrate().await;
    let mut tally = Tally::default();
    for i in 0..iterations {
        let iteration_seed = seed.wrapping_add(i);
        let run = tokio::spawn(crash_once(iteration_seed, calibration.clone()));
        match run.await {
            Ok(outcome) => tally.add(outcome),
            Err(error) => {
                let message = panic_message(error);
                panic!(
                    "crash iteration {i} failed (seed {iteration_seed}; replay with \
                     DSH_CRASH_SEED={iteration_seed} DSH_CRASH_ITERATIONS=1):\n{message}"
                );
            }
        }
    }
    eprintln!("crash test: {iterations} iterations from seed {seed}: {tally:?}");
    // Most kill points land after the first model request, so the test must have produced
    // crashed logs to check; a run where nothing was ever stored would prove nothing.
    if iterations >= 20 {
        assert!(
            tally.open_turn * 4 >= iterations,
            "too few kills left an open turn on disk (seed {seed}): {tally:?}"
        );
    }
}

/// What one uninterrupted run looks like, to spread kill points over it.
#[derive(Clone, Debug)]
struct Calibration {
    /// From spawn to exit.
    duration: Duration,
    /// Complete stdout lines.
    lines: usize,
    /// Model requests.
    requests: usize,
}

/// How each iteration's kill landed.
#[derive(Debug, Default)]
struct Tally {
    /// Killed before anything was stored.
    nothing_stored: u64,
    /// The stored log ended inside the turn.
    open_turn: u64,
    /// ... with a torn tail cut off.
    torn_tail: u64,
    /// ... with a tool call recorded as started but without its result.
    tool_in_flight: u64,
    /// The process finished (or stored its last turn end) before the kill.
    completed: u64,
    /// Repaired by the test through `prepare` (the rest by `dsh run --resume` itself).
    repaired_by_prepare: u64,
}

impl Tally {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::NothingStored => self.nothing_stored += 1,
            Outcome::Stored {
                open_turn,
                torn_tail,
                tool_in_flight,
                prepared,
            } => {
                if open_turn {
                    self.open_turn += 1;
                } else {
                    self.completed += 1;
                }
                self.torn_tail += u64::from(torn_tail);
                self.tool_in_flight += u64::from(tool_in_flight);
                self.repaired_by_prepare += u64::from(prepared);
            }
        }
    }
}

enum Outcome {
    NothingStored,
    Stored {
        open_turn: bool,
        torn_tail: bool,
        tool_in_flight: bool,
        prepared: bool,
    },
}

/// When to send SIGKILL.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// This long after spawning.
    After(Duration),
    /// Once this many stdout lines were printed, plus a little.
    AtLine(usize, Duration),
    /// Once the server received this many requests, plus a little (mid-stream).
    AtRequest(usize, Duration),
}

impl KillPoint {
    fn pick(rng: &mut fastrand::Rng, calibration: &Calibration) -> Self {
        let run_ms = u64::try_from(calibration.duration.as_millis()).unwrap_or(u64::MAX);
        match rng.u8(0..3) {
            0 => Self::After(Duration::from_millis(rng.u64(0..=run_ms))),
            1 => Self::AtLine(
                rng.usize(1..=calibration.lines),
                Duration::from_micros(rng.u64(0..3_000)),
            ),
            _ => Self::AtRequest(
                rng.usize(1..=calibration.requests),
                Duration::from_micros(rng.u64(0..40_000)),
            ),
        }
    }
}

/// A multi-step turn: list the workspace, read a file while a slow command runs, write a
/// note, then answer. Every reply streams in small paced deltas.
fn tool_turn_script() -> Script {
    const PACE_MS: u64 = 3;
    Script::new()
        .respond(
            Reply::text("Let me list the files first.")
                .with_reasoning("Look at the workspace before answering.")
                .with_tool_call("bash", json!({"command": "ls", "description": "List files"}))
                .chunks(4)
                .arg_chunks(3)
                .delay_ms(PACE_MS),
        )
        .respond(
            Reply::text("Reading the README while the shell waits.")
                .with_tool_call("read", json!({"file_path": "README.md"}))
                .with_tool_call(
                    "bash",
                    json!({"command": "sleep 0.03; echo checked", "description": "Wait briefly"}),
                )
                .chunks(3)
                .arg_chunks(2)
                .delay_ms(PACE_MS),
        )
        .respond(
            Reply::text("Writing a note.")
                .with_tool_call(
                    "bash",
                    json!({"command": "echo note > note.txt && cat note.txt", "description": "Write a note"}),
                )
                .chunks(3)
                .arg_chunks(2)
                .delay_ms(PACE_MS),
        )
        .respond(
            Reply::text(
                "The workspace holds a README describing a tiny widget, and I left a note in \
                 note.txt. Nothing else needed doing.",
            )
            .with_reasoning("Everything is done; summarise.")
            .chunks(10)
            .delay_ms(PACE_MS),
        )
}

/// A fresh workspace for one run.
fn workspace() -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.cwd.path().join("README.md"),
        "# Widget\nA tiny widget.\n",
    )
    .unwrap();
    sandbox
}

/// `dsh run --json` arguments against `server`, resuming `resume` if given.
fn run_args(server: &MockServer, resume: Option<&str>, prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--json",
        "--approval",
        "never",
        "--provider",
        OPENAI_ROUTE,
        "--base-url",
    ]
    .map(String::from)
    .into();
    args.push(server.base_url());
    if let Some(id) = resume {
        args.extend(["--resume".to_owned(), id.to_owned()]);
    }
    args.push(prompt.to_owned());
    args
}

/// One uninterrupted run: it must complete cleanly, and it measures how long and how much
/// output a run takes so kill points can be spread over it.
async fn calibrate() -> Calibration {
    let server = serve(tool_turn_script()).await;
    let sandbox = workspace();
    let started = Instant::now();
    let mut running = Running::spawn(&sandbox, &run_args(&server, None, "look around"));
    let status = running.wait().await;
    let duration = started.elapsed();
    let output = running.finish();
    assert_eq!(status, Some(0), "calibration run failed:\n{}", output.stderr);
    let id = output.session_id().expect("a session line");
    let events = sandbox.events(&id);
    assert!(check_all(&events).is_ok(), "{:?}", check_all(&events));
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_requests_durable(&events, &requests, &route(&sandbox, &server), &id);
    output.assert_agrees_with(&events);
    server.shutdown().await;
    Calibration {
        duration,
        lines: output.lines.len(),
        requests: requests.len(),
    }
}

/// Runs, kills and checks one iteration.
async fn crash_once(seed: u64, calibration: Calibration) -> Outcome {
    let mut rng = fastrand::Rng::with_seed(seed);
    let kill_point = KillPoint::pick(&mut rng, &calibration);
    let repair_with_prepare = rng.bool();
    let server = serve(tool_turn_script()).await;
    let sandbox = workspace();
    let mut running = Running::spawn(&sandbox, &run_args(&server, None, "look around"));
    running.kill_at(kill_point, &server).await;
    let output = running.finish();
    let requests = server.requests();
    let route = route(&sandbox, &server);
    server.shutdown().await;
    let context = format!("kill point {kill_point:?}, {} requests served", requests.len());

    // Nothing on disk is only acceptable when no model request went out: each request is
    // preceded by a flush that creates the log.
    let Some(log_path) = only_log(&sandbox.sessions_root()) else {
        assert!(
            requests.is_empty(),
            "{context}: a model request was served but no log was stored"
        );
        return Outcome::NothingStored;
    };
    let id = session_dir_id(&log_path);
    if let Some(printed) = output.session_id() {
        assert_eq!(printed, id, "{context}: the log is not the printed session's");
    }
    let session = SessionId::new(id.as_str());

    // 1. It loads; a torn tail is reported, never an error.
    let raw = read_log(&log_path, Compression::Zstd, Some(&id))
        .unwrap_or_else(|e| panic!("{context}: the crashed log does not load: {e} ({e:?})"));
    let store = sandbox.store();
    let stored = store
        .load(&session)
        .unwrap_or_else(|e| panic!("{context}: typed load failed: {e} ({e:?})"));
    assert_eq!(stored.events.len(), raw.events.len(), "{context}");
    assert_eq!(stored.torn_tail, raw.torn_tail, "{context}");
    let before = stored.events;

    // 2. Repair closes exactly the open turn, and the result passes every checker.
    let closers = interrupted_turn_closers(&before);
    let inspection = store.inspect(&session).unwrap();
    assert_eq!(inspection.pending_closers, closers, "{context}");
    assert_eq!(inspection.torn_tail, raw.torn_tail, "{context}");
    let repaired: Vec<Arc<SessionEvent>> = before
        .iter()
        .cloned()
        .chain(closers.iter().cloned().map(Arc::new))
        .collect();
    assert_checks_pass(&repaired, &format!("{context}: the repaired log"));
    if repair_with_prepare {
        let preparation = store
            .prepare(&session)
            .unwrap_or_else(|e| panic!("{context}: prepare failed: {e} ({e:?})"));
        assert_eq!(preparation.closers, closers, "{context}");
        store.release(&session);
        let after = sandbox.store().load(&session).unwrap();
        assert_eq!(after.torn_tail, None, "{context}: prepare left a torn tail");
        assert_eq!(after.events, repaired, "{context}: prepare stored another log");
    }
    drop(store);

    // 3. Nothing the process made durable is missing, and the disk agrees with what it
    //    printed.
    assert_requests_durable(&before, &requests, &route, &id);
    output.assert_agrees_with(&before);

    // 4. Resuming closes the story: one more completed turn on the same log.
    assert_resumes(&sandbox, &id, &repaired, &context).await;

    Outcome::Stored {
        open_turn: !closers.is_empty(),
        torn_tail: raw.torn_tail.is_some(),
        tool_in_flight: closers.iter().any(|e| e.type_name() == "tool/result"),
        prepared: repair_with_prepare,
    }
}

/// `dsh run --resume <id>` against a fresh server must complete and extend `repaired` with
/// one completed turn whose request is rebuilt from the log.
async fn assert_resumes(sandbox: &Sandbox, id: &str, repaired: &[Arc<SessionEvent>], context: &str) {
    let server = serve(Script::new().respond(Reply::text("Picking up where we left off.").chunks(3))).await;
    let mut running = Running::spawn(sandbox, &run_args(&server, Some(id), "carry on"));
    let status = running.wait().await;
    let output = running.finish();
    assert_eq!(
        status,
        Some(0),
        "{context}: resume failed:\n{}",
        output.stderr
    );
    assert_eq!(
        output.lines.first(),
        Some(&json!({"type": "session", "id": id, "version": 0, "resumed": true})),
        "{context}"
    );
    assert_eq!(
        output.lines.last().map(|l| l["outcome"].clone()),
        Some(json!({"kind": "completed"})),
        "{context}"
    );
    let stored = sandbox.store().load(&SessionId::new(id)).unwrap();
    assert_eq!(stored.torn_tail, None, "{context}: the resumed log has a torn tail");
    let events = stored.events;
    assert_checks_pass(&events, &format!("{context}: the resumed log"));
    assert!(
        events.len() > repaired.len() && events[..repaired.len()] == *repaired,
        "{context}: the resumed log does not continue the repaired one"
    );
    // The crashed turn ends `interrupted` (if it was open); the new turn follows it.
    let before_ends = turn_ends(repaired);
    let after_ends = turn_ends(&events);
    assert_eq!(
        after_ends[..before_ends.len()],
        before_ends[..],
        "{context}"
    );
    assert_eq!(
        after_ends[before_ends.len()..],
        [json!({"kind": "completed"})],
        "{context}: resuming ran other than one completed turn"
    );
    let last_turn = |events: &[Arc<SessionEvent>]| {
        events.iter().rev().find_map(|e| match &e.data {
            EventData::TurnStart(start) => Some(start.turn),
            _ => None,
        })
    };
    let expected_turn = last_turn(repaired).map_or(0, |turn| turn + 1);
    assert_eq!(last_turn(&events), Some(expected_turn), "{context}");
    // Its request came from the log, including the closers' results.
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{context}");
    let route = route(sandbox, &server);
    let starts: Vec<usize> = attempt_starts(&events)
        .into_iter()
        .filter(|&at| at >= repaired.len())
        .collect();
    assert_eq!(starts.len(), 1, "{context}");
    assert_eq!(
        requests[0].body,
        rebuild_body(&events[..starts[0]], &route, id),
        "{context}: the resumed request differs from its log reconstruction"
    );
    output.assert_agrees_with(&events);
    server.shutdown().await;
}

/// The "model-visible ⇔ recorded" half of durability: for each request the server
/// received, the stored log holds a prefix that rebuilds exactly that request body, issued
/// inside an open step. Attempt `k` is the `k`-th run of chunks; the last request may have
/// no chunk on disk yet (the kill came before the next flush), in which case the whole
/// stored log must rebuild it.
fn assert_requests_durable(
    events: &[Arc<SessionEvent>],
    requests: &[RecordedRequest],
    route: &RouteConfig,
    id: &str,
) {
    let starts = attempt_starts(events);
    assert!(
        requests.len() <= starts.len() + 1,
        "{} requests were served but the log holds only {} attempts: the chunks of a \
         request answered before a later flush are missing",
        requests.len(),
        starts.len()
    );
    for (k, request) in requests.iter().enumerate() {
        assert_eq!(
            request.header("x-deepseek-harness-session-id"),
            Some(id),
            "request {k}"
        );
        let at = starts.get(k).copied().unwrap_or(events.len());
        let prefix = &events[..at];
        assert!(
            step_is_open(prefix),
            "request {k} was served, but the stored log has no open step/start before {at}"
        );
        assert_eq!(
            request.body,
            rebuild_body(prefix, route, id),
            "request {k} was served, but the stored log (up to seq {at}) does not rebuild it"
        );
    }
}

/// Seqs where a model attempt's chunks begin: a chunk after a non-chunk event or after a
/// `finish` chunk.
fn attempt_starts(events: &[Arc<SessionEvent>]) -> Vec<usize> {
    let chunk = |e: &SessionEvent| match &e.data {
        EventData::AssistantChunk(c) => Some(matches!(c.chunk, StreamChunk::Finish { .. })),
        _ => None,
    };
    (0..events.len())
        .filter(|&i| {
            chunk(&events[i]).is_some() && (i == 0 || chunk(&events[i - 1]) != Some(false))
        })
        .collect()
}

fn step_is_open(events: &[Arc<SessionEvent>]) -> bool {
    events
        .iter()
        .rev()
        .find_map(|e| match e.data {
            EventData::StepStart(_) => Some(true),
            EventData::StepEnd(_) | EventData::TurnEnd(_) => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// The body the adapter sends for a request made right after `prefix`.
fn rebuild_body(prefix: &[Arc<SessionEvent>], route: &RouteConfig, id: &str) -> Value {
    let header = fold_request_header(prefix, None).expect("a request/header before a request");
    let mut request = LlmRequest::new(header.config, derive_messages(prefix).unwrap());
    request.system = header.system;
    request.tools = header.tools;
    request.session_id = Some(SessionId::new(id));
    wire::request_body(&request, route).unwrap()
}

/// The route the binary builds for `--provider openai-compatible --base-url <server>`.
fn route(sandbox: &Sandbox, server: &MockServer) -> RouteConfig {
    let env: BTreeMap<String, String> = [(
        "DSH_HOME".to_owned(),
        sandbox.home.path().to_string_lossy().into_owned(),
    )]
    .into();
    let flags = Overrides {
        provider: Some(OPENAI_ROUTE.to_owned()),
        base_url: Some(server.base_url()),
        ..Overrides::default()
    };
    let settings = dsh_cli::config::load(&env, &flags).unwrap();
    openai_config(&settings)
        .routes
        .into_iter()
        .find(|route| route.route == OPENAI_ROUTE)
        .unwrap()
}

#[track_caller]
fn assert_checks_pass(events: &[Arc<SessionEvent>], what: &str) {
    if let Err(violations) = check_all(events) {
        panic!(
            "{what} breaks invariants:\n{}\nlog:\n{}",
            render(&violations),
            events
                .iter()
                .map(|e| serde_json::to_string(&**e).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The one log file under `root`, if any (more than one is a failure).
fn only_log(root: &Path) -> Option<PathBuf> {
    let mut logs = Vec::new();
    collect_logs(root, &mut logs);
    assert!(logs.len() <= 1, "one run stored several logs: {logs:?}");
    logs.pop()
}

fn collect_logs(dir: &Path, logs: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_logs(&path, logs);
        } else if path
            .file_name()
            .is_some_and(|name| name == "session.jsonl.zstd" || name == "session.jsonl")
        {
            logs.push(path);
        }
    }
}

/// The session id a log's directory names (ids in these tests need no escaping).
fn session_dir_id(log: &Path) -> String {
    let dir = log.parent().and_then(Path::file_name).unwrap();
    dir.to_string_lossy().into_owned()
}

/// A `dsh` child with its stdout and stderr drained by threads; stdout lines are counted
/// as they arrive so a kill can wait for the n-th one.
struct Running {
    child: Child,
    lines_seen: mpsc::UnboundedReceiver<usize>,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl Running {
    fn spawn(sandbox: &Sandbox, args: &[String]) -> Self {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = sandbox.command(&args);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let (tx, lines_seen) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut all = Vec::new();
            let mut count = 0;
            loop {
                match reader.read_until(b'\n', &mut all) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if all.ends_with(b"\n") => {
                        count += 1;
                        let _ = tx.send(count);
                    }
                    Ok(_) => {}
                }
            }
            all
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = stderr.read_to_end(&mut all);
            all
        });
        Self {
            child,
            lines_seen,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// Waits for `point` (or for the child to finish first), then sends SIGKILL.
    async fn kill_at(&mut self, point: KillPoint, server: &MockServer) {
        let reached = async {
            match point {
                KillPoint::After(delay) => tokio::time::sleep(delay).await,
                KillPoint::AtLine(line, extra) => {
                    while let Some(seen) = self.lines_seen.recv().await {
                        if seen >= line {
                            break;
                        }
                    }
                    tokio::time::sleep(extra).await;
                }
                KillPoint::AtRequest(count, extra) => {
                    tokio::select! {
                        _ = server.wait_for_requests(count) => {}
                        // The child exits (closing stdout) if it never gets that far.
                        _ = async { while self.lines_seen.recv().await.is_some() {} } => {}
                    }
                    tokio::time::sleep(extra).await;
                }
            }
        };
        tokio::time::timeout(PATIENCE, reached)
            .await
            .expect("the kill point never came and the child did not exit");
        // SIGKILL; a child that already exited is just reaped.
        self.child.kill().unwrap();
        self.wait().await;
    }

    /// Waits for the child to exit; its exit code (`None` when killed by a signal).
    async fn wait(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "dsh did not exit in time");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Collects what the child printed.
    fn finish(mut self) -> Printed {
        let stdout = self.stdout.take().unwrap().join().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        // A line cut by the kill has no newline: ignore it.
        let complete = match stdout.iter().rposition(|&b| b == b'\n') {
            Some(end) => &stdout[..=end],
            None => &[][..],
        };
        let lines = text(complete)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        Printed {
            lines,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Never leave a child behind when an assertion fails mid-iteration.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The complete JSON lines a run printed, and its stderr.
struct Printed {
    lines: Vec<Value>,
    stderr: String,
}

impl Printed {
    fn session_id(&self) -> Option<String> {
        let first = self.lines.first()?;
        (first["type"] == "session").then(|| first["id"].as_str().unwrap().to_owned())
    }

    /// Every printed event that is also stored must be stored exactly as printed. (The
    /// process prints events as they are appended, so it may have printed more than it
    /// made durable, or — output being separate from the log — less.)
    #[track_caller]
    fn assert_agrees_with(&self, stored: &[Arc<SessionEvent>]) {
        for line in &self.lines {
            if line["type"] == "session" || line["type"] == "result" {
                continue;
            }
            let event = SessionEvent::from_value(line)
                .unwrap_or_else(|e| panic!("a printed line is not an event: {e}: {line}"));
            let seq = usize::try_from(event.seq).unwrap();
            if let Some(on_disk) = stored.get(seq) {
                assert_eq!(**on_disk, event, "printed and stored seq {seq} differ");
            }
        }
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|value| {
        let value = value.trim();
        let parsed = match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => value.parse(),
        };
        parsed.unwrap_or_else(|_| panic!("{name}={value} is not a number"))
    })
}

fn panic_message(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned()),
        Err(error) => error.to_string(),
    }
}
