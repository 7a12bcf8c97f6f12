//! The region transaction (spec §2.4): one compaction attempt, from `compaction/start` to
//! `compaction/end`.
//!
//! ```text
//! validate span → check lock and owner → start → (await summary) → frame, shrink check,
//! stability check → summary, checkpoint replace, end   (no await between these three)
//! ```
//!
//! Any failure after the start closes the bracket once with `compaction/end {error}`; if that
//! append is refused too, nothing more is tried and the unmatched start stays as the lock (a
//! later resume makes it stale). A manual attempt flushes the session once the bracket closed.

use crate::checkpoint::checkpoint_message;
use crate::engine::{CompactionEngine, CompactionResult};
use crate::estimate::estimate_message;
use crate::events::{CompactionEnd, CompactionStart, CompactionSummary, SeqRange};
use crate::failure::AttemptError;
use crate::meter::{SurfaceNode, TokenMeter};
use crate::pairing::balanced_cuts;
use crate::select::CompactRange;
use crate::summarizer::{summarize, SummaryInput};
use dsh_agent::{AbortSignal, Agent};
use dsh_llm::error_chain;
use dsh_session::{derive_event_message, AppendOptions, EventData, Session};
use std::sync::Arc;

/// Who owns the bracket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The open turn (automatic and explicit regions); none open is an error.
    OpenTurn,
    /// No turn (a manual compaction); an open turn makes it `busy`.
    Standalone,
}

/// What must still hold after the summary arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stability {
    /// The whole surface is as it was when the attempt started.
    WholeSurface,
    /// The selected span is unchanged (nodes appended elsewhere are fine).
    SelectedSpan,
}

/// One attempt's plan.
#[derive(Clone, Debug)]
pub struct Region {
    pub range: CompactRange,
    pub owner: Owner,
    pub stability: Stability,
    pub source_command_id: Option<String>,
}

/// The span of surface nodes `start..=end` with the meter's prices.
pub(crate) fn span(meter: &TokenMeter, start: u64, end: u64) -> Result<CompactRange, AttemptError> {
    let nodes = meter.nodes();
    let position = |seq: u64| nodes.iter().position(|n| n.seq == seq);
    let (Some(first), Some(last)) = (position(start), position(end)) else {
        return Err(AttemptError::InvalidRegion {
            reason: format!("seqs {start}-{end} are not both on the surface"),
        });
    };
    if first > last {
        return Err(AttemptError::InvalidRegion {
            reason: format!("seq {start} comes after seq {end} on the surface"),
        });
    }
    let shadowed = &nodes[first..=last];
    Ok(CompactRange {
        start,
        end,
        shadowed_seqs: shadowed.iter().map(|n| n.seq).collect(),
        shadowed_tokens: shadowed.iter().map(|n| n.tokens).sum(),
    })
}

/// Runs one attempt. `Ok` means the checkpoint is in the log.
pub(crate) async fn run(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
    region: Region,
    signal: &AbortSignal,
) -> Result<CompactionResult, AttemptError> {
    let manual = region.owner == Owner::Standalone;
    if manual && signal.is_aborted() {
        return Err(AttemptError::Aborted);
    }
    let session = agent.session();
    validate(session, &region.range)?;
    // Lock and owner, then the start, with nothing awaited in between.
    let Some(_guard) = engine.in_flight.enter(session.id()) else {
        return Err(busy("compaction already in progress in this process"));
    };
    if let Some(reason) = engine.busy_reason_durable(session) {
        return Err(busy(&reason));
    }
    let open_turn = engine.with_track(session, |t| t.lock.open_turn());
    let turn = match (region.owner, open_turn) {
        (Owner::OpenTurn, Some(turn)) => Some(turn),
        (Owner::OpenTurn, None) => return Err(AttemptError::NoOpenTurn),
        (Owner::Standalone, None) => None,
        (Owner::Standalone, Some(_)) => {
            return Err(busy(
                "manual compaction requires an idle agent with no open turn",
            ))
        }
    };
    let compaction_id = uuid::Uuid::new_v4().to_string();
    let start = CompactionStart {
        compaction_id: compaction_id.clone(),
        source_command_id: region.source_command_id.clone(),
        turn,
    };
    let start_seq = session.append_typed(&start).map_err(AttemptError::Log)?.seq;
    let bracket = Bracket {
        compaction_id,
        source_command_id: region.source_command_id.clone(),
        turn,
        start_seq,
    };
    let outcome = attempt(engine, agent, &region, &bracket, signal).await;
    let closed = match &outcome {
        Ok(_) => true,
        Err(error) => close_failed(session, &bracket, error),
    };
    if manual && closed {
        if let Err(error) = engine.sessions.flush(session).await {
            return Err(match outcome {
                Ok(_) => AttemptError::Persistence(error),
                // The attempt's own failure says more than the flush's.
                Err(failure) => failure,
            });
        }
        if signal.is_aborted() && outcome.is_ok() {
            return Err(AttemptError::Aborted);
        }
    }
    outcome
}

fn busy(reason: &str) -> AttemptError {
    AttemptError::Busy {
        reason: reason.to_owned(),
    }
}

/// The open bracket of an attempt.
struct Bracket {
    compaction_id: String,
    source_command_id: Option<String>,
    turn: Option<u64>,
    start_seq: u64,
}

/// Both ends of the span must be tool-pairing balanced cuts of the current surface.
fn validate(session: &Session, range: &CompactRange) -> Result<(), AttemptError> {
    let nodes = session.surface().nodes;
    let position = |seq: u64| nodes.iter().position(|&n| n == seq);
    let (Some(first), Some(last)) = (position(range.start), position(range.end)) else {
        return Err(AttemptError::InvalidRegion {
            reason: format!(
                "seqs {}-{} are not both on the surface",
                range.start, range.end
            ),
        });
    };
    if first > last {
        return Err(AttemptError::InvalidRegion {
            reason: format!(
                "seq {} comes after seq {} on the surface",
                range.start, range.end
            ),
        });
    }
    let cuts = balanced_cuts(session, &nodes)?;
    if !cuts[first] {
        return Err(AttemptError::InvalidRegion {
            reason: "the region would split a step's tool-call/result pair".into(),
        });
    }
    if !cuts[last + 1] {
        return Err(AttemptError::InvalidRegion {
            reason:
                "the region would split a step's tool-call/result pair, or the step is still open"
                    .into(),
        });
    }
    Ok(())
}

/// Everything between the start and the end: prepare, summarize, check, commit.
async fn attempt(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
    region: &Region,
    bracket: &Bracket,
    signal: &AbortSignal,
) -> Result<CompactionResult, AttemptError> {
    let session = agent.session();
    let prepared = engine
        .meters
        .with_meter(session, |meter| meter.nodes().to_vec())
        .map_err(crate::error::CompactionError::from)?;
    let selected =
        selected_nodes(&prepared, &region.range).ok_or_else(|| AttemptError::Changed {
            reason: "the selected span is no longer on the surface".into(),
        })?;
    let shadowed_token_count: u64 = selected.iter().map(|n| n.tokens).sum();
    let messages = region
        .range
        .shadowed_seqs
        .iter()
        .filter_map(|&seq| session.event(seq))
        .filter_map(|event| derive_event_message(&event))
        .collect();
    let (provider, model) = target(engine, agent)?;
    let input = SummaryInput {
        session_id: session.id().clone(),
        provider,
        model,
        max_tokens: engine.config.max_tokens,
        header: session.request_header(),
        messages,
    };
    let llm = engine.llm()?;
    let output = summarize(&llm, input, signal).await?;
    let checkpoint = checkpoint_message(
        &bracket.compaction_id,
        bracket.source_command_id.as_deref(),
        &output.summary,
    );
    let framed = estimate_message(&checkpoint);
    if framed >= shadowed_token_count {
        return Err(AttemptError::NotSmaller {
            framed,
            shadowed: shadowed_token_count,
        });
    }
    if signal.is_aborted() {
        return Err(AttemptError::Aborted);
    }
    let now = engine
        .meters
        .with_meter(session, |meter| meter.nodes().to_vec())
        .map_err(crate::error::CompactionError::from)?;
    let stable = match region.stability {
        Stability::WholeSurface => now == prepared,
        Stability::SelectedSpan => {
            selected_nodes(&now, &region.range).as_deref() == Some(&selected[..])
        }
    };
    if !stable {
        return Err(AttemptError::Changed {
            reason: "the surface changed while the summary was written".into(),
        });
    }
    // Commit: three appends, no await in between.
    let shadowed_range = SeqRange {
        start: region.range.start,
        end: region.range.end,
    };
    let summary_event = CompactionSummary {
        compaction_id: bracket.compaction_id.clone(),
        source_command_id: bracket.source_command_id.clone(),
        summary: output.summary.clone(),
        raw_output: Some(output.raw_output),
        llm_stream_call: Some(true),
        shadowed_range,
        shadowed_seqs: region.range.shadowed_seqs.clone(),
        shadowed_token_count,
        provider: output.provider,
        model: output.model,
        max_tokens: Some(output.max_tokens),
        usage: output.usage,
    };
    let summary_seq = session
        .append_typed(&summary_event)
        .map_err(AttemptError::Commit)?
        .seq;
    let mut sources = vec![bracket.start_seq, summary_seq];
    sources.extend(&region.range.shadowed_seqs);
    session
        .append(
            EventData::UserMessage(Arc::new(checkpoint)),
            AppendOptions::surface_replace(region.range.start, region.range.end).sources(sources),
        )
        .map_err(AttemptError::Commit)?;
    let end_seq = session
        .append_typed(&CompactionEnd {
            compaction_id: bracket.compaction_id.clone(),
            source_command_id: bracket.source_command_id.clone(),
            turn: bracket.turn,
            error: None,
        })
        .map_err(AttemptError::Commit)?
        .seq;
    Ok(CompactionResult {
        compaction_id: bracket.compaction_id.clone(),
        source_command_id: bracket.source_command_id.clone(),
        start_seq: bracket.start_seq,
        summary_seq,
        end_seq,
        summary: output.summary,
        shadowed_range,
        shadowed_seqs: region.range.shadowed_seqs.clone(),
        shadowed_token_count,
    })
}

/// The nodes of `range` in `nodes`, if they are still there in the same order.
fn selected_nodes(nodes: &[SurfaceNode], range: &CompactRange) -> Option<Vec<SurfaceNode>> {
    let first = nodes.iter().position(|n| n.seq == range.start)?;
    let span = nodes.get(first..first + range.shadowed_seqs.len())?;
    span.iter()
        .zip(&range.shadowed_seqs)
        .all(|(node, &seq)| node.seq == seq)
        .then(|| span.to_vec())
}

/// The summarizer's route: the configured pair, else the last logged header's route, else the
/// agent's options.
fn target(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
) -> Result<(String, String), AttemptError> {
    if let Some((provider, model)) = engine.config.summarizer_route() {
        return Ok((provider.to_owned(), model.to_owned()));
    }
    if let Some(header) = agent.session().request_header() {
        return Ok((header.config.provider.clone(), header.config.model.clone()));
    }
    let options = agent.options();
    match (&options.provider, &options.model) {
        (Some(provider), Some(model)) => Ok((provider.clone(), model.clone())),
        _ => Err(AttemptError::NoTarget {
            reason: "no route is configured, logged or chosen for the agent".into(),
        }),
    }
}

/// The one close attempt of a failed bracket; whether it landed.
fn close_failed(session: &Session, bracket: &Bracket, error: &AttemptError) -> bool {
    let end = CompactionEnd {
        compaction_id: bracket.compaction_id.clone(),
        source_command_id: bracket.source_command_id.clone(),
        turn: bracket.turn,
        error: Some(error_chain(error)),
    };
    match session.append_typed(&end) {
        Ok(_) => true,
        Err(close) => {
            tracing::warn!(
                session = %session.id(),
                compaction = %bracket.compaction_id,
                error = %close,
                "could not close the failed compaction; its start stays as the lock"
            );
            false
        }
    }
}
