//! `dsh run [PROMPT]`: one headless turn, streamed, with an exit status that says how it
//! ended.
//!
//! SIGINT, SIGTERM and SIGHUP all cancel the turn with cause `user` and give the loop a
//! bounded drain (at most [`DRAIN_LIMIT`]) to close the turn, stop its commands (their whole
//! process group) and flush the session, so the log stays balanced. Afterwards SIGINT exits
//! 130, and SIGTERM and SIGHUP exit 0: a terminate request that was honoured is a clean
//! shutdown, not a failure, and a closed terminal (SIGHUP) is a terminate request. A second
//! signal during the drain exits at once. Once the terminal is gone, writing to it fails, so
//! nothing on these paths may panic on a failed write (`eprintln!` would).

use super::run_goal::{self, GoalMode};
use super::run_output::{exit_status, RunOutput};
use super::{exit, stderr_line, GlobalArgs, RunArgs, UsageError};
use crate::app::{find_session, latest_session, AgentStart, AppError, BootOptions, Runtime};
use crate::config::{load, Env};
use dsh_agent::{AgentCancelCause, AgentHandle, CancelOptions};
use dsh_jobs::JobRegistry;
use dsh_kernel::Disposer;
use dsh_protocol::{Message, SessionId};
use dsh_subagents::{SubagentEnd, SubagentStart, Subagents};
use std::io::{IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// How long a signalled run waits for the turn to close and the agent to be disposed
/// before it exits anyway.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// The prompt: the argument, or all of stdin when it is absent or `-`.
fn read_prompt(arg: Option<&str>) -> anyhow::Result<String> {
    let prompt = match arg {
        Some(text) if text != "-" => text.to_owned(),
        _ => {
            let stdin = std::io::stdin();
            if arg.is_none() && stdin.is_terminal() {
                return Err(UsageError(
                    "no prompt: give one as an argument, or pipe it on stdin (`-` reads stdin)"
                        .into(),
                )
                .into());
            }
            let mut text = String::new();
            stdin
                .lock()
                .read_to_string(&mut text)
                .map_err(|e| UsageError(format!("cannot read the prompt from stdin: {e}")))?;
            text
        }
    };
    if prompt.trim().is_empty() {
        return Err(UsageError("the prompt is empty".into()).into());
    }
    Ok(prompt)
}

/// The prompt of a resumed run, which may have none when it continues the session's goal:
/// the argument, or stdin when it is not a terminal and holds text.
fn read_optional_prompt(arg: Option<&str>) -> anyhow::Result<Option<String>> {
    if arg.is_some() || !std::io::stdin().is_terminal() {
        return match read_prompt(arg) {
            Ok(prompt) => Ok(Some(prompt)),
            Err(_) if arg.is_none() => Ok(None),
            Err(error) => Err(error),
        };
    }
    Ok(None)
}

/// Runs `dsh run`; returns the exit status.
pub(super) fn run(global: &GlobalArgs, args: &RunArgs, env: &dyn Env) -> anyhow::Result<u8> {
    let mode = GoalMode::of(args)?;
    let prompt = match mode {
        GoalMode::Start(_) => None,
        GoalMode::Continue => read_optional_prompt(args.prompt.as_deref())?,
        GoalMode::Off => Some(read_prompt(args.prompt.as_deref())?),
    };
    let settings = load(env, &global.overrides())?;
    let options = BootOptions::from_process(global.cwd.clone())?;
    if let Ok(workspace) = crate::app::canonical_workspace(&options.cwd) {
        for notice in crate::app::workspace_notices(&settings, &workspace, env) {
            stderr_line(notice);
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_turn(settings, options, args, prompt, mode))
}

async fn run_turn(
    settings: crate::config::Settings,
    options: BootOptions,
    args: &RunArgs,
    prompt: Option<String>,
    mode: GoalMode,
) -> anyhow::Result<u8> {
    // Installed first, so a signal during boot is not lost: it cancels the turn at once.
    let mut signals = StopSignals::install()?;
    let runtime = Runtime::boot(settings, options)?;
    for notice in runtime.hook_notices() {
        stderr_line(format_args!("dsh: {notice}"));
    }
    let result = drive(&runtime, args, prompt, mode, &mut signals).await;
    runtime.shutdown();
    result
}

/// Which session the run continues, if any.
fn session_to_resume(runtime: &Runtime, args: &RunArgs) -> Result<Option<SessionId>, AppError> {
    if args.resume.is_none() && !args.continue_ {
        return Ok(None);
    }
    let persistence = runtime.persistence().ok_or(AppError::MissingPart {
        service: "session store",
        row: crate::config::PERSISTENCE_ROW,
    })?;
    let summary = match &args.resume {
        Some(query) => find_session(&*persistence, query)?,
        None => latest_session(&*persistence, runtime.workspace())?,
    };
    Ok(Some(SessionId::new(summary.id)))
}

async fn drive(
    runtime: &Runtime,
    args: &RunArgs,
    prompt: Option<String>,
    mode: GoalMode,
    signals: &mut StopSignals,
) -> anyhow::Result<u8> {
    let resume = session_to_resume(runtime, args)?;
    let output = Arc::new(
        RunOutput::new(
            args.json,
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
        )
        .with_terminals(
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        ),
    );
    let cap_hit = Arc::new(AtomicBool::new(false));
    let changes = Arc::new(Mutex::new(Vec::new()));
    let start = AgentStart {
        session_id: None,
        max_steps: args.max_turns,
        step_cap_hit: Some(cap_hit.clone()),
        resume_changes: Some(changes.clone()),
    };
    let id = resume.clone().unwrap_or_else(Runtime::new_session_id);
    output.session(id.as_str(), resume.is_some());
    let mcp_notices = spawn_mcp_notices(runtime, output.clone());
    let notice = Arc::new(SandboxNoteOnce::new(runtime, output.clone(), !args.json));
    let printer = output.clone();
    let probe = notice.clone();
    let subscription = runtime.subscribe(id.clone(), move |event| {
        printer.event(event);
        probe.on_event(event);
    })?;
    let children = watch_children(runtime, &output)?;
    let handle = match resume {
        Some(id) => runtime.resume_agent(id, start).await,
        None => {
            runtime
                .create_agent(AgentStart {
                    session_id: Some(id.clone()),
                    ..start
                })
                .await
        }
    };
    let handle = match handle {
        Ok(handle) => handle,
        Err(error) => {
            subscription.dispose();
            children.iter().for_each(Disposer::dispose);
            return Err(error.into());
        }
    };
    // What the resumed session runs under differently from its log, before any work.
    for change in changes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        output.note(&format!("dsh: note: {change}"));
    }
    if let Some(skills) = runtime.skills() {
        for notice in skills.take_notices() {
            output.note(&format!("dsh: skills: {notice}"));
        }
    }
    // Plan mode first, so the prompt's turn already runs in it.
    let plan_from = match start_plan_mode(runtime, &handle, args.plan) {
        Ok(from) => from,
        Err(error) => {
            handle.dispose().await;
            subscription.dispose();
            children.iter().for_each(Disposer::dispose);
            return Err(error);
        }
    };
    let session = handle.agent().session().clone();
    let has_prompt = prompt.is_some();
    // The person's prompt first: a continued goal's next round waits for it.
    let sent = match prompt {
        Some(prompt) => handle
            .agent()
            .followup(Message::user_text(prompt))
            .map_err(|error| anyhow::Error::new(error).context("cannot send the prompt")),
        None => Ok(()),
    };
    let goal = sent.and_then(|()| {
        let goal = run_goal::start(runtime, handle.agent(), &mode, args.no_goal, &output)?;
        if !goal && !has_prompt {
            return Err(UsageError(
                "no prompt, and the session has no active goal to continue: give a prompt".into(),
            )
            .into());
        }
        Ok(goal)
    });
    let goal = match goal {
        Ok(goal) => goal,
        Err(error) => {
            handle.dispose().await;
            subscription.dispose();
            children.iter().for_each(Disposer::dispose);
            return Err(error);
        }
    };
    // Ordered teardown: the loop flushes the session before disposal completes.
    let jobs = runtime.ctx().get::<JobRegistry>();
    let stop = finish_turn(&handle, jobs, runtime.subagents(), runtime, signals).await;
    subscription.dispose();
    children.iter().for_each(Disposer::dispose);
    notice.join();
    if let Some(task) = mcp_notices {
        task.abort();
    }
    let cap = cap_hit
        .load(Ordering::SeqCst)
        .then_some(args.max_turns)
        .flatten();
    let goal_status = goal.then(|| {
        let (status, line) = run_goal::finish(runtime, handle.agent());
        output.note(&line);
        status
    });
    let presented = plan_from.map(|from| presented_plan(&session, from));
    if let Some(Some(plan)) = &presented {
        output.plan(plan);
    }
    output.finish(id.as_str(), cap);
    let mut status = match (stop, goal_status) {
        (Some(stop), _) => stop.drained_status_after(output.outcome().as_ref()),
        (None, Some(status)) => status,
        (None, None) => exit_status(output.outcome().as_ref()),
    };
    if presented == Some(None) && !args.json {
        stderr_line("dsh: no plan: the model did not present one with exit_plan_mode");
        status = status.max(exit::FAILURE);
    }
    // After SIGHUP the terminal is gone and writing to it fails: that is not news.
    let failure = output
        .stdout_failure()
        .filter(|_| stop != Some(Stop::Hangup));
    if let Some(failure) = failure {
        // The answer (or the JSON lines) did not reach their destination: not a success,
        // whatever the turn did. The log has it all; say where.
        stderr_line(format_args!(
            "dsh: error: cannot write to stdout: {failure}; the session is stored as {}",
            id.as_str()
        ));
        if status == exit::SUCCESS {
            return Ok(exit::FAILURE);
        }
    }
    Ok(status)
}

/// `dsh run --plan`: switches the session to plan mode before the prompt is sent. Returns the
/// log position from which a presented plan counts (`None` without `--plan`).
fn start_plan_mode(
    runtime: &Runtime,
    handle: &AgentHandle,
    plan: bool,
) -> anyhow::Result<Option<u64>> {
    if !plan {
        return Ok(None);
    }
    let modes = runtime
        .ctx()
        .get::<dsh_modes::PlanMode>()
        .ok_or(AppError::MissingPart {
            service: "plan mode",
            row: crate::config::PLAN_MODE_ROW,
        })?;
    let from = handle.agent().session().len();
    modes
        .set(handle.agent().as_ref(), true)
        .map_err(|e| anyhow::anyhow!("cannot switch the session to plan mode: {e}"))?;
    Ok(Some(from))
}

/// The last plan presented with `exit_plan_mode` at or after `from`.
fn presented_plan(session: &dsh_session::Session, from: u64) -> Option<String> {
    session.events_from(from).iter().rev().find_map(|event| {
        let dsh_session::EventData::ToolCall(call) = &event.data else {
            return None;
        };
        if call.name != dsh_modes::plan::EXIT_PLAN_MODE {
            return None;
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        args.get("plan")?.as_str().map(str::to_owned)
    })
}

/// A signal that stops the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// SIGINT (Ctrl-C): the user interrupted the turn.
    Interrupt,
    /// SIGTERM: something (a supervisor, `kill`) asked the process to shut down.
    Terminate,
    /// SIGHUP: the terminal was closed. Handled as SIGTERM (the default action would kill
    /// dsh on the spot, leaving the turn open and its command running).
    Hangup,
}

impl Stop {
    /// The status when the drain runs out: what a completed drain would have exited with.
    fn drained_status(self) -> u8 {
        match self {
            Self::Interrupt => exit::INTERRUPTED,
            Self::Terminate | Self::Hangup => exit::SUCCESS,
        }
    }

    /// The status once the turn closed in time: an interrupt reports the turn's outcome.
    fn drained_status_after(self, outcome: Option<&dsh_session::TurnEndReason>) -> u8 {
        match self {
            Self::Interrupt => exit_status(outcome),
            Self::Terminate | Self::Hangup => exit::SUCCESS,
        }
    }

    /// The status of a forced exit: the shell's convention, 128 plus the signal number.
    fn forced_status(self) -> u8 {
        match self {
            Self::Interrupt => exit::INTERRUPTED,
            Self::Terminate => exit::TERMINATED,
            Self::Hangup => exit::HANGUP,
        }
    }
}

/// The SIGINT, SIGTERM and SIGHUP streams, read as one.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.interrupt.recv() => Stop::Interrupt,
            _ = self.terminate.recv() => Stop::Terminate,
            _ = self.hangup.recv() => Stop::Hangup,
        }
    }
}

/// Prints a `child` line (or note) whenever a child of the run starts or ends.
fn watch_children(runtime: &Runtime, output: &Arc<RunOutput>) -> Result<Vec<Disposer>, AppError> {
    if runtime.subagents().is_none() {
        return Ok(Vec::new());
    }
    let started = output.clone();
    let ended = output.clone();
    let ctx = runtime.ctx();
    Ok(vec![
        ctx.on::<SubagentStart>(move |child| {
            started.child(child, false);
            Ok(())
        })
        .map_err(AppError::Mount)?,
        ctx.on::<SubagentEnd>(move |child| {
            ended.child(child, true);
            Ok(())
        })
        .map_err(AppError::Mount)?,
    ])
}

/// Waits until the run is settled (see [`settled`]), then disposes the agent. A signal
/// cancels the turn with cause `user` and bounds the rest (closing the turn and disposal) by [`DRAIN_LIMIT`]; a second
/// signal, or running out of time, exits the process at once. Returns the signal, if any.
async fn finish_turn(
    handle: &AgentHandle,
    jobs: Option<Arc<JobRegistry>>,
    subagents: Option<Arc<Subagents>>,
    runtime: &Runtime,
    signals: &mut StopSignals,
) -> Option<Stop> {
    let agent = handle.agent().clone();
    let settled = settled(agent.clone(), jobs.clone(), subagents, runtime);
    tokio::pin!(settled);
    let stop = tokio::select! {
        () = &mut settled => {
            handle.dispose().await;
            return None;
        }
        stop = signals.recv() => stop,
    };
    if let Err(error) = agent.cancel(AgentCancelCause::User, CancelOptions::default()) {
        stderr_line(format_args!("dsh: cancelling: {error}"));
    }
    let drain = async {
        agent.when_idle().await;
        // Disposal kills the agent's background jobs; wait until they are gone.
        handle.dispose().await;
        if let Some(jobs) = &jobs {
            jobs.when_quiet().await;
        }
    };
    tokio::select! {
        drained = tokio::time::timeout(DRAIN_LIMIT, drain) => {
            if drained.is_err() {
                stderr_line(format_args!(
                    "dsh: the turn did not close within {} s; exiting without waiting",
                    DRAIN_LIMIT.as_secs()
                ));
                std::process::exit(i32::from(stop.drained_status()));
            }
        }
        second = signals.recv() => {
            stderr_line("dsh: signalled twice; exiting without waiting for the turn to close");
            std::process::exit(i32::from(second.forced_status()));
        }
    }
    Some(stop)
}

/// How long a finished headless run waits for a model title still in flight.
const TITLE_WAIT: Duration = Duration::from_secs(5);

/// Resolves once nothing can start more work: the agent idle, none of the process's
/// background jobs running, no child below the agent working, the goal driver decided
/// (no next round), and every completion or settlement notice delivered (a notice that
/// wakes the agent opens a turn before the registry counts as quiet or the child as
/// settled, so the loop checks all of it again).
async fn settled(
    agent: Arc<dyn dsh_agent::Agent>,
    jobs: Option<Arc<JobRegistry>>,
    subagents: Option<Arc<Subagents>>,
    runtime: &Runtime,
) {
    loop {
        agent.when_idle().await;
        let jobs_quiet = jobs.as_ref().is_none_or(|jobs| jobs.is_quiet());
        let tree_quiet = subagents
            .as_ref()
            .is_none_or(|tree| !tree.tree_working(agent.id()));
        let goal_quiet = run_goal::driver_quiet(runtime, agent.id());
        if jobs_quiet && tree_quiet && goal_quiet && agent.status() == dsh_agent::AgentStatus::Idle
        {
            // A model title still on its way gets a short, bounded wait, so the session is
            // listed with it rather than with the fallback. A signal does not wait for it:
            // `finish_turn` races this whole future against them.
            if let Some(titles) = runtime.ctx().get::<dsh_modes::SessionTitles>() {
                let _ = tokio::time::timeout(TITLE_WAIT, titles.when_quiet()).await;
            }
            return;
        }
        match (&jobs, &subagents) {
            (Some(jobs), _) if !jobs_quiet => jobs.when_quiet().await,
            (_, Some(tree)) if !tree_quiet => tree.until_settled(agent.id()).await,
            _ if !goal_quiet => run_goal::until_driver_quiet(runtime, agent.id()).await,
            _ => {}
        }
    }
}

/// Prints every MCP server notice (a server that failed, was lost or gave up) on stderr as
/// it happens; servers start in the background, so this never delays the prompt.
fn spawn_mcp_notices(
    runtime: &Runtime,
    output: Arc<RunOutput>,
) -> Option<tokio::task::JoinHandle<()>> {
    let board = runtime.ctx().get::<dsh_mcp::McpStatusBoard>()?;
    Some(tokio::spawn(async move {
        let mut cursor = 0;
        loop {
            let notices = board.next_notices(&mut cursor).await;
            if notices.is_empty() {
                return;
            }
            for notice in notices {
                output.note(&format!("dsh: {}", notice.message));
            }
        }
    }))
}

/// Says once, on stderr, what the sandbox cannot enforce on this kernel. The kernel is
/// probed (which forks a shell) only when the model first runs a command, and off the
/// appending thread, so turns without commands never pay for it.
/// (Not `dsh_tools_builtin::sandbox::SandboxNotice`, the message it prints.)
struct SandboxNoteOnce {
    mode: Option<dsh_tools_builtin::SandboxMode>,
    output: Arc<RunOutput>,
    probe: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    started: AtomicBool,
}

impl SandboxNoteOnce {
    fn new(runtime: &Runtime, output: Arc<RunOutput>, enabled: bool) -> Self {
        let mode = runtime.settings().sandbox.mode.value;
        let confined = mode != dsh_tools_builtin::SandboxMode::DangerFullAccess;
        Self {
            mode: (enabled && confined).then_some(mode),
            output,
            probe: std::sync::Mutex::new(None),
            started: AtomicBool::new(false),
        }
    }

    fn on_event(&self, event: &dsh_session::SessionEvent) {
        let Some(mode) = self.mode else { return };
        let is_command =
            matches!(&event.data, dsh_session::EventData::ToolCall(call) if call.name == "bash");
        if !is_command || self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let output = self.output.clone();
        let thread = std::thread::spawn(move || {
            if let Some(notice) = dsh_tools_builtin::SandboxProbe::current().notice(mode) {
                output.note(&format!("dsh: {}", notice.message));
            }
        });
        *self
            .probe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(thread);
    }

    /// Waits for the probe, so its notice is printed before the final line.
    fn join(&self) {
        let thread = self
            .probe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}
