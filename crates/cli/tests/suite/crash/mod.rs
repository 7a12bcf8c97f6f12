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
//! 4. resume: `dsh run --resume` (by id, by prefix, or `--continue`) adds a completed turn
//!    to the same log, after the closers that end the interrupted one. Sometimes the resumed
//!    run is killed too, and a third run must finish the job.
//!
//! Kill points come from a seeded RNG and are spread over the run: a delay after start, the
//! n-th JSON line printed (lands mid-stream and mid-tool), or a short delay after the n-th
//! model request. Iterations also vary the store layout (zstd or plain lines, packed chunk
//! rows or not), who repairs (`prepare` here, or the next `dsh run`), and sometimes tear the
//! file after the durable prefix, since SIGKILL alone never leaves a half-written batch.
//!
//! A second scenario runs a long reading turn under a small context window, so the run
//! compacts several times, and aims its kills at the compactions: at a summary request
//! (mid-summary stream), and right after a `compaction/*` event was printed. Beyond the
//! checks above, every summary request must find its `compaction/start` durable, and the
//! resume must never find the lock wedged by the dead process's open bracket.
//!
//! The default is CI-sized; `DSH_CRASH_ITERATIONS` raises it for soak runs and
//! `DSH_CRASH_SEED` replays a failing iteration (every failure names its seed).

mod checks;
mod process;
mod scenario;

use super::run_support::*;
use checks::{
    assert_checks_pass, attempt_starts, find_logs, is_summary_request, rebuild_body,
    requests_durable, route, step_requests, CrashCheck, Crashed, Layout, Tear,
};
use dsh_session::{EventData, SessionEvent};
use dsh_store::SessionPersistence;
use dsh_testkit::mock_llm::{MockServer, RecordedRequest, Reply, RuleMatch, Script};
use process::{KillPoint, Printed, Profile, Running};
use scenario::{Scenario, LONG_TURN_STEPS};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// Iterations of the default `cargo test` run.
const DEFAULT_ITERATIONS: u64 = 50;
/// The base seed; iteration `i` runs with `seed + i`.
const DEFAULT_SEED: u64 = 0x00C0_FFEE_D5B0;

/// Iterations of the compaction scenario in the default `cargo test` run.
const DEFAULT_COMPACTION_ITERATIONS: u64 = 16;

#[tokio::test]
async fn sigkill_at_random_points_never_loses_a_flushed_event() {
    crash_iterations(Scenario::Tools, DEFAULT_ITERATIONS).await;
}

#[tokio::test]
async fn sigkill_during_compactions_never_loses_an_event_or_wedges_the_lock() {
    crash_iterations(Scenario::Compaction, DEFAULT_COMPACTION_ITERATIONS).await;
}

async fn crash_iterations(scenario: Scenario, default_iterations: u64) {
    let iterations = env_number("DSH_CRASH_ITERATIONS").unwrap_or(default_iterations);
    let seed = env_number("DSH_CRASH_SEED").unwrap_or(DEFAULT_SEED);
    let profiles = calibrate(scenario).await;
    let mut tally = Tally::default();
    for i in 0..iterations {
        let iteration_seed = seed.wrapping_add(i);
        let run = tokio::spawn(crash_once(scenario, iteration_seed, profiles.clone()));
        match run.await {
            Ok(outcome) => tally.add(&outcome),
            Err(error) => {
                let message = panic_message(error);
                panic!(
                    "{scenario:?} crash iteration {i} failed (seed {iteration_seed}; replay \
                     with DSH_CRASH_SEED={iteration_seed} DSH_CRASH_ITERATIONS=1):\n{message}"
                );
            }
        }
    }
    eprintln!("{scenario:?} crash test: {iterations} iterations from seed {seed}: {tally:#?}");
    // Most kill points land after the first model request, so the test must have produced
    // crashed logs to check; a run where nothing was ever stored would prove nothing.
    if scenario == Scenario::Compaction {
        assert!(
            tally.open_compaction * 4 >= iterations,
            "too few kills left an open compaction on disk (seed {seed}): {tally:?}"
        );
    }
    if iterations >= 20 {
        assert!(
            tally.open_turn * 4 >= iterations,
            "too few kills left an open turn on disk (seed {seed}): {tally:?}"
        );
    }
}

/// Uninterrupted runs of both phases.
#[derive(Clone, Debug)]
struct Profiles {
    first: Profile,
    resume: Profile,
    /// The 1-based counts of served requests at which a summary request arrived.
    summary_requests: Vec<usize>,
    /// The 1-based stdout lines holding a `compaction/*` event.
    compaction_lines: Vec<usize>,
}

/// How the iterations' kills landed.
#[derive(Debug, Default)]
struct Tally {
    /// Killed before anything was stored.
    nothing_stored: u64,
    /// The stored log ended inside the turn.
    open_turn: u64,
    /// ... inside a compaction (its `compaction/start` without an end).
    open_compaction: u64,
    /// ... with a tool call logged as started but without its result.
    tool_in_flight: u64,
    /// The process stored its turn end before the kill.
    turn_closed: u64,
    /// A torn tail was found (all simulated so far: SIGKILL does not tear a write).
    torn_tail: u64,
    /// Repaired by the test through `prepare` (the rest by `dsh run --resume` itself).
    repaired_by_prepare: u64,
    /// The resumed run was killed too.
    resume_killed: u64,
    /// ... after it had stored something of its own.
    resume_killed_after_storing: u64,
    /// Resumes that first answered prompts a kill had left queued.
    replayed_queued_prompts: u64,
    /// Staging files a kill left in the sessions root (harmless: never read, never listed).
    stray_temp_files: u64,
}

impl Tally {
    fn add(&mut self, outcome: &Outcome) {
        self.stray_temp_files += outcome.stray_temp_files;
        self.replayed_queued_prompts += u64::from(outcome.queued_prompts > 0);
        let Some(first) = &outcome.first else {
            self.nothing_stored += 1;
            return;
        };
        if first.closers.is_empty() {
            self.turn_closed += 1;
        } else {
            self.open_turn += 1;
        }
        let brackets = first
            .before
            .iter()
            .fold(0i64, |open, e| match e.type_name() {
                "compaction/start" => open + 1,
                "compaction/end" => open - 1,
                _ => open,
            });
        self.open_compaction += u64::from(brackets > 0);
        self.tool_in_flight +=
            u64::from(first.closers.iter().any(|e| e.type_name() == "tool/result"));
        self.torn_tail += u64::from(first.torn_tail);
        self.repaired_by_prepare += u64::from(outcome.prepared);
        if let Some(second) = &outcome.second {
            self.resume_killed += 1;
            self.resume_killed_after_storing +=
                u64::from(second.before.len() > first.repaired.len());
        }
    }
}

struct Outcome {
    first: Option<Crashed>,
    second: Option<Crashed>,
    prepared: bool,
    queued_prompts: usize,
    stray_temp_files: u64,
}

/// How the next run names the session to resume.
#[derive(Clone, Copy, Debug)]
enum ResumeBy {
    Id,
    Prefix,
    Continue,
}

impl ResumeBy {
    fn pick(rng: &mut fastrand::Rng) -> Self {
        match rng.u8(0..3) {
            0 => Self::Id,
            1 => Self::Prefix,
            _ => Self::Continue,
        }
    }

    fn args(self, id: &str) -> Vec<String> {
        match self {
            Self::Id => vec!["--resume".into(), id.into()],
            Self::Prefix => vec!["--resume".into(), id[..id.len().min(16)].into()],
            Self::Continue => vec!["--continue".into()],
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

/// The resumed turns: a short streamed answer to every request (a resume may run more
/// than one turn when the crash left prompts queued).
fn resume_script() -> Script {
    Script::new().rule(
        RuleMatch::any(),
        Reply::text("Picking up where we left off, all is well.")
            .chunks(6)
            .delay_ms(2),
    )
}

/// A fresh workspace for one run.
fn workspace(layout: Layout) -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.cwd.path().join("README.md"),
        "# Widget\nA tiny widget.\n",
    )
    .unwrap();
    layout.install(&sandbox);
    sandbox
}

/// `dsh run --json` arguments against `server`.
fn run_args(server: &MockServer, session: &[String], prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = ["run", "--json", "--approval", "never", "--provider"]
        .map(String::from)
        .into();
    args.extend([
        dsh_cli::config::OPENAI_ROUTE.to_owned(),
        "--base-url".to_owned(),
        server.base_url(),
    ]);
    args.extend(session.iter().cloned());
    args.push(prompt.to_owned());
    args
}

/// One uninterrupted run and its resume: both must complete cleanly, and they measure how
/// long and how much output a run takes so kill points can be spread over it. Also shows
/// that the durability check has teeth: a log missing the last event before any request
/// fails it.
async fn calibrate(scenario: Scenario) -> Profiles {
    let server = serve(scenario.script()).await;
    let sandbox = scenario.workspace(Layout::DEFAULT);
    let mut running = Running::spawn(&sandbox, &run_args(&server, &[], scenario.prompt()));
    let status = running.wait().await;
    let duration = running.elapsed();
    let output = running.finish();
    assert_eq!(
        status,
        Some(0),
        "calibration run failed:\n{}",
        output.stderr
    );
    let id = output.session_id().expect("a session line");
    let events = sandbox.events(&id);
    assert_checks_pass(&events, "the calibration log");
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);
    let all_requests = server.requests();
    let requests = step_requests(&all_requests);
    let summary_requests: Vec<usize> = all_requests
        .iter()
        .enumerate()
        .filter(|(_, r)| is_summary_request(r))
        .map(|(i, _)| i + 1)
        .collect();
    let compaction_lines: Vec<usize> = output
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("compaction/"))
        })
        .map(|(i, _)| i + 1)
        .collect();
    match scenario {
        Scenario::Tools => assert_eq!(requests.len(), 4),
        Scenario::Compaction => {
            assert_eq!(requests.len(), LONG_TURN_STEPS + 1);
            assert!(
                summary_requests.len() >= 2,
                "the calibration run compacted {} times",
                summary_requests.len()
            );
        }
    }
    let route = route(&sandbox, &server);
    requests_durable(&events, 0, &all_requests, &output, &route, &id).unwrap();
    output.assert_agrees_with(&events);
    for (k, at) in attempt_starts(&events).into_iter().enumerate() {
        // The last event before the attempt that the flush must cover (a session title's
        // record, appended beside the request, need not be durable before it).
        let at = (0..at)
            .rev()
            .find(|&i| !events[i].type_name().starts_with("session/title"))
            .map_or(at, |i| i + 1);
        let lost_one = &events[..at - 1];
        assert!(
            requests_durable(lost_one, 0, &requests[..=k], &output, &route, &id).is_err(),
            "dropping seq {} went unnoticed by request {k}: {:?}",
            at - 1,
            events
                .iter()
                .map(|e| e.type_name().to_owned())
                .collect::<Vec<_>>()
        );
    }
    server.shutdown().await;
    let first = Profile {
        duration,
        lines: output.lines.len(),
        requests: all_requests.len(),
    };

    let server = serve(resume_script()).await;
    let mut running = Running::spawn(
        &sandbox,
        &run_args(&server, &ResumeBy::Id.args(&id), "again"),
    );
    let status = running.wait().await;
    let duration = running.elapsed();
    let output = running.finish();
    assert_eq!(
        status,
        Some(0),
        "calibration resume failed:\n{}",
        output.stderr
    );
    assert_resumed(
        &sandbox,
        Layout::DEFAULT,
        &id,
        &events,
        &server,
        &output,
        "calibration",
    );
    server.shutdown().await;
    Profiles {
        first,
        resume: Profile {
            duration,
            lines: output.lines.len(),
            requests: 1,
        },
        summary_requests,
        compaction_lines,
    }
}

/// Runs `args` against `server` and kills it at `point`; what it printed and what the
/// server received.
async fn killed_run(
    sandbox: &Sandbox,
    server: &MockServer,
    args: &[String],
    point: KillPoint,
) -> (Printed, Vec<RecordedRequest>) {
    let mut running = Running::spawn(sandbox, args);
    running.kill_at(point, server).await;
    (running.finish(), server.requests())
}

/// Runs, kills and checks one iteration.
async fn crash_once(scenario: Scenario, seed: u64, profiles: Profiles) -> Outcome {
    let mut rng = fastrand::Rng::with_seed(seed);
    let layout = Layout::pick(&mut rng);
    let kill_point = scenario.kill_point(&mut rng, &profiles);
    let prepare = rng.bool();
    let tear = (rng.u8(0..4) == 0).then(|| Tear {
        at: rng.f64(),
        zero_fill: if rng.bool() { rng.usize(1..600) } else { 0 },
    });
    let resume_by = ResumeBy::pick(&mut rng);
    let resume_kill = (rng.u8(0..3) == 0).then(|| KillPoint::pick(&mut rng, &profiles.resume));
    let sandbox = scenario.workspace(layout);
    let mut context = format!("{scenario:?}, {layout:?}, kill at {kill_point:?}");

    // Phase 1: a new session, killed.
    let server = serve(scenario.script()).await;
    let args = run_args(&server, &[], scenario.prompt());
    let (printed, requests) = killed_run(&sandbox, &server, &args, kill_point).await;
    let first_route = route(&sandbox, &server);
    server.shutdown().await;
    context += &format!(" (requests served: {})", describe(&requests));
    let logs = find_logs(&sandbox.sessions_root());
    assert!(
        logs.len() <= 1,
        "{context}: one run stored several logs: {logs:?}"
    );
    let Some(log) = logs.first() else {
        // Nothing on disk is only acceptable when no model request went out: each request
        // is preceded by a flush that creates the log.
        assert!(
            requests.is_empty(),
            "{context}: a model request was served but no log was stored"
        );
        return Outcome {
            first: None,
            second: None,
            prepared: false,
            queued_prompts: 0,
            stray_temp_files: stray_temp_files(&sandbox.sessions_root()),
        };
    };
    let id = session_dir_id(log);
    if let Some(printed) = printed.session_id() {
        assert_eq!(
            printed, id,
            "{context}: the log is not the printed session's"
        );
    }
    let first = CrashCheck {
        sandbox: &sandbox,
        layout,
        id: &id,
        requests: &requests,
        route: &first_route,
        printed: &printed,
        earlier: None,
        prepare,
        tear,
        context: &context,
    }
    .run();

    // Phase 2: resume, maybe killed again.
    let resume_args = resume_by.args(&id);
    let mut second = None;
    if let Some(point) = resume_kill {
        context += &format!("; resumed with {resume_by:?}, killed at {point:?}");
        let server = serve(resume_script()).await;
        let args = run_args(&server, &resume_args, "carry on");
        let (printed, requests) = killed_run(&sandbox, &server, &args, point).await;
        let resume_route = route(&sandbox, &server);
        server.shutdown().await;
        context += &format!(" (requests served: {})", describe(&requests));
        if let Some(printed) = printed.session_id() {
            assert_eq!(printed, id, "{context}: resumed another session");
        }
        second = Some(
            CrashCheck {
                sandbox: &sandbox,
                layout,
                id: &id,
                requests: &requests,
                route: &resume_route,
                printed: &printed,
                earlier: Some(&first),
                prepare: false,
                tear: None,
                context: &context,
            }
            .run(),
        );
    }

    // Phase 3: the last resume completes on top of whatever the kills left.
    context += &format!("; resumed with {resume_by:?}");
    let repaired = &second.as_ref().unwrap_or(&first).repaired;
    let queued_prompts = queued_prompts(repaired);
    let server = serve(resume_script()).await;
    let mut running = Running::spawn(&sandbox, &run_args(&server, &resume_args, "carry on"));
    let status = running.wait().await;
    let printed = running.finish();
    assert_eq!(
        status,
        Some(0),
        "{context}: resume failed:\n{}\nprinted: {:?}\nrequests: {}",
        printed.stderr,
        printed.lines,
        describe(&server.requests())
    );
    assert_resumed(&sandbox, layout, &id, repaired, &server, &printed, &context);
    server.shutdown().await;
    if scenario == Scenario::Compaction {
        assert_lock_free(&sandbox, layout, &id, &context).await;
    }

    Outcome {
        first: Some(first),
        second,
        prepared: prepare,
        queued_prompts,
        stray_temp_files: stray_temp_files(&sandbox.sessions_root()),
    }
}

/// A completed resume of `id` extended `repaired` with exactly one completed turn, whose
/// request was rebuilt from the log (closers included).
fn assert_resumed(
    sandbox: &Sandbox,
    layout: Layout,
    id: &str,
    repaired: &[Arc<SessionEvent>],
    server: &MockServer,
    printed: &Printed,
    context: &str,
) {
    assert_eq!(
        printed.lines.first(),
        Some(&json!({"type": "session", "id": id, "version": 0, "resumed": true})),
        "{context}"
    );
    assert_eq!(
        printed.lines.last().map(|l| l["outcome"].clone()),
        Some(json!({"kind": "completed"})),
        "{context}"
    );
    let stored = layout
        .store(sandbox)
        .load(&dsh_protocol::SessionId::new(id))
        .unwrap();
    assert_eq!(
        stored.torn_tail, None,
        "{context}: the resumed log has a torn tail"
    );
    let events = stored.events;
    assert_checks_pass(&events, &format!("{context}: the resumed log"));
    assert!(
        events.len() > repaired.len() && events[..repaired.len()] == *repaired,
        "{context}: the resumed log does not continue the repaired one"
    );
    // The crashed turn ended `interrupted` (if it was open). Then one completed turn for
    // each prompt the crash left queued (a resumed session replays its inbox) and one for
    // the new prompt, numbered on from the last turn (turns count from 1).
    let turns = 1 + queued_prompts(repaired);
    let before_ends = turn_ends(repaired);
    let after_ends = turn_ends(&events);
    assert_eq!(
        after_ends[..before_ends.len()],
        before_ends[..],
        "{context}"
    );
    assert_eq!(
        after_ends[before_ends.len()..],
        vec![json!({"kind": "completed"}); turns],
        "{context}: resuming ran other than {turns} completed turns"
    );
    let turn_starts = |events: &[Arc<SessionEvent>]| -> Vec<u64> {
        events
            .iter()
            .filter_map(|e| match &e.data {
                EventData::TurnStart(start) => Some(start.turn),
                _ => None,
            })
            .collect()
    };
    let first_new = turn_starts(repaired).last().map_or(1, |turn| turn + 1);
    assert_eq!(
        turn_starts(&events[repaired.len()..]),
        (first_new..first_new + turns as u64).collect::<Vec<_>>(),
        "{context}"
    );
    // Each turn asked the model once, with exactly what the log rebuilds.
    let requests = step_requests(&server.requests());
    let starts: Vec<usize> = attempt_starts(&events)
        .into_iter()
        .filter(|&at| at >= repaired.len())
        .collect();
    assert_eq!((requests.len(), starts.len()), (turns, turns), "{context}");
    let route = route(sandbox, server);
    for (k, (request, at)) in requests.iter().zip(starts).enumerate() {
        assert_eq!(
            request.body,
            rebuild_body(&events[..at], &route, id),
            "{context}: resumed request {k} differs from its log reconstruction"
        );
    }
    printed.assert_agrees_with(&events);
}

/// After the kills and the completed resume, the session is not held by a dead process's
/// compaction: no attempt of the resumed runs was refused as busy, and a manual compaction
/// now runs and leaves a valid log. It may compact, find nothing worth compacting (a range
/// no larger than a checkpoint's framing is refused before any model call), or fail its
/// summary as not smaller than a range the scripted summary outweighs; never `busy`.
async fn assert_lock_free(sandbox: &Sandbox, layout: Layout, id: &str, context: &str) {
    let session = dsh_protocol::SessionId::new(id);
    let before = layout.store(sandbox).load(&session).unwrap().events;
    let busy = before.iter().any(|e| {
        e.type_name() == "compaction/end"
            && e.data.to_value()["error"]
                .as_str()
                .is_some_and(|error| error.contains("already"))
    });
    assert!(!busy, "{context}: a compaction was refused by a stale lock");
    let server = serve(resume_script()).await;
    let args = [
        "sessions",
        "compact",
        id,
        "--provider",
        dsh_cli::config::OPENAI_ROUTE,
        "--base-url",
        &server.base_url(),
    ];
    let output = sandbox.dsh(&args).await;
    let stderr = text(&output.stderr);
    let ran = match output.status.code() {
        Some(0) => true,
        Some(1) => stderr.contains("dsh: compaction failed (summary): "),
        _ => false,
    };
    assert!(
        ran && !stderr.contains("(busy)"),
        "{context}: manual compaction after the crashes did not run:\n{}{stderr}",
        text(&output.stdout)
    );
    let after = layout.store(sandbox).load(&session).unwrap().events;
    assert_checks_pass(
        &after,
        &format!("{context}: the log after a manual compaction"),
    );
    assert_eq!(after[..before.len()], before[..], "{context}");
    server.shutdown().await;
}

/// How many prompts `events` leave queued for later turns: the `next-turn` list of the
/// inbox, replayed from its `agent/inbox/spliced` events.
fn queued_prompts(events: &[Arc<SessionEvent>]) -> usize {
    let mut next_turn: Vec<serde_json::Value> = Vec::new();
    for event in events
        .iter()
        .filter(|e| e.type_name() == "agent/inbox/spliced")
    {
        let splice = event.data.to_value();
        if splice["target"] != "next-turn" {
            continue;
        }
        let at = |field: &str| usize::try_from(splice[field].as_u64().unwrap_or(0)).unwrap();
        let (start, removed) = (at("start"), at("removedCount"));
        let inserted = splice["inserted"].as_array().cloned().unwrap_or_default();
        next_turn.splice(start..start + removed, inserted);
    }
    next_turn.len()
}

/// Each request as `path: messages sent -> how it was served`, for failure messages.
fn describe(requests: &[RecordedRequest]) -> String {
    let each: Vec<String> = requests
        .iter()
        .map(|r| {
            let sent = r.body["messages"].as_array().map_or(0, Vec::len);
            format!("{} {}: {sent} messages -> {:?}", r.method, r.path, r.served)
        })
        .collect();
    format!("[{}]", each.join(", "))
}

/// Files under `dir` whose names end in `.tmp`.
fn stray_temp_files(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            if path.is_dir() {
                stray_temp_files(&path)
            } else {
                u64::from(path.to_string_lossy().ends_with(".tmp"))
            }
        })
        .sum()
}

/// The session id a log's directory names (ids in these tests need no escaping).
fn session_dir_id(log: &Path) -> String {
    let dir = log.parent().and_then(Path::file_name).unwrap();
    dir.to_string_lossy().into_owned()
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
