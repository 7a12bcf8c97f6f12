//! `TokenMeter`: the per-session token fold.
//!
//! The meter folds a session's events one by one, in seq order, keeping
//!
//! - the latest logged request header (canonical) and its price,
//! - the surface as `{seq, tokens}` nodes with a running total (an append pushes a node, a
//!   replace splices the replaced nodes out and puts one node in their place),
//! - the open step and the chunks streamed in it (to price the provider's own output), and
//! - the *anchor*: the latest assistant message's calibration point.
//!
//! Each event costs the size of that event (a chunk is kept, a message is priced once); a
//! replace additionally moves the nodes after the replaced span. [`TokenMeter::measure`] is
//! O(1): no node is cloned or re-priced.
//!
//! # Calibration
//!
//! When an assistant message reports provider usage and a header is known, the provider's
//! total (`input + cacheRead + cacheWrite + output`) becomes the baseline, anchored at the
//! surface total *just before the message joined* plus the price of what the provider
//! streamed. Later measurements add the surface growth since the anchor (`delta`). The
//! original anchors at the total captured at `step/start` instead, before the step's entered
//! messages (prompt, runtime-context snapshot) were appended, so their price was counted twice
//! after every usage-anchored step; this meter does not. A provider total below the heuristic
//! price of the same request (header + anchored surface) is not trusted, and the estimate is
//! the baseline instead. A measurement against a header other than the anchor's (a changed
//! system prompt, tools, model or call config) prices everything by the heuristic.

use crate::error::MeterError;
use crate::estimate::{estimate_blocks, estimate_event, estimate_header, OVERHEAD};
use dsh_llm::BlockAssembler;
use dsh_protocol::{EpochHeader, StreamChunk, TokenUsage};
use dsh_session::{canonical_header, header_equals, EventData, Session, SessionEvent, SurfaceOp};
use serde::Serialize;
use std::collections::HashSet;
use std::sync::Arc;

/// One surface node and its estimated price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SurfaceNode {
    pub seq: u64,
    pub tokens: u64,
}

/// What a measurement is calibrated against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Baseline {
    /// Nothing to measure: no header and an empty surface.
    None,
    /// The heuristic price of the header and surface.
    Estimated { tokens: u64 },
    /// The provider's reported total for the anchored request.
    Usage { tokens: u64, usage: TokenUsage },
}

impl Baseline {
    /// The baseline's token figure.
    pub fn tokens(&self) -> u64 {
        match self {
            Self::None => 0,
            Self::Estimated { tokens } | Self::Usage { tokens, .. } => *tokens,
        }
    }
}

/// One reading of the meter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    /// How many events were folded.
    pub log_revision: u64,
    pub baseline: Baseline,
    /// Surface growth (or shrinkage) since the anchor; 0 without a usable anchor.
    pub surface_delta_tokens: i64,
    /// `max(0, baseline + delta)`: what the next request is estimated to cost.
    pub total_tokens: u64,
    /// The heuristic price of the current surface.
    pub surface_tokens: u64,
}

/// The calibration point of the latest assistant message.
#[derive(Clone, Debug)]
struct Anchor {
    header: Option<Arc<EpochHeader>>,
    surface_tokens: u64,
    baseline: Baseline,
}

/// The open step and the chunks streamed in it.
#[derive(Clone, Debug)]
struct OpenStep {
    turn: u64,
    step: u64,
    /// `(seq, turn, step, chunk)` of every `assistant/chunk` since `step/start`, by seq.
    chunks: Vec<(u64, u64, u64, StreamChunk)>,
}

/// How one event changes the surface, validated but not applied.
enum SurfaceChange {
    None,
    Append,
    Replace {
        start_idx: usize,
        end_idx: usize,
        removed: u64,
    },
}

/// How one event changes the step state, validated but not applied.
enum StepChange {
    None,
    Open {
        turn: u64,
        step: u64,
    },
    Close,
    Chunk {
        turn: u64,
        step: u64,
    },
    Anchor {
        surface_extra: u64,
        usage: Option<(u64, TokenUsage)>,
    },
}

/// The token fold of one session. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct TokenMeter {
    consumed: u64,
    header: Option<Arc<EpochHeader>>,
    header_tokens: u64,
    nodes: Vec<SurfaceNode>,
    surface_tokens: u64,
    step: Option<OpenStep>,
    anchor: Option<Anchor>,
}

impl TokenMeter {
    /// A meter that has folded nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// A meter folded over a whole log (events in seq order from 0).
    pub fn from_events<'a>(
        events: impl IntoIterator<Item = &'a Arc<SessionEvent>>,
    ) -> Result<Self, MeterError> {
        let mut meter = Self::new();
        for event in events {
            meter.observe(event)?;
        }
        Ok(meter)
    }

    /// How many events have been folded (the next seq expected).
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Folds the session's events that this meter has not seen yet; O(new events).
    pub fn catch_up(&mut self, session: &Session) -> Result<(), MeterError> {
        let len = session.len();
        if len < self.consumed {
            return Err(MeterError::OutOfOrder {
                expected: self.consumed,
                got: len,
            });
        }
        if len == self.consumed {
            return Ok(());
        }
        for event in session.events_from(self.consumed) {
            self.observe(&event)?;
        }
        Ok(())
    }

    /// Folds one event, which must be the next in seq order. Every check runs before any
    /// state changes, so a refused event leaves the meter as it was.
    pub fn observe(&mut self, event: &SessionEvent) -> Result<(), MeterError> {
        if event.seq != self.consumed {
            return Err(MeterError::OutOfOrder {
                expected: self.consumed,
                got: event.seq,
            });
        }
        let price = if event.data.is_surface() {
            estimate_event(event)
        } else {
            0
        };
        let surface = self.plan_surface(event)?;
        let step = self.plan_step(event, price)?;

        // Commit: nothing below can fail.
        let surface_before = self.surface_tokens;
        match surface {
            SurfaceChange::None => {}
            SurfaceChange::Append => {
                self.nodes.push(SurfaceNode {
                    seq: event.seq,
                    tokens: price,
                });
                self.surface_tokens += price;
            }
            SurfaceChange::Replace {
                start_idx,
                end_idx,
                removed,
            } => {
                self.nodes.splice(
                    start_idx..=end_idx,
                    std::iter::once(SurfaceNode {
                        seq: event.seq,
                        tokens: price,
                    }),
                );
                self.surface_tokens = self.surface_tokens - removed + price;
            }
        }
        match step {
            StepChange::None => {}
            StepChange::Open { turn, step } => {
                self.step = Some(OpenStep {
                    turn,
                    step,
                    chunks: Vec::new(),
                });
            }
            StepChange::Close => self.step = None,
            StepChange::Chunk { turn, step } => {
                if let (Some(open), EventData::AssistantChunk(chunk)) =
                    (self.step.as_mut(), &event.data)
                {
                    open.chunks
                        .push((event.seq, turn, step, chunk.chunk.clone()));
                }
            }
            StepChange::Anchor {
                surface_extra,
                usage,
            } => {
                let surface_tokens = surface_before + surface_extra;
                let estimated = self.header_tokens + surface_tokens;
                let baseline = match usage {
                    Some((total, usage)) if total >= estimated => Baseline::Usage {
                        tokens: total,
                        usage,
                    },
                    _ => Baseline::Estimated { tokens: estimated },
                };
                self.anchor = Some(Anchor {
                    header: self.header.clone(),
                    surface_tokens,
                    baseline,
                });
            }
        }
        if let EventData::RequestHeader(h) = &event.data {
            let header = canonical_header(&h.header);
            self.header_tokens = estimate_header(&header);
            self.header = Some(Arc::new(header));
        }
        self.consumed += 1;
        Ok(())
    }

    fn plan_surface(&self, event: &SessionEvent) -> Result<SurfaceChange, MeterError> {
        if !event.data.is_surface() {
            return Ok(SurfaceChange::None);
        }
        match event.surface_op {
            None => Ok(SurfaceChange::None),
            Some(SurfaceOp::Append) => Ok(SurfaceChange::Append),
            Some(SurfaceOp::Replace { start, end }) => {
                let invalid = MeterError::InvalidReplace {
                    seq: event.seq,
                    start,
                    end,
                };
                let (Some(start_idx), Some(end_idx)) = (self.position(start), self.position(end))
                else {
                    return Err(invalid);
                };
                if start_idx > end_idx {
                    return Err(invalid);
                }
                let removed = self.nodes[start_idx..=end_idx]
                    .iter()
                    .map(|n| n.tokens)
                    .sum();
                Ok(SurfaceChange::Replace {
                    start_idx,
                    end_idx,
                    removed,
                })
            }
        }
    }

    fn plan_step(&self, event: &SessionEvent, price: u64) -> Result<StepChange, MeterError> {
        let seq = event.seq;
        match &event.data {
            EventData::StepStart(b) => match &self.step {
                Some(open) => Err(MeterError::StepAlreadyOpen {
                    seq,
                    turn: open.turn,
                    step: open.step,
                }),
                None => Ok(StepChange::Open {
                    turn: b.turn,
                    step: b.step,
                }),
            },
            EventData::StepEnd(b) => match &self.step {
                Some(open) if open.turn == b.turn && open.step == b.step => Ok(StepChange::Close),
                _ => Err(MeterError::StepMismatch { seq }),
            },
            EventData::AssistantChunk(c) => Ok(StepChange::Chunk {
                turn: c.turn,
                step: c.step,
            }),
            EventData::AssistantMessage(message) => {
                let open = match &self.step {
                    Some(open) if open.turn == message.turn && open.step == message.step => open,
                    _ => return Err(MeterError::MessageOutsideStep { seq }),
                };
                let usage = match (message.usage, &self.header) {
                    (Some(usage), Some(_)) => usage,
                    _ => {
                        return Ok(StepChange::Anchor {
                            surface_extra: price,
                            usage: None,
                        })
                    }
                };
                let provider_price = match event.source_event_seqs.as_deref() {
                    None => price,
                    Some(cited) => provider_price(seq, open, cited)?.unwrap_or(price),
                };
                let total = usage.input_tokens
                    + usage.cache_read_tokens.unwrap_or(0)
                    + usage.cache_write_tokens.unwrap_or(0)
                    + usage.output_tokens;
                Ok(StepChange::Anchor {
                    surface_extra: provider_price,
                    usage: Some((total, usage)),
                })
            }
            _ => Ok(StepChange::None),
        }
    }

    /// The surface position of `seq`. Nodes are ascending except where a replace put a later
    /// seq in front of older ones, so a missed binary search falls back to a scan.
    fn position(&self, seq: u64) -> Option<usize> {
        match self.nodes.binary_search_by_key(&seq, |n| n.seq) {
            Ok(i) => Some(i),
            Err(_) => self.nodes.iter().position(|n| n.seq == seq),
        }
    }

    /// A reading against the latest logged header. O(1).
    pub fn measure(&self) -> Measurement {
        self.measure_against(self.header.as_deref(), self.header_tokens)
    }

    /// A reading against `header` instead of the logged one (the request about to be sent).
    pub fn measure_with_header(&self, header: &EpochHeader) -> Measurement {
        let header = canonical_header(header);
        let tokens = estimate_header(&header);
        self.measure_against(Some(&header), tokens)
    }

    fn measure_against(&self, header: Option<&EpochHeader>, header_tokens: u64) -> Measurement {
        let anchored =
            self.anchor
                .as_ref()
                .filter(|anchor| match (anchor.header.as_deref(), header) {
                    (None, None) => true,
                    (Some(a), Some(b)) => std::ptr::eq(a, b) || header_equals(a, b),
                    _ => false,
                });
        let (baseline, delta) = match anchored {
            Some(anchor) => (
                anchor.baseline.clone(),
                signed(self.surface_tokens) - signed(anchor.surface_tokens),
            ),
            None if header.is_none() && self.surface_tokens == 0 => (Baseline::None, 0),
            None => (
                Baseline::Estimated {
                    tokens: header_tokens + self.surface_tokens,
                },
                0,
            ),
        };
        let total = signed(baseline.tokens()).saturating_add(delta).max(0);
        Measurement {
            log_revision: self.consumed,
            baseline,
            surface_delta_tokens: delta,
            total_tokens: u64::try_from(total).unwrap_or(0),
            surface_tokens: self.surface_tokens,
        }
    }

    /// The surface nodes with their prices, in surface order.
    pub fn nodes(&self) -> &[SurfaceNode] {
        &self.nodes
    }

    /// The heuristic price of the current surface.
    pub fn surface_tokens(&self) -> u64 {
        self.surface_tokens
    }

    /// The latest logged request header (canonical).
    pub fn header(&self) -> Option<&EpochHeader> {
        self.header.as_deref()
    }
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The price of what the provider streamed for this message: the cited chunks re-assembled.
/// Each cited seq must be an earlier, unique `assistant/chunk` of the message's turn and step.
/// `None` when the chunks do not assemble (a block of a kind that only a `block-end` can
/// carry, never closed): the message's own price stands in, since a stream the assembler
/// cannot rebuild should not make the session unmeasurable.
fn provider_price(seq: u64, open: &OpenStep, cited: &[u64]) -> Result<Option<u64>, MeterError> {
    let ascending = cited.windows(2).all(|w| w[0] < w[1]);
    let mut seen = HashSet::new();
    let mut assembler = BlockAssembler::new();
    for &c in cited {
        let bad = |reason| MeterError::BadChunkCitation {
            seq,
            cited: c,
            reason,
        };
        if c >= seq {
            return Err(bad("not an earlier event"));
        }
        if !ascending && !seen.insert(c) {
            return Err(bad("cited twice"));
        }
        let Ok(i) = open.chunks.binary_search_by_key(&c, |(s, ..)| *s) else {
            return Err(bad("not an assistant/chunk of the open step"));
        };
        let (_, turn, step, chunk) = &open.chunks[i];
        if (*turn, *step) != (open.turn, open.step) {
            return Err(bad("a chunk of another turn or step"));
        }
        assembler.push(chunk);
    }
    Ok(assembler.blocks().ok().map(|blocks| {
        if blocks.is_empty() {
            0
        } else {
            estimate_blocks(&blocks) + OVERHEAD
        }
    }))
}
