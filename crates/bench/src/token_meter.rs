//! `token-meter`: the token meter's cost per appended event, and the pressure check per step
//! (fold the step's new events + `measure` + threshold compare) on sessions of 10k, 100k and
//! 1M estimated tokens.
//!
//! Sessions are realistic turns ([`workload::append_turn`]: a prompt, ~90 streamed chunks, an
//! assistant message with usage citing them, a tool call and result) after one
//! `request/header`, so every assistant message re-assembles its cited chunks for the
//! calibration. The per-step figure folds one such turn (93 events) into a copy of the
//! meter of a session of the given size, so the size stays fixed across samples.

use crate::stats::{report, summarize};
use crate::workload::{append_turn, Texts, EVENTS_PER_TURN};
use dsh_compaction::{MeterService, TokenMeter};
use dsh_kernel::Context;
use dsh_protocol::{
    ContentBlock, EpochHeader, LlmCallConfig, Message, MessageId, MessageSource, Role, ToolSchema,
};
use dsh_session::{
    AppendOptions, EventData, HeaderReason, RequestHeader, Session, SessionEvent, SessionHeader,
    SessionOptions, SessionStore, SessionsPlugin, SurfaceOp,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZES: &[u64] = &[10_000, 100_000, 1_000_000];
const STEP_SAMPLES: usize = 200;
const BATCH: usize = 1_000;

fn header() -> EventData {
    let tools = (0..12)
        .map(|i| ToolSchema {
            name: format!("tool_{i}"),
            description: "Does one thing to the workspace and reports what happened."
                .repeat(3)
                .into(),
            parameters: serde_json::json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A path in the workspace"},
                "content": {"type": "string"}}, "required": ["path"]})
            .into(),
        })
        .collect();
    EventData::RequestHeader(Box::new(RequestHeader {
        header: EpochHeader {
            config: LlmCallConfig {
                provider: "deepseek".into(),
                model: "deepseek-chat".into(),
                ..LlmCallConfig::default()
            },
            adapter_defaults: None,
            system: Some(
                "You are a coding agent working in a repository. "
                    .repeat(60)
                    .into(),
            ),
            tools: Some(tools),
        },
        reason: HeaderReason::Initial,
    }))
}

/// Appends turns until the meter reads at least `tokens`; returns the next turn number.
fn grow(
    session: &Session,
    meter: &mut TokenMeter,
    tokens: u64,
    texts: &mut Texts,
) -> anyhow::Result<u64> {
    let mut turn = 1;
    while meter.measure().total_tokens < tokens {
        append_turn(session, turn, texts)?;
        meter.catch_up(session)?;
        turn += 1;
    }
    Ok(turn)
}

fn sized(tokens: u64) -> anyhow::Result<(Session, TokenMeter, Vec<Arc<SessionEvent>>)> {
    let session = Session::new(SessionHeader::new("bench".into(), 0))?;
    session.append(header(), AppendOptions::log_only())?;
    let mut meter = TokenMeter::new();
    let mut texts = Texts::new(tokens);
    let turn = grow(&session, &mut meter, tokens, &mut texts)?;
    // One more turn, folded per sample into a copy of the meter.
    let before = session.len();
    append_turn(&session, turn, &mut texts)?;
    let step = session.events_from(before);
    Ok((session, meter, step))
}

fn per_step(meter: &TokenMeter, step: &[Arc<SessionEvent>]) -> anyhow::Result<Vec<Duration>> {
    let threshold = meter.measure().total_tokens;
    let mut samples = Vec::with_capacity(STEP_SAMPLES);
    for _ in 0..STEP_SAMPLES {
        let mut copy = meter.clone();
        let start = Instant::now();
        for event in step {
            copy.observe(event)?;
        }
        let over = copy.measure().total_tokens >= threshold;
        samples.push(start.elapsed());
        std::hint::black_box(over);
    }
    Ok(samples)
}

/// A checkpoint replacing the first `count` surface nodes, as the next event `meter` folds.
fn head_replace(meter: &TokenMeter, count: usize) -> SessionEvent {
    let nodes = meter.nodes();
    let end = nodes[count.min(nodes.len()) - 1].seq;
    SessionEvent {
        seq: meter.consumed(),
        time: 0,
        data: EventData::UserMessage(Arc::new(Message {
            id: MessageId::new("checkpoint"),
            role: Role::User,
            content: vec![ContentBlock::text(
                "## Primary Request and Intent\n- bench\n".repeat(40),
            )],
            source: MessageSource::plugin("compact"),
        })),
        ignorable: false,
        surface_op: Some(SurfaceOp::Replace {
            start: nodes[0].seq,
            end,
        }),
        source_event_seqs: Some(nodes[..count].iter().map(|n| n.seq).collect()),
    }
}

pub fn run() -> anyhow::Result<()> {
    // Cost per appended event: folding a 1M-token log in batches of 1,000 events.
    let (session, _, _) = sized(1_000_000)?;
    let events = session.events();
    println!(
        "    session: {} events, {} turns of {EVENTS_PER_TURN} events",
        events.len(),
        events.len() as u64 / EVENTS_PER_TURN
    );
    let mut meter = TokenMeter::new();
    let mut samples = Vec::new();
    for batch in events.chunks(BATCH) {
        let start = Instant::now();
        for event in batch {
            meter.observe(event)?;
        }
        samples.push(start.elapsed() / batch.len() as u32);
    }
    report(
        "token-meter",
        "TokenMeter::observe per event (turn mix)",
        &summarize(samples),
    );

    // The eager path: Session::append with the MeterService following the session.
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(())?;
    let store = ctx.require::<SessionStore>()?;
    let service = MeterService::install(&ctx)?;
    let mut with_service = Vec::new();
    let mut without = Vec::new();
    for round in 0..40u64 {
        for followed in [true, false] {
            let live = store.create(&ctx, None, SessionOptions::default())?;
            live.append(header(), AppendOptions::log_only())?;
            if followed {
                service.measure(&live)?;
            }
            let mut texts = Texts::new(round);
            let start = Instant::now();
            for turn in 1..=10 {
                append_turn(&live, turn, &mut texts)?;
            }
            let per_event = start.elapsed() / (10 * EVENTS_PER_TURN) as u32;
            if followed {
                service.measure(&live)?;
                with_service.push(per_event);
            } else {
                without.push(per_event);
            }
            store.dispose(&live)?;
        }
    }
    report(
        "token-meter",
        "Session::append, published, no meter",
        &summarize(without),
    );
    report(
        "token-meter",
        "Session::append, published, MeterService folding",
        &summarize(with_service),
    );

    // The pressure check per step, by session size.
    for &tokens in SIZES {
        let (session, meter, step) = sized(tokens)?;
        let m = meter.measure();
        println!(
            "    {tokens} tokens: {} events, {} surface nodes, measured {} tokens",
            session.len() - step.len() as u64,
            meter.nodes().len(),
            m.total_tokens
        );
        report(
            "token-meter",
            &format!("pressure check per step, {}k tokens", tokens / 1000),
            &summarize(per_step(&meter, &step)?),
        );
        let mut samples = Vec::with_capacity(STEP_SAMPLES);
        for _ in 0..STEP_SAMPLES {
            let start = Instant::now();
            let over = meter.measure().total_tokens >= m.total_tokens;
            samples.push(start.elapsed());
            std::hint::black_box(over);
        }
        report(
            "token-meter",
            &format!("measure() alone, {}k tokens", tokens / 1000),
            &summarize(samples),
        );
        // A compaction's replace of the head (all but the newest tenth of the nodes).
        let count = meter.nodes().len() * 9 / 10;
        let replace = head_replace(&meter, count.max(1));
        let mut samples = Vec::with_capacity(50);
        for _ in 0..50 {
            let mut copy = meter.clone();
            let start = Instant::now();
            copy.observe(&replace)?;
            samples.push(start.elapsed());
        }
        report(
            "token-meter",
            &format!("head replace (90% of nodes), {}k tokens", tokens / 1000),
            &summarize(samples),
        );
    }
    Ok(())
}
