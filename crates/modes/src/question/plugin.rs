//! The `user-questions` row: provides [`UserQuestions`] and registers `ask_user_question`.
//! Surfaces that can reach a person register their provider on the service afterwards.

use super::service::UserQuestions;
use super::tool::AskUserQuestion;
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_tools::{ToolRuntime, Typed};
use std::sync::Arc;

/// See the module docs.
#[derive(Debug)]
pub struct UserQuestionsPlugin;

impl Plugin for UserQuestionsPlugin {
    const NAME: &'static str = "user-questions";
    type Config = ();

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<ToolRuntime>()]
    }

    fn apply(ctx: &Context, _config: ()) -> Result<(), BoxError> {
        let tools = ctx.require::<ToolRuntime>()?;
        let questions = Arc::new(UserQuestions::new());
        ctx.provide(questions.clone())?.forget();
        tools
            .register(ctx, Typed::arc(AskUserQuestion::new(questions)))?
            .forget();
        Ok(())
    }
}
