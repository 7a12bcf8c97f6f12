//! Property tests over generated logs.

use super::common::*;
use dsh_protocol::ContentBlock;
use dsh_session::*;
use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;

#[derive(Clone, Debug)]
enum Op {
    User,
    Assistant { text: bool },
    ToolResult,
    LogOnly,
    Replace { from: usize, to: usize },
    Prune { pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::User),
        3 => any::<bool>().prop_map(|text| Op::Assistant { text }),
        2 => Just(Op::ToolResult),
        2 => Just(Op::LogOnly),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(from, to)| Op::Replace { from, to }),
        1 => any::<usize>().prop_map(|pick| Op::Prune { pick }),
    ]
}

/// Applies `ops`, keeping an independent model of the surface nodes.
fn run(ops: &[Op]) -> (Session, Vec<u64>) {
    let session = session("p");
    let mut model: Vec<u64> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let seq = session.len();
        match op {
            Op::User => {
                session
                    .append(user(&format!("u{i}"), "x"), surface())
                    .unwrap();
                model.push(seq);
            }
            Op::Assistant { text } => {
                let content = if *text {
                    vec![ContentBlock::text("a")]
                } else {
                    vec![]
                };
                session
                    .append(
                        assistant(1, 1, &format!("a{i}"), content),
                        surface().sources(vec![]),
                    )
                    .unwrap();
                model.push(seq);
            }
            Op::ToolResult => {
                session
                    .append(tool_result(1, 1, &format!("c{i}"), "r"), surface())
                    .unwrap();
                model.push(seq);
            }
            Op::LogOnly => {
                session
                    .append(
                        EventData::other("session/title", json!({"title": i})),
                        log_only(),
                    )
                    .unwrap();
            }
            Op::Replace { from, to } if !model.is_empty() => {
                let (a, b) = (from % model.len(), to % model.len());
                let (a, b) = (a.min(b), a.max(b));
                let shadowed: Vec<u64> = model[a..=b].to_vec();
                let opts = AppendOptions::surface_replace(model[a], model[b]).sources(shadowed);
                session
                    .append(user(&format!("s{i}"), "summary"), opts)
                    .unwrap();
                model.splice(a..=b, [seq]);
            }
            Op::Prune { pick } => {
                let results: Vec<usize> = (0..model.len())
                    .filter(|&k| {
                        matches!(
                            session.event(model[k]).unwrap().data,
                            EventData::ToolResult(_)
                        )
                    })
                    .collect();
                if results.is_empty() {
                    continue;
                }
                let k = results[pick % results.len()];
                let EventData::ToolResult(original) = session.event(model[k]).unwrap().data.clone()
                else {
                    unreachable!()
                };
                let call = original.message.content[0].clone();
                let ContentBlock::ToolResult {
                    tool_call_id,
                    is_error,
                    ..
                } = call
                else {
                    unreachable!()
                };
                let mut message = (*original.message).clone();
                message.content = vec![ContentBlock::ToolResult {
                    tool_call_id,
                    content: vec![ContentBlock::text("[pruned]")],
                    is_error,
                }];
                let pruned = ToolResult {
                    message: Arc::new(message),
                    ..original
                };
                let opts =
                    AppendOptions::surface_replace(model[k], model[k]).sources(vec![model[k]]);
                session.append(EventData::ToolResult(pruned), opts).unwrap();
                model[k] = seq;
            }
            Op::Replace { .. } => {}
        }
    }
    (session, model)
}

#[derive(Clone, Debug)]
struct StepSpec {
    calls: usize,
    started: usize,
    results: usize,
}

fn step_spec() -> impl Strategy<Value = StepSpec> {
    (0usize..3, 0usize..3, 0usize..3).prop_map(|(calls, s, r)| {
        let started = s.min(calls);
        StepSpec {
            calls,
            started,
            results: r.min(started),
        }
    })
}

/// Appends complete turns (every call started and answered, a final text step).
fn balanced_turns(session: &Session, turns: &[Vec<StepSpec>]) {
    for (t, steps) in turns.iter().enumerate() {
        let turn = t as u64 + 1;
        session.append(turn_start(turn), log_only()).unwrap();
        for (s, spec) in steps.iter().enumerate() {
            let step = s as u64 + 1;
            session.append(step_start(turn, step), log_only()).unwrap();
            if s == 0 {
                session
                    .append(user(&format!("u{turn}"), "go"), surface())
                    .unwrap();
            }
            let calls: Vec<String> = (0..spec.calls)
                .map(|c| format!("c{turn}-{step}-{c}"))
                .collect();
            let content = if calls.is_empty() {
                vec![ContentBlock::text("done")]
            } else {
                calls.iter().map(|c| call_block(c)).collect()
            };
            session
                .append(
                    assistant(turn, step, &format!("a{turn}-{step}"), content),
                    surface().sources(vec![]),
                )
                .unwrap();
            for c in &calls {
                let seq = session
                    .append(tool_call(turn, step, c), log_only())
                    .unwrap()
                    .seq;
                session
                    .append(
                        tool_result(turn, step, c, "ok"),
                        surface().sources(vec![seq]),
                    )
                    .unwrap();
            }
            session.append(step_end(turn, step), log_only()).unwrap();
        }
        session.append(turn_end(turn), log_only()).unwrap();
    }
}

/// Appends an unfinished turn shaped by `steps`. Closed steps answer all their calls (the
/// loop never closes a step owing results); the last step stays open, its calls started and
/// answered only as far as its spec says.
fn open_turn(session: &Session, turn: u64, steps: &[StepSpec]) {
    session.append(turn_start(turn), log_only()).unwrap();
    for (s, spec) in steps.iter().enumerate() {
        let step = s as u64 + 1;
        session.append(step_start(turn, step), log_only()).unwrap();
        let calls: Vec<String> = (0..spec.calls)
            .map(|c| format!("o{turn}-{step}-{c}"))
            .collect();
        let content = calls.iter().map(|c| call_block(c)).collect::<Vec<_>>();
        session
            .append(
                assistant(turn, step, &format!("o{turn}-{step}"), content),
                surface().sources(vec![]),
            )
            .unwrap();
        let last = s + 1 == steps.len();
        let (started, results) = if last {
            (spec.started, spec.results)
        } else {
            (spec.calls, spec.calls)
        };
        for (k, c) in calls.iter().enumerate().take(started) {
            let seq = session
                .append(tool_call(turn, step, c), log_only())
                .unwrap()
                .seq;
            if k < results {
                session
                    .append(
                        tool_result(turn, step, c, "ok"),
                        surface().sources(vec![seq]),
                    )
                    .unwrap();
            }
        }
        if !last {
            session.append(step_end(turn, step), log_only()).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn seqs_are_contiguous_and_derivation_is_deterministic(ops in prop::collection::vec(op(), 0..40)) {
        let (session, model) = run(&ops);
        let events = session.events();
        prop_assert!(events.iter().enumerate().all(|(i, e)| e.seq == i as u64));
        // Replace shadowing: the surface is exactly the model's nodes.
        prop_assert_eq!(&session.surface().nodes, &model);
        let expected: Vec<_> = model
            .iter()
            .filter_map(|&s| derive_event_message(&events[s as usize]))
            .collect();
        let derived = session.derive_messages();
        prop_assert_eq!(&derived, &expected);
        prop_assert_eq!(&session.derive_messages(), &derived);
        prop_assert_eq!(&derive_messages(&events).unwrap(), &derived);
        // Rebuilding from the log gives the same history.
        let rebuilt = seeded("r", events.to_vec()).unwrap();
        prop_assert_eq!(&rebuilt.derive_messages(), &derived);
    }

    #[test]
    fn a_fork_keeps_the_exact_prefix(
        turns in prop::collection::vec(prop::collection::vec(step_spec(), 1..3), 1..4),
        pick in any::<usize>(),
    ) {
        let source = session("src");
        balanced_turns(&source, &turns);
        let events = source.events();
        let ends: Vec<u64> = events
            .iter()
            .filter(|e| matches!(e.data, EventData::TurnEnd(_)))
            .map(|e| e.seq)
            .collect();
        let boundary = ends[pick % ends.len()];
        let plan = fork(&source, Some(boundary), "child".into()).unwrap();
        let child = plan.build(&source).unwrap();
        let n = boundary as usize + 1;
        prop_assert_eq!(&child.events()[..n], &events[..n]);
        prop_assert_eq!(child.header().seed_length, Some(n as u64));
        prop_assert_eq!(
            child.derive_messages(),
            derive_messages(&events[..n]).unwrap()
        );
    }

    #[test]
    fn repair_closes_every_open_turn_and_leaves_balanced_logs_alone(
        turns in prop::collection::vec(prop::collection::vec(step_spec(), 1..3), 0..3),
        open in prop::collection::vec(step_spec(), 0..3),
    ) {
        let session = session("crash");
        balanced_turns(&session, &turns);
        prop_assert!(interrupted_turn_closers(&session.events()).is_empty());
        let turn = turns.len() as u64 + 1;
        open_turn(&session, turn, &open);
        let events = session.events();
        let closers = interrupted_turn_closers(&events);
        let closes_turn = matches!(
            closers.last().map(|e| &e.data),
            Some(EventData::TurnEnd(TurnEnd { reason: TurnEndReason::Interrupted, .. }))
        );
        prop_assert!(closes_turn, "the last closer must be turn/end interrupted");
        let mut repaired = events.to_vec();
        repaired.extend(closers.into_iter().map(Arc::new));
        // The repaired log is a valid, balanced seed whose history answers every call.
        prop_assert!(interrupted_turn_closers(&repaired).is_empty());
        let resumed = seeded("r", repaired).unwrap();
        let history = resumed.derive_messages();
        let asked: Vec<String> = history.iter().flat_map(|m| m.tool_calls().map(|(id, _, _)| id.to_string()).collect::<Vec<_>>()).collect();
        let answered: Vec<String> = history
            .iter()
            .filter_map(|m| match &m.source {
                dsh_protocol::MessageSource::Tool { call_id } => Some(call_id.to_string()),
                _ => None,
            })
            .collect();
        prop_assert_eq!(asked, answered);
    }
}
