//! Registrations are effects in the caller's scope: visible to that scope and its
//! descendants, nearest wins, gone when their fiber unwinds.

use super::{assemble, mounted, section_names, tool};
use dsh_kernel::{Context, ScopeKey};
use dsh_prompt::{
    AssembleContext, ContextEntry, NamedText, PartKind, PromptError, PromptText, Section,
    SystemPrompt, SystemPromptConfig, ToolProvision, HARNESS_IDENTITY,
};
use std::sync::Arc;

struct Scopes {
    root: Context,
    prompt: Arc<SystemPrompt>,
    preset: ScopeKey,
    agent: ScopeKey,
    sibling: ScopeKey,
    preset_ctx: Context,
    agent_ctx: Context,
    sibling_ctx: Context,
}

/// global ← preset ← agent, and an unrelated sibling scope.
fn scopes() -> Scopes {
    let (root, prompt) = mounted(SystemPromptConfig {
        persona: "global persona".into(),
        ..SystemPromptConfig::default()
    });
    let preset = ScopeKey::new("preset");
    let agent = ScopeKey::new("agent");
    let sibling = ScopeKey::new("sibling");
    let preset_ctx = root.create_scope(preset.clone(), None).unwrap();
    let agent_ctx = root.create_scope(agent.clone(), Some(&preset)).unwrap();
    let sibling_ctx = root.create_scope(sibling.clone(), None).unwrap();
    Scopes {
        root,
        prompt,
        preset,
        agent,
        sibling,
        preset_ctx,
        agent_ctx,
        sibling_ctx,
    }
}

fn persona_of(assembly: &dsh_prompt::Assembly) -> &str {
    assembly
        .sections
        .iter()
        .find(|s| s.name == "deployment:persona")
        .map_or("", |s| &s.text)
}

#[tokio::test]
async fn nearest_scope_wins_and_registrations_flow_down_only() {
    let s = scopes();
    s.prompt
        .section(
            &s.preset_ctx,
            Section::new("deployment:persona", 0.0, "preset persona"),
        )
        .unwrap()
        .forget();
    s.prompt
        .section(&s.agent_ctx, Section::new("agent:extra", 50.0, "extra"))
        .unwrap()
        .forget();

    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(
        agent.sections,
        vec![
            NamedText::new("harness:identity", HARNESS_IDENTITY),
            NamedText::new("deployment:persona", "preset persona"),
            NamedText::new("agent:extra", "extra"),
        ]
    );
    let preset = assemble(&s.root, &s.prompt, Some(&s.preset)).await;
    assert_eq!(
        section_names(&preset),
        ["harness:identity", "deployment:persona"]
    );
    assert_eq!(persona_of(&preset), "preset persona");
    for scope in [None, Some(&s.sibling)] {
        let view = assemble(&s.root, &s.prompt, scope).await;
        assert_eq!(persona_of(&view), "global persona");
        assert_eq!(
            section_names(&view),
            ["harness:identity", "deployment:persona"]
        );
    }

    // The agent's own persona shadows the preset's, and its order is its own.
    s.prompt
        .section(
            &s.agent_ctx,
            Section::new("deployment:persona", 60.0, "agent persona"),
        )
        .unwrap()
        .forget();
    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(
        section_names(&agent),
        ["harness:identity", "agent:extra", "deployment:persona"]
    );
    assert_eq!(persona_of(&agent), "agent persona");
}

#[tokio::test]
async fn duplicate_names_are_refused_only_within_one_layer() {
    let s = scopes();
    let error = s
        .prompt
        .section(&s.root, Section::new("deployment:persona", 0.0, "again"))
        .unwrap_err();
    assert!(
        matches!(&error, PromptError::DuplicateName { kind: PartKind::Section, name } if name == "deployment:persona")
    );
    assert_eq!(error.code(), "PROMPT_DUPLICATE_NAME");
    s.prompt
        .section(&s.agent_ctx, Section::new("deployment:persona", 0.0, "ok"))
        .unwrap()
        .forget();

    s.prompt
        .context(&s.agent_ctx, ContextEntry::new("c", 0.0, "x"))
        .unwrap()
        .forget();
    let error = s
        .prompt
        .context(&s.agent_ctx, ContextEntry::new("c", 0.0, "y"))
        .unwrap_err();
    assert!(matches!(
        error,
        PromptError::DuplicateName {
            kind: PartKind::Context,
            ..
        }
    ));

    s.prompt
        .variable(&s.agent_ctx, "model", |_| None)
        .unwrap()
        .forget();
    let error = s
        .prompt
        .variable(&s.agent_ctx, "model", |_| None)
        .unwrap_err();
    assert!(matches!(
        error,
        PromptError::DuplicateName {
            kind: PartKind::Variable,
            ..
        }
    ));
    s.prompt
        .variable(&s.preset_ctx, "model", |_| None)
        .unwrap()
        .forget();
}

#[tokio::test]
async fn registrations_are_validated() {
    let s = scopes();
    let codes = [
        s.prompt
            .variable(&s.root, "Model", |_| None)
            .unwrap_err()
            .code(),
        s.prompt.variable(&s.root, "", |_| None).unwrap_err().code(),
        s.prompt
            .section(&s.root, Section::new("", 0.0, "x"))
            .unwrap_err()
            .code(),
        s.prompt
            .section(&s.root, Section::new("nan", f64::NAN, "x"))
            .unwrap_err()
            .code(),
        s.prompt
            .context(&s.root, ContextEntry::new("inf", f64::INFINITY, "x"))
            .unwrap_err()
            .code(),
    ];
    assert_eq!(
        codes,
        [
            "PROMPT_INVALID_VARIABLE_NAME",
            "PROMPT_INVALID_VARIABLE_NAME",
            "PROMPT_EMPTY_NAME",
            "PROMPT_NON_FINITE_ORDER",
            "PROMPT_NON_FINITE_ORDER",
        ]
    );
}

#[tokio::test]
async fn variables_resolve_global_then_chain_nearest_wins() {
    let s = scopes();
    s.prompt
        .variable(&s.root, "model", |_| Some("global-model".into()))
        .unwrap()
        .forget();
    s.prompt
        .variable(&s.root, "cwd", |_| Some("/global".into()))
        .unwrap()
        .forget();
    s.prompt
        .variable(&s.preset_ctx, "model", |_| Some("preset-model".into()))
        .unwrap()
        .forget();
    s.prompt
        .variable(&s.agent_ctx, "cwd", |cx| {
            cx.scope.as_ref().map(|k| format!("/{}", k.name()))
        })
        .unwrap()
        .forget();
    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(agent.variables.get("model"), Some(Some("preset-model")));
    assert_eq!(agent.variables.get("cwd"), Some(Some("/agent")));
    let sibling = assemble(&s.root, &s.prompt, Some(&s.sibling)).await;
    assert_eq!(sibling.variables.get("model"), Some(Some("global-model")));
    assert_eq!(sibling.variables.get("cwd"), Some(Some("/global")));
}

#[tokio::test]
async fn scoped_tools_and_suppression_stay_in_their_subtree() {
    let s = scopes();
    s.prompt
        .tools(&s.root, |_| ToolProvision::new(vec![tool("read")]))
        .unwrap()
        .forget();
    s.prompt
        .tools(&s.preset_ctx, |_| ToolProvision::new(vec![tool("agent")]))
        .unwrap()
        .forget();
    s.prompt
        .context(&s.root, ContextEntry::new("policy", 0.0, "p"))
        .unwrap()
        .forget();
    s.prompt
        .suppress_runtime_context(&s.preset_ctx)
        .unwrap()
        .forget();

    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(agent.tools, vec![tool("agent"), tool("read")]);
    assert_eq!(agent.contexts, vec![]);
    let sibling = assemble(&s.root, &s.prompt, Some(&s.sibling)).await;
    assert_eq!(sibling.tools, vec![tool("read")]);
    assert_eq!(sibling.contexts, vec![NamedText::new("policy", "p")]);
}

#[tokio::test]
async fn complete_sections_govern_only_their_subtree() {
    let s = scopes();
    s.prompt
        .section(
            &s.preset_ctx,
            Section::new("minimal", 0.0, "Only this.").complete(),
        )
        .unwrap()
        .forget();
    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(
        agent.sections,
        vec![NamedText::new("minimal", "Only this.")]
    );
    let sibling = assemble(&s.root, &s.prompt, Some(&s.sibling)).await;
    assert_eq!(
        section_names(&sibling),
        ["harness:identity", "deployment:persona"]
    );

    s.prompt
        .section(
            &s.agent_ctx,
            Section::new("other", 1.0, "Me too.").complete(),
        )
        .unwrap()
        .forget();
    let error = s
        .prompt
        .assemble(&s.root, AssembleContext::new(Some(s.agent.clone())))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, PromptError::MultipleCompleteSections { names } if names == &["minimal", "other"])
    );
    assert_eq!(
        assemble(&s.root, &s.prompt, Some(&s.preset))
            .await
            .sections
            .len(),
        1
    );
}

#[tokio::test]
async fn dynamic_text_sees_the_assembled_scope() {
    let s = scopes();
    let text = PromptText::dynamic(|cx| {
        format!("for {}", cx.scope.as_ref().map_or("nobody", |k| k.name()))
    });
    s.prompt
        .section(&s.root, Section::new("who", 1.0, text))
        .unwrap()
        .forget();
    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(
        agent.sections.last(),
        Some(&NamedText::new("who", "for agent"))
    );
    let global = assemble(&s.root, &s.prompt, None).await;
    assert_eq!(
        global.sections.last(),
        Some(&NamedText::new("who", "for nobody"))
    );
}

#[tokio::test]
async fn dispose_and_nothing_is_left() {
    let s = scopes();
    let baseline = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    for ctx in [&s.preset_ctx, &s.agent_ctx] {
        s.prompt
            .section(ctx, Section::new("deployment:persona", 0.0, "scoped"))
            .unwrap()
            .forget();
        s.prompt
            .section(ctx, Section::new("x", 5.0, "x").complete())
            .unwrap()
            .forget();
        s.prompt
            .context(ctx, ContextEntry::new("c", 0.0, "c"))
            .unwrap()
            .forget();
        s.prompt
            .variable(ctx, "model", |_| Some("m".into()))
            .unwrap()
            .forget();
        s.prompt
            .tools(ctx, |_| ToolProvision::new(vec![tool("t")]))
            .unwrap()
            .forget();
        s.prompt.suppress_runtime_context(ctx).unwrap().forget();
    }
    assert_eq!(s.prompt.scoped_layer_count(), 2);
    assert_ne!(assemble(&s.root, &s.prompt, Some(&s.agent)).await, baseline);

    s.agent_ctx.fiber().dispose();
    assert_eq!(s.prompt.scoped_layer_count(), 1);
    s.preset_ctx.fiber().dispose();
    assert_eq!(s.prompt.scoped_layer_count(), 0);
    assert_eq!(assemble(&s.root, &s.prompt, Some(&s.agent)).await, baseline);

    // A disposed fiber accepts nothing new.
    let error = s
        .prompt
        .section(&s.agent_ctx, Section::new("late", 0.0, "x"))
        .unwrap_err();
    assert_eq!(error.code(), "INACTIVE_EFFECT");
    assert_eq!(s.prompt.scoped_layer_count(), 0);
    drop(s.sibling_ctx);
}

#[tokio::test]
async fn a_disposer_removes_exactly_its_own_registration() {
    let s = scopes();
    let first = s
        .prompt
        .section(&s.agent_ctx, Section::new("note", 1.0, "first"))
        .unwrap();
    first.dispose();
    let second = s
        .prompt
        .section(&s.agent_ctx, Section::new("note", 1.0, "second"))
        .unwrap();
    first.dispose();
    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(
        agent.sections.last(),
        Some(&NamedText::new("note", "second"))
    );
    second.dispose();
    let agent = assemble(&s.root, &s.prompt, Some(&s.agent)).await;
    assert_eq!(
        section_names(&agent),
        ["harness:identity", "deployment:persona"]
    );
    assert_eq!(s.prompt.scoped_layer_count(), 0);
}
