//! `derive-messages`: model history of a 10k-message log.
//!
//! Cold: the first derivation of a freshly resumed session (surface already folded, message
//! cache empty). Warm: a derivation after one more append (incremental). Rebuild: after a
//! replace, which invalidates the cache.

use crate::stats::{report, summarize};
use dsh_protocol::{ContentBlock, Message, MessageId, MessageSource, Role};
use dsh_session::{
    AppendOptions, AssistantMessage, EventData, SeedSource, Session, SessionEvent, SessionHeader,
    SurfaceOp,
};
use std::sync::Arc;
use std::time::Instant;

const MESSAGES: u64 = 10_000;
const RUNS: usize = 30;

fn message(i: u64, role: Role) -> Arc<Message> {
    let source = match role {
        Role::Assistant => MessageSource::model("deepseek", "deepseek-chat"),
        _ => MessageSource::user(),
    };
    Arc::new(Message {
        id: MessageId::new(format!("m{i}")),
        role,
        content: vec![ContentBlock::text(format!(
            "message number {i} with a little text"
        ))],
        source,
    })
}

/// A 10k-message log: alternating user and assistant messages.
fn log() -> Vec<Arc<SessionEvent>> {
    (0..MESSAGES)
        .map(|i| {
            let data = if i % 2 == 0 {
                EventData::UserMessage(message(i, Role::User))
            } else {
                EventData::AssistantMessage(AssistantMessage {
                    turn: i / 2 + 1,
                    step: 1,
                    message: message(i, Role::Assistant),
                    usage: None,
                    interrupted: false,
                })
            };
            let sources = matches!(data, EventData::AssistantMessage(_)).then(Vec::new);
            Arc::new(SessionEvent {
                seq: i,
                time: 0,
                data,
                ignorable: false,
                surface_op: Some(SurfaceOp::Append),
                source_event_seqs: sources,
            })
        })
        .collect()
}

fn resumed(seed: &[Arc<SessionEvent>]) -> anyhow::Result<Session> {
    Ok(Session::with_seed(
        SessionHeader::new("bench".into(), 0),
        seed.to_vec(),
        SeedSource::Persistence,
    )?)
}

pub fn run() -> anyhow::Result<()> {
    let seed = log();

    let mut cold = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let session = resumed(&seed)?;
        let start = Instant::now();
        let history = session.derive_messages();
        cold.push(start.elapsed());
        anyhow::ensure!(history.len() as u64 == MESSAGES, "wrong history length");
    }
    report(
        "derive-messages",
        "10k messages, cold cache (first call)",
        &summarize(cold),
    );

    let session = resumed(&seed)?;
    session.derive_messages();
    let mut warm = Vec::with_capacity(RUNS * 10);
    for i in 0..(RUNS * 10) as u64 {
        session.append(
            EventData::UserMessage(message(MESSAGES + i, Role::User)),
            AppendOptions::surface_append(),
        )?;
        let start = Instant::now();
        std::hint::black_box(session.derive_messages());
        warm.push(start.elapsed());
    }
    report(
        "derive-messages",
        "10k messages, warm cache (+1 append)",
        &summarize(warm),
    );

    let mut rebuild = Vec::with_capacity(RUNS);
    for r in 0..RUNS as u64 {
        let session = resumed(&seed)?;
        session.derive_messages();
        // Replace the first two nodes (a compaction summary): the cache must rebuild.
        session.append(
            EventData::UserMessage(message(1_000_000 + r, Role::User)),
            AppendOptions::surface_replace(0, 1).sources(vec![0, 1]),
        )?;
        let start = Instant::now();
        std::hint::black_box(session.derive_messages());
        rebuild.push(start.elapsed());
    }
    report(
        "derive-messages",
        "10k messages, after a replace (rebuild)",
        &summarize(rebuild),
    );

    let mut construct = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        std::hint::black_box(resumed(&seed)?);
        construct.push(start.elapsed());
    }
    report(
        "derive-messages",
        "seeded construction of the 10k log",
        &summarize(construct),
    );
    Ok(())
}
