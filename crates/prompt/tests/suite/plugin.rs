//! The plugin's built-ins and configuration.

use super::{assemble, mounted, section_names, tool};
use dsh_kernel::{mount, Composition, Context, PluginTable, Row};
use dsh_prompt::{
    render_prompt, Assembly, ContextEntry, NamedText, SystemPrompt, SystemPromptConfig,
    SystemPromptPlugin, ToolOrder, ToolProvision, Variables, HARNESS_IDENTITY, UNLISTED_TOOLS,
};
use serde_json::json;

#[tokio::test]
async fn defaults_register_identity_and_an_empty_persona() {
    let (root, prompt) = mounted(SystemPromptConfig::default());
    let assembly = assemble(&root, &prompt, None).await;
    assert_eq!(
        assembly,
        Assembly {
            sections: vec![
                NamedText::new("harness:identity", HARNESS_IDENTITY),
                NamedText::new("deployment:persona", ""),
            ],
            ..Assembly::default()
        }
    );
    assert_eq!(render_prompt(&assembly).unwrap(), HARNESS_IDENTITY);
}

#[tokio::test]
async fn persona_template_renders_like_the_recorded_system_prompt() {
    let persona =
        "You are a coding agent powered by the {{model}} model. Your working directory is {{cwd}}.";
    let (root, prompt) = mounted(SystemPromptConfig {
        persona: persona.into(),
        ..SystemPromptConfig::default()
    });
    // The agent loop's variables, as it registers them.
    prompt
        .variable(&root, "model", |_| Some("deepseek-v4-flash".into()))
        .unwrap()
        .forget();
    prompt
        .variable(&root, "cwd", |_| Some("/home/user/project".into()))
        .unwrap()
        .forget();
    prompt
        .variable(&root, "provider", |_| Some("deepseek-official".into()))
        .unwrap()
        .forget();
    let assembly = assemble(&root, &prompt, None).await;
    // The first two paragraphs of `system` in the text fixture's request/header.
    assert_eq!(
        render_prompt(&assembly).unwrap(),
        "You are an AI agent powered by DeepSeek Harness.\n\nYou are a coding agent powered by the deepseek-v4-flash model. Your working directory is /home/user/project."
    );
    let expected: Variables = [
        ("model", Some("deepseek-v4-flash".to_owned())),
        ("cwd", Some("/home/user/project".to_owned())),
        ("provider", Some("deepseek-official".to_owned())),
    ]
    .into_iter()
    .collect();
    assert_eq!(assembly.variables, expected);
}

#[tokio::test]
async fn identity_can_be_left_out() {
    let (root, prompt) = mounted(SystemPromptConfig {
        include_harness_identity: false,
        persona: "Persona.".into(),
        ..SystemPromptConfig::default()
    });
    let assembly = assemble(&root, &prompt, None).await;
    assert_eq!(section_names(&assembly), ["deployment:persona"]);
    assert_eq!(render_prompt(&assembly).unwrap(), "Persona.");
}

#[tokio::test]
async fn runtime_context_can_be_suppressed_globally() {
    let (root, prompt) = mounted(SystemPromptConfig {
        include_runtime_context: false,
        ..SystemPromptConfig::default()
    });
    prompt
        .context(&root, ContextEntry::new("sandbox:policy", 10.0, "policy"))
        .unwrap()
        .forget();
    assert_eq!(assemble(&root, &prompt, None).await.contexts, vec![]);

    let (root, prompt) = mounted(SystemPromptConfig::default());
    prompt
        .context(&root, ContextEntry::new("sandbox:policy", 10.0, "policy"))
        .unwrap()
        .forget();
    assert_eq!(
        assemble(&root, &prompt, None).await.contexts,
        vec![NamedText::new("sandbox:policy", "policy")]
    );
}

#[tokio::test]
async fn configured_tool_order_applies() {
    let (root, prompt) = mounted(SystemPromptConfig {
        tool_order: Some(ToolOrder::new(["write", UNLISTED_TOOLS, "bash"]).unwrap()),
        ..SystemPromptConfig::default()
    });
    prompt
        .tools(&root, |_| {
            ToolProvision::new(vec![
                tool("bash"),
                tool("read"),
                tool("write"),
                tool("glob"),
            ])
        })
        .unwrap()
        .forget();
    let names: Vec<String> = assemble(&root, &prompt, None)
        .await
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["write", "glob", "read", "bash"]);
}

fn mount_with(config: serde_json::Value) -> Result<Context, dsh_kernel::KernelError> {
    let root = Context::root();
    let table = PluginTable::new().with::<SystemPromptPlugin>();
    let composition = Composition {
        rows: vec![Row::new("prompt", "system-prompt", config)],
    };
    mount(&root, &table, &composition)?;
    Ok(root)
}

#[tokio::test]
async fn config_is_read_from_a_composition_row() {
    let root = mount_with(json!({
        "includeHarnessIdentity": false,
        "persona": "P",
        "toolOrder": ["bash", "<unlisted-tools>"],
        "includeRuntimeContext": true
    }))
    .unwrap();
    let prompt = root.require::<SystemPrompt>().unwrap();
    prompt
        .tools(&root, |_| {
            ToolProvision::new(vec![tool("read"), tool("bash")])
        })
        .unwrap()
        .forget();
    let assembly = assemble(&root, &prompt, None).await;
    assert_eq!(render_prompt(&assembly).unwrap(), "P");
    assert_eq!(assembly.tools, vec![tool("bash"), tool("read")]);

    // A row with no config means all defaults.
    let root = mount_with(serde_json::Value::Null).unwrap();
    let prompt = root.require::<SystemPrompt>().unwrap();
    assert_eq!(
        render_prompt(&assemble(&root, &prompt, None).await).unwrap(),
        HARNESS_IDENTITY
    );
}

#[test]
fn malformed_tool_order_is_a_config_error() {
    for order in [json!(["bash"]), json!(["bash", "<unlisted-tools>", "bash"])] {
        let error = mount_with(json!({ "toolOrder": order })).unwrap_err();
        assert_eq!(error.code(), "INVALID_CONFIG", "{error}");
        assert!(error.to_string().contains("invalid tool order"), "{error}");
    }
}

#[tokio::test]
async fn unloading_the_plugin_withdraws_the_service() {
    let root = Context::root();
    let fiber = root
        .plugin::<SystemPromptPlugin>(SystemPromptConfig::default())
        .unwrap();
    assert!(root.get::<SystemPrompt>().is_some());
    fiber.dispose();
    assert!(root.get::<SystemPrompt>().is_none());
}
