//! `goal-fold`: the strict goal fold over a 100k-event session, which is what reading a
//! resumed session's goal costs (the `Goals` service folds a session once, then only what
//! is appended).
//!
//! The session is realistic turns ([`workload::append_turn`], ~93 events each), each opened
//! by an admitted goal-round prompt, after one `goal/change` create; the fold checks every
//! round against the goal and the goal changes against each other.

use crate::stats::{report, summarize};
use crate::workload::{append_turn, Texts};
use dsh_modes::goal::{
    fold_goal, GoalChange, GoalOperation, GoalPhase, GoalRoundSource, GoalSnapshot,
};
use dsh_protocol::{ContentBlock, Message, MessageId, Role};
use dsh_session::{AppendOptions, EventData, Session, SessionHeader};
use std::sync::Arc;
use std::time::Instant;

const EVENTS: u64 = 100_000;
const SAMPLES: usize = 50;

pub fn run() -> anyhow::Result<()> {
    dsh_session::register_event_types(dsh_modes::goal::EVENT_TYPES)?;
    let session = Session::new(SessionHeader::new("bench".into(), 0))?;
    let goal = GoalSnapshot {
        id: "goal-bench".into(),
        revision: 1,
        objective: "Keep the benchmark honest".into(),
        phase: GoalPhase::Active,
        max_goal_rounds: 1_000_000,
        blocked_reason: None,
    };
    session.append_typed(&GoalChange::Snapshot {
        operation: GoalOperation::Create,
        goal: goal.clone(),
        rounds_started: 0,
        created_at: 0,
        updated_at: 0,
    })?;
    let mut texts = Texts::new(EVENTS * 40);
    let mut turn = 1;
    while session.len() < EVENTS {
        let source = GoalRoundSource {
            goal_id: goal.id.clone(),
            revision: 1,
            round: turn,
        };
        let round = Message {
            id: MessageId::new(format!("round-{turn}")),
            role: Role::User,
            content: vec![ContentBlock::text(format!("<goal_round> {turn}"))],
            source: source.to_source(),
        };
        session.append(
            EventData::UserMessage(Arc::new(round)),
            AppendOptions::surface_append(),
        )?;
        append_turn(&session, turn, &mut texts)?;
        turn += 1;
    }
    let events = session.events();
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        let fold = fold_goal(&events)?;
        samples.push(started.elapsed());
        anyhow::ensure!(fold.rounds_started() == turn - 1, "every round was counted");
    }
    report(
        "goal-fold",
        &format!("fold {} events ({} rounds)", events.len(), turn - 1),
        &summarize(samples),
    );
    Ok(())
}
