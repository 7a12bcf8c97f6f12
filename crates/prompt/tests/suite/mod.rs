mod fixture;
mod plugin;
mod scoping;
mod waterfall;

use dsh_kernel::{Context, ScopeKey};
use dsh_prompt::{AssembleContext, Assembly, SystemPrompt, SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::ToolSchema;
use std::sync::Arc;

/// A kernel with the system-prompt plugin mounted, and its service.
pub fn mounted(config: SystemPromptConfig) -> (Context, Arc<SystemPrompt>) {
    let root = Context::root();
    root.plugin::<SystemPromptPlugin>(config).unwrap();
    let service = root.require::<SystemPrompt>().unwrap();
    (root, service)
}

pub async fn assemble(ctx: &Context, prompt: &SystemPrompt, scope: Option<&ScopeKey>) -> Assembly {
    prompt
        .assemble(ctx, AssembleContext::new(scope.cloned()))
        .await
        .unwrap()
}

pub fn section_names(assembly: &Assembly) -> Vec<&str> {
    assembly.sections.iter().map(|s| s.name.as_str()).collect()
}

pub fn tool(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.into(),
        description: format!("the {name} tool").into(),
        parameters: serde_json::json!({"type": "object", "properties": {}}).into(),
    }
}
