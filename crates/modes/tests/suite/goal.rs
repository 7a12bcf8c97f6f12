//! Whole-log tests of goals: rounds, the wrap-up step, blocking, pausing, bad updates, the
//! round cap, and a resumed session that continues its goal.

use super::goal_support::{
    called, concat, end, goal_changes, goal_json, person, round, said, step,
};
use super::support::{call, digest, goals, harness, settle, update_goal};
use dsh_agent::ResumeAgentOptions;
use dsh_modes::goal::{Activation, GoalPhase};
use dsh_protocol::SessionId;
use dsh_session::{EventData, SessionEventPublished};
use dsh_testkit::harness::{agent_options, msg, Harness};
use dsh_testkit::scripted::text_response;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn a_goal_takes_three_rounds_and_ends_with_the_wrapup_step() {
    let h = harness(
        Harness::builder().script([
            call(
                "c1",
                "create_goal",
                json!({"objective": "Ship the feature", "max_goal_rounds": 5}),
            ),
            text_response("Goal set.").into(),
            text_response("Round one: wrote the code.").into(),
            text_response("Round two: tests pass.").into(),
            call("c2", "get_goal", json!({})),
            update_goal("c3", "complete", json!({})),
            text_response("Done: the feature ships.").into(),
        ]),
        json!({}),
        false,
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("ship the feature")).unwrap();
    settle(&h, &agent).await;
    let expected = concat(vec![
        person(1, "ship the feature"),
        called(
            1,
            1,
            "c1",
            "create_goal",
            r#"{"objective":"Ship the feature","max_goal_rounds":5}"#,
            &["goal/change create r1 active rounds=0"],
            &goal_json(1, "Ship the feature", "active", 0, 5, "armed"),
        ),
        step(1, 2),
        said(1, 2, "Goal set."),
        end(1),
        round(2, 1, 5),
        said(2, 1, "Round one: wrote the code."),
        end(2),
        round(3, 2, 5),
        said(3, 1, "Round two: tests pass."),
        end(3),
        round(4, 3, 5),
        called(
            4,
            1,
            "c2",
            "get_goal",
            "{}",
            &[],
            &goal_json(1, "Ship the feature", "active", 3, 5, "armed"),
        ),
        step(4, 2),
        called(
            4,
            2,
            "c3",
            "update_goal",
            r#"{"goal_id":"goal-ID","revision":1,"action":"complete"}"#,
            &["goal/change complete r2 complete rounds=3"],
            &goal_json(2, "Ship the feature", "complete", 3, 5, "disarmed"),
        )
        .into_iter()
        .take(4)
        .collect(),
        vec![
            "splice next-step @0 -0 +[\"<goal_complete>\"]".into(),
            "step/end 4.2".into(),
            "splice next-step @0 -1 +[]".into(),
        ],
        step(4, 3),
        vec!["user: <goal_complete>".into()],
        said(4, 3, "Done: the feature ships."),
        end(4),
    ]);
    assert_eq!(digest(&h.session().events()), expected);
    // The records are the original's shapes: whole snapshots, the round's goal source, the
    // wrap-up's notice source.
    let changes = goal_changes(&h);
    let id = changes[0]["goal"]["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("goal-") && id.len() == 41, "{id}");
    assert_eq!(
        changes[0],
        json!({"kind": "goal/change", "version": 1, "operation": "create",
            "goal": {"id": id, "revision": 1, "objective": "Ship the feature", "phase": "active", "maxGoalRounds": 5},
            "roundsStarted": 0, "createdAt": changes[0]["createdAt"], "updatedAt": changes[0]["updatedAt"]})
    );
    assert_eq!(changes[1]["roundsStarted"], 3);
    assert_eq!(changes[1]["createdAt"], changes[0]["createdAt"]);
    let messages: Vec<Value> = h
        .session()
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventData::UserMessage(m) => Some(serde_json::to_value(&m.source).unwrap()),
            _ => None,
        })
        .collect();
    assert!(messages.contains(&json!({"kind": "goal", "goalId": id, "revision": 1, "round": 3})));
    assert!(messages.contains(
        &json!({"kind": "plugin", "plugin": "tool-goal", "form": "notice",
        "summary": "complete: Ship the feature"})
    ));
    // The model was told the goal policy, with the threshold.
    let system = h.adapter().requests()[0].system.clone().unwrap_or_default();
    assert!(
        system.contains("persists for at least 3 consecutive goal rounds"),
        "{system}"
    );
    h.finish().await;
}

#[tokio::test]
async fn blocked_is_refused_before_round_three_and_accepted_at_it() {
    let block = || {
        update_goal(
            "b",
            "blocked",
            json!({"blocked_reason": "The API key is missing."}),
        )
    };
    let h = harness(
        Harness::builder().script([
            call(
                "c1",
                "create_goal",
                json!({"objective": "Deploy", "max_goal_rounds": 9}),
            ),
            text_response("Goal set.").into(),
            block(),
            text_response("Trying another way.").into(),
            block(),
            text_response("Still stuck.").into(),
            block(),
            text_response("Blocked: I need an API key.").into(),
        ]),
        json!({}),
        false,
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("deploy it")).unwrap();
    settle(&h, &agent).await;
    let args = r#"{"goal_id":"goal-ID","revision":1,"action":"blocked","blocked_reason":"The API key is missing."}"#;
    let refused = |turn: u64, n: u64| {
        concat(vec![
            round(turn, n, 9),
            called(turn, 1, "b", "update_goal", args, &[],
                &format!("ERR Error: blocked requires at least 3 consecutive goal rounds; current round is {n} [GOAL_TOOL_BLOCK_THRESHOLD]")),
        ])
    };
    let expected = concat(vec![
        person(1, "deploy it"),
        called(
            1,
            1,
            "c1",
            "create_goal",
            r#"{"objective":"Deploy","max_goal_rounds":9}"#,
            &["goal/change create r1 active rounds=0"],
            &goal_json(1, "Deploy", "active", 0, 9, "armed"),
        ),
        step(1, 2),
        said(1, 2, "Goal set."),
        end(1),
        refused(2, 1),
        step(2, 2),
        said(2, 2, "Trying another way."),
        end(2),
        refused(3, 2),
        step(3, 2),
        said(3, 2, "Still stuck."),
        end(3),
        round(4, 3, 9),
        vec![
            "assistant: <call b update_goal>".into(),
            format!("tool/call b update_goal {args}"),
            "goal/change block r2 blocked (model-reported) rounds=3".into(),
        ],
    ]);
    let log = digest(&h.session().events());
    assert_eq!(log[..expected.len()], expected[..]);
    assert!(
        log[expected.len()].starts_with("tool/result {\"goal\":{\"id\":\"goal-ID\",\"revision\":2")
    );
    assert!(log[expected.len()].contains(r#""blockedReason":{"code":"model-reported","message":"The API key is missing."}},"activation":"disarmed""#));
    assert_eq!(
        log[expected.len() + 1..],
        concat(vec![
            vec![
                "splice next-step @0 -0 +[\"<goal_blocked>\"]".into(),
                "step/end 4.1".into(),
                "splice next-step @0 -1 +[]".into(),
            ],
            step(4, 2),
            vec!["user: <goal_blocked \"The API key is missing.\">".into()],
            said(4, 2, "Blocked: I need an API key."),
            end(4),
        ])[..]
    );
    // Exactly one wrap-up step, and no round after it.
    let view = goals(&h).get(&agent).unwrap().unwrap();
    assert_eq!(
        (view.goal.phase, view.activation, view.rounds_started),
        (GoalPhase::Blocked, Activation::Disarmed, 3)
    );
    h.finish().await;
}

#[tokio::test]
async fn a_person_pauses_and_resumes_a_goal() {
    let h = harness(
        Harness::builder().script([
            call("c1", "create_goal", json!({"objective": "Tidy the docs"})),
            update_goal("c2", "pause", json!({})),
            text_response("Paused as asked.").into(),
            update_goal("c3", "resume", json!({})),
            text_response("Resumed.").into(),
            update_goal("c4", "complete", json!({})),
            text_response("The docs are tidy.").into(),
        ]),
        json!({}),
        false,
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("tidy the docs, then pause")).unwrap();
    settle(&h, &agent).await;
    let paused = goals(&h).get(&agent).unwrap().unwrap();
    assert_eq!(
        (paused.goal.phase, paused.activation, paused.rounds_started),
        (GoalPhase::Paused, Activation::Disarmed, 0)
    );
    assert_eq!(paused.goal.max_goal_rounds, 256, "the default cap");
    agent.followup(msg("continue")).unwrap();
    settle(&h, &agent).await;
    let expected = concat(vec![
        person(1, "tidy the docs, then pause"),
        called(
            1,
            1,
            "c1",
            "create_goal",
            r#"{"objective":"Tidy the docs"}"#,
            &["goal/change create r1 active rounds=0"],
            &goal_json(1, "Tidy the docs", "active", 0, 256, "armed"),
        ),
        step(1, 2),
        called(
            1,
            2,
            "c2",
            "update_goal",
            r#"{"goal_id":"goal-ID","revision":1,"action":"pause"}"#,
            &["goal/change pause r2 paused rounds=0"],
            &goal_json(2, "Tidy the docs", "paused", 0, 256, "disarmed"),
        ),
        step(1, 3),
        said(1, 3, "Paused as asked."),
        end(1),
        person(2, "continue"),
        called(
            2,
            1,
            "c3",
            "update_goal",
            r#"{"goal_id":"goal-ID","revision":2,"action":"resume"}"#,
            &["goal/change resume r3 active rounds=0"],
            &goal_json(3, "Tidy the docs", "active", 0, 256, "armed"),
        ),
        step(2, 2),
        said(2, 2, "Resumed."),
        end(2),
        round(3, 1, 256),
        called(
            3,
            1,
            "c4",
            "update_goal",
            r#"{"goal_id":"goal-ID","revision":3,"action":"complete"}"#,
            &["goal/change complete r4 complete rounds=1"],
            &goal_json(4, "Tidy the docs", "complete", 1, 256, "disarmed"),
        )
        .into_iter()
        .take(4)
        .collect(),
        vec![
            "splice next-step @0 -0 +[\"<goal_complete>\"]".into(),
            "step/end 3.1".into(),
            "splice next-step @0 -1 +[]".into(),
        ],
        step(3, 2),
        vec!["user: <goal_complete>".into()],
        said(3, 2, "The docs are tidy."),
        end(3),
    ]);
    assert_eq!(digest(&h.session().events()), expected);
    h.finish().await;
}

#[tokio::test]
async fn bad_updates_get_typed_errors_and_leave_the_log_valid() {
    let h = harness(
        Harness::builder().script([
            call(
                "c1",
                "create_goal",
                json!({"objective": "  Port the parser  ", "max_goal_rounds": 4}),
            ),
            update_goal("c2", "complete", json!({"revision": 7})),
            call(
                "c3",
                "update_goal",
                json!({"goal_id": "goal-x", "revision": 1, "action": "explode"}),
            ),
            update_goal("c4", "pause", json!({"objective": "Port the lexer"})),
            update_goal("c5", "blocked", json!({"blocked_reason": "  "})),
            update_goal("c6", "edit", json!({"objective": "", "max_goal_rounds": 0})),
            update_goal("c7", "edit", json!({"revision": 1.5})),
            call("c8", "create_goal", json!({"objective": "Another one"})),
            call("c9", "create_goal", json!({"objective": "   "})),
            update_goal("c10", "pause", json!({})),
            text_response("Paused.").into(),
        ]),
        json!({}),
        false,
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("port the parser")).unwrap();
    settle(&h, &agent).await;
    let results: Vec<String> = digest(&h.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result ") || l.starts_with("goal/change"))
        .collect();
    assert_eq!(
        results,
        [
            "goal/change create r1 active rounds=0".to_owned(),
            format!("tool/result {}", goal_json(1, "Port the parser", "active", 0, 4, "armed")),
            "tool/result ERR Error: stale goal ref \"goal-ID\" revision 7; current is \"goal-ID\" revision 1 [GOAL_STALE_REVISION]".into(),
            results[3].clone(),
            "tool/result ERR Error: objective and max_goal_rounds are valid only with action edit; blocked_reason is valid only with action blocked [GOAL_TOOL_INVALID_UPDATE]".into(),
            "tool/result ERR Error: blocked_reason is required with action blocked [GOAL_TOOL_INVALID_UPDATE]".into(),
            "tool/result ERR Error: goal edit requires objective and/or maxGoalRounds [GOAL_INVALID_EDIT]".into(),
            "tool/result ERR Error: goal_id must be non-empty and revision must be a positive safe integer [GOAL_TOOL_INVALID_UPDATE]".into(),
            "tool/result ERR Error: goal \"goal-ID\" already exists with phase \"active\" [GOAL_ALREADY_EXISTS]".into(),
            "tool/result ERR Error: goal objective must be a non-empty string [GOAL_INVALID_OBJECTIVE]".into(),
            "goal/change pause r2 paused rounds=0".into(),
            format!("tool/result {}", goal_json(2, "Port the parser", "paused", 0, 4, "disarmed")),
        ]
    );
    assert!(
        results[3].contains("explode") && results[3].ends_with("[INVALID_TOOL_ARGUMENTS]"),
        "{}",
        results[3]
    );
    h.finish().await;
}

#[tokio::test]
async fn a_goal_over_its_cap_blocks_and_resumes_only_with_a_larger_cap() {
    let h = harness(
        Harness::builder().script([
            call(
                "c1",
                "create_goal",
                json!({"objective": "Fix the flaky test", "max_goal_rounds": 2}),
            ),
            text_response("Goal set.").into(),
            text_response("Round one.").into(),
            text_response("Round two.").into(),
            text_response("Round three.").into(),
        ]),
        json!({}),
        false,
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("fix the flaky test")).unwrap();
    settle(&h, &agent).await;
    let log = digest(&h.session().events());
    assert_eq!(
        log[log.len() - 9..],
        concat(vec![
            round(3, 2, 2),
            said(3, 1, "Round two."),
            end(3),
            vec!["goal/change block r2 blocked (round-limit) rounds=2".into()],
        ])[..]
    );
    let goals = goals(&h);
    let view = goals.get(&agent).unwrap().unwrap();
    assert_eq!(
        view.goal
            .blocked_reason
            .as_ref()
            .map(|r| r.message.as_str()),
        Some("Goal reached its configured limit of 2 rounds.")
    );
    // Out of rounds: resuming is refused until the cap grows.
    let refused = goals.resume(&agent, &view.reference()).unwrap_err();
    assert_eq!(refused.code(), "GOAL_INVALID_TRANSITION");
    assert!(
        refused.to_string().contains("exhausted 2 goal rounds"),
        "{refused}"
    );
    let edited = goals
        .edit(&agent, &view.reference(), None, Some(3))
        .unwrap();
    assert_eq!(
        edited.goal.phase,
        GoalPhase::Blocked,
        "an edit keeps the phase"
    );
    goals.resume(&agent, &edited.reference()).unwrap();
    settle(&h, &agent).await;
    let log = digest(&h.session().events());
    assert_eq!(
        log[log.len() - 11..],
        concat(vec![
            vec![
                "goal/change edit r3 blocked (round-limit) rounds=2".into(),
                "goal/change resume r4 active rounds=2".into(),
            ],
            round(4, 3, 3),
            said(4, 1, "Round three."),
            end(4),
            vec!["goal/change block r5 blocked (round-limit) rounds=3".into()],
        ])[..]
    );
    h.finish().await;
}

#[tokio::test]
async fn a_resumed_session_with_an_active_goal_continues_it() {
    // First process: the goal is created, and the process "stops" right after that turn.
    let h1 = harness(
        Harness::builder().script([
            call(
                "c1",
                "create_goal",
                json!({"objective": "Migrate the database", "max_goal_rounds": 4}),
            ),
            text_response("Goal set.").into(),
            call("c2", "get_goal", json!({})),
            update_goal("c3", "complete", json!({})),
            text_response("Migrated.").into(),
        ]),
        json!({}),
        false,
    );
    let stored: Arc<Mutex<Vec<Arc<dsh_session::SessionEvent>>>> = Arc::default();
    let keep = stored.clone();
    h1.ctx()
        .on::<SessionEventPublished>(move |published| {
            if matches!(&published.event.data, EventData::TurnEnd(end) if end.turn == 1) {
                *keep.lock().unwrap() = published.session.events().to_vec();
            }
            Ok(())
        })
        .unwrap()
        .forget();
    let agent = h1.create_agent().await.agent().clone();
    agent.followup(msg("migrate the database")).unwrap();
    settle(&h1, &agent).await;
    h1.finish().await;
    let stored = stored.lock().unwrap().clone();
    assert!(!stored.is_empty());

    // Second process: the session is resumed. The goal is active but disarmed, as in the
    // original; nothing runs until a surface continues it (dsh run --resume does, unless
    // --no-goal; the TUI offers it).
    let h2 = harness(
        Harness::builder().script([
            text_response("Picking up: schema converted.").into(),
            call("c4", "get_goal", json!({})),
            update_goal("c5", "complete", json!({})),
            text_response("Migrated and verified.").into(),
        ]),
        json!({}),
        false,
    );
    let source = h2.mount_memory_source();
    let id = SessionId::from("agent-1");
    source.save(&id, stored.clone());
    let mut options = ResumeAgentOptions::new(id);
    options.agent_options = agent_options();
    let resumed = h2.resume_agent(options).await.unwrap().agent().clone();
    settle(&h2, &resumed).await;
    let goals = goals(&h2);
    let view = goals.get(&resumed).unwrap().unwrap();
    assert_eq!(
        (view.goal.phase, view.activation, view.rounds_started),
        (GoalPhase::Active, Activation::Disarmed, 0)
    );
    assert_eq!(
        resumed.session().len() as usize,
        stored.len() + 1,
        "only the end-seed marker"
    );
    let continued = goals.continue_after_resume(&resumed).unwrap().unwrap();
    assert!(continued.is_running());
    settle(&h2, &resumed).await;
    let log = digest(&resumed.session().events()[stored.len()..]);
    assert_eq!(
        log,
        concat(vec![
            vec![
                "session/end-seed".into(),
                "goal/change resume r2 active rounds=0".into(),
            ],
            round(2, 1, 4),
            said(2, 1, "Picking up: schema converted."),
            end(2),
            round(3, 2, 4),
            called(
                3,
                1,
                "c4",
                "get_goal",
                "{}",
                &[],
                &goal_json(2, "Migrate the database", "active", 2, 4, "armed")
            ),
            step(3, 2),
            called(
                3,
                2,
                "c5",
                "update_goal",
                r#"{"goal_id":"goal-ID","revision":2,"action":"complete"}"#,
                &["goal/change complete r3 complete rounds=2"],
                &goal_json(3, "Migrate the database", "complete", 2, 4, "disarmed")
            )
            .into_iter()
            .take(4)
            .collect(),
            vec![
                "splice next-step @0 -0 +[\"<goal_complete>\"]".into(),
                "step/end 3.2".into(),
                "splice next-step @0 -1 +[]".into(),
            ],
            step(3, 3),
            vec!["user: <goal_complete>".into()],
            said(3, 3, "Migrated and verified."),
            end(3),
        ])
    );
    // Nothing to continue any more.
    assert_eq!(goals.continue_after_resume(&resumed).unwrap(), None);
    h2.finish().await;
}

/// The original's round-driver snapshot log (its goal records and round messages), then
/// logs that break one rule each.
#[test]
fn strict_replay_folds_the_originals_log_and_refuses_broken_ones() {
    use dsh_modes::goal::fold_goal;
    use dsh_session::SessionEvent;
    let change = |op: &str, rev: u64, phase: &str, rounds: u64| {
        json!({"type": "goal/change", "data": {"kind": "goal/change", "version": 1, "operation": op,
            "goal": {"id": "goal-s", "revision": rev, "objective": "Finish the proof", "phase": phase, "maxGoalRounds": 2},
            "roundsStarted": rounds, "createdAt": 0, "updatedAt": 0}})
    };
    let round = |rev: u64, n: u64| {
        json!({"type": "user/message", "surfaceOp": "append", "data": {"id": format!("m{n}"), "role": "user",
            "content": [{"type": "text", "text": "<goal_round>…</goal_round>"}],
            "source": {"kind": "goal", "goalId": "goal-s", "revision": rev, "round": n}}})
    };
    let fold = |values: Vec<Value>| {
        let events: Vec<SessionEvent> = values
            .into_iter()
            .enumerate()
            .map(|(seq, mut v)| {
                v["seq"] = json!(seq);
                v["time"] = json!(0);
                SessionEvent::from_value(&v).unwrap()
            })
            .collect();
        fold_goal(&events)
    };
    let good = fold(vec![
        change("create", 1, "active", 0),
        round(1, 1),
        round(1, 2),
        change("pause", 2, "paused", 2),
    ])
    .unwrap();
    assert_eq!(
        (good.goal().unwrap().phase, good.rounds_started()),
        (GoalPhase::Paused, 2)
    );
    let broken = [
        // A round that skips ahead.
        vec![change("create", 1, "active", 0), round(1, 2)],
        // A round past the cap.
        vec![
            change("create", 1, "active", 0),
            round(1, 1),
            round(1, 2),
            round(1, 3),
        ],
        // A round of a paused goal.
        vec![
            change("create", 1, "active", 0),
            change("pause", 2, "paused", 0),
            round(2, 1),
        ],
        // A revision that jumps.
        vec![
            change("create", 1, "active", 0),
            change("pause", 3, "paused", 0),
        ],
        // A pause that changes the round count.
        vec![
            change("create", 1, "active", 0),
            change("pause", 2, "paused", 1),
        ],
        // A second create while the first goal is unfinished.
        vec![
            change("create", 1, "active", 0),
            change("create", 1, "active", 0),
        ],
        // A resume of a goal out of rounds.
        vec![
            change("create", 1, "active", 0),
            round(1, 1),
            round(1, 2),
            change("pause", 2, "paused", 2),
            change("resume", 3, "active", 2),
        ],
    ];
    for (i, log) in broken.into_iter().enumerate() {
        let error = fold(log).unwrap_err();
        assert_eq!(error.code(), "GOAL_REPLAY_INVALID", "case {i}: {error}");
    }
}

#[tokio::test]
async fn the_persons_goal_command_creates_shows_pauses_and_clears() {
    use dsh_modes::goal::command::{execute, parse};
    let h = harness(
        Harness::builder().script([
            text_response("Round one.").into(),
            text_response("Round two.").into(),
        ]),
        json!({"defaultMaxGoalRounds": 2}),
        false,
    );
    let agent = h.create_agent().await.agent().clone();
    let goals = goals(&h);
    let run = |raw: &str| execute(&goals, &agent, &parse(raw));
    assert_eq!(
        run(""),
        Ok(vec![
            "No goal is currently set.".to_owned(),
            dsh_modes::goal::command::USAGE.to_owned()
        ])
    );
    let created = run("Speed up the build").unwrap();
    assert_eq!(
        created,
        [
            "Goal created",
            "Status: active",
            "Objective: Speed up the build",
            "Rounds: 0/2",
            "Activation: armed",
            "",
            "Commands: /goal edit <objective>, /goal pause, /goal clear"
        ]
    );
    settle(&h, &agent).await;
    // Two rounds, then the cap blocked it.
    assert_eq!(
        run("").unwrap()[1..4],
        [
            "Status: blocked",
            "Blocker: round-limit: Goal reached its configured limit of 2 rounds.",
            "Objective: Speed up the build"
        ]
    );
    assert_eq!(
        run("another goal"),
        Err(vec!["A goal is already blocked. Use /goal edit <objective> to change it or /goal clear before replacing it.".to_owned()])
    );
    assert_eq!(
        run("pause"),
        Err(vec!["The goal command is not valid for the current state. Run /goal to view available commands.".to_owned()])
    );
    assert_eq!(run("clear"), Ok(vec!["Goal cleared.".to_owned()]));
    assert_eq!(run("clear"), Ok(vec!["No goal to clear.".to_owned()]));
    let story: Vec<String> = digest(&h.session().events())
        .into_iter()
        .filter(|l| l.starts_with("goal/change") || l.starts_with("user: <goal_round"))
        .collect();
    assert_eq!(
        story,
        [
            "goal/change create r1 active rounds=0",
            "user: <goal_round 1/2>",
            "user: <goal_round 2/2>",
            "goal/change block r2 blocked (round-limit) rounds=2",
            "goal/change clear r3",
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn a_cancelled_round_pauses_the_goal_instead_of_starting_over() {
    use dsh_agent::{AgentCancelCause, CancelOptions};
    let h = harness(
        Harness::builder().script([text_response("never seen").into()]),
        json!({}),
        false,
    );
    let gate = h.gate_requests();
    let agent = h.create_agent().await.agent().clone();
    goals(&h)
        .create(&agent, "Refactor the parser", Some(5))
        .unwrap();
    gate.wait_parked(1).await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    gate.release(1);
    settle(&h, &agent).await;
    let log = digest(&h.session().events());
    assert_eq!(log[0], "goal/change create r1 active rounds=0");
    assert!(
        log.iter().any(|l| l == "turn/end 1 aborted user"),
        "{log:#?}"
    );
    assert_eq!(log.last().unwrap(), "goal/change pause r2 paused rounds=1");
    assert!(
        !log.iter().any(|l| l == "turn/start 2"),
        "no new round started: {log:#?}"
    );
    h.finish().await;
}
