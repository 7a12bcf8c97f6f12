//! Whole-log tests: jobs started through a tool, settled, noticed, woken, killed, waited.
//! Each asserts every event of the log (as one line per event, see `support::digest`).

use super::support::{called, digest, harness, l, lines, notice, said, Jobs};
use dsh_jobs::{JobAliasResolver, JobId};
use dsh_protocol::SessionId;
use dsh_testkit::harness::{msg, until, Harness, ScriptedTool};
use dsh_testkit::normalize::log_json;
use dsh_testkit::scripted::{text_response, tool_call_response};
use serde_json::json;
use std::sync::Arc;

fn first_turn(prompt: &str) -> Vec<String> {
    vec![
        format!("inbox next-turn + user: {prompt}"),
        "turn/start 1".into(),
        "inbox next-turn -1".into(),
        "step/start 1.1".into(),
        format!("user/message user: {prompt}"),
        "request/header".into(),
        "request/context".into(),
    ]
}

/// A turn opened by `first` (a user's text or a notice) on an idle agent.
fn turn(n: u64, source: &str, first: &str) -> Vec<String> {
    vec![
        format!("inbox next-turn + {source}: {first}"),
        format!("turn/start {n}"),
        "inbox next-turn -1".into(),
        format!("step/start {n}.1"),
        format!("user/message {source}: {first}"),
    ]
}

fn step(turn: u64, step: u64, body: Vec<String>) -> Vec<String> {
    let mut out = vec![format!("step/start {turn}.{step}")];
    out.extend(body);
    out.push(format!("step/end {turn}.{step}"));
    out
}

fn end(turn: u64, step: u64) -> Vec<String> {
    vec![
        format!("step/end {turn}.{step}"),
        format!("turn/end {turn} completed"),
    ]
}

const TOOLS: &str = "plugin:tool-jobs";

#[tokio::test]
async fn a_completion_wakes_an_idle_owner_which_reads_the_output() {
    let (h, jobs, _registry) = harness(
        Harness::builder().script([
            tool_call_response(&[("c1", "start_job", r#"{"label":"make test"}"#)]).into(),
            text_response("started it").into(),
            tool_call_response(&[("c2", "job_output", r#"{"job_id":"bash-1"}"#)]).into(),
            text_response("all green").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("run the tests")).unwrap();
    agent.when_idle().await;
    jobs.append("bash-1", b"ok 12 tests\n");
    assert!(jobs.settle("bash-1", Jobs::done(0)));
    agent.when_idle().await;
    let n = notice("bash-1", "make test", "completed, exit code: 0");
    let expected = lines(vec![
        first_turn("run the tests"),
        called(
            "start_job",
            r#"{"label":"make test"}"#,
            "started background job bash-1",
        ),
        l(&["step/end 1.1"]),
        step(1, 2, said("started it")),
        l(&["turn/end 1 completed"]),
        turn(2, TOOLS, &n),
        called(
            "job_output",
            r#"{"job_id":"bash-1"}"#,
            "ok 12 tests\n[status: completed, exit code: 0]",
        ),
        l(&["step/end 2.1"]),
        step(2, 2, said("all green")),
        l(&["turn/end 2 completed"]),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    h.finish().await;
}

#[tokio::test]
async fn a_completion_during_a_busy_turn_is_injected_into_its_next_step() {
    let (h, jobs, _registry) = harness(
        Harness::builder()
            .scripted_tools([ScriptedTool::new("hold").held()])
            .script([
                tool_call_response(&[
                    ("c1", "start_job", r#"{"label":"build"}"#),
                    ("c2", "hold", "{}"),
                ])
                .into(),
                text_response("saw the notice").into(),
            ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("go")).unwrap();
    h.probe().wait_for("start c2").await;
    assert!(jobs.settle("bash-1", Jobs::done(2)));
    h.probe().release("c2");
    agent.when_idle().await;
    let n = notice("bash-1", "build", "completed, exit code: 2");
    let expected = lines(vec![
        first_turn("go"),
        l(&[
            "assistant/chunk",
            r#"assistant/message model: call start_job({"label":"build"}) | call hold({})"#,
            r#"tool/call start_job({"label":"build"})"#,
            "tool/result tool: result started background job bash-1",
            "tool/call hold({})",
        ]),
        // Settled while the owner runs a tool: injected, not a turn of its own.
        vec![format!("inbox next-step + {TOOLS}: {n}")],
        l(&[
            "tool/result tool: result hold:",
            "step/end 1.1",
            "inbox next-step -1",
            "step/start 1.2",
        ]),
        vec![format!("user/message {TOOLS}: {n}")],
        said("saw the notice"),
        end(1, 2),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    h.finish().await;
}

#[tokio::test]
async fn an_idle_owner_is_woken_three_times_in_a_row_then_a_user_message_refills_the_budget() {
    let starts: Vec<(String, String, String)> = (1..=5)
        .map(|i| {
            (
                format!("c{i}"),
                "start_job".to_owned(),
                format!(r#"{{"label":"job {i}"}}"#),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = starts
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let (h, jobs, _registry) = harness(
        Harness::builder().script([
            tool_call_response(&calls).into(),
            text_response("five started").into(),
            text_response("one").into(),
            text_response("two").into(),
            text_response("three").into(),
            text_response("four").into(),
            text_response("five").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("start five")).unwrap();
    agent.when_idle().await;
    for i in 1..=4 {
        assert!(jobs.settle(&format!("bash-{i}"), Jobs::done(0)));
        agent.when_idle().await;
    }
    agent.followup(msg("status?")).unwrap();
    agent.when_idle().await;
    assert!(jobs.settle("bash-5", Jobs::done(0)));
    agent.when_idle().await;

    let n = |i: u64| {
        notice(
            &format!("bash-{i}"),
            &format!("job {i}"),
            "completed, exit code: 0",
        )
    };
    let mut first = vec![
        "assistant/chunk".to_owned(),
        format!(
            "assistant/message model: {}",
            (1..=5)
                .map(|i| format!(r#"call start_job({{"label":"job {i}"}})"#))
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    ];
    for i in 1..=5 {
        first.push(format!(r#"tool/call start_job({{"label":"job {i}"}})"#));
        first.push(format!(
            "tool/result tool: result started background job bash-{i}"
        ));
    }
    let woken =
        |t: u64, i: u64, answer: &str| lines(vec![turn(t, TOOLS, &n(i)), said(answer), end(t, 1)]);
    let expected = lines(vec![
        first_turn("start five"),
        first,
        l(&["step/end 1.1"]),
        step(1, 2, said("five started")),
        l(&["turn/end 1 completed"]),
        woken(2, 1, "one"),
        woken(3, 2, "two"),
        woken(4, 3, "three"),
        // The fourth in a row is parked for the next turn instead of opening one.
        vec![format!("inbox next-step + {TOOLS}: {}", n(4))],
        l(&[
            "inbox next-turn + user: status?",
            "turn/start 5",
            "inbox next-step -1",
            "inbox next-turn -1",
            "step/start 5.1",
        ]),
        vec![format!("user/message {TOOLS}: {}", n(4))],
        l(&["user/message user: status?"]),
        said("four"),
        end(5, 1),
        // The person's message refilled the budget: this one wakes again.
        woken(6, 5, "five"),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    h.finish().await;
}

#[tokio::test]
async fn the_eleventh_running_job_is_refused_with_a_message_the_model_can_act_on() {
    let starts: Vec<(String, String, String)> = (1..=11)
        .map(|i| {
            (
                format!("c{i}"),
                "start_job".to_owned(),
                format!(r#"{{"label":"j{i}"}}"#),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = starts
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let (h, _jobs, registry) = harness(
        Harness::builder().script([
            tool_call_response(&calls).into(),
            text_response("ten running").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("start eleven")).unwrap();
    agent.when_idle().await;
    let mut first = vec![
        "assistant/chunk".to_owned(),
        format!(
            "assistant/message model: {}",
            (1..=11)
                .map(|i| format!(r#"call start_job({{"label":"j{i}"}})"#))
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    ];
    for i in 1..=11 {
        first.push(format!(r#"tool/call start_job({{"label":"j{i}"}})"#));
        first.push(if i <= 10 {
            format!("tool/result tool: result started background job bash-{i}")
        } else {
            "tool/result tool: result Error: background job limit reached for this owner (limit: 10); use job_kill to stop an unneeded job, wait for it to finish, then retry".to_owned()
        });
    }
    let expected = lines(vec![
        first_turn("start eleven"),
        first,
        l(&["step/end 1.1"]),
        step(1, 2, said("ten running")),
        l(&["turn/end 1 completed"]),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    assert_eq!(registry.list(agent.id()).len(), 10);
    assert_eq!(registry.live_count_of(agent.id()), 10);
    h.finish().await;
}

#[tokio::test]
async fn a_kill_sends_no_notice_and_the_list_shows_the_killed_job() {
    let (h, _jobs, registry) = harness(
        Harness::builder().script([
            tool_call_response(&[("c1", "start_job", r#"{"label":"serve"}"#)]).into(),
            tool_call_response(&[(
                "c2",
                "job_kill",
                r#"{"job_id":"bash-1","reason":"not needed"}"#,
            )])
            .into(),
            tool_call_response(&[
                ("c3", "job_list", "{}"),
                ("c4", "job_kill", r#"{"job_id":"bash-1"}"#),
            ])
            .into(),
            text_response("stopped").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("serve then stop")).unwrap();
    agent.when_idle().await;
    // Nothing is pending: the kill suppressed the notice, so no turn and no injection follow.
    assert!(registry.is_quiet());
    let expected = lines(vec![
        first_turn("serve then stop"),
        called("start_job", r#"{"label":"serve"}"#, "started background job bash-1"),
        l(&["step/end 1.1"]),
        step(1, 2, called("job_kill", r#"{"job_id":"bash-1","reason":"not needed"}"#, "requested cancellation of job bash-1")),
        l(&[
            "step/start 1.3",
            "assistant/chunk",
            r#"assistant/message model: call job_list({}) | call job_kill({"job_id":"bash-1"})"#,
            "tool/call job_list({})",
            "tool/result tool: result bash-1 [bash] killed — serve",
            "tool/call job_kill({\"job_id\":\"bash-1\"})",
            "tool/result tool: result job bash-1 had already finished [status: killed, signal: SIGTERM; reason: not needed]",
            "step/end 1.3",
        ]),
        step(1, 4, said("stopped")),
        l(&["turn/end 1 completed"]),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    h.finish().await;
}

#[tokio::test]
async fn a_pending_wait_takes_the_notices_place() {
    let (h, jobs, registry) = harness(
        Harness::builder().script([
            tool_call_response(&[("c1", "start_job", r#"{"label":"compile"}"#)]).into(),
            tool_call_response(&[(
                "c2",
                "job_output",
                r#"{"job_id":"bash-1","wait":true,"timeout_ms":60000}"#,
            )])
            .into(),
            text_response("compiled").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("compile")).unwrap();
    let owner = agent.id().clone();
    until(|| registry.is_awaited(&owner, &JobId::new("bash-1"))).await;
    jobs.append("bash-1", b"built\n");
    assert!(jobs.settle("bash-1", Jobs::done(0)));
    agent.when_idle().await;
    assert!(registry.is_quiet());
    let expected = lines(vec![
        first_turn("compile"),
        called(
            "start_job",
            r#"{"label":"compile"}"#,
            "started background job bash-1",
        ),
        l(&["step/end 1.1"]),
        step(
            1,
            2,
            called(
                "job_output",
                r#"{"job_id":"bash-1","wait":true,"timeout_ms":60000}"#,
                "built\n[status: completed, exit code: 0]",
            ),
        ),
        step(1, 3, said("compiled")),
        l(&["turn/end 1 completed"]),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    h.finish().await;
}

#[tokio::test]
async fn stream_reads_return_each_byte_once() {
    let read = r#"{"job_id":"bash-1"}"#;
    let (h, jobs, _registry) = harness(
        Harness::builder().script([
            tool_call_response(&[("c1", "start_job", r#"{"label":"tail"}"#)]).into(),
            text_response("started").into(),
            tool_call_response(&[("c2", "job_output", read)]).into(),
            text_response("read a").into(),
            tool_call_response(&[("c3", "job_output", read), ("c4", "job_output", read)]).into(),
            text_response("read b").into(),
            tool_call_response(&[("c5", "job_output", read)]).into(),
            text_response("done").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("tail it")).unwrap();
    agent.when_idle().await;
    jobs.append("bash-1", "a1\na2\n".as_bytes());
    agent.followup(msg("read")).unwrap();
    agent.when_idle().await;
    jobs.append("bash-1", "b1 €".as_bytes());
    agent.followup(msg("again")).unwrap();
    agent.when_idle().await;
    assert!(jobs.settle("bash-1", Jobs::done(0)));
    agent.when_idle().await;
    let n = notice("bash-1", "tail", "completed, exit code: 0");
    let expected = lines(vec![
        first_turn("tail it"),
        called(
            "start_job",
            r#"{"label":"tail"}"#,
            "started background job bash-1",
        ),
        l(&["step/end 1.1"]),
        step(1, 2, said("started")),
        l(&["turn/end 1 completed"]),
        turn(2, "user", "read"),
        called("job_output", read, "a1\na2\n[status: running]"),
        l(&["step/end 2.1"]),
        step(2, 2, said("read a")),
        l(&["turn/end 2 completed"]),
        turn(3, "user", "again"),
        l(&[
            "assistant/chunk",
            r#"assistant/message model: call job_output({"job_id":"bash-1"}) | call job_output({"job_id":"bash-1"})"#,
        ]),
        // Parallel reads: one gets the new bytes, the other nothing; never both.
        vec![],
        l(&["step/end 3.1"]),
        step(3, 2, said("read b")),
        l(&["turn/end 3 completed"]),
        turn(4, TOOLS, &n),
        called(
            "job_output",
            read,
            "(no new output)\n[status: completed, exit code: 0]",
        ),
        l(&["step/end 4.1"]),
        step(4, 2, said("done")),
        l(&["turn/end 4 completed"]),
    ]);
    let log = digest(&h.log_json());
    // The two parallel reads of turn 3, in whichever order they ran.
    let at = expected
        .iter()
        .position(|line| line == "step/end 3.1")
        .unwrap();
    let reads: Vec<String> = log[at..at + 4].to_vec();
    let mut results: Vec<&String> = reads
        .iter()
        .filter(|r| r.starts_with("tool/result"))
        .collect();
    results.sort();
    assert_eq!(
        results,
        [
            "tool/result tool: result (no new output)\n[status: running]",
            "tool/result tool: result b1 €\n[status: running]",
        ]
    );
    let mut expected = expected;
    expected.splice(at..at, reads);
    assert_eq!(log, expected);
    h.finish().await;
}

struct Subagents;

impl JobAliasResolver for Subagents {
    fn describe(&self, owner: &SessionId, id: &str) -> Option<String> {
        (owner.as_str() == "b" && id == "agent-7")
            .then(|| "agent-7 is a subagent, not a background job: wait for its report or use send_message".into())
    }
}

#[tokio::test]
async fn unknown_and_foreign_ids_are_refused_alike_and_aliases_answer() {
    let (h, _jobs, registry) = harness(
        Harness::builder().script([
            tool_call_response(&[("c1", "start_job", r#"{"label":"secret"}"#)]).into(),
            text_response("started").into(),
            tool_call_response(&[
                ("c2", "job_output", r#"{"job_id":"bash-1"}"#),
                ("c3", "job_kill", r#"{"job_id":"bash-1"}"#),
                ("c4", "job_output", r#"{"job_id":"bash-2"}"#),
                ("c5", "job_output", r#"{"job_id":""}"#),
                ("c6", "job_output", r#"{"job_id":"agent-7"}"#),
                ("c7", "job_list", "{}"),
            ])
            .into(),
            text_response("nothing of mine").into(),
        ]),
        json!({}),
    );
    registry
        .register_alias(h.ctx(), Arc::new(Subagents))
        .unwrap()
        .forget();
    let a = h.create_agent_named("a").await.agent().clone();
    let b = h.create_agent_named("b").await.agent().clone();
    a.followup(msg("start")).unwrap();
    a.when_idle().await;
    b.followup(msg("probe")).unwrap();
    b.when_idle().await;
    let calls = [
        r#"job_output({"job_id":"bash-1"})"#,
        r#"job_kill({"job_id":"bash-1"})"#,
        r#"job_output({"job_id":"bash-2"})"#,
        r#"job_output({"job_id":""})"#,
        r#"job_output({"job_id":"agent-7"})"#,
        "job_list({})",
    ];
    let call = |i: usize| format!("tool/call {}", calls[i]);
    let result = |text: &str| format!("tool/result tool: result {text}");
    let expected = lines(vec![
        first_turn("probe"),
        vec![
            "assistant/chunk".into(),
            format!(
                "assistant/message model: {}",
                calls.iter().map(|c| format!("call {c}")).collect::<Vec<_>>().join(" | ")
            ),
            // The other session's job is refused exactly like one that does not exist.
            call(0),
            result("Error: unknown job bash-1"),
            call(1),
            result("Error: unknown job bash-1"),
            call(2),
            call(3),
            call(4),
            call(5),
            result("Error: unknown job bash-2"),
            result("Error: invalid job_id: expected a non-empty string, got \"\""),
            result("agent-7 is a subagent, not a background job: wait for its report or use send_message"),
            result("(no background jobs)"),
            "step/end 1.1".into(),
        ],
        step(1, 2, said("nothing of mine")),
        l(&["turn/end 1 completed"]),
    ]);
    assert_eq!(digest(&log_json(&b.session().events())), expected);
    assert_eq!(
        registry.get(a.id(), &JobId::new("bash-1")).unwrap().state,
        dsh_jobs::JobState::Running
    );
    h.finish().await;
}

#[tokio::test]
async fn timeout_ms_zero_and_negative_fail_clearly_and_huge_values_are_capped() {
    let (h, jobs, registry) = harness(
        Harness::builder().script([
            tool_call_response(&[("c1", "start_job", r#"{"label":"long"}"#)]).into(),
            tool_call_response(&[
                (
                    "c2",
                    "job_output",
                    r#"{"job_id":"bash-1","wait":true,"timeout_ms":0}"#,
                ),
                (
                    "c3",
                    "job_output",
                    r#"{"job_id":"bash-1","wait":true,"timeout_ms":-5}"#,
                ),
                (
                    "c4",
                    "job_output",
                    r#"{"job_id":"bash-1","wait":true,"timeout_ms":1}"#,
                ),
            ])
            .into(),
            tool_call_response(&[(
                "c5",
                "job_output",
                r#"{"job_id":"bash-1","wait":true,"timeout_ms":1e300}"#,
            )])
            .into(),
            text_response("waited").into(),
        ]),
        json!({}),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("wait")).unwrap();
    let owner = agent.id().clone();
    until(|| registry.is_awaited(&owner, &JobId::new("bash-1")) && h.adapter().calls() == 3).await;
    assert!(jobs.settle("bash-1", Jobs::done(0)));
    agent.when_idle().await;
    let expected = lines(vec![
        first_turn("wait"),
        called("start_job", r#"{"label":"long"}"#, "started background job bash-1"),
        l(&["step/end 1.1", "step/start 1.2", "assistant/chunk"]),
        vec![format!(
            "assistant/message model: {}",
            [
                r#"call job_output({"job_id":"bash-1","wait":true,"timeout_ms":0})"#,
                r#"call job_output({"job_id":"bash-1","wait":true,"timeout_ms":-5})"#,
                r#"call job_output({"job_id":"bash-1","wait":true,"timeout_ms":1})"#,
            ]
            .join(" | ")
        )],
        l(&[
            r#"tool/call job_output({"job_id":"bash-1","wait":true,"timeout_ms":0})"#,
            r#"tool/call job_output({"job_id":"bash-1","wait":true,"timeout_ms":-5})"#,
            r#"tool/call job_output({"job_id":"bash-1","wait":true,"timeout_ms":1})"#,
            "tool/result tool: result Error: invalid timeout_ms: expected a positive number of milliseconds (at most 600000), got 0",
            "tool/result tool: result Error: invalid timeout_ms: expected a positive number of milliseconds (at most 600000), got -5",
            "tool/result tool: result (no new output)\n[status: running]",
            "step/end 1.2",
        ]),
        step(
            1,
            3,
            called(
                "job_output",
                r#"{"job_id":"bash-1","wait":true,"timeout_ms":1e300}"#,
                "(no new output)\n[status: completed, exit code: 0]",
            ),
        ),
        step(1, 4, said("waited")),
        l(&["turn/end 1 completed"]),
    ]);
    assert_eq!(digest(&h.log_json()), expected);
    h.finish().await;
}
