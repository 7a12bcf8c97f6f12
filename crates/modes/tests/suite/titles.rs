//! Session titles over whole logs: a model title, the fallback when the model fails or is
//! missing, a pinned rename, and hostile title answers.

use super::plan_support::*;
use dsh_llm::{LlmRuntime, RequestPurpose};
use dsh_modes::title::{TitleConfig, TitleSource};
use dsh_modes::SessionTitles;
use dsh_testkit::harness::Harness;
use dsh_testkit::scripted::{error_finish, text_response, ScriptEntry, ScriptedAdapter};
use std::sync::Arc;

const ROUTE: &str = "titles";

fn config() -> TitleConfig {
    TitleConfig {
        provider: Some(ROUTE.into()),
        model: Some("title-model".into()),
        ..TitleConfig::default()
    }
}

/// A harness whose turns answer "Done." and whose title route answers with `titles`.
fn harness(turns: usize, titles: Vec<ScriptEntry>) -> (Harness, Arc<ScriptedAdapter>) {
    let h = mount(
        Harness::builder().script((0..turns).map(|_| text_response("Done.").into())),
        Some(config()),
    );
    let adapter = Arc::new(ScriptedAdapter::new(titles));
    let llm = h.ctx().require::<LlmRuntime>().unwrap();
    drop(adapter.register(h.ctx(), &llm, ROUTE).unwrap());
    (h, adapter)
}

fn title_lines(h: &Harness) -> Vec<String> {
    lines(&h.session().events())
        .into_iter()
        .filter(|l| l.starts_with("session/title") || l.starts_with("request/header"))
        .collect()
}

async fn quiet(h: &Harness) {
    h.ctx()
        .require::<SessionTitles>()
        .unwrap()
        .when_quiet()
        .await;
}

const PROMPT: &str = "Find the flaky test in crates/store and explain why it fails";

#[tokio::test]
async fn the_first_prompt_is_titled_by_the_model_beside_the_turn() {
    let (h, titles) = harness(2, vec![text_response("Flaky store test hunt").into()]);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, PROMPT).await;
    quiet(&h).await;
    run(&agent, "now fix it").await;
    quiet(&h).await;
    assert_eq!(
        title_lines(&h),
        [
            r#"session/title {"title":"Find the flaky test in","messageSeqs":[4],"source":{"kind":"fallback"}}"#,
            "request/header initial",
            "session/title-llm-request",
            r#"session/title {"title":"Flaky store test hunt","messageSeqs":[4],"source":{"kind":"provider","provider":"session-title-first-prompt-llm","model":{"provider":"titles","model":"title-model"}}}"#,
        ]
    );
    // The side request: purpose title, thinking off when offered, 64 tokens, no tools, and
    // never part of the conversation.
    let request = &titles.requests()[0];
    assert_eq!(request.purpose, RequestPurpose::Title);
    assert_eq!(request.config.max_tokens, Some(64));
    assert!(request.tools.is_none());
    assert_eq!(
        request.messages[0].text(),
        format!("Generate the session title from this JSON array of human messages:\n[{{\"seq\":4,\"text\":\"{PROMPT}\"}}]")
    );
    let record = h
        .session()
        .events()
        .iter()
        .find_map(|e| e.decode::<dsh_modes::title::TitleLlmRequest>())
        .unwrap()
        .unwrap();
    assert_eq!(record.max_tokens, 64);
    assert_eq!(record.message_seqs, [4]);
    for step in h.adapter().requests() {
        assert!(!step
            .messages
            .iter()
            .any(|m| m.text().contains("session title")));
    }
    h.finish().await;
}

#[tokio::test]
async fn the_fallback_stays_when_the_model_fails_answers_nothing_or_is_missing() {
    for titles in [
        vec![error_finish("RATE_LIMITED").into()],
        vec![text_response("  \u{1b}[31m \u{200b}").into()],
    ] {
        let (h, _) = harness(1, titles);
        let agent = h.create_agent().await.agent().clone();
        run(&agent, PROMPT).await;
        quiet(&h).await;
        let got = title_lines(&h);
        assert_eq!(got.len(), 3, "{got:#?}");
        assert!(got[0].contains(r#""source":{"kind":"fallback"}"#));
        assert_eq!(got[2], "session/title-llm-request");
        h.finish().await;
    }
    // No route for titles at all (no key, no server): the fallback alone.
    let h = mount(
        Harness::builder().script([text_response("Done.").into()]),
        Some(config()),
    );
    let agent = h.create_agent().await.agent().clone();
    run(&agent, PROMPT).await;
    quiet(&h).await;
    let titles = h.ctx().require::<SessionTitles>().unwrap();
    let title = titles.get(agent.session()).unwrap();
    assert_eq!(title.title, "Find the flaky test in");
    assert_eq!(title.source, TitleSource::Fallback);
    h.finish().await;
}

#[tokio::test]
async fn a_huge_title_is_cut_and_a_huge_prompt_gets_no_model_title() {
    let (h, _) = harness(1, vec![text_response(&"long ".repeat(1024)).into()]);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, PROMPT).await;
    quiet(&h).await;
    let title = h
        .ctx()
        .require::<SessionTitles>()
        .unwrap()
        .get(agent.session())
        .unwrap();
    assert!(title.title.len() <= 80, "{}", title.title.len());
    assert!(title.title.starts_with("long long"));
    h.finish().await;

    let (h, titles) = harness(1, vec![text_response("never asked").into()]);
    let agent = h.create_agent().await.agent().clone();
    let prompt = format!("Review this: {}", "x".repeat(5000));
    run(&agent, &prompt).await;
    quiet(&h).await;
    assert_eq!(titles.calls(), 0);
    let got = title_lines(&h);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(
        got[0].starts_with(r#"session/title {"title":"Review this: xxxxxxxxxxxxxxxxxxxxxxxxxxx""#)
    );
    h.finish().await;
}

#[tokio::test]
async fn a_rename_pins_the_title() {
    let (h, titles) = harness(2, vec![ScriptEntry::Hang]);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, PROMPT).await;
    // The model title is still on its way when the person renames the session.
    let service = h.ctx().require::<SessionTitles>().unwrap();
    assert!(matches!(
        service.rename(agent.session(), " \u{202e} "),
        Err(dsh_modes::title::TitleError::Invalid)
    ));
    let renamed = service.rename(agent.session(), "Store\tflake  ").unwrap();
    assert_eq!(renamed.title, "Store flake");
    quiet(&h).await;
    run(&agent, "and another prompt").await;
    quiet(&h).await;
    assert_eq!(titles.calls(), 1);
    let got = title_lines(&h);
    assert_eq!(
        got[1..],
        [
            "request/header initial",
            "session/title-llm-request",
            r#"session/title {"title":"Store flake","messageSeqs":[],"source":{"kind":"user"}}"#,
        ]
    );
    assert_eq!(service.get(agent.session()).unwrap().title, "Store flake");
    h.finish().await;
}
