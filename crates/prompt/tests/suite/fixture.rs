//! Runtime-context snapshots must look exactly like the ones dsh 0.1.0 logged.
//! `tests/data/text-user-messages.jsonl` holds the `user/message` events of the `text`
//! fixture session: a typed prompt (seq 7) and a runtime-context snapshot (seq 8).

use dsh_prompt::{NamedText, ProjectionState, RuntimeContextProjection, RuntimeSnapshot};
use dsh_protocol::Message;
use serde_json::Value;

fn fixture_messages() -> Vec<(u64, Message)> {
    include_str!("../data/text-user-messages.jsonl")
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            let seq = event["seq"].as_u64().unwrap();
            (seq, serde_json::from_value(event["data"].clone()).unwrap())
        })
        .collect()
}

fn recorded_snapshot() -> Message {
    let (seq, message) = fixture_messages().remove(1);
    assert_eq!(seq, 8);
    message
}

#[test]
fn projected_snapshot_matches_the_recorded_one() {
    let recorded = recorded_snapshot();
    let recorded_value = serde_json::to_value(&recorded).unwrap();
    let sections: Vec<NamedText> =
        serde_json::from_value(recorded_value["source"]["sections"].clone()).unwrap();
    let current = RuntimeSnapshot::from_sections(sections);

    let projected = RuntimeContextProjection::new().project(&current).unwrap();
    let mut projected_value = serde_json::to_value(&projected).unwrap();
    projected_value["id"] = recorded_value["id"].clone();
    // Whole-value equality, including key order inside the source.
    assert_eq!(
        serde_json::to_string(&projected_value).unwrap(),
        serde_json::to_string(&recorded_value).unwrap()
    );
}

#[test]
fn restoring_the_fixture_retains_its_snapshot_and_suppresses_a_repeat() {
    let messages = fixture_messages();
    let projection =
        RuntimeContextProjection::restore(messages.iter().map(|(_, message)| (message, true)));
    let recorded = recorded_snapshot();
    assert_eq!(
        projection.state(),
        &ProjectionState::Retained {
            id: recorded.id.clone(),
            text: recorded.text()
        }
    );
    let recorded_value = serde_json::to_value(&recorded).unwrap();
    let sections: Vec<NamedText> =
        serde_json::from_value(recorded_value["source"]["sections"].clone()).unwrap();
    assert_eq!(
        projection.project(&RuntimeSnapshot::from_sections(sections)),
        None
    );
}

#[tokio::test]
async fn registered_contexts_produce_the_recorded_snapshot() {
    use dsh_prompt::{ContextEntry, SystemPromptConfig};
    let recorded = recorded_snapshot();
    let recorded_value = serde_json::to_value(&recorded).unwrap();
    let sections: Vec<NamedText> =
        serde_json::from_value(recorded_value["source"]["sections"].clone()).unwrap();
    let (root, prompt) = super::mounted(SystemPromptConfig::default());
    // Registered out of order, with the workspace path as a variable: order and
    // interpolation must still reproduce the recorded text.
    let approval = sections[1].text.clone();
    let sandbox = sections[0].text.replace("/home/user/project", "{{cwd}}");
    prompt
        .context(&root, ContextEntry::new("approval:policy", 115.0, approval))
        .unwrap()
        .forget();
    prompt
        .context(&root, ContextEntry::new("sandbox:policy", 110.0, sandbox))
        .unwrap()
        .forget();
    prompt
        .context(&root, ContextEntry::new("empty", 120.0, ""))
        .unwrap()
        .forget();
    prompt
        .variable(&root, "cwd", |_| Some("/home/user/project".into()))
        .unwrap()
        .forget();

    let assembly = super::assemble(&root, &prompt, None).await;
    let current = RuntimeSnapshot::render(&assembly).unwrap();
    assert_eq!(current.sections, sections);
    let projected = RuntimeContextProjection::new().project(&current).unwrap();
    assert_eq!(projected.content, recorded.content);
    assert_eq!(projected.source, recorded.source);
}
