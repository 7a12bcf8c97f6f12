//! The background feeds of the interactive UI: small tasks that keep one piece of its state
//! current (the sandbox notice, the job and subagent counts, MCP server notices, the slash
//! command directory) by sending `Input`s, each ending when the UI stops listening.

use crate::app::Runtime;
use crate::config::Settings;
use crate::tui::interactive::commands::CommandDirectory;
use crate::tui::interactive::Input;
use dsh_tools_builtin::SandboxMode;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Probes the sandbox off the UI thread (it forks a short-lived shell) and says once what it
/// cannot enforce.
pub(super) fn spawn_sandbox_notice(settings: &Settings, inputs: mpsc::UnboundedSender<Input>) {
    let mode = settings.sandbox.mode.value;
    if mode == SandboxMode::DangerFullAccess {
        return;
    }
    std::thread::spawn(move || {
        if let Some(notice) = dsh_tools_builtin::SandboxProbe::current().notice(mode) {
            let _ = inputs.send(Input::Notice(vec![format!("note: {}", notice.message)]));
        }
    });
}

/// Keeps the status line's job count current: sends the live count whenever it changes,
/// until the UI is gone.
pub(super) fn spawn_job_count(runtime: &Runtime, inputs: mpsc::UnboundedSender<Input>) {
    let Some(jobs) = runtime.ctx().get::<dsh_jobs::JobRegistry>() else {
        return;
    };
    let mut changes = jobs.subscribe();
    tokio::spawn(async move {
        let mut shown = 0;
        loop {
            let live = jobs.live_count();
            if live != shown {
                if inputs.send(Input::Jobs(live)).is_err() {
                    return;
                }
                shown = live;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = inputs.closed() => return,
            }
        }
    });
}

/// Keeps the status line's subagent count current: sends it whenever the delegation
/// service reports a child starting or settling. Ends when the UI stops listening.
pub(super) fn spawn_agent_count(runtime: &Runtime, inputs: mpsc::UnboundedSender<Input>) {
    let Some(subagents) = runtime.subagents() else {
        return;
    };
    let mut changes = subagents.subscribe();
    tokio::spawn(async move {
        let mut shown = 0;
        loop {
            let working = subagents.working_count();
            if working != shown {
                if inputs.send(Input::Agents(working)).is_err() {
                    return;
                }
                shown = working;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = inputs.closed() => return,
            }
        }
    });
}

/// Shows each MCP server notice (a server failed, was lost or gave up) as a notice line,
/// like `dsh run`'s stderr ones. Ends when the board is gone or the UI stops listening.
pub(super) fn spawn_mcp_notices(runtime: &Runtime, inputs: mpsc::UnboundedSender<Input>) {
    let Some(board) = runtime.ctx().get::<dsh_mcp::McpStatusBoard>() else {
        return;
    };
    tokio::spawn(async move {
        let mut cursor = 0;
        loop {
            let notices = tokio::select! {
                notices = board.next_notices(&mut cursor) => notices,
                () = inputs.closed() => return,
            };
            if notices.is_empty() {
                return;
            }
            let lines = notices.into_iter().map(|notice| notice.message).collect();
            if inputs.send(Input::Notice(lines)).is_err() {
                return;
            }
        }
    });
}

/// Keeps the UI's slash-command directory current: sends it at start and whenever a skill or
/// command file changes (looked at once a second), with any new loading notices. Ends when
/// the UI stops listening.
pub(super) async fn watch_commands(
    skills: Arc<dsh_skills::Skills>,
    inputs: mpsc::UnboundedSender<Input>,
) {
    let mut last: Option<Arc<dsh_skills::Scan>> = None;
    let mut ticks = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        ticks.tick().await;
        let scan = skills.refresh();
        let notices: Vec<String> = skills
            .take_notices()
            .iter()
            .map(|notice| format!("skills: {notice}"))
            .collect();
        if !notices.is_empty() && inputs.send(Input::Notice(notices)).is_err() {
            return;
        }
        if last.as_ref().is_some_and(|last| Arc::ptr_eq(last, &scan)) {
            continue;
        }
        let directory = CommandDirectory::with_extensions(&scan);
        if inputs.send(Input::Commands(directory)).is_err() {
            return;
        }
        last = Some(scan);
    }
}

/// Keeps the live list of working subagents current (one line each above the input): a
/// child joins it when it starts a run or an epoch (`subagent/start`) and leaves it when
/// that ends (`subagent/end`). Ends, unhooking itself, when the UI stops listening.
pub(super) fn spawn_child_list(runtime: &Runtime, inputs: mpsc::UnboundedSender<Input>) {
    use dsh_subagents::{ChildLifecycle, SubagentEnd, SubagentStart};
    if runtime.subagents().is_none() {
        return;
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<(bool, ChildLifecycle)>();
    let ctx = runtime.ctx();
    let started = tx.clone();
    let hooks = [
        ctx.on::<SubagentStart>(move |child| {
            let _ = started.send((true, child.clone()));
            Ok(())
        }),
        ctx.on::<SubagentEnd>(move |child| {
            let _ = tx.send((false, child.clone()));
            Ok(())
        }),
    ];
    let hooks: Vec<dsh_kernel::Disposer> = hooks.into_iter().filter_map(Result::ok).collect();
    tokio::spawn(async move {
        let mut children: Vec<crate::tui::LiveChild> = Vec::new();
        loop {
            let change = tokio::select! {
                change = rx.recv() => change,
                () = inputs.closed() => None,
            };
            let Some((start, child)) = change else { break };
            let id = child.id.to_string();
            children.retain(|c| c.id != id);
            if start {
                children.push(crate::tui::LiveChild {
                    id,
                    label: crate::sanitize::sanitize(&child.label).into_owned(),
                    background: child.mode == dsh_subagents::SubagentMode::Continuable,
                });
            }
            if inputs.send(Input::Children(children.clone())).is_err() {
                break;
            }
        }
        for hook in hooks {
            hook.dispose();
        }
    });
}
