//! `session-append`: cost of one `Session::append` of a small event.
//!
//! Appends are timed in batches (one `Instant` pair per batch) and divided, so the clock's
//! own cost does not dominate; fresh sessions keep the log size realistic.

use crate::stats::{report, summarize};
use dsh_kernel::Context;
use dsh_protocol::{ContentBlock, Message, MessageId, MessageSource, Role};
use dsh_session::{
    AppendOptions, EventData, EventDeclaration, PluginEvent, Session, SessionHeader,
    SessionOptions, SessionStore, StepBoundary,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A stand-in for the approval module's `sandbox/mode` declaration (this crate does not link it).
#[derive(serde::Serialize, serde::Deserialize)]
struct ModeSet {
    mode: String,
}

impl PluginEvent for ModeSet {
    const TYPE: &'static str = "sandbox/mode";
}

static MODE_TYPES: &[EventDeclaration] = &[EventDeclaration::of::<ModeSet>()];

const BATCH: u32 = 1_000;
const BATCHES: usize = 300;
const PER_SESSION: usize = 20;

fn measure(
    mut append: impl FnMut(&Session, u32) -> anyhow::Result<()>,
    fresh: impl Fn() -> anyhow::Result<Session>,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(BATCHES);
    let mut session = fresh()?;
    for b in 0..BATCHES {
        if b % PER_SESSION == 0 {
            session = fresh()?;
        }
        let start = Instant::now();
        for i in 0..BATCH {
            append(&session, i)?;
        }
        samples.push(start.elapsed() / BATCH);
    }
    Ok(samples)
}

fn bare() -> anyhow::Result<Session> {
    Ok(Session::new(SessionHeader::new("bench".into(), 0))?)
}

pub fn run() -> anyhow::Result<()> {
    let step = |s: &Session, i: u32| -> anyhow::Result<()> {
        let data = EventData::StepStart(StepBoundary {
            turn: 1,
            step: u64::from(i),
        });
        s.append(data, AppendOptions::log_only())?;
        Ok(())
    };
    report(
        "session-append",
        "log-only step/start, bare session",
        &summarize(measure(step, bare)?),
    );

    let message = Arc::new(Message {
        id: MessageId::new("m"),
        role: Role::User,
        content: vec![ContentBlock::text("a short prompt")],
        source: MessageSource::user(),
    });
    let user = |s: &Session, _: u32| -> anyhow::Result<()> {
        s.append(
            EventData::UserMessage(message.clone()),
            AppendOptions::surface_append(),
        )?;
        Ok(())
    };
    report(
        "session-append",
        "user/message (surface append)",
        &summarize(measure(user, bare)?),
    );

    // A plugin-owned type: the payload is built per append, as a plugin would.
    let plugin = |s: &Session, _: u32| -> anyhow::Result<()> {
        let data = EventData::other("sandbox/mode", serde_json::json!({"mode": "read-only"}));
        s.append(data, AppendOptions::log_only())?;
        Ok(())
    };
    report(
        "session-append",
        "log-only plugin event (sandbox/mode), bare session",
        &summarize(measure(plugin, bare)?),
    );

    // The same event as a registered declaration writes it (what the approval module does).
    dsh_session::register_event_types(MODE_TYPES)?;
    let typed = |s: &Session, _: u32| -> anyhow::Result<()> {
        s.append_typed(&ModeSet {
            mode: "read-only".into(),
        })?;
        Ok(())
    };
    report(
        "session-append",
        "typed plugin event (sandbox/mode, registered), bare session",
        &summarize(measure(typed, bare)?),
    );

    // Attached to a store with one session/event listener (the persistence path).
    let root = Context::root();
    let store = SessionStore::new(&root);
    root.on::<dsh_session::SessionEventPublished>(|p| {
        std::hint::black_box(p.event.seq);
        Ok(())
    })?
    .forget();
    let attached =
        || -> anyhow::Result<Session> { Ok(store.create(&root, None, SessionOptions::default())?) };
    report(
        "session-append",
        "log-only step/start, published to 1 listener",
        &summarize(measure(step, attached)?),
    );
    Ok(())
}
