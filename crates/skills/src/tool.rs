//! The `skill` tool: the model loads a catalog skill by name.

use crate::render::skill_content;
use crate::service::Skills;
use crate::skill::is_skill_name;
use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The tool's name.
pub const SKILL_TOOL: &str = "skill";

/// The tool, over the plugin's [`Skills`].
pub struct SkillTool {
    skills: Arc<Skills>,
}

impl SkillTool {
    pub fn new(skills: Arc<Skills>) -> Self {
        Self { skills }
    }
}

#[derive(Debug, Deserialize)]
pub struct SkillArgs {
    pub name: String,
}

/// Where a skill's bundled files are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ResourceBase {
    Directory { path: String },
}

/// The canonical value of a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillValue {
    pub name: String,
    pub provider: String,
    pub resource_base: ResourceBase,
    pub content: String,
}

/// The provider name recorded in results: skills come from the filesystem.
pub const PROVIDER: &str = "filesystem";

fn failure(code: &str, message: String) -> ToolFailure {
    ToolFailure::coded("SkillError", code, message)
}

impl SkillTool {
    /// The body, callable without a pipeline (the tests do).
    pub fn call(&self, name: &str) -> Result<SkillValue, ToolFailure> {
        if !is_skill_name(name) {
            return Err(failure(
                "INVALID_SKILL_NAME",
                format!("invalid skill name \"{name}\""),
            ));
        }
        let listed = self.skills.refresh();
        let Some(skill) = listed.skills.iter().find(|s| s.name == name) else {
            return Err(failure(
                "UNKNOWN_SKILL",
                format!("skill \"{name}\" is unknown or no longer available"),
            ));
        };
        let not_for_model = || {
            failure(
                "SKILL_NOT_MODEL_INVOCABLE",
                format!("skill \"{name}\" is not available for model invocation"),
            )
        };
        if !skill.model_invocable {
            return Err(not_for_model());
        }
        let skill = match self.skills.load(name) {
            Some(Ok(skill)) => skill,
            Some(Err(notice)) => return Err(failure("SKILL_UNREADABLE", notice.to_string())),
            None => {
                return Err(failure(
                    "UNKNOWN_SKILL",
                    format!("skill \"{name}\" is unknown or no longer available"),
                ))
            }
        };
        if !skill.model_invocable {
            return Err(not_for_model());
        }
        Ok(SkillValue {
            name: skill.name.clone(),
            provider: PROVIDER.to_owned(),
            resource_base: ResourceBase::Directory {
                path: skill.base_dir.display().to_string(),
            },
            content: skill_content(&skill),
        })
    }
}

impl TypedTool for SkillTool {
    type Args = SkillArgs;
    type Output = SkillValue;

    fn name(&self) -> &str {
        SKILL_TOOL
    }

    fn description(&self) -> String {
        "Load a skill from the skills catalog in the system prompt: returns its instructions \
         and the directory its bundled files are in. Call it before acting on a task a listed \
         skill covers."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, exactly as the catalog lists it."}
            },
            "required": ["name"]
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: SkillArgs,
        _exec: &ToolExecution,
    ) -> Result<SkillValue, ToolFailure> {
        self.call(&args.name)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        match value.get("content").and_then(Value::as_str) {
            Some(content) => vec![ContentBlock::text(content)],
            None => dsh_tools::render_json(value),
        }
    }
}
