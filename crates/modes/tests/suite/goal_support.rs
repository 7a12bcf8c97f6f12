//! The outline builders the goal suite's whole-log expectations are written with.

use dsh_session::EventData;
use dsh_testkit::harness::Harness;
use serde_json::{json, Value};

pub(super) fn person(turn: u64, text: &str) -> Vec<String> {
    vec![
        format!("splice next-turn @0 -0 +[{text:?}]"),
        format!("turn/start {turn}"),
        "splice next-turn @0 -1 +[]".into(),
        format!("step/start {turn}.1"),
        format!("user: {text}"),
    ]
}

pub(super) fn round(turn: u64, round: u64, max: u64) -> Vec<String> {
    vec![
        "splice next-turn @0 -0 +[\"<goal_round>\"]".into(),
        format!("turn/start {turn}"),
        "splice next-turn @0 -1 +[]".into(),
        format!("step/start {turn}.1"),
        format!("user: <goal_round {round}/{max}>"),
    ]
}

pub(super) fn said(turn: u64, step: u64, text: &str) -> Vec<String> {
    vec![
        format!("assistant: {text}"),
        format!("step/end {turn}.{step}"),
    ]
}

pub(super) fn end(turn: u64) -> Vec<String> {
    vec![format!("turn/end {turn} completed")]
}

pub(super) fn step(turn: u64, step: u64) -> Vec<String> {
    vec![format!("step/start {turn}.{step}")]
}

/// A tool step: call, the records it writes, its result, and the step's end.
pub(super) fn called(
    turn: u64,
    step: u64,
    id: &str,
    name: &str,
    args: &str,
    records: &[&str],
    result: &str,
) -> Vec<String> {
    let mut out = vec![
        format!("assistant: <call {id} {name}>"),
        format!("tool/call {id} {name} {args}"),
    ];
    out.extend(records.iter().map(|r| (*r).to_owned()));
    out.push(format!("tool/result {result}"));
    out.push(format!("step/end {turn}.{step}"));
    out
}

pub(super) fn goal_json(
    revision: u64,
    objective: &str,
    phase: &str,
    rounds: u64,
    max: u64,
    activation: &str,
) -> String {
    json!({"goal": {"id": "goal-ID", "revision": revision, "objective": objective, "phase": phase,
        "roundsStarted": rounds, "maxGoalRounds": max}, "activation": activation})
    .to_string()
}

pub(super) fn concat(parts: Vec<Vec<String>>) -> Vec<String> {
    parts.into_iter().flatten().collect()
}

pub(super) fn goal_changes(h: &Harness) -> Vec<Value> {
    h.session()
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventData::Other { type_name, data } if type_name == "goal/change" => {
                Some(data.clone())
            }
            _ => None,
        })
        .collect()
}
