//! `read-path`: reading one long session back, end to end and phase by phase.
//!
//! The log has the original's shape for a long agentic turn: the 13 opening events of the
//! original's `read-edit` fixture (policy records, inbox splices, the prompts, titles, the
//! 30 KB `request/header`), then one turn of `read` steps written the way the original
//! writes them (step/start; block-start, one tool-call delta, block-end, usage, finish;
//! the assistant message; tool/call; tool/result with the file's lines in `meta`;
//! step/end), a final answer step and turn/end. It is stored as zstd frames in the batches
//! the checkpoints produce (before the model request, before the tool runs, after it), so
//! a 1,000-step log is 10,012 events, about 2.5 MB of JSON in 3,000 frames.
//!
//! Each size is measured twice: with the frames as dsh writes them now (a small frame at
//! level 1 with its literals raw, `SMALL_FRAME_TEXT` in `dsh-store`), and with the same
//! text re-encoded frame for frame with its literals Huffman-coded, as the original writes
//! them (every compressed frame of its fixtures does), at level 3, dsh's level for every
//! frame before stop 32. Logs the original wrote read at the second speed.
//!
//! Measured, each as min / median / max:
//! - read + validate: what `dsh sessions verify` does in-process (`inspect`: read, typed
//!   parse, crash-tail judgement, seeded construction with every check), for 10k and 100k
//!   events;
//! - the phases of it, split at public seams, to show where the time goes;
//! - resume to the first request byte: a fresh backend prepares the session, derives the
//!   history and serializes the chat-completions body for the next step;
//! - `dsh sessions verify` as a whole process (the release `dsh` beside this binary), with
//!   its peak RSS, for 10k and 100k events. The processes are started by a helper
//!   ([`crate::child_process`]), so the peak is theirs and not this bench's.

use anyhow::Context;

use crate::child_process::{ChildCommand, Spawner};
use dsh_llm::{LlmRequest, RequestPurpose};
use dsh_llm_openai::RouteConfig;
use dsh_protocol::{LlmCallConfig, SessionId};
use dsh_session::{interrupted_turn_closers, SeedSource, SessionBuilder, SessionHeader};
use dsh_store::{
    parse_typed_log, Compression, JsonlBackend, JsonlConfig, LogFormat, LogHeader, LogWriter,
    SessionPersistence,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 21;
const CWD: &str = "/home/user/project";
const FIXTURE: &str = "../../../shared/fixtures/dsh-0.1.0/read-edit/jsonl/sessions";

/// The fixture's header and its first 13 events (seq 0..=12), verbatim.
fn fixture_prefix() -> anyhow::Result<(Value, Vec<Value>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let project = std::fs::read_dir(&root)
        .with_context(|| format!("the read-edit fixture is missing under {}", root.display()))?
        .next()
        .context("no project in the fixture")??;
    let session = std::fs::read_dir(project.path())?
        .next()
        .context("no session in the fixture")??;
    let text = std::fs::read_to_string(session.path().join("session.jsonl"))?;
    let mut lines = text.lines().map(serde_json::from_str::<Value>);
    let header = lines.next().context("empty fixture")??;
    let prefix = lines.take(13).collect::<Result<Vec<_>, _>>()?;
    Ok((header, prefix))
}

/// A deterministic source file of 8 lines, different per step.
fn file_lines(step: u64) -> Vec<String> {
    let mut texts = crate::workload::Texts::new(step);
    (0..8).map(|_| texts.delta(30)).collect()
}

/// The ten events of one `read` step, in the original's shapes and key order, grouped in
/// the three batches the checkpoints write.
/// The seq and time of the next event.
struct Cursor {
    seq: u64,
    time: u64,
}

impl Cursor {
    fn next(&mut self) -> (u64, u64) {
        let at = (self.seq, self.time);
        self.seq += 1;
        self.time += 3;
        at
    }
}

/// `opened`: the step/start is already in the log (the fixture's prefix opens step 1).
fn read_step(at: &mut Cursor, step: u64, opened: bool) -> [Vec<Value>; 3] {
    let call = format!("call_{step}_0_{:08x}", step.wrapping_mul(2654435761) as u32);
    let path = format!("src/module_{step}.rs");
    let args = format!("{{\"file_path\": \"{path}\"}}");
    let chunk = |at: (u64, u64), chunk: Value| {
        json!({"type": "assistant/chunk", "seq": at.0, "time": at.1,
               "data": {"turn": 1, "step": step, "chunk": chunk}})
    };
    let mut start = Vec::new();
    if !opened {
        let (s, t) = at.next();
        start.push(
            json!({"type": "step/start", "seq": s, "time": t, "data": {"turn": 1, "step": step}}),
        );
    }
    let first_chunk = at.seq;
    let chunks = vec![
        chunk(
            at.next(),
            json!({"type": "block-start", "index": 0, "blockType": "tool-call"}),
        ),
        chunk(
            at.next(),
            json!({"type": "tool-call-delta", "index": 0, "id": call, "name": "read", "argumentsDelta": args}),
        ),
        chunk(
            at.next(),
            json!({"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": call, "name": "read", "arguments": args}}),
        ),
        chunk(
            at.next(),
            json!({"type": "usage", "usage": {"inputTokens": 8000 + 120 * step, "outputTokens": 18, "cacheReadTokens": 7936 + 120 * step, "reasoningTokens": 0}}),
        ),
        chunk(
            at.next(),
            json!({"type": "finish", "reason": {"kind": "tool-calls"}}),
        ),
    ];
    let (s, t) = at.next();
    let message = json!({"type": "assistant/message", "seq": s, "time": t, "data": {"turn": 1, "step": step,
        "message": {"role": "assistant", "content": [{"type": "tool-call", "id": call, "name": "read", "arguments": args}],
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "id": format!("{:08x}-1b48-4919-8a91-1f2249d7f40e", step)},
        "usage": {"inputTokens": 8000 + 120 * step, "outputTokens": 18, "cacheReadTokens": 7936 + 120 * step, "reasoningTokens": 0}},
        "sourceEventSeqs": (first_chunk..first_chunk + 5).collect::<Vec<_>>(), "surfaceOp": "append"});
    let (call_seq, t) = at.next();
    let tool_call = json!({"type": "tool/call", "seq": call_seq, "time": t, "data": {"turn": 1, "step": step,
        "callId": call, "name": "read", "arguments": args}});
    let lines = file_lines(step);
    let numbered: String = lines
        .iter()
        .enumerate()
        .map(|(i, line)| format!("{}: {line}\n", i + 1))
        .collect();
    let text = format!(
        "<path>{CWD}/{path}</path>\n<type>file</type>\n<content>\n{numbered}\n(End of file - total {} lines)\n</content>",
        lines.len()
    );
    let meta_lines: Vec<Value> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| json!({"number": i + 1, "text": line}))
        .collect();
    let (s, t) = at.next();
    let result = json!({"type": "tool/result", "seq": s, "time": t, "data": {"turn": 1, "step": step,
        "message": {"source": {"kind": "tool", "callId": call},
            "content": [{"type": "tool-result", "toolCallId": call, "content": [{"type": "text", "text": text}], "isError": false}],
            "role": "user", "id": format!("{:08x}-8643-45d5-9d8c-945be55a1dd6", step)},
        "meta": {"path": format!("{CWD}/{path}"), "offset": 1, "lines": meta_lines, "totalLines": lines.len()}},
        "sourceEventSeqs": [call_seq], "surfaceOp": "append"});
    let (s, t) = at.next();
    let end = json!({"type": "step/end", "seq": s, "time": t, "data": {"turn": 1, "step": step}});
    let mut model = chunks;
    model.push(message);
    model.push(tool_call);
    [start, model, vec![result, end]]
}

/// The closing answer step and turn/end.
fn answer_step(at: &mut Cursor, step: u64) -> Vec<Value> {
    let answer = "Read every module; nothing needs changing.";
    let mut events = Vec::new();
    let (s, t) = at.next();
    events.push(
        json!({"type": "step/start", "seq": s, "time": t, "data": {"turn": 1, "step": step}}),
    );
    let first_chunk = at.seq;
    for chunk in [
        json!({"type": "block-start", "index": 0, "blockType": "text"}),
        json!({"type": "text-delta", "index": 0, "text": answer}),
        json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": answer}}),
        json!({"type": "usage", "usage": {"inputTokens": 9000 + 120 * step, "outputTokens": 11, "cacheReadTokens": 0, "reasoningTokens": 0}}),
        json!({"type": "finish", "reason": {"kind": "stop"}}),
    ] {
        let (s, t) = at.next();
        events.push(json!({"type": "assistant/chunk", "seq": s, "time": t,
            "data": {"turn": 1, "step": step, "chunk": chunk}}));
    }
    let (s, t) = at.next();
    events.push(json!({"type": "assistant/message", "seq": s, "time": t, "data": {"turn": 1, "step": step,
        "message": {"role": "assistant", "content": [{"type": "text", "text": answer}],
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "id": "e0d1cad5-1b48-4919-8a91-1f2249d7f40e"}},
        "sourceEventSeqs": (first_chunk..first_chunk + 5).collect::<Vec<_>>(), "surfaceOp": "append"}));
    let (s, t) = at.next();
    events
        .push(json!({"type": "step/end", "seq": s, "time": t, "data": {"turn": 1, "step": step}}));
    let (s, t) = at.next();
    events.push(json!({"type": "turn/end", "seq": s, "time": t, "data": {"turn": 1, "reason": {"kind": "completed"}}}));
    events
}

/// A stored long session: where it lives and what it holds.
pub struct LongLog {
    pub id: SessionId,
    pub path: PathBuf,
    pub events: u64,
    pub json_bytes: u64,
    pub file_bytes: u64,
}

/// Writes a session of `read_steps` read steps plus the answer under `root` (a store
/// root), zstd with packed rows, in checkpoint-sized batches.
pub fn write_long_log(root: &Path, read_steps: u64) -> anyhow::Result<LongLog> {
    let (header_value, prefix) = fixture_prefix()?;
    let mut header = LogHeader::new(
        header_value["id"].as_str().context("fixture header id")?,
        header_value["createdAt"]
            .as_u64()
            .context("fixture header time")?,
    );
    header.cwd = Some(CWD.into());
    let id = SessionId::new(header.id.clone());
    let layout = dsh_store::StoreLayout::new(root, Compression::Zstd);
    let path = layout.session_file(header.cwd.as_deref(), id.as_str())?;
    let format = LogFormat {
        compression: Compression::Zstd,
        pack_chunks: true,
    };
    let mut writer = LogWriter::create_lazy(&path, format, header);
    let mut json_bytes = 0u64;
    let mut batch = |events: Vec<Value>| -> anyhow::Result<()> {
        for event in &events {
            json_bytes += serde_json::to_vec(event)?.len() as u64 + 1;
        }
        writer.append(&events)?;
        Ok(())
    };
    let mut at = Cursor {
        seq: prefix.len() as u64,
        time: prefix
            .last()
            .and_then(|e| e["time"].as_u64())
            .unwrap_or_default(),
    };
    let mut pending = prefix;
    for step in 1..=read_steps {
        let [start, model, tool] = read_step(&mut at, step, step == 1);
        pending.extend(start);
        batch(std::mem::take(&mut pending))?;
        batch(model)?;
        batch(tool)?;
    }
    batch(answer_step(&mut at, read_steps + 1))?;
    let file_bytes = std::fs::metadata(&path)?.len();
    Ok(LongLog {
        id,
        path,
        events: writer.next_seq(),
        json_bytes,
        file_bytes,
    })
}

/// Copies `log` under the store root `root` with every frame re-encoded the way the
/// original writes its frames (literals Huffman-coded; level 3, checksummed), frame for
/// frame.
fn with_original_frames(log: &LongLog, root: &Path) -> anyhow::Result<LongLog> {
    let data = std::fs::read(&log.path)?;
    let mut compressor = zstd::bulk::Compressor::new(3)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    let mut out = Vec::with_capacity(data.len());
    let mut rest = data.as_slice();
    while !rest.is_empty() {
        let size = zstd::zstd_safe::find_frame_compressed_size(rest).map_err(|code| {
            anyhow::anyhow!("frame size: {}", zstd::zstd_safe::get_error_name(code))
        })?;
        let (frame, next) = rest.split_at(size);
        let text = zstd::stream::decode_all(frame)?;
        out.extend(compressor.compress(&text)?);
        rest = next;
    }
    let layout = dsh_store::StoreLayout::new(root, Compression::Zstd);
    let path = layout.session_file(Some(CWD), log.id.as_str())?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, &out)?;
    Ok(LongLog {
        id: log.id.clone(),
        path,
        events: log.events,
        json_bytes: log.json_bytes,
        file_bytes: out.len() as u64,
    })
}

/// min / median / max of some samples.
fn spread(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort_unstable();
    let min = samples.first().copied().unwrap_or_default();
    let max = samples.last().copied().unwrap_or_default();
    let median = samples.get(samples.len() / 2).copied().unwrap_or_default();
    (min, median, max)
}

fn print(case: &str, samples: Vec<Duration>, budget: &str) {
    let (min, median, max) = spread(samples);
    println!("{case:<48} min {min:>9.3?}  median {median:>9.3?}  max {max:>9.3?}  {budget}");
}

fn time<T>(runs: usize, mut f: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        std::hint::black_box(f()?);
        samples.push(start.elapsed());
    }
    Ok(samples)
}

fn backend(root: &Path) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig::new(root))
}

/// The phases of a read, split at public seams.
fn phases(log: &LongLog) -> anyhow::Result<()> {
    let data = std::fs::read(&log.path)?;
    print(
        "  phase: read the file",
        time(RUNS, || Ok(std::fs::read(&log.path)?))?,
        "",
    );
    print(
        "  phase: zstd frames only (decode_all)",
        time(RUNS, || Ok(zstd::stream::decode_all(data.as_slice())?))?,
        "",
    );
    print(
        "  phase: frames, lines, rows, typed parse",
        time(RUNS, || {
            Ok(parse_typed_log(
                &log.path,
                Compression::Zstd,
                &data,
                Some(log.id.as_str()),
            )?)
        })?,
        "",
    );
    let parsed = parse_typed_log(&log.path, Compression::Zstd, &data, Some(log.id.as_str()))?;
    let header: SessionHeader = serde_json::from_value(parsed.header.to_value())?;
    print(
        "  phase: crash-repair check",
        time(RUNS, || Ok(interrupted_turn_closers(&parsed.events)))?,
        "",
    );
    print(
        "  phase: seeded construction (validate + fold)",
        time(RUNS, || {
            Ok(SessionBuilder::new(header.clone())
                .seed(parsed.events.iter().cloned(), SeedSource::Persistence)
                .build()?)
        })?,
        "",
    );
    let session = SessionBuilder::new(header)
        .seed(parsed.events.iter().cloned(), SeedSource::Persistence)
        .build()?;
    print(
        "  phase: derive_messages",
        time(RUNS, || Ok(session.derive_messages()))?,
        "",
    );
    let route = RouteConfig::deepseek();
    print(
        "  phase: request body (build + serialize)",
        time(RUNS, || request_bytes(&session, &route))?,
        "",
    );
    Ok(())
}

/// The next step's chat-completions body, serialized: the first byte a resume sends.
fn request_bytes(session: &dsh_session::Session, route: &RouteConfig) -> anyhow::Result<Vec<u8>> {
    let header = session.request_header().context("the log has a header")?;
    let request = LlmRequest {
        config: LlmCallConfig {
            provider: header.config.provider.clone(),
            model: header.config.model.clone(),
            ..LlmCallConfig::default()
        },
        messages: session.derive_messages(),
        system: header.system.clone(),
        tools: header.tools.clone(),
        session_id: Some(session.id().clone()),
        purpose: RequestPurpose::Step,
        cancel: CancellationToken::new(),
    };
    // What the adapter sends: the bytes written straight from the request (no `Value`).
    Ok(dsh_llm_openai::wire::request_bytes(
        &request,
        route,
        &dsh_llm_openai::images::RequestImages::default(),
    )?)
}

/// `dsh sessions verify <id>` as a whole process: wall times and the largest peak RSS.
fn verify_process(home: &Path, log: &LongLog, runs: usize) -> anyhow::Result<()> {
    let dsh = std::env::current_exe()?.with_file_name("dsh");
    if !dsh.exists() {
        println!(
            "  (skipped `dsh sessions verify`: build it first with `cargo build --release -p dsh-cli`)"
        );
        return Ok(());
    }
    // Through the helper: a child spawned from this bench would start with the bench's
    // resident set (now holding the in-process reads) as its peak (see `child_process`).
    let mut spawner = Spawner::start()?;
    let command = ChildCommand {
        program: dsh,
        args: vec!["sessions".into(), "verify".into(), log.id.as_str().into()],
        cwd: home.to_owned(),
        env: vec![("DSH_HOME".into(), home.display().to_string())],
    };
    let mut samples = Vec::with_capacity(runs);
    let mut peak_kib = 0i64;
    for _ in 0..runs {
        let run = spawner.run(&command)?;
        if let Some(failure) = run.failure {
            anyhow::bail!("dsh sessions verify failed ({failure})");
        }
        samples.push(run.wall);
        peak_kib = peak_kib.max(run.peak_rss_kib);
    }
    print(
        &format!("`dsh sessions verify`, {} events", log.events),
        samples,
        "(whole process)",
    );
    println!(
        "  peak RSS {:.1} MiB (JSON {:.1} MiB)",
        peak_kib as f64 / 1024.0,
        log.json_bytes as f64 / (1024.0 * 1024.0)
    );
    Ok(())
}

fn case(read_steps: u64, runs: usize, budget: &str, details: bool) -> anyhow::Result<()> {
    let temp = tempfile::tempdir()?;
    // `DSH_BENCH_KEEP=<dir>` keeps the logs there (a DSH_HOME per size and framing), for
    // profiling.
    let home = match std::env::var_os("DSH_BENCH_KEEP") {
        Some(dir) => Path::new(&dir).to_owned(),
        None => temp.path().to_owned(),
    };
    let ours = home.join(format!("steps-{read_steps}"));
    let log = write_long_log(&ours.join("sessions"), read_steps)?;
    let original = home.join(format!("steps-{read_steps}-original-frames"));
    let original_log = with_original_frames(&log, &original.join("sessions"))?;
    println!(
        "log: {} events, {:.2} MB JSON ({} read steps + the answer); zstd {:.2} MB as dsh \
         writes it, {:.2} MB as the original does",
        log.events,
        log.json_bytes as f64 / 1e6,
        read_steps,
        log.file_bytes as f64 / 1e6,
        original_log.file_bytes as f64 / 1e6,
    );
    for (home, log, framing) in [
        (&ours, &log, "dsh's frames"),
        (&original, &original_log, "the original's frames"),
    ] {
        println!("- {framing}:");
        let root = home.join("sessions");
        let store = backend(&root);
        print(
            &format!("read + validate {} events (inspect)", log.events),
            time(runs, || Ok(store.inspect(&log.id)?))?,
            budget,
        );
        if details {
            phases(log)?;
            let route = RouteConfig::deepseek();
            print(
                "resume to the first request byte",
                time(runs, || {
                    // Fresh: nothing cached from the previous run.
                    let prepared = backend(&root).prepare(&log.id)?;
                    request_bytes(&prepared.session, &route)
                })?,
                "(budget <= 12 ms)",
            );
        }
        verify_process(home, log, runs)?;
    }
    Ok(())
}

pub fn run() -> anyhow::Result<()> {
    case(999, RUNS, "(budget <= 8 ms)", true)?;
    case(9_999, 7, "(budget <= 80 ms)", false)
}
