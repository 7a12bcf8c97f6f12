//! The incremental meter against an independent from-scratch recomputation, over random
//! logs with tool steps, usage reports, streamed text, header changes, prunes and head
//! compactions.

use super::common::*;
use dsh_compaction::*;
use dsh_llm::BlockAssembler;
use dsh_protocol::{ContentBlock, EpochHeader, StreamChunk};
use dsh_session::*;
use proptest::prelude::*;
use std::sync::Arc;

#[derive(Clone, Debug)]
enum Op {
    User(String),
    ToolStep {
        result: String,
        usage: Option<(u64, u64)>,
    },
    /// A streamed text answer; `keep` of its chunks' text ends up in the message.
    Streamed {
        parts: Vec<String>,
        keep_all: bool,
        usage: Option<(u64, u64)>,
    },
    /// A step whose assistant message is empty (a capped step hosting usage).
    Empty {
        usage: Option<(u64, u64)>,
    },
    Header(String),
    Prune,
    CompactHead(usize),
}

fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé😀 \n]{0,60}").unwrap()
}

fn usage_strategy() -> impl Strategy<Value = Option<(u64, u64)>> {
    proptest::option::of((0u64..5000, 0u64..200))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => text().prop_map(Op::User),
        4 => (proptest::string::string_regex("[a-z😀]{0,200}").unwrap(), usage_strategy())
            .prop_map(|(result, usage)| Op::ToolStep { result, usage }),
        2 => (proptest::collection::vec(text(), 1..4), any::<bool>(), usage_strategy())
            .prop_map(|(parts, keep_all, usage)| Op::Streamed { parts, keep_all, usage }),
        1 => usage_strategy().prop_map(|usage| Op::Empty { usage }),
        1 => text().prop_map(Op::Header),
        1 => Just(Op::Prune),
        1 => any::<usize>().prop_map(Op::CompactHead),
    ]
}

struct Log {
    session: Session,
    step: u64,
}

impl Log {
    fn next_step(&mut self) -> u64 {
        self.step += 1;
        self.step
    }

    fn apply(&mut self, op: &Op) {
        let s = self.session.clone();
        let reported = |u: &Option<(u64, u64)>| u.map(|(i, o)| usage(i, o));
        match op {
            Op::User(t) => {
                s.append(user(&format!("u{}", s.len()), t), surface())
                    .unwrap();
            }
            Op::ToolStep { result, usage } => {
                let step = self.next_step();
                tool_step(&s, 1, step, result, reported(usage));
            }
            Op::Streamed {
                parts,
                keep_all,
                usage,
            } => {
                let step = self.next_step();
                s.append(step_start(1, step), log_only()).unwrap();
                let mut cited = Vec::new();
                for part in parts {
                    let delta = StreamChunk::TextDelta {
                        index: 0,
                        text: part.clone(),
                    };
                    cited.push(s.append(chunk(1, step, delta), log_only()).unwrap().seq);
                }
                let content = if *keep_all {
                    parts.concat()
                } else {
                    parts[0].clone()
                };
                s.append(
                    assistant(
                        1,
                        step,
                        &format!("a{step}"),
                        vec![ContentBlock::text(content)],
                        reported(usage),
                    ),
                    surface().sources(cited),
                )
                .unwrap();
                s.append(step_end(1, step), log_only()).unwrap();
            }
            Op::Empty { usage } => {
                let step = self.next_step();
                s.append(step_start(1, step), log_only()).unwrap();
                s.append(
                    assistant(1, step, &format!("a{step}"), vec![], reported(usage)),
                    surface().sources(vec![]),
                )
                .unwrap();
                s.append(step_end(1, step), log_only()).unwrap();
            }
            Op::Header(system) => {
                s.append(header(system), log_only()).unwrap();
            }
            Op::Prune => {
                let config = PrunerConfig {
                    threshold_chars: 100,
                    head_chars: 30,
                    tail_chars: 20,
                };
                prune_session(&s, &config).unwrap();
            }
            Op::CompactHead(pick) => {
                let nodes = s.surface().nodes;
                let cuts = balanced_cuts(&s, &nodes).unwrap();
                let ends: Vec<usize> = (1..=nodes.len()).filter(|&p| cuts[p]).collect();
                if ends.is_empty() {
                    return;
                }
                let upto = ends[pick % ends.len()];
                append_checkpoint(
                    &s,
                    &format!("c{}", s.len()),
                    "summary",
                    nodes[0],
                    nodes[upto - 1],
                    nodes[..upto].to_vec(),
                );
            }
        }
    }
}

/// What the meter should read, recomputed from the whole log with no incremental state.
fn reference(events: &[Arc<SessionEvent>]) -> (Vec<SurfaceNode>, Measurement) {
    let price = |seq: u64| estimate_event(&events[seq as usize]);
    let surface_price = |upto: usize| -> u64 {
        fold_surface(&events[..upto])
            .unwrap()
            .nodes
            .iter()
            .map(|&s| price(s))
            .sum()
    };
    let nodes: Vec<SurfaceNode> = fold_surface(events)
        .unwrap()
        .nodes
        .iter()
        .map(|&seq| SurfaceNode {
            seq,
            tokens: price(seq),
        })
        .collect();
    let surface_tokens: u64 = nodes.iter().map(|n| n.tokens).sum();
    let header_now = fold_request_header(events, None);
    let header_price = |h: &Option<EpochHeader>| h.as_ref().map_or(0, estimate_header);

    let anchor = events
        .iter()
        .rposition(|e| matches!(e.data, EventData::AssistantMessage(_)))
        .map(|k| {
            let EventData::AssistantMessage(message) = &events[k].data else {
                unreachable!()
            };
            let header_k = fold_request_header(&events[..k], None);
            let before = surface_price(k);
            let own = price(k as u64);
            match (message.usage, &header_k) {
                (Some(u), Some(_)) => {
                    let provider = match &events[k].source_event_seqs {
                        None => own,
                        Some(cited) => {
                            let mut assembler = BlockAssembler::new();
                            for &c in cited {
                                let EventData::AssistantChunk(ch) = &events[c as usize].data else {
                                    unreachable!()
                                };
                                assembler.push(&ch.chunk);
                            }
                            match assembler.blocks() {
                                Ok(blocks) if blocks.is_empty() => 0,
                                Ok(blocks) => estimate_blocks(&blocks) + 4,
                                Err(_) => own,
                            }
                        }
                    };
                    let anchored = before + provider;
                    let total = u.input_tokens
                        + u.output_tokens
                        + u.cache_read_tokens.unwrap_or(0)
                        + u.cache_write_tokens.unwrap_or(0);
                    let estimated = header_price(&header_k) + anchored;
                    let baseline = if total >= estimated {
                        Baseline::Usage {
                            tokens: total,
                            usage: u,
                        }
                    } else {
                        Baseline::Estimated { tokens: estimated }
                    };
                    (header_k, anchored, baseline)
                }
                _ => {
                    let anchored = before + own;
                    (
                        header_k.clone(),
                        anchored,
                        Baseline::Estimated {
                            tokens: header_price(&header_k) + anchored,
                        },
                    )
                }
            }
        });
    let same = |a: &Option<EpochHeader>, b: &Option<EpochHeader>| match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => header_equals(a, b),
        _ => false,
    };
    let (baseline, delta) = match anchor {
        Some((h, anchored, baseline)) if same(&h, &header_now) => {
            (baseline, surface_tokens as i64 - anchored as i64)
        }
        _ if header_now.is_none() && surface_tokens == 0 => (Baseline::None, 0),
        _ => (
            Baseline::Estimated {
                tokens: header_price(&header_now) + surface_tokens,
            },
            0,
        ),
    };
    let total = (baseline.tokens() as i64 + delta).max(0) as u64;
    (
        nodes,
        Measurement {
            log_revision: events.len() as u64,
            baseline,
            surface_delta_tokens: delta,
            total_tokens: total,
            surface_tokens,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_incremental_meter_equals_a_recomputation(ops in proptest::collection::vec(op(), 1..24)) {
        let mut log = Log { session: session("p"), step: 0 };
        let mut meter = TokenMeter::new();
        for op in &ops {
            log.apply(op);
            meter.catch_up(&log.session).unwrap();
            let events = log.session.events();
            let (nodes, measurement) = reference(&events);
            prop_assert_eq!(meter.nodes(), nodes.as_slice(), "after {:?}", op);
            prop_assert_eq!(meter.measure(), measurement, "after {:?}", op);
        }
        let scratch = TokenMeter::from_events(log.session.events().iter()).unwrap();
        prop_assert_eq!(scratch.measure(), meter.measure());
        prop_assert_eq!(scratch.nodes(), meter.nodes());
    }
}
