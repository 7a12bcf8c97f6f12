//! The command-line surface: the clap command tree and what each command does.
//!
//! Only commands that work exist. `dsh --version` is answered by clap while parsing, before
//! any configuration is read or runtime started, so it stays instant.

mod config;

use crate::config::{ApprovalPolicy, ConfigError, Env, Overrides, ProcessEnv, SandboxMode};
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit statuses of `dsh`.
pub mod exit {
    pub const SUCCESS: u8 = 0;
    /// The command ran and failed.
    pub const FAILURE: u8 = 1;
    /// Bad usage or bad configuration: nothing was started.
    pub const USAGE: u8 = 2;
}

/// An LLM agent harness for coding.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, arg_required_else_help = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
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
    #[arg(long, global = true, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// When to ask before a call that needs approval
    #[arg(long, global = true, value_name = "POLICY")]
    pub approval: Option<ApprovalPolicy>,
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
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect the configuration
    #[command(subcommand)]
    Config(ConfigCommand),
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
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match run(&cli, &ProcessEnv, &mut out) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(error) => {
            let _ = out.flush();
            eprintln!("dsh: error: {error:#}");
            ExitCode::from(exit_status(&error))
        }
    }
}

/// Runs a parsed command against `env`, writing its output to `out`.
pub fn run(cli: &Cli, env: &dyn Env, out: &mut dyn Write) -> anyhow::Result<()> {
    let flags = cli.global.overrides();
    match &cli.command {
        Command::Config(ConfigCommand::Show { json }) => config::show(env, &flags, *json, out),
    }
}

/// The exit status for a failed command: configuration problems are usage errors.
pub fn exit_status(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<ConfigError>().is_some() {
        exit::USAGE
    } else {
        exit::FAILURE
    }
}
