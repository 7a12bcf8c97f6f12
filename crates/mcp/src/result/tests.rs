use super::*;
use dsh_attachments::ImageMediaType;

fn text_of(raw: &str, mapped: Mapped) -> String {
    match mapped {
        Mapped::Value(value) => project(raw, &value)[0].as_text().unwrap().to_owned(),
        Mapped::Error(message) => format!("Error: {message}"),
    }
}

fn map(raw: &str, result: &Value) -> Mapped {
    map_result(raw, result, &Admission::NotTried)
}

fn image_ref(seed: u8) -> ImageRef {
    ImageRef {
        attachment_id: format!("sha256:{}", format!("{seed:02x}").repeat(32)),
        media_type: ImageMediaType::Png,
        bytes: 8,
        width: 1,
        height: 1,
        name: None,
    }
}

#[test]
fn text_runs_join_and_structured_content_is_kept() {
    let result = json!({"content": [{"type": "text", "text": "a"}, {"type": "text"},
        {"type": "text", "text": "b"}], "structuredContent": {"sum": 3}});
    let Mapped::Value(value) = map("t", &result) else {
        panic!()
    };
    assert_eq!(value["structuredContent"], json!({"sum": 3}));
    assert_eq!(project("t", &value), vec![ContentBlock::text("a\nb")]);
}

#[test]
fn every_block_kind_projects_to_the_spec_text() {
    let result = json!({"content": [
        {"type": "resource_link", "name": "n", "uri": "file:///x"},
        {"type": "resource_link", "uri": "file:///x"},
        {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
        {"type": "resource", "resource": {"uri": "u", "text": "t"}},
        {"type": "video"},
        7
    ]});
    assert_eq!(
        text_of("t", map("t", &result)),
        "Resource link: n (file:///x)\n\
         [resource link unavailable: the MCP block is missing its name or URI]\n\
         [audio result unsupported: audio/wav; raw audio data remains available to programmatic callers]\n\
         [embedded resource unsupported; raw resource data remains available to programmatic callers]\n\
         [unsupported MCP content type: video]\n\
         [unsupported MCP content block: expected an object]"
    );
}

#[test]
fn images_are_decoded_all_or_nothing_with_their_own_reasons() {
    let good = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
    let bad = json!({"type": "image", "mimeType": "image/tiff", "data": "AAAA"});
    let result = json!({"content": [good, bad]});
    let decoded = decode_images(&result);
    assert_eq!(decoded.len(), 2);
    assert_eq!(
        decoded[0].as_ref().unwrap().data,
        b"\x89PNG\r\n\x1a\n".to_vec()
    );
    let refusal = decode_refusal(&decoded).unwrap();
    let Mapped::Value(value) = map_result("img", &result, &refusal) else {
        panic!()
    };
    assert_eq!(
        value["content"][0]["data"],
        "[12 base64 characters omitted]"
    );
    assert_eq!(
        project("img", &value),
        vec![ContentBlock::text(
            "[image unavailable: image/png; another image in the same result was invalid; raw image data remains available to programmatic callers]\n\
             [image unavailable: image/tiff; the declared media type is not PNG, JPEG, WebP, or GIF; raw image data remains available to programmatic callers]"
        )]
    );
    let noncanonical =
        json!({"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgp="}]});
    assert_eq!(
        decode_images(&noncanonical)[0].as_ref().unwrap_err(),
        &"the image data is not canonical base64"
    );
    // An error result's images are never decoded (so never stored).
    let error = json!({"isError": true, "content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]});
    assert!(decode_images(&error).is_empty());
    assert!(text_of("img", map("img", &error)).contains("this result was not admitted"));
}

#[test]
fn admitted_images_become_image_blocks_in_place() {
    let result = json!({"content": [
        {"type": "text", "text": "Here:"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "text", "text": "and a resource:"},
        {"type": "resource", "resource": {"uri": "file:///tmp/shot.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}},
        {"type": "text", "text": "The end."},
    ]});
    let decoded = decode_images(&result);
    assert_eq!(decoded.len(), 2);
    assert_eq!(
        decoded[1].as_ref().unwrap().name.as_deref(),
        Some("shot.png")
    );
    let (first, second) = (image_ref(1), image_ref(2));
    let admission = Admission::Admitted(vec![first.clone(), second.clone()]);
    let Mapped::Value(value) = map_result("img", &result, &admission) else {
        panic!()
    };
    // The value keeps the references and never the data.
    assert_eq!(value["content"][1]["attachment"], first.to_value());
    assert_eq!(value["content"][3]["attachment"], second.to_value());
    assert_eq!(
        value["content"][3]["resource"]["blob"],
        "[12 base64 characters omitted]"
    );
    assert!(!value.to_string().contains("iVBOR"));
    assert_eq!(
        project("img", &value),
        vec![
            ContentBlock::text("Here:"),
            first.block(),
            ContentBlock::text("and a resource:"),
            second.block(),
            ContentBlock::text("The end."),
        ]
    );
    // Refused, the same result says why for each image, resource included.
    let refused = Admission::refuse_all(2, "no attachment store is mounted");
    assert_eq!(
        text_of("img", map_result("img", &result, &refused)),
        "Here:\n\
         [image unavailable: image/png; no attachment store is mounted; raw image data remains available to programmatic callers]\n\
         and a resource:\n\
         [image unavailable: image/png; no attachment store is mounted; raw image data remains available to programmatic callers]\n\
         The end."
    );
}

#[test]
fn errors_legacy_shapes_and_empty_results() {
    let error = json!({"isError": true, "content": [{"type": "text", "text": "boom"}]});
    assert_eq!(map("t", &error), Mapped::Error("boom".into()));
    let legacy = json!({"toolResult": {"ok": 1}});
    assert_eq!(text_of("t", map("t", &legacy)), "{\"ok\":1}");
    assert_eq!(text_of("t", map("t", &json!({}))), "(no output)");
    assert_eq!(
        map("t", &json!({"isError": true, "toolResult": "x"})),
        Mapped::Error("\"x\"".into())
    );
    assert_eq!(
        text_of("t", map("t", &json!({"content": []}))),
        "(t returned no model-visible content)"
    );
}
