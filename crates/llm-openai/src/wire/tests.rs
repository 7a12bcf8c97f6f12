use super::*;
use dsh_protocol::{CallId, LlmCallConfig, MessageSource, ToolSchema};
use std::sync::Arc;

fn deepseek_request(messages: Vec<Message>) -> LlmRequest {
    LlmRequest::new(
        LlmCallConfig {
            provider: "deepseek-official".into(),
            model: "deepseek-v4-flash".into(),
            reasoning_effort: Some("high".into()),
            max_tokens: Some(256_000),
            ..LlmCallConfig::default()
        },
        messages.into_iter().map(Arc::new).collect(),
    )
}

fn assistant(content: Vec<ContentBlock>) -> Message {
    Message::assistant(
        content,
        MessageSource::model("deepseek-official", "deepseek-v4-flash"),
    )
}

#[test]
fn full_conversation_maps_to_the_wire_shape() {
    let mut request = deepseek_request(vec![
        Message::user_text("list files"),
        assistant(vec![
            ContentBlock::Reasoning {
                text: "use ".into(),
            },
            ContentBlock::Reasoning {
                text: "bash".into(),
            },
            ContentBlock::ToolCall {
                id: CallId::from("call_1"),
                name: "bash".into(),
                arguments: "{\"command\":\"ls\"}".into(),
            },
            ContentBlock::ToolCall {
                id: CallId::from("call_2"),
                name: "read".into(),
                arguments: "{}".into(),
            },
        ]),
        Message::tool_result(
            CallId::from("call_1"),
            vec![ContentBlock::text("a\nb")],
            false,
        ),
        Message::tool_result(CallId::from("call_2"), vec![], true),
        assistant(vec![
            ContentBlock::text("Two "),
            ContentBlock::text("files."),
        ]),
        Message::new(
            Role::System,
            vec![ContentBlock::text("sys "), ContentBlock::text("note")],
            MessageSource::plugin("p"),
        ),
    ]);
    request.system = Some("You are dsh.".into());
    request.tools = Some(vec![ToolSchema {
        name: "bash".into(),
        description: "Run a command".into(),
        parameters: json!({"type":"object","properties":{"command":{"type":"string"}}}).into(),
    }]);
    request.config.temperature = Some(0.5);
    request.config.stop = Some(vec!["END".into()]);
    let body = request_body(&request, &RouteConfig::deepseek()).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "deepseek-v4-flash",
            "messages": [
                {"role":"system","content":"You are dsh."},
                {"role":"user","content":"list files"},
                {"role":"assistant","content":"","reasoning_content":"use bash","tool_calls":[
                    {"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
                    {"id":"call_2","type":"function","function":{"name":"read","arguments":"{}"}}]},
                {"role":"tool","tool_call_id":"call_1","content":"a\nb"},
                {"role":"tool","tool_call_id":"call_2","content":"(no output)"},
                {"role":"assistant","content":"Two files."},
                {"role":"system","content":"sys note"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "thinking": {"type":"enabled"},
            "reasoning_effort": "high",
            "tools": [{"type":"function","function":{"name":"bash","description":"Run a command",
                "parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}],
            "temperature": 0.5,
            "max_tokens": 256000,
            "stop": ["END"],
        })
    );
}

/// The encoder the adapter uses reuses the encoded `tools` array of a list it has sent, and
/// only of the very same shared schemas: every body is byte for byte what `request_bytes`
/// writes, through hits, a schema whose text changed behind an equal name, a copy with the
/// same text, and more lists than it remembers.
#[test]
fn the_encoder_writes_what_request_bytes_writes_whatever_it_remembers() {
    let route = RouteConfig::deepseek();
    let images = RequestImages::default();
    let encoder = RequestEncoder::default();
    let schema = |name: &str, description: &str| {
        ToolSchema::new(
            name,
            description,
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        )
    };
    let mut request = deepseek_request(vec![Message::user_text("go")]);
    let check = |request: &LlmRequest| {
        let expected = request_bytes(request, &route, &images).unwrap();
        let encoded = encoder.encode(request, &route, &images).unwrap();
        assert_eq!(
            String::from_utf8(encoded).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    };
    let first = vec![schema("read", "Reads."), schema("write", "Writes.")];
    request.tools = Some(first.clone());
    check(&request);
    check(&request); // remembered
                     // The same name with a new description, then new parameters, the rest shared: not the
                     // remembered list.
    let described = ToolSchema {
        description: "Writes files.".into(),
        ..first[1].clone()
    };
    request.tools = Some(vec![first[0].clone(), described]);
    check(&request);
    let parameterized = ToolSchema {
        parameters: Arc::new(json!({"type": "object"})),
        ..first[1].clone()
    };
    request.tools = Some(vec![first[0].clone(), parameterized]);
    check(&request);
    // Equal text in new allocations: encoded afresh, and still right.
    request.tools = Some(vec![schema("read", "Reads."), schema("write", "Writes.")]);
    check(&request);
    // More lists than are remembered, then the first again.
    for n in 0..(REMEMBERED_TOOL_LISTS + 2) {
        request.tools = Some(vec![schema(&format!("tool_{n}"), "A tool.")]);
        check(&request);
    }
    request.tools = Some(first);
    check(&request);
    request.tools = None;
    check(&request);
}

/// The adapter sends `request_bytes`, which serializes the tool schemas from the request's
/// shared values instead of building them into the body value: the bytes must be exactly
/// the body's JSON text, key order included (a snapshot of the whole request).
#[test]
fn request_bytes_are_the_whole_body_text() {
    let mut request = deepseek_request(vec![
        Message::user_text("read a.md"),
        assistant(vec![ContentBlock::ToolCall {
            id: CallId::from("call_1"),
            name: "read".into(),
            arguments: "{\"file_path\":\"a.md\"}".into(),
        }]),
        Message::tool_result(
            CallId::from("call_1"),
            vec![ContentBlock::text("A.")],
            false,
        ),
    ]);
    request.system = Some("You are dsh.".into());
    let parameters = Arc::new(json!({"type": "object", "properties": {
        "file_path": {"type": "string", "description": "Absolute path"},
        "limit": {"type": "integer", "minimum": 1, "default": 2000},
        "ratio": {"type": "number", "default": -0.0}}, "required": ["file_path"]}));
    request.tools = Some(vec![
        ToolSchema::new(
            "read",
            "Reads a file.\nLine two \"quoted\".",
            parameters.clone(),
        ),
        ToolSchema::new("noop", "", json!({"type": "object", "properties": {}})),
    ]);
    request.config.temperature = Some(0.5);
    let route = RouteConfig::deepseek();
    let bytes = request_bytes(&request, &route, &RequestImages::default()).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let via_value = serde_json::to_string(&request_body(&request, &route).unwrap()).unwrap();
    assert_eq!(text, via_value);
    assert_eq!(
        text,
        concat!(
            r#"{"model":"deepseek-v4-flash","messages":["#,
            r#"{"role":"system","content":"You are dsh."},"#,
            r#"{"role":"user","content":"read a.md"},"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"file_path\":\"a.md\"}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"A."}],"#,
            r#""stream":true,"stream_options":{"include_usage":true},"thinking":{"type":"enabled"},"reasoning_effort":"high","#,
            r#""tools":[{"type":"function","function":{"name":"read","description":"Reads a file.\nLine two \"quoted\".","#,
            r#""parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path"},"#,
            r#""limit":{"type":"integer","minimum":1,"default":2000},"ratio":{"type":"number","default":-0.0}},"required":["file_path"]}}},"#,
            r#"{"type":"function","function":{"name":"noop","description":"","parameters":{"type":"object","properties":{}}}}],"#,
            r#""temperature":0.5,"max_tokens":256000}"#,
        )
    );
    // The request still holds the one shared copy of the schema.
    assert!(Arc::ptr_eq(
        &request.tools.as_ref().unwrap()[0].parameters,
        &parameters
    ));
}

#[test]
fn user_message_with_text_and_tool_results_keeps_both() {
    let mixed = Message::new(
        Role::User,
        vec![
            ContentBlock::text("note"),
            ContentBlock::ToolResult {
                tool_call_id: CallId::from("c"),
                content: vec![ContentBlock::text("out")],
                is_error: None,
            },
        ],
        MessageSource::user(),
    );
    let empty_user = Message::new(Role::User, vec![], MessageSource::user());
    let body = request_body(
        &deepseek_request(vec![mixed, empty_user]),
        &RouteConfig::deepseek(),
    )
    .unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role":"user","content":"note"},
            {"role":"tool","tool_call_id":"c","content":"out"},
            {"role":"user","content":""},
        ])
    );
}

#[test]
fn effort_off_disables_thinking_and_defaults_apply() {
    let route = RouteConfig::deepseek();
    let mut request = deepseek_request(vec![Message::user_text("hi")]);
    request.config.reasoning_effort = Some("off".into());
    let body = request_body(&request, &route).unwrap();
    assert_eq!(body["thinking"], json!({"type":"disabled"}));
    assert_eq!(body.get("reasoning_effort"), None);

    // No effort in the request: the catalog default (high) applies.
    request.config.reasoning_effort = None;
    let body = request_body(&request, &route).unwrap();
    assert_eq!(body["thinking"], json!({"type":"enabled"}));
    assert_eq!(body["reasoning_effort"], json!("high"));

    // Thinking disabled deployment: effort defaults to off; any other effort is refused.
    let disabled = RouteConfig {
        thinking: Some(Thinking::Disabled),
        ..RouteConfig::deepseek()
    };
    let body = request_body(&request, &disabled).unwrap();
    assert_eq!(body["thinking"], json!({"type":"disabled"}));
    request.config.reasoning_effort = Some("max".into());
    let err = request_body(&request, &disabled).unwrap_err();
    assert_eq!(err.code(), codes::UNSUPPORTED_REASONING_EFFORT);
}

#[test]
fn openai_compat_route_uses_its_switches() {
    let mut route = RouteConfig::openai_compatible();
    route.compat.max_tokens_field = MaxTokensField::MaxCompletionTokens;
    let mut request = LlmRequest::new(
        LlmCallConfig {
            provider: "openai-compatible".into(),
            model: "gpt-x".into(),
            max_tokens: Some(100),
            reasoning_effort: Some("low".into()),
            ..LlmCallConfig::default()
        },
        vec![Arc::new(assistant(vec![
            ContentBlock::Reasoning {
                text: "hidden".into(),
            },
            ContentBlock::text("shown"),
        ]))],
    );
    request.tools = Some(vec![]);
    let body = request_body(&request, &route).unwrap();
    assert_eq!(
        body,
        json!({
            "model":"gpt-x",
            "messages":[{"role":"assistant","content":"shown"}],
            "stream":true,
            "stream_options":{"include_usage":true},
            "reasoning_effort":"low",
            "max_completion_tokens":100,
        })
    );
}

#[test]
fn reasoning_replay_on_tool_call_turns_only() {
    let mut route = RouteConfig::deepseek();
    route.compat.reasoning_replay = ReasoningReplay::ToolCallTurns;
    let plain = assistant(vec![
        ContentBlock::Reasoning { text: "r".into() },
        ContentBlock::text("t"),
    ]);
    let body = request_body(&deepseek_request(vec![plain]), &route).unwrap();
    assert_eq!(
        body["messages"],
        json!([{"role":"assistant","content":"t"}])
    );
}

fn png_ref(seed: u8) -> (dsh_attachments::ImageRef, Vec<u8>) {
    let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x03".to_vec();
    data.push(seed);
    let image = dsh_attachments::ImageRef {
        attachment_id: format!("sha256:{}", format!("{seed:02x}").repeat(32)),
        media_type: dsh_attachments::ImageMediaType::Png,
        bytes: data.len() as u64,
        width: 2,
        height: 3,
        name: None,
    };
    (image, data)
}

fn data_url(data: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(data)
    )
}

#[test]
fn a_users_image_goes_as_an_image_part() {
    let (image, data) = png_ref(1);
    let mut images = RequestImages::default();
    images.insert_sent(image.clone(), &data);
    let message = Message::new(
        Role::User,
        vec![ContentBlock::text("what is this?"), image.block()],
        MessageSource::user(),
    );
    let body = request_body_with_images(
        &deepseek_request(vec![message]),
        &RouteConfig::deepseek(),
        &images,
    )
    .unwrap();
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": data_url(&data)}},
        ]}])
    );
}

#[test]
fn tool_images_follow_the_run_of_tool_messages_in_one_user_message() {
    let (first, first_data) = png_ref(1);
    let (second, second_data) = png_ref(2);
    let mut images = RequestImages::default();
    images.insert_sent(first.clone(), &first_data);
    images.insert_sent(second.clone(), &second_data);
    let calls = assistant(vec![
        ContentBlock::ToolCall {
            id: CallId::from("call_1"),
            name: "shot".into(),
            arguments: "{}".into(),
        },
        ContentBlock::ToolCall {
            id: CallId::from("call_2"),
            name: "shot".into(),
            arguments: "{}".into(),
        },
    ]);
    let request = deepseek_request(vec![
        Message::user_text("look"),
        calls,
        Message::tool_result(
            CallId::from("call_1"),
            vec![
                ContentBlock::text("Here it is:"),
                first.block(),
                ContentBlock::text("The logo."),
            ],
            false,
        ),
        Message::tool_result(CallId::from("call_2"), vec![second.block()], false),
        assistant(vec![ContentBlock::text("Two images.")]),
    ]);
    let body = request_body_with_images(&request, &RouteConfig::deepseek(), &images).unwrap();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content":
            "Here it is:\n[image sha256:01010101: image/png, 2x3 px, 25 bytes; attached in the next message]\nThe logo."})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_2", "content":
            "[image sha256:02020202: image/png, 2x3 px, 25 bytes; attached in the next message]"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "text", "text": "Image sha256:01010101 from tool call call_1:"},
            {"type": "image_url", "image_url": {"url": data_url(&first_data)}},
            {"type": "text", "text": "Image sha256:02020202 from tool call call_2:"},
            {"type": "image_url", "image_url": {"url": data_url(&second_data)}},
        ]})
    );
    assert_eq!(messages[5]["role"], "assistant");
    assert_eq!(messages.len(), 6);

    // Ending on the tool results (the usual request after a call), the images still follow.
    let mut ending = request.clone();
    ending.messages.pop();
    let body = request_body_with_images(&ending, &RouteConfig::deepseek(), &images).unwrap();
    assert_eq!(body["messages"].as_array().unwrap()[2..], messages[2..5]);
}

#[test]
fn an_image_without_bytes_is_named_in_text() {
    let (image, _) = png_ref(3);
    let mut images = RequestImages::default();
    images.insert_text(image.attachment_id.clone(), crate::images::OFFLOADED.into());
    let (unknown, _) = png_ref(4);
    let request = deepseek_request(vec![Message::tool_result(
        CallId::from("c"),
        vec![image.block(), unknown.block()],
        false,
    )]);
    let body = request_body_with_images(&request, &RouteConfig::deepseek(), &images).unwrap();
    assert_eq!(
        body["messages"],
        json!([{"role": "tool", "tool_call_id": "c", "content": format!(
            "{}\n[image unavailable: image/png, 2x3 px, 25 bytes, sha256:04040404; its bytes were not loaded for this request]",
            crate::images::OFFLOADED
        )}])
    );
}
