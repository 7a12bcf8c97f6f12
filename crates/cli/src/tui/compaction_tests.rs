//! Compactions and prunes in the transcript, as a person sees them, and the context fill in
//! the status line.

use super::tests::{draw, usage, Log};
use super::*;
use dsh_session::SessionEvent;
use ratatui::style::Modifier;
use serde_json::{json, Value};

const PREAMBLE: &str = "This is an automatically generated checkpoint condensing an earlier \
    span of the conversation to free up context.";

impl Log {
    /// A surface event that replaces the nodes `start..=end`.
    fn replace(&mut self, type_name: &str, data: Value, range: (u64, u64), sources: &[u64]) {
        let raw = json!({"type": type_name, "seq": self.events.len(), "time": 0, "data": data,
            "surfaceOp": {"op": "replace", "start": range.0, "end": range.1},
            "sourceEventSeqs": sources});
        self.events.push(SessionEvent::from_value(&raw).unwrap());
    }

    fn read_call(&mut self, call: &str, output: &str) -> &mut Self {
        self.add(
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": call, "name": "read",
                "arguments": format!("{{\"file_path\": \"{call}.txt\"}}")}),
        )
        .add("tool/result", tool_result(call, output))
    }

    fn compaction_start(&mut self, id: &str, turn: Option<u64>) -> &mut Self {
        self.add(
            "compaction/start",
            json!({"compactionId": id, "turn": turn}),
        )
    }

    /// A successful compaction of `shadowed` (seqs) into `summary`.
    fn compacted(&mut self, id: &str, shadowed: &[u64], tokens: u64, summary: &str) -> &mut Self {
        let start = self.events.len() as u64;
        self.compaction_start(id, Some(1));
        self.add(
            "compaction/summary",
            json!({"compactionId": id, "summary": [{"type": "text", "text": summary}],
                "shadowedRange": {"start": shadowed[0], "end": shadowed[shadowed.len() - 1]},
                "shadowedSeqs": shadowed, "shadowedTokenCount": tokens,
                "provider": "deepseek-official", "model": "deepseek-v4-flash"}),
        );
        let mut sources = vec![start, start + 1];
        sources.extend_from_slice(shadowed);
        self.replace(
            "user/message",
            json!({"id": format!("k{start}"), "role": "user",
                "source": {"kind": "plugin", "plugin": "compact", "compactionId": id},
                "content": [
                    {"type": "text", "text": format!("{PREAMBLE}\n\n<compacted-summary>")},
                    {"type": "text", "text": summary},
                    {"type": "text", "text": "</compacted-summary>"}]}),
            (shadowed[0], shadowed[shadowed.len() - 1]),
            &sources,
        );
        self.add("compaction/end", json!({"compactionId": id, "turn": 1}))
    }
}

fn tool_result(call: &str, output: &str) -> Value {
    json!({"turn": 1, "step": 1, "message": {"id": format!("r-{call}"), "role": "user",
        "source": {"kind": "tool", "callId": call},
        "content": [{"type": "tool-result", "toolCallId": call,
            "content": [{"type": "text", "text": output}]}]}})
}

/// A turn that read two notes, then compacted the prompt and the first read.
fn compacted_turn() -> Log {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Read the notes")
        .read_call("a", &"alpha ".repeat(200))
        .compacted(
            "k1",
            &[2, 3, 4],
            612,
            "## Primary Request and Intent\n- read the notes\n## Current Work\n- note a read",
        )
        .read_call("b", "beta")
        .turn_end(1, json!({"kind": "completed"}));
    log
}

#[test]
fn a_compaction_is_one_collapsed_card_and_its_checkpoint_no_prompt() {
    let transcript = compacted_turn().transcript();
    assert_eq!(
        draw(96, 11, TranscriptView::new(&transcript)),
        "› Read the notes\n\
         \n\
         ✓ read  a.txt\n  \
           └ alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha alpha a…\n\
         \n\
         ▸ compacted 3 messages (~612 tokens) → summary (~74 tokens)  (Ctrl-O shows the summary)\n\
         \n\
         ✓ read  b.txt\n  \
           └ beta\n\
         \n\
         ─ turn 1 completed"
    );
}

#[test]
fn an_expanded_card_shows_the_summary() {
    let mut transcript = compacted_turn().transcript();
    transcript.set_compaction_expanded(true);
    let lines: Vec<String> = transcript_lines(&transcript, 60)
        .iter()
        .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    let card = lines
        .iter()
        .position(|l| l.starts_with("▾ compacted"))
        .unwrap();
    assert_eq!(
        lines[card..card + 6],
        [
            "▾ compacted 3 messages (~612 tokens) → summary (~74 tokens)",
            "  ## Primary Request and Intent",
            "  - read the notes",
            "  ## Current Work",
            "  - note a read",
            "",
        ]
    );
}

#[test]
fn a_failed_attempt_is_one_dim_note() {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Read the notes")
        .compaction_start("k1", Some(1));
    // Running: a live line.
    assert_eq!(
        draw(60, 1, TranscriptView::new(&log.transcript())),
        "⟳ compacting older history to free context…"
    );
    log.add(
        "compaction/end",
        json!({"compactionId": "k1", "turn": 1,
            "error": "summary is not smaller than the shadowed content (123 estimated framed tokens >= 123)"}),
    );
    let transcript = log.transcript();
    assert_eq!(
        draw(100, 3, TranscriptView::new(&transcript)),
        "› Read the notes\n\
         \n\
         · compaction attempt failed, nothing changed: summary is not smaller than the shadowed content (123…"
    );
    let lines = transcript_lines(&transcript, 100);
    let note = lines.last().unwrap();
    assert!(note.style.add_modifier.contains(Modifier::DIM), "{note:?}");
}

#[test]
fn an_attempt_cut_short_by_a_crash_is_noted_at_the_next_seed() {
    let mut log = Log::default();
    log.turn_start(1).compaction_start("k1", None);
    log.add("session/end-seed", json!({}));
    assert_eq!(
        draw(80, 1, TranscriptView::new(&log.transcript())),
        "· compaction attempt interrupted (dsh stopped before it finished)"
    );
}

#[test]
fn prunes_share_a_note_and_the_card_keeps_the_original_output() {
    let mut log = Log::default();
    log.turn_start(1)
        .read_call("a", "a long original output")
        .read_call("b", "another long output");
    for (seq, call, tokens) in [(3, "a", 3000), (5, "b", 1000)] {
        log.add(
            "compaction/prune",
            json!({"shadowedRange": {"start": seq, "end": seq}, "shadowedSeqs": [seq],
                "shadowedTokenCount": tokens}),
        );
        log.replace(
            "tool/result",
            tool_result(call, "head [... tool result middle pruned ...] tail"),
            (seq, seq),
            &[seq],
        );
    }
    assert_eq!(
        draw(100, 6, TranscriptView::new(&log.transcript())),
        "✓ read  a.txt\n  \
           └ a long original output\n\
         ✓ read  b.txt\n  \
           └ another long output\n\
         \n\
         · pruned 2 old tool results to head and tail (~4k → ~48 tokens); the log keeps the full output"
    );
}

#[test]
fn the_status_line_shows_the_meter_s_fill_of_the_window() {
    let mut transcript = compacted_turn().transcript();
    transcript.set_route("deepseek-official", "deepseek-v4-flash", Some(200_000));
    transcript.set_context_fill(Some(ContextFill {
        tokens: 84_000,
        window: None,
        window_guessed: false,
    }));
    // The window comes from the route when the measurement has none.
    assert_eq!(
        draw(90, 1, StatusLine::new(&transcript)),
        "idle · deepseek-v4-flash (deepseek-official) · 0 in / 0 out · ctx 42% (84k/200k)"
    );
    transcript.set_context_fill(Some(ContextFill {
        tokens: 13_800,
        window: Some(32_768),
        window_guessed: true,
    }));
    assert!(StatusLine::new(&transcript)
        .text()
        .ends_with(" · ctx 42% (13.8k/32.8k guess)"));
    // Nothing measures: the provider's latest prompt size.
    let mut log = Log::default();
    log.turn_start(1).user("hi").assistant(
        json!([{"type": "text", "text": "hello"}]),
        usage(7_000, 5, 1_000),
    );
    let mut unmeasured = log.transcript();
    unmeasured.set_route("openai-compatible", "qwen3", None);
    assert!(StatusLine::new(&unmeasured).text().ends_with(" · ctx 8k/?"));
}
