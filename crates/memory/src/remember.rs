//! The `remember` tool: the model proposes a note for AGENTS.md, and a person decides.
//!
//! The gate is a `tools/pre-execute` listener, inner to the approval plugin's: under every
//! policy except `never` the call is put to the person, with the diff as the reason; when no
//! one can answer (a headless run) it is refused with a message saying so and how the person
//! can keep the note; a delegated child's call is refused under every policy (a child's
//! lessons reach the person through its parent, not straight into their instructions). The
//! body checks the child rule again, so mounting the tool without its gate cannot break it.

use std::path::PathBuf;

use dsh_kernel::{Context, Disposer, KernelError};
use dsh_protocol::ContentBlock;
use dsh_session::Session;
use dsh_tools::{PreExecute, PreExecuteDecision, ToolExecution, ToolFailure, TypedTool};
use dsh_tools_builtin::{ApprovalPolicy, Approvals};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::MemoryError;
use crate::notes::{note_path, plan_note, write_note, NoteScope};

/// The tool's name.
pub const REMEMBER_TOOL: &str = "remember";

/// Where notes go for one run.
#[derive(Clone, Debug)]
pub struct NoteFiles {
    pub dsh_home: PathBuf,
}

/// See the module docs.
pub struct RememberTool {
    files: NoteFiles,
}

impl RememberTool {
    pub fn new(files: NoteFiles) -> Self {
        Self { files }
    }
}

#[derive(Debug, Deserialize)]
pub struct RememberArgs {
    pub note: String,
    #[serde(default)]
    pub scope: Option<String>,
}

fn is_child(session: &Session) -> bool {
    let header = session.header();
    header.parent_session.is_some() || header.delegation_depth.is_some_and(|d| d > 0)
}

fn workspace_of(session: &Session) -> Option<PathBuf> {
    session.header().cwd.as_ref().map(PathBuf::from)
}

fn scope_of(args: &Value) -> NoteScope {
    match args.get("scope").and_then(Value::as_str) {
        Some("user") => NoteScope::User,
        _ => NoteScope::Workspace,
    }
}

const CHILD_REFUSAL: &str = "remember is not available to a delegated agent: notes go into the \
person's instructions, so only the top-level agent may propose one. Put what should be \
remembered in your report instead.";

impl TypedTool for RememberTool {
    type Args = RememberArgs;
    type Output = Value;

    fn name(&self) -> &str {
        REMEMBER_TOOL
    }

    fn description(&self) -> String {
        "Propose a lasting note for future sessions: one line appended to AGENTS.md (the \
         workspace's, or with scope \"user\" the user's own), which every later session reads \
         as instructions. Use it only for durable facts or preferences the user stated or \
         confirmed (a build command, a convention), never for task progress. The user \
         approves each note."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "note": {"type": "string", "description": "The note: one short line, written as an instruction."},
                "scope": {"type": "string", "enum": ["workspace", "user"],
                          "description": "workspace (default): this workspace's AGENTS.md; user: the user's AGENTS.md for every workspace."}
            },
            "required": ["note"]
        })
    }

    async fn execute(
        &self,
        args: RememberArgs,
        exec: &ToolExecution,
    ) -> Result<Value, ToolFailure> {
        let fail = |e: MemoryError| ToolFailure::coded("RememberError", e.code(), e.to_string());
        let caller = exec.caller().ok_or_else(|| {
            ToolFailure::coded(
                "RememberError",
                "REMEMBER_NO_SESSION",
                "remember needs a session",
            )
        })?;
        let session = caller.session();
        if is_child(session) {
            return Err(ToolFailure::coded(
                "RememberError",
                "REMEMBER_CHILD",
                CHILD_REFUSAL,
            ));
        }
        let workspace = workspace_of(session).ok_or_else(|| {
            ToolFailure::coded(
                "RememberError",
                "REMEMBER_NO_WORKSPACE",
                "the session has no workspace",
            )
        })?;
        let scope = match args.scope.as_deref() {
            Some("user") => NoteScope::User,
            _ => NoteScope::Workspace,
        };
        let path = note_path(scope, &workspace, &self.files.dsh_home);
        let plan = plan_note(&path, &args.note).map_err(fail)?;
        write_note(&plan).map_err(fail)?;
        Ok(json!({"path": plan.path.display().to_string(), "note": plan.note}))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let path = value
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("AGENTS.md");
        let note = value.get("note").and_then(Value::as_str).unwrap_or("");
        vec![ContentBlock::text(format!(
            "Added to {path}: \"{note}\". Later sessions read it as an instruction."
        ))]
    }
}

/// What the gate decides for one `remember` call.
fn verdict(
    exec: &ToolExecution,
    approvals: Option<&Approvals>,
    files: &NoteFiles,
) -> Option<PreExecuteDecision> {
    let caller = exec.caller()?;
    let session = caller.session();
    if is_child(session) {
        return Some(PreExecuteDecision::Deny {
            reason: CHILD_REFUSAL.into(),
        });
    }
    let approvals = approvals?;
    if approvals.policy(session) == ApprovalPolicy::Never {
        return None;
    }
    let note = exec
        .arguments()
        .get("note")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !approvals.can_ask(session) {
        return Some(PreExecuteDecision::Deny {
            reason: format!(
                "this remember call was not run: a note to AGENTS.md needs the user's approval, \
                 and no one can answer approval prompts in this session (a headless run). Tell \
                 the user the note you wanted to keep (\"{}\"); they can add it with a `#` line \
                 in the interactive UI (`dsh`) or by editing AGENTS.md.",
                crate::text::clip(note, 200)
            ),
        });
    }
    let path =
        workspace_of(session).map(|ws| note_path(scope_of(exec.arguments()), &ws, &files.dsh_home));
    let preview = path
        .as_deref()
        .and_then(|p| plan_note(p, note).ok())
        .map_or_else(|| format!("+ - {note}"), |plan| plan.diff);
    Some(PreExecuteDecision::Ask {
        reason: Some(format!(
            "the model wants to keep a note for later sessions:\n{preview}"
        )),
    })
}

/// Registers the gate (see the module docs) through `ctx`.
pub fn install_gate(ctx: &Context, files: NoteFiles) -> Result<Disposer, KernelError> {
    let root = ctx.clone();
    ctx.on_waterfall::<PreExecute, _, _>(move |args, next| {
        let decision = (args.exec.name() == REMEMBER_TOOL)
            .then(|| {
                let approvals = root.get::<Approvals>();
                verdict(&args.exec, approvals.as_deref(), &files)
            })
            .flatten();
        async move {
            let inner = next.run().await?;
            Ok(match (decision, inner) {
                (_, deny @ PreExecuteDecision::Deny { .. }) => deny,
                (Some(mine), _) => mine,
                (None, inner) => inner,
            })
        }
    })
}
