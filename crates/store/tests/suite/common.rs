//! Helpers shared by the suite: fixture locations and event builders.

use std::path::{Path, PathBuf};

use dsh_store::{Compression, LogFormat, LogHeader, LogWriter};
use serde_json::{json, Value};

pub const SCENARIOS: [&str; 6] = [
    "text",
    "bash",
    "read-edit",
    "multi-turn",
    "retry",
    "parallel-tools",
];

/// The original's logs live in `shared/` beside the repository clone (as in CI); they are
/// read-only, so tests copy a fixture into a temp dir before anything writes to it.
pub fn fixture_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0");
    assert!(
        root.is_dir(),
        "fixture directory {} is missing; these compatibility tests need shared/ beside the repository",
        root.display()
    );
    root
}

/// The `sessions/` root of one fixture form and the single log file inside it.
pub fn fixture_log(scenario: &str, compression: Compression) -> (PathBuf, PathBuf) {
    let form = match compression {
        Compression::Zstd => "zstd",
        Compression::None => "jsonl",
    };
    let root = fixture_root().join(scenario).join(form).join("sessions");
    let project = root.join("--home-user-project--");
    let session = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    (root, session.join(compression.file_name()))
}

pub fn format(compression: Compression, pack_chunks: bool) -> LogFormat {
    LogFormat {
        compression,
        pack_chunks,
    }
}

pub fn both_formats() -> [LogFormat; 3] {
    [
        format(Compression::Zstd, true),
        format(Compression::Zstd, false),
        format(Compression::None, false),
    ]
}

pub fn turn_start(seq: u64, turn: u64) -> Value {
    json!({"type": "turn/start", "seq": seq, "time": 1000 + seq, "data": {"turn": turn}})
}

pub fn turn_end(seq: u64, turn: u64) -> Value {
    json!({"type": "turn/end", "seq": seq, "time": 1000 + seq,
           "data": {"turn": turn, "reason": {"kind": "completed"}}})
}

pub fn text_delta(seq: u64, text: &str) -> Value {
    json!({"type": "assistant/chunk", "seq": seq, "time": 1000 + seq,
           "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}})
}

pub fn plugin_event(seq: u64) -> Value {
    json!({"type": "acme/thing", "seq": seq, "time": 1000 + seq, "ignorable": true,
           "data": {"nested": {"unknown": [1, 2.5, null]}}, "futureEnvelopeKey": "kept"})
}

/// A completed turn with a streamed answer, starting at `seq`.
pub fn completed_turn(seq: u64, turn: u64) -> Vec<Value> {
    let mut events = vec![turn_start(seq, turn)];
    for (i, piece) in ["Hel", "lo", ", ", "world"].iter().enumerate() {
        events.push(text_delta(seq + 1 + i as u64, piece));
    }
    events.push(plugin_event(seq + 5));
    events.push(turn_end(seq + 6, turn));
    events
}

/// Writes `batches` as successive durable appends to a new log and returns its path.
pub fn write_log(dir: &Path, format: LogFormat, id: &str, batches: &[Vec<Value>]) -> PathBuf {
    let path = dir.join(id).join(format.compression.file_name());
    let mut header = LogHeader::new(id, 1);
    header.cwd = Some("/work".into());
    let mut writer = LogWriter::create_lazy(&path, format, header);
    for batch in batches {
        writer.append(batch).unwrap();
    }
    path
}

/// Decoded text of each zstd frame of a file.
pub fn zstd_frames(data: &[u8]) -> Vec<String> {
    let mut frames = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let size = zstd::zstd_safe::find_frame_compressed_size(rest).unwrap();
        let text = zstd::stream::decode_all(&rest[..size]).unwrap();
        frames.push(String::from_utf8(text).unwrap());
        rest = &rest[size..];
    }
    frames
}
