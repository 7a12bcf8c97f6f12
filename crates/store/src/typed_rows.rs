//! Packed chunk rows for typed events: the write and resume fast paths.
//!
//! [`chunk_rows`](crate::chunk_rows) defines the format on `serde_json::Value` records. Live
//! appends and resumes handle typed [`SessionEvent`]s, and converting every streamed chunk
//! to a `Value` (and back) cost more than everything else on those paths. The functions here
//! produce and read the same bytes directly. They only ever take the exact canonical shapes;
//! anything else is written verbatim (as the `Value` packer would also leave it) or, when
//! reading, handed back to the general decoder, which reports damage precisely.

use std::sync::Arc;

use dsh_protocol::StreamChunk;
use dsh_session::{AssistantChunk, EventData, SessionEvent};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::chunk_rows::{DeltaKind, MAX_SAFE_INTEGER, MIN_PACKED_RUN};

/// A delta event of exactly the packable shape, borrowed.
#[derive(Clone, Copy)]
struct Delta<'a> {
    kind: DeltaKind,
    seq: u64,
    time: u64,
    turn: u64,
    step: u64,
    index: u32,
    payload: &'a str,
    id: Option<&'a str>,
    name: Option<&'a str>,
}

/// The typed twin of the `Value` packer's eligibility test: an `assistant/chunk` delta
/// without surface metadata or `ignorable`, with safe integers. (Its serialization then has
/// exactly the canonical keys in the canonical order.)
fn as_delta(event: &SessionEvent) -> Option<Delta<'_>> {
    if event.ignorable || event.surface_op.is_some() || event.source_event_seqs.is_some() {
        return None;
    }
    let EventData::AssistantChunk(AssistantChunk { turn, step, chunk }) = &event.data else {
        return None;
    };
    if [event.seq, event.time, *turn, *step]
        .iter()
        .any(|n| *n > MAX_SAFE_INTEGER)
    {
        return None;
    }
    let (kind, index, payload, id, name) = match chunk {
        StreamChunk::TextDelta { index, text } => (DeltaKind::Text, *index, text, None, None),
        StreamChunk::ReasoningDelta { index, text } => {
            (DeltaKind::Reasoning, *index, text, None, None)
        }
        StreamChunk::ToolCallDelta {
            index,
            id,
            name,
            arguments_delta,
        } => (
            DeltaKind::ToolCall,
            *index,
            arguments_delta,
            Some(id.as_str()),
            name.as_deref(),
        ),
        _ => return None,
    };
    Some(Delta {
        kind,
        seq: event.seq,
        time: event.time,
        turn: *turn,
        step: *step,
        index,
        payload,
        id,
        name,
    })
}

fn continues(prev: &Delta<'_>, next: &Delta<'_>) -> bool {
    prev.kind == next.kind
        && prev.turn == next.turn
        && prev.step == next.step
        && prev.index == next.index
        && prev.id == next.id
        && prev.name == next.name
        && prev.seq.checked_add(1) == Some(next.seq)
        && next.time >= prev.time
}

/// A packed row as written: `{type, seq0, time0, data}`.
#[derive(Serialize)]
struct RowOut<'a> {
    #[serde(rename = "type")]
    row_type: &'static str,
    seq0: u64,
    time0: u64,
    data: RowDataOut<'a>,
}

struct RowDataOut<'a> {
    run: &'a [Delta<'a>],
}

impl Serialize for RowDataOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(first) = self.run.first() else {
            return serializer.serialize_map(Some(0))?.end();
        };
        let (_, list_key) = first.kind.payload_keys();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("turn", &first.turn)?;
        map.serialize_entry("step", &first.step)?;
        map.serialize_entry("index", &first.index)?;
        let gaps: Vec<u64> = self.run.windows(2).map(|w| w[1].time - w[0].time).collect();
        map.serialize_entry("dt", &gaps)?;
        if let Some(id) = first.id {
            map.serialize_entry("id", id)?;
        }
        if let Some(name) = first.name {
            map.serialize_entry("name", name)?;
        }
        let payloads: Vec<&str> = self.run.iter().map(|d| d.payload).collect();
        map.serialize_entry(list_key, &payloads)?;
        map.end()
    }
}

/// Writes `events` as storage lines (each ending in `\n`), packing every eligible run of
/// three or more deltas when `pack` is set. Byte for byte what packing the events'
/// `Value`s with [`chunk_rows::pack`](crate::chunk_rows::pack) and writing them produces.
pub(crate) fn write_lines(
    events: &[Arc<SessionEvent>],
    pack: bool,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    let mut i = 0;
    let mut run = Vec::new();
    while i < events.len() {
        if pack {
            run.clear();
            if let Some(first) = as_delta(&events[i]) {
                run.push(first);
                for event in &events[i + 1..] {
                    match as_delta(event) {
                        Some(next) if run.last().is_some_and(|prev| continues(prev, &next)) => {
                            run.push(next)
                        }
                        _ => break,
                    }
                }
            }
            if run.len() >= MIN_PACKED_RUN {
                let first = &run[0];
                let row = RowOut {
                    row_type: first.kind.row_type(),
                    seq0: first.seq,
                    time0: first.time,
                    data: RowDataOut { run: &run },
                };
                serde_json::to_writer(&mut *out, &row)?;
                out.push(b'\n');
                i += run.len();
                continue;
            }
        }
        serde_json::to_writer(&mut *out, &*events[i])?;
        out.push(b'\n');
        i += 1;
    }
    Ok(())
}

/// A stored row, read only if it has exactly the canonical keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowIn<'a> {
    #[serde(rename = "type")]
    row_type: &'a str,
    seq0: u64,
    time0: u64,
    data: RowDataIn,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowDataIn {
    turn: u64,
    step: u64,
    index: u32,
    dt: Vec<u64>,
    #[serde(default, deserialize_with = "present")]
    texts: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    args: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
}

/// An optional key that, when present, must hold a `T` (an explicit `null` is refused,
/// as the general decoder refuses it).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Expands one stored row line into its typed events.
///
/// `None` when the line is not a canonical, valid row: the caller then decodes it the
/// general way, which yields the same events or the precise error.
pub(crate) fn unpack_line(text: &[u8]) -> Option<Vec<Arc<SessionEvent>>> {
    // Checked as UTF-8 once, the line parses as `str`: serde_json then skips checking every
    // string and key again.
    let row: RowIn<'_> = serde_json::from_str(std::str::from_utf8(text).ok()?).ok()?;
    let kind = DeltaKind::of_row_type(row.row_type)?;
    let RowDataIn {
        turn,
        step,
        index,
        dt,
        texts,
        args,
        id,
        name,
    } = row.data;
    let payloads = match kind {
        DeltaKind::Text | DeltaKind::Reasoning
            if args.is_none() && id.is_none() && name.is_none() =>
        {
            texts?
        }
        // A tool-call chunk needs an id, so a row without one cannot load.
        DeltaKind::ToolCall if texts.is_none() && id.is_some() => args?,
        _ => return None,
    };
    let safe = [row.seq0, row.time0, turn, step]
        .iter()
        .all(|n| *n <= MAX_SAFE_INTEGER);
    if !safe || payloads.is_empty() || dt.len() + 1 != payloads.len() {
        return None;
    }
    let mut events = Vec::with_capacity(payloads.len());
    let mut time = row.time0;
    for (offset, payload) in payloads.into_iter().enumerate() {
        if offset > 0 {
            time = time
                .checked_add(dt[offset - 1])
                .filter(|t| *t <= MAX_SAFE_INTEGER)?;
        }
        let seq = row
            .seq0
            .checked_add(offset as u64)
            .filter(|s| *s <= MAX_SAFE_INTEGER)?;
        let chunk = match kind {
            DeltaKind::Text => StreamChunk::TextDelta {
                index,
                text: payload,
            },
            DeltaKind::Reasoning => StreamChunk::ReasoningDelta {
                index,
                text: payload,
            },
            DeltaKind::ToolCall => StreamChunk::ToolCallDelta {
                index,
                id: id.clone().unwrap_or_default(),
                name: name.clone(),
                arguments_delta: payload,
            },
        };
        events.push(Arc::new(SessionEvent {
            seq,
            time,
            data: EventData::AssistantChunk(AssistantChunk { turn, step, chunk }),
            ignorable: false,
            surface_op: None,
            source_event_seqs: None,
        }));
    }
    Some(events)
}

#[cfg(test)]
mod tests;
