//! The hand-written readers against the derived ones they replace.
//!
//! `Ref*` are the enums as they were, with `#[derive(Deserialize)]`: for every input the new
//! reader must give the same value (compared by `Debug`, which also tells `Other` from a
//! typed variant) or fail where the derived one fails, both from JSON text and from a
//! `serde_json::Value` (the general log reader's input).

use crate::{ContentBlock, FinishReason, LlmFailure, MessageSource, StreamChunk, TokenUsage};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::fmt::Debug;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum RefStreamChunk {
    #[serde(rename_all = "camelCase")]
    BlockStart {
        index: u32,
        block_type: crate::BlockType,
    },
    TextDelta {
        index: u32,
        text: String,
    },
    ReasoningDelta {
        index: u32,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallDelta {
        index: u32,
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments_delta: String,
    },
    BlockEnd {
        index: u32,
        block: RefContentBlock,
    },
    Usage {
        usage: TokenUsage,
    },
    #[serde(rename_all = "camelCase")]
    Finish {
        reason: RefFinishReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay_state: Option<Value>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum RefFinishReason {
    Stop,
    ToolCalls,
    MaxTokens,
    Aborted { failure: LlmFailure },
    Error { failure: LlmFailure },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum RefContentBlock {
    Text {
        text: String,
    },
    Reasoning {
        text: String,
    },
    Image {
        attachment: Value,
    },
    ToolCall {
        id: crate::CallId,
        name: String,
        arguments: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: crate::CallId,
        content: Vec<RefContentBlock>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    #[serde(untagged)]
    Other(Map<String, Value>),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum RefMessageSource {
    User {
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Plugin {
        plugin: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Model {
        provider: String,
        model: String,
        #[serde(
            rename = "replayState",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        replay_state: Option<Value>,
    },
    Tool {
        #[serde(rename = "callId")]
        call_id: crate::CallId,
    },
    #[serde(untagged)]
    Other(Map<String, Value>),
}

/// Both readers on `text` and on its `Value`: the same value, or both an error.
fn agree<Mine, Ref>(text: &str)
where
    Mine: DeserializeOwned + Debug,
    Ref: DeserializeOwned + Debug,
{
    fn same<M: Debug, R: Debug, E1: Debug, E2: Debug>(
        input: &str,
        mine: Result<M, E1>,
        reference: Result<R, E2>,
    ) {
        match (mine, reference) {
            (Ok(m), Ok(r)) => assert_eq!(format!("{m:?}"), format!("{r:?}"), "{input}"),
            (Err(_), Err(_)) => {}
            (m, r) => panic!("{input}: new {m:?}, derived {r:?}"),
        }
    }
    same(
        text,
        serde_json::from_str::<Mine>(text),
        serde_json::from_str::<Ref>(text),
    );
    let value: Value = serde_json::from_str(text).unwrap();
    same(
        &format!("{text} (as a Value)"),
        Mine::deserialize(&value),
        Ref::deserialize(&value),
    );
}

fn parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

// ---- StreamChunk -------------------------------------------------------------------------

#[test]
fn chunks_read_with_the_tag_first_or_last() {
    let first: StreamChunk = parse(
        r#"{"type":"tool-call-delta","index":2,"id":"c","name":"bash","argumentsDelta":"{"}"#,
    )
    .unwrap();
    let last: StreamChunk = parse(
        r#"{"index":2,"id":"c","name":"bash","argumentsDelta":"{","type":"tool-call-delta"}"#,
    )
    .unwrap();
    assert_eq!(first, last);
    assert_eq!(
        first,
        StreamChunk::ToolCallDelta {
            index: 2,
            id: "c".into(),
            name: Some("bash".into()),
            arguments_delta: "{".into()
        }
    );
}

#[test]
fn chunks_ignore_unknown_fields_and_refuse_unknown_tags() {
    let chunk: StreamChunk =
        parse(r#"{"type":"text-delta","future":{"x":[1]},"index":0,"text":"hi","blockType":5}"#)
            .unwrap();
    assert_eq!(
        chunk,
        StreamChunk::TextDelta {
            index: 0,
            text: "hi".into()
        }
    );
    let err = parse::<StreamChunk>(r#"{"type":"hologram","index":0}"#).unwrap_err();
    assert!(err.contains("unknown variant `hologram`"), "{err}");
    let err = parse::<StreamChunk>(r#"{"index":0,"type":"hologram"}"#).unwrap_err();
    assert!(err.contains("unknown variant `hologram`"), "{err}");
    let err = parse::<StreamChunk>(r#"{"index":0}"#).unwrap_err();
    assert!(err.contains("missing field `type`"), "{err}");
}

#[test]
fn chunks_with_wrong_types_fail_clearly() {
    for (text, expected) in [
        (
            r#"{"type":"text-delta","index":"0","text":"a"}"#,
            "invalid type: string \"0\", expected u32",
        ),
        (r#"{"type":"text-delta","index":0}"#, "missing field `text`"),
        (
            r#"{"type":"text-delta","index":0,"text":"a","text":"b"}"#,
            "duplicate field `text`",
        ),
        (
            r#"{"type":"usage","type":"usage","usage":{"inputTokens":1,"outputTokens":1}}"#,
            "duplicate field `type`",
        ),
        (
            r#"{"type":"finish","reason":{"kind":"stop","kind":"stop"}}"#,
            "duplicate field `kind`",
        ),
        (
            r#"{"type":"finish","reason":{"kind":"error"}}"#,
            "missing field `failure`",
        ),
        (r#"["text-delta"]"#, "invalid length 0"),
        (
            r#""text-delta""#,
            "expected internally tagged enum StreamChunk",
        ),
    ] {
        let err = parse::<StreamChunk>(text).unwrap_err();
        assert!(err.contains(expected), "{text}: {err}");
        agree::<StreamChunk, RefStreamChunk>(text);
    }
}

#[test]
fn chunk_index_is_ignored_where_the_variant_has_none() {
    let chunk: StreamChunk = parse(
        r#"{"type":"usage","index":"x","index":1,"usage":{"inputTokens":1,"outputTokens":2}}"#,
    )
    .unwrap();
    assert!(matches!(chunk, StreamChunk::Usage { .. }));
}

#[test]
fn chunks_round_trip_through_the_derived_serializer() {
    for raw in [
        json!({"type":"block-start","index":2,"blockType":"tool-call"}),
        json!({"type":"text-delta","index":0,"text":"h\u{e9}\"llo\n"}),
        json!({"type":"reasoning-delta","index":1,"text":"t"}),
        json!({"type":"tool-call-delta","index":2,"id":"call_0","argumentsDelta":"{\"c"}),
        json!({"type":"block-end","index":0,"block":{"type":"tool-call","id":"c","name":"read","arguments":"{}"}}),
        json!({"type":"usage","usage":{"inputTokens":8005,"outputTokens":36,"cacheReadTokens":0}}),
        json!({"type":"finish","reason":{"kind":"aborted","failure":{"message":"m","code":"ABORTED"}},"replayState":{"a":[1,2.5]}}),
    ] {
        let text = serde_json::to_string(&raw).unwrap();
        let chunk: StreamChunk = parse(&text).unwrap();
        assert_eq!(serde_json::to_string(&chunk).unwrap(), text);
        agree::<StreamChunk, RefStreamChunk>(&text);
    }
}

#[test]
fn the_array_form_reads_as_before() {
    for text in [
        r#"["text-delta", 3, "hi"]"#,
        r#"["finish", {"kind": "stop"}]"#,
        r#"["finish", ["tool-calls"]]"#,
    ] {
        let _: StreamChunk = parse(text).unwrap();
        agree::<StreamChunk, RefStreamChunk>(text);
    }
    let block: ContentBlock = parse(r#"["text", "hi"]"#).unwrap();
    assert_eq!(block, ContentBlock::text("hi"));
    agree::<ContentBlock, RefContentBlock>(r#"["text", "hi"]"#);
    agree::<ContentBlock, RefContentBlock>(r#"["text"]"#);
    agree::<MessageSource, RefMessageSource>(r#"["tool", "c"]"#);
    agree::<MessageSource, RefMessageSource>(r#"["user"]"#);
}

#[test]
fn integer_tags_read_as_before() {
    // serde takes a variant index only from inputs that hand identifiers over as numbers:
    // its own buffer (which the catch-all unions always went through), not JSON text or a
    // `serde_json::Value`.
    for text in [
        r#"{"type":1,"index":0,"text":"a"}"#,
        r#"{"index":0,"type":1}"#,
    ] {
        assert!(parse::<StreamChunk>(text).is_err());
        agree::<StreamChunk, RefStreamChunk>(text);
    }
    let block: ContentBlock = parse(r#"{"type":0,"text":"a"}"#).unwrap();
    assert_eq!(block, ContentBlock::text("a"));
    for text in [
        r#"{"type":0,"text":"a"}"#,
        r#"{"type":9,"text":"a"}"#,
        r#"{"type":-1}"#,
    ] {
        agree::<ContentBlock, RefContentBlock>(text);
    }
    agree::<MessageSource, RefMessageSource>(r#"{"kind":0}"#);
    agree::<MessageSource, RefMessageSource>(r#"{"kind":3,"callId":"c"}"#);
}

// ---- FinishReason ------------------------------------------------------------------------

#[test]
fn finish_reasons_read_in_any_order() {
    for text in [
        r#"{"kind":"stop"}"#,
        r#"{"kind":"tool-calls","note":1}"#,
        r#"{"failure":{"message":"m","code":"SERVER","status":500},"kind":"error"}"#,
        r#"{"kind":"aborted","failure":{"message":"m","code":"ABORTED"},"extra":[]}"#,
        r#"{"kind":"later"}"#,
        r#"{"note":1,"kind":"later"}"#,
        r#"{"kind":"error","failure":{"message":1,"code":"X"}}"#,
        r#"{}"#,
    ] {
        agree::<FinishReason, RefFinishReason>(text);
    }
    let reason: FinishReason =
        parse(r#"{"failure":{"message":"m","code":"SERVER"},"kind":"error"}"#).unwrap();
    assert_eq!(reason.failure().map(|f| f.code.as_str()), Some("SERVER"));
    let err = parse::<FinishReason>(r#"{"kind":"later"}"#).unwrap_err();
    assert!(err.contains("unknown variant `later`"), "{err}");
}

// ---- ContentBlock ------------------------------------------------------------------------

#[test]
fn blocks_read_with_the_tag_anywhere_and_keep_unknown_ones() {
    let first: ContentBlock =
        parse(r#"{"type":"tool-call","id":"c","name":"read","arguments":"{}","extra":1}"#).unwrap();
    let last: ContentBlock =
        parse(r#"{"arguments":"{}","name":"read","id":"c","type":"tool-call"}"#).unwrap();
    assert_eq!(first, last);
    assert!(matches!(first, ContentBlock::ToolCall { .. }));
    let raw = json!({"type":"audio","clip":"a.wav","dur":1.5});
    let block: ContentBlock = parse(&raw.to_string()).unwrap();
    assert!(matches!(block, ContentBlock::Other(_)));
    assert_eq!(serde_json::to_value(&block).unwrap(), raw);
}

#[test]
fn blocks_that_fail_their_variant_are_kept_whole() {
    for (text, typed) in [
        (r#"{"type":"text","text":5}"#, false),
        (r#"{"type":"text","text":"a","text":"b"}"#, false),
        (r#"{"type":"text","type":"text","text":"a"}"#, false),
        (r#"{"type":"text","note":1,"note":2,"text":"a"}"#, true),
        (
            r#"{"type":"tool-result","toolCallId":"c","content":["x"]}"#,
            false,
        ),
        (
            r#"{"type":"tool-result","toolCallId":"c","content":[{"type":"text"}],"isError":null}"#,
            true,
        ),
        (
            r#"{"type":"tool-result","toolCallId":"c","content":[["text","hi"]]}"#,
            true,
        ),
        (
            r#"{"type":"tool-result","toolCallId":"c","content":[],"isError":"yes"}"#,
            false,
        ),
        (r#"{"type":"image"}"#, false),
        (r#"{"type":"image","attachment":null}"#, true),
        (r#"{"type":null}"#, false),
        (r#"{}"#, false),
    ] {
        let block: ContentBlock = parse(text).unwrap();
        assert_eq!(!matches!(block, ContentBlock::Other(_)), typed, "{text}");
        agree::<ContentBlock, RefContentBlock>(text);
    }
    for text in [r#""text""#, "5", "null", r#"[1]"#] {
        let err = parse::<ContentBlock>(text).unwrap_err();
        assert!(!err.is_empty());
        agree::<ContentBlock, RefContentBlock>(text);
    }
}

#[test]
fn blocks_round_trip_through_the_derived_serializer() {
    for raw in [
        json!({"type":"text","text":"a"}),
        json!({"type":"reasoning","text":"r"}),
        json!({"type":"image","attachment":{"id":"x","mime":"image/png"}}),
        json!({"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"1\tx"},{"type":"later","v":[null]}],"isError":false}),
    ] {
        let text = raw.to_string();
        let block: ContentBlock = parse(&text).unwrap();
        assert_eq!(serde_json::to_string(&block).unwrap(), text);
    }
}

// ---- MessageSource -----------------------------------------------------------------------

#[test]
fn sources_read_with_the_tag_anywhere_and_keep_extras() {
    for text in [
        r#"{"kind":"user"}"#,
        r#"{"via":"tui","kind":"user","at":[1]}"#,
        r#"{"kind":"plugin","plugin":"p","form":"snapshot","sections":[]}"#,
        r#"{"form":"x","plugin":"p","kind":"plugin"}"#,
        r#"{"kind":"plugin","plugin":5}"#,
        r#"{"kind":"plugin","plugin":"p","plugin":"q"}"#,
        r#"{"kind":"model","provider":"p","model":"m","replayState":{"r":1},"x":1}"#,
        r#"{"kind":"model","provider":"p","model":"m","replayState":null}"#,
        r#"{"kind":"model","provider":"p"}"#,
        r#"{"kind":"tool","callId":"c"}"#,
        r#"{"callId":7,"kind":"tool"}"#,
        r#"{"kind":"hook","hook":"SessionStart"}"#,
        r#"{"kind":"user","kind":"user"}"#,
        r#"{}"#,
        r#""user""#,
    ] {
        agree::<MessageSource, RefMessageSource>(text);
    }
    let source: MessageSource = parse(r#"{"form":"x","plugin":"p","kind":"plugin"}"#).unwrap();
    assert!(matches!(&source, MessageSource::Plugin { plugin, extra }
        if plugin == "p" && extra.len() == 1));
    let raw = json!({"kind":"plugin","plugin":"p","form":"snapshot","sections":[{"name":"a"}]});
    let source: MessageSource = parse(&raw.to_string()).unwrap();
    assert_eq!(serde_json::to_string(&source).unwrap(), raw.to_string());
}

// ---- generated inputs --------------------------------------------------------------------

/// An object of some of `fields` (each with one of its candidate JSON texts), in any order,
/// with perhaps one entry repeated.
fn object(fields: &'static [(&'static str, &'static [&'static str])]) -> BoxedStrategy<String> {
    let entries: Vec<_> = fields
        .iter()
        .map(|(key, values)| {
            proptest::option::weighted(0.7, proptest::sample::select(*values))
                .prop_map(move |v| v.map(|v| format!("\"{key}\":{v}")))
        })
        .collect();
    (
        entries,
        proptest::option::of(any::<proptest::sample::Index>()),
    )
        .prop_flat_map(|(entries, repeat)| {
            let mut entries: Vec<String> = entries.into_iter().flatten().collect();
            if let (Some(i), false) = (repeat, entries.is_empty()) {
                let again = entries[i.index(entries.len())].clone();
                entries.push(again);
            }
            Just(entries).prop_shuffle()
        })
        .prop_map(|entries| format!("{{{}}}", entries.join(",")))
        .boxed()
}

const BLOCKS: &[&str] = &[
    r#"{"type":"text","text":"a"}"#,
    r#"{"text":"a","type":"text"}"#,
    r#"{"type":"tool-call","id":"c","name":"n","arguments":"{}"}"#,
    r#"{"type":"later","x":1}"#,
    r#"{"type":"text","text":1}"#,
    r#"["text","a"]"#,
    r#""text""#,
    "null",
];

const FAILURES: &[&str] = &[
    r#"{"message":"m","code":"C"}"#,
    r#"{"code":"C","message":"m","status":500,"x":1}"#,
    r#"{"message":1,"code":"C"}"#,
    "null",
];

proptest! {
    #[test]
    fn generated_chunks_read_as_derived(text in object(&[
        ("type", &[r#""block-start""#, r#""text-delta""#, r#""reasoning-delta""#,
            r#""tool-call-delta""#, r#""block-end""#, r#""usage""#, r#""finish""#,
            r#""hologram""#, "null", "1"]),
        ("index", &["0", "7", "-1", r#""1""#, "4294967296", "null"]),
        ("blockType", &[r#""text""#, r#""hologram""#, "3"]),
        ("text", &[r#""a""#, r#""\u00e9\n""#, "5", "null"]),
        ("id", &[r#""c""#, "1"]),
        ("name", &[r#""n""#, "null", "2"]),
        ("argumentsDelta", &[r#""{""#, "[]"]),
        ("block", BLOCKS),
        ("usage", &[r#"{"inputTokens":1,"outputTokens":2}"#, "{}", "3"]),
        ("reason", &[r#"{"kind":"stop"}"#, r#"{"failure":{"message":"m","code":"C"},"kind":"error"}"#,
            r#"{"kind":"aborted"}"#, r#"{"kind":"later"}"#, r#""stop""#]),
        ("replayState", &["null", r#"{"a":[1,2.5]}"#, "[1]"]),
        ("future", &["1", r#"{"type":"x"}"#]),
    ])) {
        agree::<StreamChunk, RefStreamChunk>(&text);
    }

    #[test]
    fn generated_finish_reasons_read_as_derived(text in object(&[
        ("kind", &[r#""stop""#, r#""tool-calls""#, r#""max-tokens""#, r#""aborted""#,
            r#""error""#, r#""later""#, "1.5"]),
        ("failure", FAILURES),
        ("note", &["1", "null"]),
    ])) {
        agree::<FinishReason, RefFinishReason>(&text);
    }

    #[test]
    fn generated_blocks_read_as_derived(text in object(&[
        ("type", &[r#""text""#, r#""reasoning""#, r#""image""#, r#""tool-call""#,
            r#""tool-result""#, r#""audio""#, "null", "true", "0", "4", "9"]),
        ("text", &[r#""a""#, "5", "null"]),
        ("attachment", &["null", r#"{"id":"x"}"#]),
        ("id", &[r#""c""#, "1"]),
        ("name", &[r#""n""#, "[]"]),
        ("arguments", &[r#""{}""#, "{}"]),
        ("toolCallId", &[r#""c""#, "false"]),
        ("content", &["[]", r#"[{"type":"text","text":"a"},{"type":"later"}]"#,
            r#"[{"text":"a","type":"text","x":1}]"#, r#"[["text","a"]]"#, r#"["x"]"#, "{}", "null"]),
        ("isError", &["true", "null", r#""no""#]),
        ("extra", &["1", r#"{"k":[1,{"z":null}]}"#]),
    ])) {
        agree::<ContentBlock, RefContentBlock>(&text);
    }

    #[test]
    fn generated_sources_read_as_derived(text in object(&[
        ("kind", &[r#""user""#, r#""plugin""#, r#""model""#, r#""tool""#, r#""hook""#, "null", "1", "3"]),
        ("plugin", &[r#""p""#, "1"]),
        ("provider", &[r#""p""#, "null"]),
        ("model", &[r#""m""#, "{}"]),
        ("replayState", &["null", r#"{"r":1}"#]),
        ("callId", &[r#""c""#, "2"]),
        ("form", &[r#""snapshot""#, r#"[1,2]"#]),
    ])) {
        agree::<MessageSource, RefMessageSource>(&text);
    }
}
