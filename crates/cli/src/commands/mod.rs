//! The command-line surface: the clap command tree and what each command does.
//!
//! Only commands that work exist. `dsh --version` is answered by clap while parsing, before
//! any configuration is read or runtime started, so it stays instant.
//!
//! - `dsh` alone on a terminal: the interactive UI ([`interactive`]); elsewhere it prints
//!   the help and exits 2. `dsh --resume ID` and `dsh --continue` open it on a stored
//!   session.
//! - `dsh run [PROMPT]`: one headless turn ([`run`]); exit 0 completed, 1 failed, blocked or
//!   cut off, 130 interrupted, 2 usage or configuration error.
//! - `dsh sessions ...`: list, show, verify, repair, fork and export stored sessions.
//! - `dsh config show`: the effective settings and where each value came from.
//! - `dsh mcp list|add|remove`: MCP servers, from every file they can be configured in.
//! - `dsh trust [DIR]`: trust a workspace's own `.mcp.json` and Claude Code hooks.

mod acp;
mod compact;
mod config;
mod interactive;
mod mcp;
mod memory;
mod migrate;
mod plan_ui;
mod rename;
mod repair;
mod run;
mod run_goal;
pub mod run_output;
mod sessions;
mod trust;
mod web;
pub mod write_check;

use crate::app::AppError;
use crate::config::{ConfigError, Env, Overrides, ProcessEnv};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use dsh_protocol::Word;
use dsh_tools_builtin::{ApprovalPolicy, SandboxMode};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use write_check::{CheckedWrite, WriteFailure};

/// Exit statuses of `dsh`.
pub mod exit {
    pub const SUCCESS: u8 = 0;
    /// The command ran and failed (a run: failed, blocked or cut off at max tokens).
    pub const FAILURE: u8 = 1;
    /// Bad usage or bad configuration: nothing was started.
    pub const USAGE: u8 = 2;
    /// A run the person interrupted (SIGINT), like a shell's 128 + 2.
    pub const INTERRUPTED: u8 = 130;
    /// A run forced down by a second SIGTERM during its drain, like a shell's 128 + 15. (A
    /// single SIGTERM drains the turn and exits [`SUCCESS`].)
    pub const TERMINATED: u8 = 143;
    /// A run forced down by a second signal after SIGHUP (its terminal closed), like a
    /// shell's 128 + 1. (A single SIGHUP drains the turn and exits [`SUCCESS`].)
    pub const HANGUP: u8 = 129;
}

/// Writes one line to stderr, ignoring failure: once the terminal is gone (SIGHUP) stderr
/// fails, and `eprintln!` would panic exactly when dsh must shut down cleanly.
pub(crate) fn stderr_line(text: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// A command-line mistake that clap cannot see (an empty prompt, a missing id).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// An LLM agent harness for coding.
#[derive(Debug, Parser)]
#[command(name = "dsh", version)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Open the interactive UI on the stored session ID (a unique prefix is enough)
    #[arg(long, value_name = "ID", conflicts_with = "continue_")]
    pub resume: Option<String>,
    /// Open the interactive UI on the most recent session of this workspace
    #[arg(long = "continue")]
    pub continue_: bool,
    /// Without a command, `dsh` on a terminal opens the interactive UI.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Which session the interactive UI opens on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opening {
    /// A new session (started by the first prompt).
    New,
    /// The stored session this id or unique prefix names (`--resume`).
    Resume(String),
    /// The workspace's most recent session (`--continue`).
    Continue,
}

impl Cli {
    /// The session the interactive UI opens on; `--resume` and `--continue` belong to the
    /// UI only (a headless turn takes them after `run`).
    pub fn opening(&self) -> Result<Opening, UsageError> {
        let opening = match (&self.resume, self.continue_) {
            (Some(query), _) => Opening::Resume(query.clone()),
            (None, true) => Opening::Continue,
            (None, false) => Opening::New,
        };
        if opening != Opening::New && self.command.is_some() {
            return Err(UsageError(
                "--resume and --continue before a command open the interactive UI; for a \
                 headless turn put them after it (`dsh run --continue ...`)"
                    .into(),
            ));
        }
        Ok(opening)
    }
}

/// Options every command accepts; they override settings.toml and the environment.
#[derive(Debug, Args, Default)]
pub struct GlobalArgs {
    /// The dsh home directory [default: $DSH_HOME, else ~/.dsh]
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Provider route to use (for example deepseek-official)
    #[arg(long, global = true, value_name = "ROUTE")]
    pub provider: Option<String>,
    /// Model id to use
    #[arg(long, global = true, value_name = "MODEL")]
    pub model: Option<String>,
    /// Which file writes are confined; danger-full-access also means approval "never"
    #[arg(long, global = true, value_name = "MODE", value_parser = word::<SandboxMode>())]
    pub sandbox: Option<SandboxMode>,
    /// When a person is asked: before every command and file change (untrusted), only when a
    /// command would leave the sandbox (ask), or never
    #[arg(long, global = true, value_name = "POLICY", value_parser = word::<ApprovalPolicy>())]
    pub approval: Option<ApprovalPolicy>,
    /// Endpoint of the selected provider route (for example a local server's
    /// http://127.0.0.1:8080/v1)
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// Work in DIR instead of the current directory (sessions are grouped by it)
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// The parser of a flag whose values are a closed word set owned by a library crate: clap
/// lists the words in `--help` and in its error for a wrong one, as for a `ValueEnum`.
fn word<T: Word>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::WORDS.iter().copied()).try_map(|word| word.parse::<T>())
}

impl GlobalArgs {
    /// The flag layer of the configuration.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            home: self.home.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            sandbox: self.sandbox,
            approval: self.approval,
            base_url: self.base_url.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task headless: stream the answer to stdout, progress to stderr
    Run(RunArgs),
    /// List, show, check, repair, fork and export stored sessions
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Inspect the configuration
    #[command(subcommand)]
    Config(ConfigCommand),
    /// List, add and remove MCP servers
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Trust a workspace: let its .mcp.json servers and .claude/settings*.json hooks run
    Trust(TrustArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (docs/acp.md)
    Acp,
    /// Serve the SDK JSON-RPC runtime on stdin/stdout, for programs (docs/acp.md)
    Sdk,
    /// Serve the web API (and page) on 127.0.0.1:3080 for every session (docs/web-api.md)
    Web(web::WebArgs),
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Every configured server: source file, transport, command or URL, state, and (unless
    /// --no-connect) its live status, tool count and last error after connecting it
    List {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
        /// Only show the configuration: start no server (untrusted ones never start anyway)
        #[arg(long)]
        no_connect: bool,
    },
    /// Add a server to settings.toml: `NAME -- CMD ARGS...` (stdio) or `NAME --url URL` (http)
    Add {
        /// The server name (1 to 32 letters, digits, `_` and `-`)
        name: String,
        /// Streamable HTTP endpoint of the server
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// An HTTP header sent on every request (repeatable)
        #[arg(long, value_name = "K=V")]
        header: Vec<String>,
        /// An environment variable for the server process (repeatable)
        #[arg(long, value_name = "K=V")]
        env: Vec<String>,
        /// The command and its arguments, after `--`
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Remove a server from settings.toml
    Remove {
        /// The server name
        name: String,
    },
}

/// `dsh trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The workspace directory [default: the current directory]
    pub dir: Option<PathBuf>,
    /// Stop trusting DIR
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// Print the trusted directories
    #[arg(long, conflicts_with = "dir")]
    pub list: bool,
}

/// `dsh run`.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// The task; read from stdin when absent or `-`
    pub prompt: Option<String>,
    /// Print JSON Lines: a session line, every session event, a result line
    #[arg(long)]
    pub json: bool,
    /// Continue the stored session ID (a unique prefix is enough) with a new turn
    #[arg(long, value_name = "ID", conflicts_with = "continue_")]
    pub resume: Option<String>,
    /// Continue the most recent session of this workspace
    #[arg(long = "continue")]
    pub continue_: bool,
    /// Plan only: run the turn in plan mode (read-only; writes and non-read-only commands are
    /// refused) and print the plan the model presents with exit_plan_mode
    #[arg(long)]
    pub plan: bool,
    /// Stop the turn before model request N+1 (the turn ends blocked, exit 1)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_turns: Option<u64>,
    /// Work on OBJECTIVE round after round until it is complete, blocked, paused or out of
    /// rounds (exit 0 only when complete)
    #[arg(long, value_name = "OBJECTIVE", conflicts_with_all = ["prompt", "resume", "continue_"])]
    pub goal: Option<String>,
    /// With --resume/--continue: do not continue the session's active goal
    #[arg(long)]
    pub no_goal: bool,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Sessions of this workspace, most recent first (from the index; logs are not read)
    List {
        /// Every workspace's sessions
        #[arg(long)]
        all: bool,
        /// Print a JSON array of summaries
        #[arg(long)]
        json: bool,
        /// One row per session, newest first, without nesting children under their parent
        #[arg(long)]
        flat: bool,
    },
    /// Print a session's conversation (or, with --json, its raw event log)
    Show {
        /// Session id or unique prefix
        id: String,
        /// Print the header and every event envelope as JSON Lines
        #[arg(long)]
        json: bool,
        /// Only the events around event SEQ (a search hit), with their text
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
        /// Events shown on each side of --at
        #[arg(long, value_name = "N", default_value_t = 5, requires = "at")]
        context: u64,
    },
    /// Full-text search over stored sessions (this workspace's; --all for every workspace):
    /// the best match of each session, best first
    Search {
        /// Words to find (all of them; searched literally, operators included)
        query: Vec<String>,
        /// Search every workspace's sessions
        #[arg(long)]
        all: bool,
        /// Print a JSON array of hits
        #[arg(long)]
        json: bool,
        /// At most N sessions
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
    },
    /// Rebuild the search index from the session logs (it is a cache: the logs are the truth)
    Reindex,
    /// Check session logs; exits 1 when one is damaged, naming the file and line
    Verify {
        /// Session id or unique prefix
        id: Option<String>,
        /// Check every stored session
        #[arg(long, conflicts_with = "id")]
        all: bool,
    },
    /// Cut a crash's torn tail and close a turn left open, after backing up the file
    Repair {
        /// Session id or unique prefix
        id: String,
    },
    /// Copy a session (through event SEQ, default all of it) into a new session; prints its id
    Fork {
        /// Session id or unique prefix
        id: String,
        /// The last event to keep (must not cut a turn in half)
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
    },
    /// Summarise a stored session's older history into one checkpoint now (like `/compact`);
    /// exits 1 when the attempt fails
    Compact {
        /// Session id or unique prefix
        id: String,
    },
    /// Give a stored session a title of your own; it is pinned (no automatic title replaces it)
    Rename {
        /// Session id or unique prefix
        id: String,
        /// The new title
        title: String,
    },
    /// Write a session as one portable JSON Lines file (header, then every event)
    Export {
        /// Session id or unique prefix
        id: String,
        /// Output file (`-` for stdout) [default: ./<id>.dsh-session.jsonl]
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Copy every stored session (or one workspace's) into the other backend, verifying
    /// each copy; safe to rerun after an interruption; the source is left untouched
    Migrate {
        /// The backend to copy into: postgres (from the files under $DSH_HOME/sessions) or
        /// files (from the database [store] url / DSH_DATABASE_URL names)
        #[arg(long, value_name = "BACKEND", value_parser = word::<crate::config::StoreBackend>())]
        to: crate::config::StoreBackend,
        /// Only the sessions that ran in this workspace directory
        #[arg(long, value_name = "PATH")]
        workspace: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective settings and where each value came from (secrets are never shown)
    Show {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version are "errors" to clap; it prints them and picks the status.
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(exit::USAGE));
        }
    };
    init_logging();
    if let Err(error) = crate::app::register_event_types() {
        stderr_line(format_args!("dsh: error: {}", AppError::EventTypes(error)));
        return ExitCode::from(exit::FAILURE);
    }
    let result = match &cli.command {
        // `run` streams to the real stdout and stderr itself.
        None => cli
            .opening()
            .map_err(anyhow::Error::from)
            .and_then(|opening| interactive::run(&cli.global, &opening, &ProcessEnv)),
        Some(Command::Run(args)) => run::run(&cli.global, args, &ProcessEnv),
        // The protocol servers own stdout: nothing else may write to it.
        Some(Command::Acp) => acp::serve(&cli.global, &ProcessEnv, acp::Protocol::Acp),
        Some(Command::Sdk) => acp::serve(&cli.global, &ProcessEnv, acp::Protocol::Sdk),
        // The URL line is its stdout; the server runs until Ctrl-C or SIGTERM.
        Some(Command::Web(args)) => web::serve(&cli.global, args, &ProcessEnv),
        Some(_) => {
            let failure = WriteFailure::default();
            let stdout = std::io::stdout();
            let mut out = CheckedWrite::new(stdout.lock(), failure.clone());
            let result = dispatch(&cli, &ProcessEnv, &mut out);
            let _ = out.flush();
            // Output that never arrived (a full disk) is the failure to report, whatever
            // the command made of it. A reader that stopped reading (`dsh sessions show ID |
            // head`) is not: the command stops where its output stopped, without a word,
            // as ripgrep does.
            match failure.get() {
                Some(failure) => Err(anyhow::anyhow!("cannot write to stdout: {failure}")),
                None if failure.reader_gone() => Ok(exit::SUCCESS),
                None => result,
            }
        }
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            stderr_line(format_args!("dsh: error: {error:#}"));
            ExitCode::from(exit_status(&error))
        }
    }
}

/// `DSH_LOG=warn` (any tracing filter) shows the plugins' diagnostics on stderr. A value
/// that is not UTF-8 cannot be a filter: said once, and logging stays off.
fn init_logging() {
    let Some(filter) = std::env::var_os("DSH_LOG") else {
        return;
    };
    let Ok(filter) = filter.into_string() else {
        stderr_line("dsh: warning: DSH_LOG is not valid UTF-8, so it is ignored");
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs a parsed command (other than `run`) against `env`, writing its output to `out`;
/// returns the exit status.
pub fn dispatch(cli: &Cli, env: &dyn Env, out: &mut dyn Write) -> anyhow::Result<u8> {
    // Before any command reads a log (`main` did this too; callers of `dispatch` may not).
    crate::app::register_event_types().map_err(AppError::EventTypes)?;
    let flags = cli.global.overrides();
    let opening = cli.opening()?;
    match &cli.command {
        None => interactive::run(&cli.global, &opening, env),
        Some(Command::Run(args)) => run::run(&cli.global, args, env),
        Some(Command::Acp) => acp::serve(&cli.global, env, acp::Protocol::Acp),
        Some(Command::Sdk) => acp::serve(&cli.global, env, acp::Protocol::Sdk),
        Some(Command::Web(args)) => web::serve(&cli.global, args, env),
        Some(Command::Sessions(command)) => sessions::sessions(&cli.global, command, env, out),
        Some(Command::Config(ConfigCommand::Show { json })) => {
            let cwd = workspace_dir(&cli.global)?;
            config::show(env, &flags, &cwd, *json, out).map(|()| exit::SUCCESS)
        }
        Some(Command::Mcp(command)) => {
            mcp::mcp(command, env, &flags, &workspace_dir(&cli.global)?, out)
        }
        Some(Command::Trust(args)) => {
            let dir = match &args.dir {
                Some(dir) => dir.clone(),
                None => workspace_dir(&cli.global)?,
            };
            trust::trust_command(&dir, args.revoke, args.list, env, &flags, out)
        }
    }
}

/// The workspace a command looks at: `--cwd`, else the current directory, canonical.
fn workspace_dir(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    let dir = match &global.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    Ok(crate::app::canonical_workspace(&dir)?)
}

/// The exit status for a failed command: configuration and usage problems are 2.
pub fn exit_status(error: &anyhow::Error) -> u8 {
    let usage = error.downcast_ref::<ConfigError>().is_some()
        || error.downcast_ref::<UsageError>().is_some()
        || error
            .downcast_ref::<AppError>()
            .is_some_and(AppError::is_usage);
    if usage {
        exit::USAGE
    } else {
        exit::FAILURE
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn word_flags_parse_the_owners_words_and_list_them() {
        let cli = Cli::try_parse_from(["dsh", "--sandbox", "read-only", "--approval", "untrusted"])
            .unwrap();
        assert_eq!(cli.global.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(cli.global.approval, Some(ApprovalPolicy::Untrusted));

        let error = Cli::try_parse_from(["dsh", "--sandbox", "workspace"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
        assert_eq!(
            error.render().to_string(),
            "error: invalid value 'workspace' for '--sandbox <MODE>'\n  \
             [possible values: read-only, workspace-write, danger-full-access]\n\n\
             For more information, try '--help'.\n"
        );

        let cli = Cli::try_parse_from(["dsh", "--resume", "3f2a"]).unwrap();
        assert_eq!(cli.opening().unwrap(), Opening::Resume("3f2a".into()));
        let cli = Cli::try_parse_from(["dsh", "--continue"]).unwrap();
        assert_eq!(cli.opening().unwrap(), Opening::Continue);
        let cli = Cli::try_parse_from(["dsh", "run", "--resume", "3f2a", "go"]).unwrap();
        assert_eq!(cli.opening().unwrap(), Opening::New);
        let cli = Cli::try_parse_from(["dsh", "--continue", "run", "go"]).unwrap();
        assert!(cli.opening().is_err());
        assert!(Cli::try_parse_from(["dsh", "--continue", "--resume", "x"]).is_err());

        let help = Cli::command().render_help().to_string();
        for words in [
            "[possible values: read-only, workspace-write, danger-full-access]",
            "[possible values: untrusted, ask, never]",
        ] {
            assert!(help.contains(words), "{help}");
        }
    }
}
