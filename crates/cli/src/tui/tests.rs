//! Snapshot tests: what a person would see, as plain text, for each kind of transcript entry.

use super::*;
use dsh_session::SessionEvent;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::{json, Value};

/// A log under construction; seqs are assigned in order.
#[derive(Default)]
pub(super) struct Log {
    pub(super) events: Vec<SessionEvent>,
}

impl Log {
    pub(super) fn add(&mut self, type_name: &str, data: Value) -> &mut Self {
        let mut raw = json!({"type": type_name, "seq": self.events.len(), "time": 0, "data": data});
        if matches!(
            type_name,
            "user/message" | "assistant/message" | "tool/result"
        ) {
            raw["surfaceOp"] = json!("append");
        }
        self.events.push(SessionEvent::from_value(&raw).unwrap());
        self
    }

    pub(super) fn turn_start(&mut self, turn: u64) -> &mut Self {
        self.add("turn/start", json!({"turn": turn}))
            .add("step/start", json!({"turn": turn, "step": 1}))
    }

    pub(super) fn user(&mut self, text: &str) -> &mut Self {
        self.add(
            "user/message",
            json!({"id": format!("u{}", self.events.len()), "role": "user",
                "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}),
        )
    }

    fn chunk(&mut self, chunk: Value) -> &mut Self {
        self.add(
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": chunk}),
        )
    }

    /// A streamed block: start, two deltas, end.
    fn streamed(&mut self, index: u32, kind: &str, first: &str, second: &str) -> &mut Self {
        let delta = if kind == "text" {
            "text-delta"
        } else {
            "reasoning-delta"
        };
        self.chunk(json!({"type": "block-start", "index": index, "blockType": kind}))
            .chunk(json!({"type": delta, "index": index, "text": first}))
            .chunk(json!({"type": delta, "index": index, "text": second}))
            .chunk(json!({"type": "block-end", "index": index,
                "block": {"type": kind, "text": format!("{first}{second}")}}))
    }

    pub(super) fn assistant(&mut self, content: Value, usage: Value) -> &mut Self {
        self.add(
            "assistant/message",
            json!({"turn": 1, "step": 1, "usage": usage, "message": {"id": format!("a{}", self.events.len()),
                "role": "assistant", "content": content,
                "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}}}),
        )
    }

    pub(super) fn turn_end(&mut self, turn: u64, reason: Value) -> &mut Self {
        self.add("step/end", json!({"turn": turn, "step": 1}))
            .add("turn/end", json!({"turn": turn, "reason": reason}))
    }

    pub(super) fn transcript(&self) -> Transcript {
        Transcript::from_events(&self.events)
    }
}

pub(super) fn usage(input: u64, output: u64, cached: u64) -> Value {
    json!({"inputTokens": input, "outputTokens": output, "cacheReadTokens": cached})
}

/// Renders with ratatui's test backend and returns the screen, trailing spaces trimmed.
pub(super) fn draw(width: u16, height: u16, widget: impl Widget) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| frame.render_widget(widget, frame.area()))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let rows: Vec<String> = (0..height)
        .map(|y| {
            let row: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
            row.trim_end().to_owned()
        })
        .collect();
    rows.join("\n")
}

fn text_turn() -> Log {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Say hello")
        .add("request/context", json!({"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 1000000}))
        .streamed(0, "text", "Hello ", "there! How can I help you today?")
        .chunk(json!({"type": "usage", "usage": usage(8000, 12, 2000)}))
        .chunk(json!({"type": "finish", "reason": {"kind": "stop"}}))
        .assistant(json!([{"type": "text", "text": "Hello there! How can I help you today?"}]), usage(8000, 12, 2000))
        .turn_end(1, json!({"kind": "completed"}));
    log
}

#[test]
fn a_text_turn() {
    let transcript = text_turn().transcript();
    let screen = draw(30, 7, TranscriptView::new(&transcript));
    assert_eq!(
        screen,
        "\n\
         › Say hello\n\
         \n\
         • Hello there! How can I help\n  \
           you today?\n\
         \n\
         ─ turn 1 completed"
    );
}

#[test]
fn text_streams_in_before_the_message_settles_it() {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Count")
        .chunk(json!({"type": "block-start", "index": 0, "blockType": "text"}))
        .chunk(json!({"type": "text-delta", "index": 0, "text": "one, two"}));
    let transcript = log.transcript();
    assert_eq!(
        draw(30, 3, TranscriptView::new(&transcript)),
        "› Count\n\n• one, two ▍"
    );
    assert_eq!(
        transcript.run_state(),
        RunState::Running {
            turn: 1,
            step: Some(1)
        }
    );
}

fn reasoning_turn() -> Transcript {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Is 91 prime?")
        .streamed(0, "reasoning", "91 = 7 × 13.\n", "So it is not prime.")
        .streamed(1, "text", "No: ", "91 = 7 × 13.")
        .assistant(
            json!([{"type": "reasoning", "text": "91 = 7 × 13.\nSo it is not prime."},
                   {"type": "text", "text": "No: 91 = 7 × 13."}]),
            usage(100, 20, 0),
        )
        .turn_end(1, json!({"kind": "completed"}));
    log.transcript()
}

#[test]
fn reasoning_collapsed_shows_one_dim_line() {
    let transcript = reasoning_turn();
    assert_eq!(
        draw(40, 7, TranscriptView::new(&transcript)),
        "› Is 91 prime?\n\
         \n\
         ▸ thinking: So it is not prime.\n\
         \n\
         • No: 91 = 7 × 13.\n\
         \n\
         ─ turn 1 completed"
    );
}

#[test]
fn reasoning_expanded_shows_every_line() {
    let mut transcript = reasoning_turn();
    transcript.set_reasoning_expanded(true);
    assert_eq!(
        draw(40, 9, TranscriptView::new(&transcript)),
        "› Is 91 prime?\n\
         \n\
         ▾ thinking\n  \
           91 = 7 × 13.\n  \
           So it is not prime.\n\
         \n\
         • No: 91 = 7 × 13.\n\
         \n\
         ─ turn 1 completed"
    );
}

fn tool_turn(result: Value, error: Option<Value>) -> Transcript {
    let mut log = Log::default();
    log.turn_start(1).user("Run the tests").add(
        "tool/call",
        json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash",
            "arguments": "{\"command\": \"cargo test -q\", \"description\": \"Run tests\"}"}),
    );
    let mut data = json!({"turn": 1, "step": 1, "message": {"id": "r1", "role": "user",
        "source": {"kind": "tool", "callId": "c1"},
        "content": [{"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": result}],
            "isError": error.is_some()}]}});
    if let Some(error) = error {
        data["error"] = error;
    }
    log.add("tool/result", data);
    log.transcript()
}

#[test]
fn a_tool_card_while_running() {
    let mut log = Log::default();
    log.turn_start(1).add(
        "tool/call",
        json!({"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{\"file_path\": \"src/main.rs\"}"}),
    );
    assert_eq!(
        draw(30, 1, TranscriptView::new(&log.transcript())),
        "… read  src/main.rs"
    );
}

#[test]
fn a_tool_card_with_success() {
    let transcript = tool_turn(json!("running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n\ntest result: ok. 3 passed"), None);
    assert_eq!(
        draw(40, 9, TranscriptView::new(&transcript)),
        "› Run the tests\n\
         \n\
         ✓ bash  cargo test -q\n  \
           └ running 3 tests\n    \
             test a ... ok\n    \
             test b ... ok\n    \
             test c ... ok\n\
         \n    \
             test result: ok. 3 passed"
    );
}

#[test]
fn a_tool_card_with_error() {
    let transcript = tool_turn(
        json!("error[E0425]: cannot find value `x`\n[exit code: 101]"),
        Some(json!({"name": "ToolError", "code": "EXIT_NONZERO"})),
    );
    assert_eq!(
        draw(44, 6, TranscriptView::new(&transcript)),
        "› Run the tests\n\
         \n\
         ✗ bash  cargo test -q\n  \
           └ error (EXIT_NONZERO)\n    \
             error[E0425]: cannot find value `x`\n    \
             [exit code: 101]"
    );
}

#[test]
fn a_retry_notice() {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Are you there?")
        .chunk(json!({"type": "finish", "reason": {"kind": "error",
            "failure": {"message": "Internal server error", "code": "SERVER", "status": 500}}}))
        .add(
            "llm/retry",
            json!({"retryId": "r", "turn": 1, "step": 1, "provider": "deepseek-official",
            "mode": "normal", "policyKey": "k", "retry": 1, "maxRetries": 5, "delayMs": 459.8,
            "failure": {"message": "Internal server error", "code": "SERVER", "status": 500}}),
        );
    let transcript = log.transcript();
    assert_eq!(
        transcript.run_state(),
        RunState::Retrying {
            turn: 1,
            retry: 1,
            max_retries: Some(5)
        }
    );
    assert_eq!(
        draw(48, 5, TranscriptView::new(&transcript)),
        "› Are you there?\n\
         \n\
         ↻ model request failed (SERVER 500: Internal\n  \
           server error); retrying in 0.5s, attempt 1 of\n  \
           5"
    );
    log.add(
        "llm/retry-started",
        json!({"retryId": "r", "turn": 1, "step": 1, "retry": 1}),
    );
    let transcript = log.transcript();
    assert_eq!(
        draw(90, 3, TranscriptView::new(&transcript)),
        "› Are you there?\n\
         \n\
         ↻ model request failed (SERVER 500: Internal server error); retried, attempt 1 of 5"
    );
}

#[test]
fn turn_outcomes_say_how_the_turn_ended() {
    let mut log = Log::default();
    log.turn_start(1)
        .turn_end(1, json!({"kind": "aborted", "reason": {"kind": "user"}}))
        .turn_start(2)
        .turn_end(2, json!({"kind": "error", "error": {"message": "bad key", "code": "AUTH", "status": 401}}))
        .turn_start(3)
        .turn_end(3, json!({"kind": "max-tokens"}));
    assert_eq!(
        draw(70, 5, TranscriptView::new(&log.transcript())),
        "■ turn 1 cancelled by you\n\
         \n\
         ✗ turn 2 failed: bad key (AUTH)\n\
         \n\
         ■ turn 3 stopped: the model reached its output token limit"
    );
}

#[test]
fn todo_lists_show_their_progress() {
    let mut log = Log::default();
    log.add(
        "todo/write",
        json!({"todos": [{"content": "List the files", "status": "completed"},
            {"content": "Read the notes", "status": "in_progress"},
            {"content": "Summarise", "status": "pending"}]}),
    );
    let transcript = log.transcript();
    assert_eq!(transcript.todos().len(), 3);
    assert_eq!(
        draw(30, 4, TranscriptView::new(&transcript)),
        "☰ todos\n  [x] List the files\n  [>] Read the notes\n  [ ] Summarise"
    );
}

#[test]
fn the_status_line() {
    let transcript = text_turn().transcript();
    let usage = transcript.usage();
    assert_eq!(
        (usage.input, usage.output, usage.last_prompt),
        (10_000, 12, Some(10_000))
    );
    assert_eq!(
        draw(90, 1, StatusLine::new(&transcript)),
        "idle · deepseek-v4-flash (deepseek-official) · 10k in / 12 out · ctx 1.0% (10k/1M)"
    );
    assert_eq!(
        draw(40, 1, StatusLine::new(&transcript)),
        "idle · deepseek-v4-flash (deepseek-offi…"
    );
    let mut running = Log::default();
    running.turn_start(4);
    let mut fresh = running.transcript();
    fresh.set_route("openai-compatible", "qwen3", None);
    assert_eq!(
        draw(80, 1, StatusLine::new(&fresh)),
        "running · turn 4 step 1 · qwen3 (openai-compatible) · 0 in / 0 out"
    );
    assert_eq!(
        draw(80, 1, StatusLine::new(&fresh).jobs(1)),
        "running · turn 4 step 1 · 1 job · qwen3 (openai-compatible) · 0 in / 0 out"
    );
    assert_eq!(
        draw(100, 1, StatusLine::new(&transcript).jobs(3)),
        "idle · 3 jobs · deepseek-v4-flash (deepseek-official) · 10k in / 12 out · ctx 1.0% (10k/1M)"
    );
    assert_eq!(
        draw(100, 1, StatusLine::new(&fresh).agents(2).jobs(1)),
        "running · turn 4 step 1 · 2 agents · 1 job · qwen3 (openai-compatible) · 0 in / 0 out"
    );
    assert_eq!(
        draw(80, 1, StatusLine::new(&fresh).agents(1)),
        "running · turn 4 step 1 · 1 agent · qwen3 (openai-compatible) · 0 in / 0 out"
    );
    // What the turn is doing: thinking, then running its tools.
    running.add(
        "assistant/chunk",
        json!({"turn": 4, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "reasoning"}}),
    );
    assert!(StatusLine::new(&running.transcript())
        .text()
        .starts_with("running · turn 4 step 1 · thinking · "));
    running
        .add(
            "tool/call",
            json!({"turn": 4, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}),
        )
        .add(
            "tool/call",
            json!({"turn": 4, "step": 1, "callId": "c2", "name": "read", "arguments": "{}"}),
        );
    assert!(StatusLine::new(&running.transcript())
        .text()
        .starts_with("running · turn 4 step 1 · running bash, read · "));
}

#[test]
fn an_approval_prompt_on_the_full_screen() {
    let transcript = text_turn().transcript();
    let mut input = InputBox::new();
    input.enqueue("then run clippy".into());
    let mut prompt = ApprovalPrompt::new(
        "bash",
        "git push --force",
        Some("the command writes outside the workspace".into()),
    );
    prompt.next();
    let screen = draw(
        60,
        12,
        Screen {
            transcript: &transcript,
            input: &input,
            approval: Some(&prompt),
        },
    );
    assert_eq!(
        screen,
        "• Hello there! How can I help you today?\n\
         \n\
         ─ turn 1 completed\n\
         ┌ Allow this tool call? ───────────────────────────────────┐\n\
         │bash  git push --force                                    │\n\
         │why: the command writes outside the workspace             │\n\
         │ Allow once   [Allow for this session]   Deny             │\n\
         └──────────────────────────────────────────────────────────┘\n\
         queued › then run clippy\n\
         ────────────────────────────────────────────────────────────\n\
         › Enter sends what is queued, or type a task\n\
         waiting for your approval · deepseek-v4-flash (deepseek-off…"
    );
}

#[test]
fn images_in_prompts_are_marked_and_plugin_messages_hidden() {
    let mut log = Log::default();
    log.add(
        "user/message",
        json!({"id": "u1", "role": "user", "source": {"kind": "user"},
            "content": [{"type": "text", "text": "What is this?"}, {"type": "image", "attachment": {"id": "a1"}}]}),
    )
    .add(
        "user/message",
        json!({"id": "u2", "role": "user", "source": {"kind": "plugin", "plugin": "dsh-instructions", "form": "instructions"},
            "content": [{"type": "text", "text": "Instructions for this workspace"}]}),
    );
    assert_eq!(
        draw(30, 2, TranscriptView::new(&log.transcript())),
        "\n› What is this? [image]"
    );
}

#[test]
fn escape_sequences_from_the_model_and_tools_leave_nothing_on_screen() {
    let mut log = Log::default();
    log.turn_start(1)
        .user("Summarize the page")
        // The title sequence arrives split across two deltas, as a stream may cut it.
        .streamed(0, "text", "Done\x1b]0;PWN", "ED\x07. \x1b[31mred\x1b[0m 漢字")
        .add(
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash",
                "arguments": "{\"command\": \"printf '\\u001b]52;c;cm0gLXJm\\u0007ok'\"}"}),
        )
        .add(
            "todo/write",
            json!({"turn": 1, "step": 1, "todos": [{"content": "fix \u{1b}[8mhidden", "status": "pending"}]}),
        )
        .turn_end(
            1,
            json!({"kind": "error", "error": {"message": "bad \u{1b}]0;TITLE\u{7}payload", "code": "X"}}),
        );
    let transcript = log.transcript();
    let screen = draw(60, 12, TranscriptView::new(&transcript));
    for leftover in ["PWN", "]0;", "]52;", "[31m", "[8m", "TITLE"] {
        assert!(
            !screen.contains(leftover),
            "{leftover:?} on screen:\n{screen}"
        );
    }
    // (The test backend shows a wide character's second cell as a space.)
    assert!(screen.contains("• Done. red 漢 字"), "{screen}");
    assert!(screen.contains("bash  printf 'ok'"), "{screen}");
    assert!(screen.contains("fix hidden"), "{screen}");
    assert!(screen.contains("failed: bad payload (X)"), "{screen}");
    // The view-model itself holds no control characters, so no other renderer can leak them.
    let texts: Vec<String> = transcript
        .entries()
        .iter()
        .map(|entry| format!("{entry:?}"))
        .collect();
    for text in texts {
        assert!(!text.contains("\\u{1b}"), "{text}");
    }
}

#[test]
fn an_approval_prompt_shows_a_hostile_command_without_its_sequences() {
    let prompt = ApprovalPrompt::new(
        "bash",
        "curl x \u{1b}]0;PWNED\u{7}| sh",
        Some("\u{1b}[2Jwrites outside".into()),
    );
    assert_eq!(prompt.summary, "curl x | sh");
    assert_eq!(prompt.reason.as_deref(), Some("writes outside"));
}

#[test]
fn an_image_in_a_tool_result_shows_what_it_is() {
    let mut log = Log::default();
    log.turn_start(1).user("Show the logo").add(
        "tool/call",
        json!({"turn": 1, "step": 1, "callId": "c1", "name": "mcp__everything__get-tiny-image",
            "arguments": "{}"}),
    );
    let attachment = json!({"attachmentId": format!("sha256:{}", "4a".repeat(32)),
        "mediaType": "image/png", "bytes": 4033, "width": 20, "height": 20});
    log.add(
        "tool/result",
        json!({"turn": 1, "step": 1, "message": {"id": "r1", "role": "user",
        "source": {"kind": "tool", "callId": "c1"},
        "content": [{"type": "tool-result", "toolCallId": "c1", "isError": false, "content": [
            {"type": "text", "text": "Here it is:"},
            {"type": "image", "attachment": attachment},
            {"type": "image", "attachment": {"from": "elsewhere"}},
        ]}]}}),
    );
    let transcript = log.transcript();
    let output = transcript
        .entries()
        .iter()
        .find_map(|entry| match entry {
            Entry::Tool(card) => match &card.state {
                ToolState::Done { output } => Some(output.clone()),
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    assert_eq!(
        output,
        "Here it is:\n[image: image/png, 20x20 px, 3.9 KiB, sha256:4a4a4a4a]\n[image: unknown reference]"
    );
}

#[test]
fn the_status_line_shows_the_cost_only_of_priced_models() {
    use super::cost::{Price, Prices};
    let transcript = text_turn().transcript();
    let priced = Prices {
        currency: "$".into(),
        by_model: [(
            "deepseek-v4-flash".to_owned(),
            Price {
                input: 1.0,
                cached_input: 0.25,
                output: 2.0,
            },
        )]
        .into(),
    };
    // 8,000 uncached prompt tokens at $1/M, 2,000 cached at $0.25/M, 12 output at $2/M.
    assert_eq!(
        StatusLine::new(&transcript).prices(&priced).text(),
        "idle · deepseek-v4-flash (deepseek-official) · 10k in / 12 out · $0.0085 · ctx 1.0% (10k/1M)"
    );
    // No price for the model used: nothing is shown, not a guess.
    let other = Prices {
        by_model: [(
            "deepseek-v4-pro".to_owned(),
            priced.by_model["deepseek-v4-flash"],
        )]
        .into(),
        ..priced.clone()
    };
    for prices in [&other, &Prices::default()] {
        assert_eq!(
            StatusLine::new(&transcript).prices(prices).text(),
            "idle · deepseek-v4-flash (deepseek-official) · 10k in / 12 out · ctx 1.0% (10k/1M)"
        );
    }
}
