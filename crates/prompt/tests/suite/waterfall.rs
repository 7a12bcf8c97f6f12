//! The `system-prompt/assemble` waterfall: authoritative, except for the two guarantees.

use super::{assemble, mounted, section_names};
use dsh_kernel::ScopeKey;
use dsh_prompt::{
    AssembleContext, Assembly, ContextEntry, NamedText, Section, SystemPromptAssemble,
    SystemPromptConfig,
};
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn listeners_see_the_assembly_and_their_result_is_authoritative() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    prompt
        .variable(&root, "model", |_| Some("configured".into()))
        .unwrap()
        .forget();
    let seen = Arc::new(Mutex::new(None));
    let seen_in = seen.clone();
    root.on_waterfall::<SystemPromptAssemble, _, _>(move |args, next| {
        *seen_in.lock().unwrap() = Some(args.assembly.clone());
        async move {
            // Like the model-selection helper: let inner layers run, then override.
            let mut assembly = next.run().await?;
            assembly.variables.set("model", Some("switched".into()));
            assembly
                .sections
                .push(NamedText::new("late", "added by a listener"));
            Ok(assembly)
        }
    })
    .unwrap()
    .forget();
    let assembly = assemble(&root, &prompt, None).await;
    assert_eq!(assembly.variables.get("model"), Some(Some("switched")));
    assert_eq!(
        section_names(&assembly),
        ["harness:identity", "deployment:persona", "late"]
    );
    let seen = seen.lock().unwrap().clone().unwrap();
    assert_eq!(seen.variables.get("model"), Some(Some("configured")));
    assert_eq!(
        section_names(&seen),
        ["harness:identity", "deployment:persona"]
    );
}

#[tokio::test]
async fn a_listener_may_replace_everything_by_not_calling_next() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    let replacement = Assembly {
        sections: vec![NamedText::new("mine", "entirely mine")],
        ..Assembly::default()
    };
    let returned = replacement.clone();
    root.on_waterfall::<SystemPromptAssemble, _, _>(move |_, _next| {
        let returned = returned.clone();
        async move { Ok(returned) }
    })
    .unwrap()
    .forget();
    assert_eq!(assemble(&root, &prompt, None).await, replacement);
}

#[tokio::test]
async fn complete_section_and_suppression_survive_the_waterfall() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    prompt
        .section(
            &root,
            Section::new("fixed", 5.0, "The whole prompt.").complete(),
        )
        .unwrap()
        .forget();
    prompt
        .context(&root, ContextEntry::new("policy", 0.0, "p"))
        .unwrap()
        .forget();
    prompt.suppress_runtime_context(&root).unwrap().forget();
    root.on_waterfall::<SystemPromptAssemble, _, _>(|_, next| async move {
        let mut assembly = next.run().await?;
        assembly.sections = vec![
            NamedText::new("sneaky", "x"),
            NamedText::new("fixed", "rewritten"),
        ];
        assembly.contexts.push(NamedText::new("sneaky", "y"));
        Ok(assembly)
    })
    .unwrap()
    .forget();
    let assembly = assemble(&root, &prompt, None).await;
    assert_eq!(
        assembly.sections,
        vec![NamedText::new("fixed", "The whole prompt.")]
    );
    assert_eq!(assembly.contexts, vec![]);
}

#[tokio::test]
async fn a_failing_listener_fails_the_assembly() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    root.on_waterfall::<SystemPromptAssemble, _, _>(|_, _next| async move {
        Err::<Assembly, _>("listener broke".into())
    })
    .unwrap()
    .forget();
    let error = prompt
        .assemble(&root, AssembleContext::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "PROMPT_LISTENER_FAILED");
    assert!(error.to_string().contains("listener broke"), "{error}");
}

#[tokio::test]
async fn the_assembled_scope_is_the_carrier() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    let agent = ScopeKey::new("agent");
    let child = ScopeKey::new("child");
    let other = ScopeKey::new("other");
    let agent_ctx = root.create_scope(agent.clone(), None).unwrap();
    let _child_ctx = root.create_scope(child.clone(), Some(&agent)).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let heard_in = heard.clone();
    agent_ctx
        .on_waterfall::<SystemPromptAssemble, _, _>(move |args, next| {
            let scope = args.context.scope.as_ref().map(|k| k.name().to_owned());
            heard_in.lock().unwrap().push(scope);
            next.run()
        })
        .unwrap()
        .forget();
    for scope in [None, Some(&other), Some(&agent), Some(&child)] {
        assemble(&root, &prompt, scope).await;
    }
    assert_eq!(
        *heard.lock().unwrap(),
        vec![Some("agent".to_owned()), Some("child".to_owned())]
    );
}

#[tokio::test]
async fn assembly_can_run_on_a_spawned_task() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    let task = tokio::spawn(async move {
        prompt
            .assemble(&root, AssembleContext::default())
            .await
            .map(|a| a.sections.len())
    });
    assert_eq!(task.await.unwrap().unwrap(), 2);
}
