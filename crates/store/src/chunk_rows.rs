//! Packed chunk rows: runs of streamed deltas stored as one record.
//!
//! A streamed answer produces hundreds of `assistant/chunk` events that differ only in their
//! text, seq and time. The original stores a run of three or more such deltas as one row,
//! `{type, seq0, time0, data:{turn, step, index, dt, texts|args, id?, name?}}`, which cuts
//! the log size several times over. Packing is optional and conservative: only events whose
//! shape is exactly the canonical one are packed, so that unpacking rebuilds them byte for
//! byte. Unpacking does not care how rows were laid out; a row that does not decode is
//! corruption, never skipped.

use serde_json::{Map, Value};

/// The largest integer a JSON reader using doubles represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
/// Shorter runs are stored verbatim: a row costs more than it saves.
pub const MIN_PACKED_RUN: usize = 3;

const EVENT_TYPE: &str = "assistant/chunk";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeltaKind {
    Text,
    Reasoning,
    ToolCall,
}

impl DeltaKind {
    pub(crate) fn chunk_type(self) -> &'static str {
        match self {
            DeltaKind::Text => "text-delta",
            DeltaKind::Reasoning => "reasoning-delta",
            DeltaKind::ToolCall => "tool-call-delta",
        }
    }

    pub(crate) fn row_type(self) -> &'static str {
        match self {
            DeltaKind::Text => "text-chunks",
            DeltaKind::Reasoning => "reasoning-chunks",
            DeltaKind::ToolCall => "tool-call-chunks",
        }
    }

    /// The field of the chunk that varies along a run, and its name in the row.
    pub(crate) fn payload_keys(self) -> (&'static str, &'static str) {
        match self {
            DeltaKind::Text | DeltaKind::Reasoning => ("text", "texts"),
            DeltaKind::ToolCall => ("argumentsDelta", "args"),
        }
    }

    pub(crate) fn of_row_type(row_type: &str) -> Option<DeltaKind> {
        [DeltaKind::Text, DeltaKind::Reasoning, DeltaKind::ToolCall]
            .into_iter()
            .find(|kind| kind.row_type() == row_type)
    }
}

/// True for the record types that only packed rows use.
pub fn is_packed_row_type(record_type: &str) -> bool {
    DeltaKind::of_row_type(record_type).is_some()
}

/// A delta event of exactly the packable shape, borrowed.
#[derive(Clone, Copy)]
struct Delta<'a> {
    kind: DeltaKind,
    seq: u64,
    time: u64,
    turn: &'a Value,
    step: &'a Value,
    index: &'a Value,
    payload: &'a Value,
    id: Option<&'a Value>,
    name: Option<&'a Value>,
}

fn keys_are(map: &Map<String, Value>, expected: &[&str]) -> bool {
    map.len() == expected.len() && map.keys().zip(expected).all(|(a, b)| a == b)
}

fn safe_u64(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// Recognizes a packable delta: canonical key order, no surface or `ignorable` keys, no
/// extra keys, safe integers and string payloads. Anything else is stored verbatim.
fn as_delta(event: &Value) -> Option<Delta<'_>> {
    let event = event.as_object()?;
    if !keys_are(event, &["type", "seq", "time", "data"]) || event["type"] != EVENT_TYPE {
        return None;
    }
    let seq = safe_u64(&event["seq"])?;
    let time = safe_u64(&event["time"])?;
    let data = event["data"].as_object()?;
    if !keys_are(data, &["turn", "step", "chunk"]) {
        return None;
    }
    let (turn, step) = (&data["turn"], &data["step"]);
    safe_u64(turn)?;
    safe_u64(step)?;
    let chunk = data["chunk"].as_object()?;
    let kind = match chunk.get("type")?.as_str()? {
        "text-delta" => DeltaKind::Text,
        "reasoning-delta" => DeltaKind::Reasoning,
        "tool-call-delta" => DeltaKind::ToolCall,
        _ => return None,
    };
    let (payload_key, _) = kind.payload_keys();
    let (id, name) = if kind == DeltaKind::ToolCall {
        let id = chunk.get("id");
        let name = chunk.get("name");
        let mut expected = vec!["type", "index"];
        expected.extend(id.map(|_| "id"));
        expected.extend(name.map(|_| "name"));
        expected.push(payload_key);
        if !keys_are(chunk, &expected) {
            return None;
        }
        if id.is_some_and(|v| !v.is_string()) || name.is_some_and(|v| !v.is_string()) {
            return None;
        }
        (id, name)
    } else {
        if !keys_are(chunk, &["type", "index", payload_key]) {
            return None;
        }
        (None, None)
    };
    let index = &chunk["index"];
    safe_u64(index)?;
    let payload = &chunk[payload_key];
    if !payload.is_string() {
        return None;
    }
    Some(Delta {
        kind,
        seq,
        time,
        turn,
        step,
        index,
        payload,
        id,
        name,
    })
}

/// Whether `next` may follow `prev` inside one row.
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

fn row_from_run(run: &[Delta<'_>]) -> Value {
    let first = &run[0];
    let (_, list_key) = first.kind.payload_keys();
    let mut data = Map::new();
    data.insert("turn".into(), first.turn.clone());
    data.insert("step".into(), first.step.clone());
    data.insert("index".into(), first.index.clone());
    let gaps = run.windows(2).map(|w| Value::from(w[1].time - w[0].time));
    data.insert("dt".into(), Value::Array(gaps.collect()));
    if let Some(id) = first.id {
        data.insert("id".into(), id.clone());
    }
    if let Some(name) = first.name {
        data.insert("name".into(), name.clone());
    }
    let payloads = run.iter().map(|d| d.payload.clone());
    data.insert(list_key.into(), Value::Array(payloads.collect()));
    let mut row = Map::new();
    row.insert("type".into(), Value::from(first.kind.row_type()));
    row.insert("seq0".into(), Value::from(first.seq));
    row.insert("time0".into(), Value::from(first.time));
    row.insert("data".into(), Value::Object(data));
    Value::Object(row)
}

/// Turns events into storage records, packing every eligible run of three or more deltas.
pub fn pack(events: &[Value]) -> Vec<Value> {
    let deltas: Vec<Option<Delta<'_>>> = events.iter().map(as_delta).collect();
    let mut records = Vec::with_capacity(events.len());
    let mut i = 0;
    while i < events.len() {
        let mut end = i + 1;
        if let Some(first) = &deltas[i] {
            let mut prev = first;
            while let Some(Some(next)) = deltas.get(end) {
                if !continues(prev, next) {
                    break;
                }
                prev = next;
                end += 1;
            }
        }
        if end - i >= MIN_PACKED_RUN {
            let run: Vec<Delta<'_>> = deltas[i..end].iter().flatten().copied().collect();
            records.push(row_from_run(&run));
        } else {
            end = i + 1;
            records.push(events[i].clone());
        }
        i = end;
    }
    records
}

/// What a stored record expands to.
#[derive(Debug, PartialEq)]
pub enum Unpacked {
    /// A record stored verbatim: one event.
    Event(Value),
    /// A packed row: its events in seq order.
    Run(Vec<Value>),
}

/// Expands a packed row, or passes any other record through untouched.
///
/// Errors describe why a row is malformed; callers report them as corruption.
pub fn unpack(record: Value) -> Result<Unpacked, String> {
    let kind = match record.get("type").and_then(Value::as_str) {
        Some(t) => match DeltaKind::of_row_type(t) {
            Some(kind) => kind,
            None => return Ok(Unpacked::Event(record)),
        },
        None => return Ok(Unpacked::Event(record)),
    };
    let Value::Object(mut row) = record else {
        return Ok(Unpacked::Event(record));
    };
    let row_type = kind.row_type();
    let bad = |what: &str| format!("malformed {row_type} row: {what}");
    if row.len() != 4 {
        return Err(bad("a row has exactly the keys type, seq0, time0 and data"));
    }
    let seq0 = row
        .get("seq0")
        .and_then(safe_u64)
        .ok_or_else(|| bad("seq0"))?;
    let time0 = row
        .get("time0")
        .and_then(safe_u64)
        .ok_or_else(|| bad("time0"))?;
    let Some(Value::Object(mut data)) = row.remove("data") else {
        return Err(bad("data must be an object"));
    };
    let (payload_key, list_key) = kind.payload_keys();
    let mut allowed = vec!["turn", "step", "index", "dt", list_key];
    if kind == DeltaKind::ToolCall {
        allowed.extend(["id", "name"]);
    }
    if let Some(key) = data.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(&format!("unexpected data key {key:?}")));
    }
    let mut field = |key: &str| {
        data.remove(key)
            .ok_or_else(|| bad(&format!("missing {key}")))
    };
    let turn = field("turn")?;
    let step = field("step")?;
    let index = field("index")?;
    let dt = field("dt")?;
    let payloads = field(list_key)?;
    for (key, value) in [("turn", &turn), ("step", &step), ("index", &index)] {
        if safe_u64(value).is_none() {
            return Err(bad(&format!("{key} must be a non-negative safe integer")));
        }
    }
    let id = data.remove("id");
    let name = data.remove("name");
    if id.as_ref().is_some_and(|v| !v.is_string()) || name.as_ref().is_some_and(|v| !v.is_string())
    {
        return Err(bad("id and name must be strings"));
    }
    let Value::Array(payloads) = payloads else {
        return Err(bad(&format!("{list_key} must be an array")));
    };
    let Value::Array(dt) = dt else {
        return Err(bad("dt must be an array"));
    };
    if payloads.is_empty() || dt.len() + 1 != payloads.len() {
        return Err(bad(&format!(
            "dt must have one entry fewer than {list_key}, which must not be empty"
        )));
    }
    let mut events = Vec::with_capacity(payloads.len());
    let mut time = time0;
    for (offset, payload) in payloads.into_iter().enumerate() {
        if offset > 0 {
            let gap =
                safe_u64(&dt[offset - 1]).ok_or_else(|| bad("dt entries must be safe integers"))?;
            time = time
                .checked_add(gap)
                .filter(|t| *t <= MAX_SAFE_INTEGER)
                .ok_or_else(|| bad("time overflows"))?;
        }
        if !payload.is_string() {
            return Err(bad(&format!("{list_key} entries must be strings")));
        }
        let seq = seq0
            .checked_add(offset as u64)
            .filter(|s| *s <= MAX_SAFE_INTEGER)
            .ok_or_else(|| bad("seq overflows"))?;
        let mut chunk = Map::new();
        chunk.insert("type".into(), Value::from(kind.chunk_type()));
        chunk.insert("index".into(), index.clone());
        if let Some(id) = &id {
            chunk.insert("id".into(), id.clone());
        }
        if let Some(name) = &name {
            chunk.insert("name".into(), name.clone());
        }
        chunk.insert(payload_key.into(), payload);
        let mut data = Map::new();
        data.insert("turn".into(), turn.clone());
        data.insert("step".into(), step.clone());
        data.insert("chunk".into(), Value::Object(chunk));
        let mut event = Map::new();
        event.insert("type".into(), Value::from(EVENT_TYPE));
        event.insert("seq".into(), Value::from(seq));
        event.insert("time".into(), Value::from(time));
        event.insert("data".into(), Value::Object(data));
        events.push(Value::Object(event));
    }
    Ok(Unpacked::Run(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(seq: u64, time: u64, text: &str) -> Value {
        json!({"type": "assistant/chunk", "seq": seq, "time": time,
               "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 1, "text": text}}})
    }

    fn tool(seq: u64, time: u64, args: &str) -> Value {
        json!({"type": "assistant/chunk", "seq": seq, "time": time,
               "data": {"turn": 1, "step": 1, "chunk": {"type": "tool-call-delta", "index": 2,
                        "id": "call_1", "name": "bash", "argumentsDelta": args}}})
    }

    fn unpack_all(records: Vec<Value>) -> Vec<Value> {
        records
            .into_iter()
            .flat_map(|r| match unpack(r).unwrap() {
                Unpacked::Event(e) => vec![e],
                Unpacked::Run(run) => run,
            })
            .collect()
    }

    #[test]
    fn packs_a_run_like_the_original() {
        let events = vec![
            text(22, 100, "Hel"),
            text(23, 105, "lo"),
            text(24, 111, "!"),
        ];
        assert_eq!(
            pack(&events),
            vec![json!({"type": "text-chunks", "seq0": 22, "time0": 100,
                        "data": {"turn": 1, "step": 1, "index": 1, "dt": [5, 6], "texts": ["Hel", "lo", "!"]}})]
        );
    }

    #[test]
    fn tool_call_rows_keep_id_and_name_in_the_original_order() {
        let events = vec![tool(5, 1, "{\"a"), tool(6, 1, "\": "), tool(7, 2, "1}")];
        let rows = pack(&events);
        assert_eq!(
            serde_json::to_string(&rows).unwrap(),
            r#"[{"type":"tool-call-chunks","seq0":5,"time0":1,"data":{"turn":1,"step":1,"index":2,"dt":[0,1],"id":"call_1","name":"bash","args":["{\"a","\": ","1}"]}}]"#
        );
        assert_eq!(unpack_all(rows), events);
    }

    #[test]
    fn short_or_broken_runs_stay_verbatim() {
        let two = vec![text(0, 0, "a"), text(1, 0, "b")];
        assert_eq!(pack(&two), two);
        // seq gap, time going backwards, an extra key, a float time: none pack
        let gap = vec![text(0, 0, "a"), text(1, 0, "b"), text(3, 0, "c")];
        assert_eq!(pack(&gap), gap);
        let back = vec![text(0, 5, "a"), text(1, 4, "b"), text(2, 6, "c")];
        assert_eq!(pack(&back), back);
        let mut extra = vec![text(0, 0, "a"), text(1, 0, "b"), text(2, 0, "c")];
        extra[1]["ignorable"] = json!(true);
        assert_eq!(pack(&extra), extra);
        let mut float = vec![text(0, 0, "a"), text(1, 0, "b"), text(2, 0, "c")];
        float[2]["time"] = json!(1.5);
        assert_eq!(pack(&float), float);
    }

    #[test]
    fn malformed_rows_are_errors() {
        let good = json!({"type": "text-chunks", "seq0": 0, "time0": 0,
                          "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"]}});
        assert!(unpack(good.clone()).is_ok());
        let mut cases = Vec::new();
        let mut c = good.clone();
        c["data"]["dt"] = json!([1, 2]);
        cases.push(c);
        let mut c = good.clone();
        c["data"]["texts"] = json!(["a", 2]);
        cases.push(c);
        let mut c = good.clone();
        c["data"]["args"] = json!([]);
        cases.push(c);
        let mut c = good.clone();
        c["extra"] = json!(1);
        cases.push(c);
        let mut c = good.clone();
        c["seq0"] = json!(-1);
        cases.push(c);
        let mut c = good.clone();
        c["data"]["dt"] = json!([-1]);
        cases.push(c);
        let mut c = good;
        c["data"] = json!("x");
        cases.push(c);
        for case in cases {
            assert!(unpack(case.clone()).is_err(), "{case}");
        }
    }

    #[test]
    fn other_records_pass_through() {
        let event = json!({"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}});
        assert_eq!(unpack(event.clone()).unwrap(), Unpacked::Event(event));
    }
}
