use super::*;
use dsh_protocol::LlmFailure;
use serde_json::json;

fn chunk(value: Value) -> StreamChunk {
    serde_json::from_value(value).unwrap()
}

fn feed(chunks: &[Value]) -> BlockAssembler {
    let mut assembler = BlockAssembler::new();
    for value in chunks {
        assembler.push(&chunk(value.clone()));
    }
    assembler
}

fn blocks_json(assembler: &BlockAssembler) -> Value {
    serde_json::to_value(assembler.blocks().unwrap()).unwrap()
}

#[test]
fn interleaved_deltas_assemble_in_first_seen_order() {
    let assembler = feed(&[
        json!({"type":"block-start","index":1,"blockType":"text"}),
        json!({"type":"block-start","index":0,"blockType":"reasoning"}),
        json!({"type":"reasoning-delta","index":0,"text":"think "}),
        json!({"type":"text-delta","index":1,"text":"Hel"}),
        json!({"type":"reasoning-delta","index":0,"text":"more"}),
        json!({"type":"tool-call-delta","index":2,"id":"","argumentsDelta":"{\"a\""}),
        json!({"type":"text-delta","index":1,"text":"lo"}),
        json!({"type":"tool-call-delta","index":2,"id":"c1","name":"bash","argumentsDelta":":1}"}),
    ]);
    assert_eq!(
        blocks_json(&assembler),
        json!([
            {"type":"text","text":"Hello"},
            {"type":"reasoning","text":"think more"},
            {"type":"tool-call","id":"c1","name":"bash","arguments":"{\"a\":1}"},
        ])
    );
    assert_eq!(assembler.finish(), FinishReason::Stop);
    assert!(!assembler.has_finished());
}

#[test]
fn duplicate_start_is_ignored_and_keeps_text() {
    let assembler = feed(&[
        json!({"type":"block-start","index":0,"blockType":"text"}),
        json!({"type":"text-delta","index":0,"text":"a"}),
        json!({"type":"block-start","index":0,"blockType":"reasoning"}),
        json!({"type":"text-delta","index":0,"text":"b"}),
    ]);
    assert_eq!(
        blocks_json(&assembler),
        json!([{"type":"text","text":"ab"}])
    );
}

#[test]
fn first_block_end_wins_and_late_deltas_are_ignored() {
    let assembler = feed(&[
        json!({"type":"text-delta","index":0,"text":"draft"}),
        json!({"type":"block-end","index":0,"block":{"type":"text","text":"final"}}),
        json!({"type":"text-delta","index":0,"text":" late"}),
        json!({"type":"block-end","index":0,"block":{"type":"text","text":"second"}}),
        json!({"type":"tool-call-delta","index":1,"id":"x","name":"n","argumentsDelta":"{}"}),
        json!({"type":"block-end","index":1,"block":{"type":"tool-call","id":"x","name":"n","arguments":"{}"}}),
        json!({"type":"tool-call-delta","index":1,"id":"y","name":"m","argumentsDelta":"junk"}),
    ]);
    assert_eq!(
        blocks_json(&assembler),
        json!([
            {"type":"text","text":"final"},
            {"type":"tool-call","id":"x","name":"n","arguments":"{}"},
        ])
    );
}

#[test]
fn open_tool_call_without_id_or_name_gets_placeholders() {
    let assembler = feed(&[
        json!({"type":"block-start","index":3,"blockType":"tool-call"}),
        json!({"type":"tool-call-delta","index":3,"id":"","argumentsDelta":"{}"}),
    ]);
    assert_eq!(
        blocks_json(&assembler),
        json!([{"type":"tool-call","id":"call-3","name":"","arguments":"{}"}])
    );
}

#[test]
fn tool_call_id_is_latest_and_name_only_when_given() {
    let assembler = feed(&[
        json!({"type":"tool-call-delta","index":0,"id":"a","name":"first","argumentsDelta":"1"}),
        json!({"type":"tool-call-delta","index":0,"id":"b","argumentsDelta":"2"}),
        json!({"type":"tool-call-delta","index":0,"id":"","argumentsDelta":"3"}),
    ]);
    assert_eq!(
        blocks_json(&assembler),
        json!([{"type":"tool-call","id":"b","name":"first","arguments":"123"}])
    );
}

#[test]
fn open_unknown_block_type_is_an_error_but_closed_one_is_kept() {
    let open = feed(&[json!({"type":"block-start","index":0,"blockType":"hologram"})]);
    assert_eq!(
        open.blocks(),
        Err(AssembleError::UnclosedUnknownBlock {
            index: 0,
            block_type: BlockType::Other("hologram".into())
        })
    );
    let closed = feed(&[
        json!({"type":"block-start","index":0,"blockType":"hologram"}),
        json!({"type":"block-end","index":0,"block":{"type":"hologram","beam":1}}),
    ]);
    assert_eq!(blocks_json(&closed), json!([{"type":"hologram","beam":1}]));
}

#[test]
fn max_tokens_drops_tool_calls_and_prunes_replay_entries() {
    let assembler = feed(&[
        json!({"type":"text-delta","index":0,"text":"partial answer"}),
        json!({"type":"tool-call-delta","index":1,"id":"c","name":"bash","argumentsDelta":"{\"cmd"}),
        json!({"type":"reasoning-delta","index":2,"text":"r"}),
        json!({"type":"finish","reason":{"kind":"max-tokens"},
               "replayState":{"response":"resp-1","blocks":["t","c","r"]}}),
    ]);
    let assembled = assembler.assemble().unwrap();
    assert_eq!(
        serde_json::to_value(&assembled.blocks).unwrap(),
        json!([{"type":"text","text":"partial answer"},{"type":"reasoning","text":"r"}])
    );
    assert_eq!(
        assembled.replay_state,
        Some(json!({"response":"resp-1","blocks":["t","r"]}))
    );
    assert_eq!(assembler.finish(), FinishReason::MaxTokens);
}

#[test]
fn mismatched_replay_entries_are_discarded() {
    let assembler = feed(&[
        json!({"type":"text-delta","index":0,"text":"a"}),
        json!({"type":"finish","reason":{"kind":"stop"},
               "replayState":{"response":"r","blocks":["x","y"]}}),
    ]);
    assert_eq!(
        assembler.assemble().unwrap().replay_state,
        Some(json!({"response":"r"}))
    );
}

#[test]
fn usage_keeps_latest_and_finish_sets_reason() {
    let failure = LlmFailure::new("SERVER", "boom");
    let mut assembler = feed(&[
        json!({"type":"usage","usage":{"inputTokens":1,"outputTokens":2}}),
        json!({"type":"usage","usage":{"inputTokens":3,"outputTokens":4,"reasoningTokens":1}}),
    ]);
    assembler.push(&StreamChunk::error(failure.clone()));
    assert_eq!(
        assembler.usage(),
        Some(TokenUsage {
            input_tokens: 3,
            output_tokens: 4,
            reasoning_tokens: Some(1),
            ..TokenUsage::default()
        })
    );
    assert_eq!(assembler.finish(), FinishReason::error(failure));
}

#[test]
fn interrupted_blocks_keep_only_visible_text_and_reasoning() {
    let assembler = feed(&[
        json!({"type":"reasoning-delta","index":0,"text":"  \n"}),
        json!({"type":"text-delta","index":1,"text":"visible"}),
        json!({"type":"tool-call-delta","index":2,"id":"c","name":"bash","argumentsDelta":"{}"}),
        json!({"type":"block-end","index":2,"block":{"type":"tool-call","id":"c","name":"bash","arguments":"{}"}}),
        json!({"type":"block-end","index":3,"block":{"type":"reasoning","text":"closed thought"}}),
        json!({"type":"block-start","index":4,"blockType":"hologram"}),
    ]);
    assert_eq!(
        serde_json::to_value(assembler.interrupted_blocks()).unwrap(),
        json!([
            {"type":"text","text":"visible"},
            {"type":"reasoning","text":"closed thought"},
        ])
    );
}

#[test]
fn fixture_stream_assembles_to_the_logged_message() {
    // From the parallel-tools fixture: reasoning, text, two tool calls, block-ends at the end.
    let assembler = feed(&[
        json!({"type":"block-start","index":0,"blockType":"reasoning"}),
        json!({"type":"reasoning-delta","index":0,"text":"I can read both files at once."}),
        json!({"type":"block-start","index":1,"blockType":"text"}),
        json!({"type":"text-delta","index":1,"text":"Reading both files."}),
        json!({"type":"block-start","index":2,"blockType":"tool-call"}),
        json!({"type":"tool-call-delta","index":2,"id":"call_0","name":"read","argumentsDelta":"{\"file_path\":"}),
        json!({"type":"tool-call-delta","index":2,"id":"call_0","name":"read","argumentsDelta":" \"README.md\"}"}),
        json!({"type":"block-end","index":0,"block":{"type":"reasoning","text":"I can read both files at once."}}),
        json!({"type":"block-end","index":1,"block":{"type":"text","text":"Reading both files."}}),
        json!({"type":"block-end","index":2,"block":{"type":"tool-call","id":"call_0","name":"read","arguments":"{\"file_path\": \"README.md\"}"}}),
        json!({"type":"usage","usage":{"inputTokens":8007,"outputTokens":24,"cacheReadTokens":0,"reasoningTokens":7}}),
        json!({"type":"finish","reason":{"kind":"tool-calls"}}),
    ]);
    assert_eq!(
        blocks_json(&assembler),
        json!([
            {"type":"reasoning","text":"I can read both files at once."},
            {"type":"text","text":"Reading both files."},
            {"type":"tool-call","id":"call_0","name":"read","arguments":"{\"file_path\": \"README.md\"}"},
        ])
    );
    assert_eq!(assembler.finish(), FinishReason::ToolCalls);
}
