//! `exit_plan_mode(plan)`: the plan goes to the person, who approves it (plan mode ends at
//! the next step and the turn goes on) or keeps planning (with feedback for the model).

use super::state::{session_plan_mode, PlanMode};
use crate::question::{
    Question, QuestionError, QuestionIntent, QuestionOption, QuestionRequest, UserQuestions,
};
use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The tool's name.
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";
/// The review question's id, echoed in its answer.
pub const REVIEW_ID: &str = "plan-review";
/// The option that approves the plan.
pub const APPROVE: &str = "Approve";
/// The option that declines it.
pub const KEEP_PLANNING: &str = "Keep planning";

/// What the model reads after an approval.
pub const APPROVED_TEXT: &str =
    "Plan approved — plan mode exited; carry out the plan starting with your next step.";
/// What the model reads when nobody can review the plan (a headless run).
pub const UNREVIEWED_TEXT: &str = "Nobody can review the plan in this run (it is headless): the \
    plan is its output. Plan mode stays on and the turn ends here; the user will read the plan \
    and resume the session.";

/// The tool, over the plan-mode service.
pub struct ExitPlanMode {
    plan: Arc<PlanMode>,
}

impl ExitPlanMode {
    pub fn new(plan: Arc<PlanMode>) -> Self {
        Self { plan }
    }
}

#[derive(Debug, Deserialize)]
pub struct ExitArgs {
    pub plan: String,
}

fn failure(code: &str, message: impl Into<String>) -> ToolFailure {
    ToolFailure::coded("PlanModeError", code, message)
}

/// The review question the person sees.
pub fn review_question(plan: &str) -> Question {
    Question {
        id: REVIEW_ID.into(),
        question: "Approve this plan and leave plan mode?".into(),
        detail: Some(plan.to_owned()),
        header: Some("Plan review".into()),
        options: vec![
            QuestionOption {
                label: APPROVE.into(),
                description: Some(
                    "Leave plan mode; the plan is carried out from the next step.".into(),
                ),
            },
            QuestionOption {
                label: KEEP_PLANNING.into(),
                description: Some("Stay in plan mode; feedback goes back to the model.".into()),
            },
        ],
        multi_select: false,
        intent: Some(QuestionIntent::PlanReview {
            approve: APPROVE.into(),
        }),
    }
}

/// Whether a plan starts with a `#` heading that has text.
fn has_heading(plan: &str) -> bool {
    plan.trim()
        .strip_prefix('#')
        .is_some_and(|rest| rest.starts_with(char::is_whitespace) && !rest.trim().is_empty())
}

impl TypedTool for ExitPlanMode {
    type Args = ExitArgs;
    type Output = Value;

    fn name(&self) -> &str {
        EXIT_PLAN_MODE
    }

    fn description(&self) -> String {
        "Use only in plan mode. Present your plan for the user's review and, on approval, leave \
         plan mode. Send the COMPLETE plan as markdown, starting with a # heading that names it. \
         The user may approve (carry out the plan from your next step) or keep planning — their \
         feedback comes back in the tool result; revise and present again."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {
                    "type": "string",
                    "description": "The complete plan, as markdown, starting with a # heading that names it."
                }
            },
            "required": ["plan"]
        })
    }

    async fn execute(&self, args: ExitArgs, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let Some(caller) = exec.caller() else {
            return Err(failure(
                "NO_CALLER",
                "exit_plan_mode requires a calling agent (no session to switch)",
            ));
        };
        if !session_plan_mode(caller.session()) {
            return Err(failure(
                "NOT_IN_PLAN_MODE",
                "exit_plan_mode is only available in plan mode",
            ));
        }
        if !has_heading(&args.plan) {
            return Err(failure(
                "INVALID_PLAN",
                "exit_plan_mode requires a non-empty markdown plan starting with a # heading",
            ));
        }
        let Some(questions) = caller.ctx().get::<UserQuestions>() else {
            return Err(failure(
                "NO_REVIEW_CHANNEL",
                "no user-questions channel is available to review the plan; ask the user to \
                 switch the session mode instead",
            ));
        };
        let registry = caller.registry();
        let request = QuestionRequest {
            session_id: Some(caller.id().clone()),
            call_id: Some(exec.call_id().clone()),
            questions: vec![review_question(&args.plan)],
        };
        let asked = questions
            .ask(
                request,
                Some(caller.agent()),
                registry.as_deref(),
                exec.signal(),
            )
            .await;
        let answer = match asked {
            Ok(answer) => answer,
            Err(QuestionError::NoProvider) => {
                exec.conclude_turn();
                return Ok(json!({"approved": false, "reviewed": false}));
            }
            Err(QuestionError::Cancelled) => {
                return Err(failure(
                    "PLAN_REVIEW_DISMISSED",
                    "The user dismissed the plan review to speak instead; stay in plan mode, \
                     stop here, and wait for their message.",
                ))
            }
            Err(error) => return Err(crate::question::tool::failure(&error)),
        };
        // An answer that lands after the turn was cancelled approves nothing.
        if exec.signal().is_cancelled() {
            return Err(crate::question::tool::failure(&QuestionError::Aborted));
        }
        let mut reviews = answer.answers.iter().filter(|a| a.id == REVIEW_ID);
        let item = match (reviews.next(), reviews.next()) {
            (Some(item), None) => Some(item),
            _ => None,
        };
        let approved = item.is_some_and(|item| item.selected == [APPROVE] && item.custom.is_none());
        if !approved {
            let feedback = item.and_then(|i| i.custom.as_deref()).unwrap_or("");
            return Err(failure(
                "PLAN_NOT_APPROVED",
                if feedback.is_empty() {
                    "The user chose to keep planning; revise the plan and present it again."
                        .to_owned()
                } else {
                    format!("The user chose to keep planning; their feedback: {feedback}")
                },
            ));
        }
        self.plan.approve(caller.id());
        Ok(json!({"approved": true}))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let text = if value.get("approved").and_then(Value::as_bool) == Some(true) {
            APPROVED_TEXT
        } else {
            UNREVIEWED_TEXT
        };
        vec![ContentBlock::text(text)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_must_start_with_a_heading() {
        assert!(has_heading("# Fix the bug\n\n1. x"));
        assert!(has_heading("  #\tPlan"));
        assert!(!has_heading("## Deeper"));
        assert!(!has_heading("#Plan"));
        assert!(!has_heading("# "));
        assert!(!has_heading("Plan\n# Later"));
    }
}
