//! Slash commands typed into the input box.

use dsh_tools_builtin::PermissionPreset;

/// A parsed slash command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    /// `/model` shows the model; `/model NAME` switches it from the next step.
    Model(Option<String>),
    Sessions,
    /// Lists the subagents below the session on screen.
    Agents,
    /// Shows one subagent's transcript, read-only (`/agents ID`).
    Agent(String),
    Resume(String),
    Fork,
    /// `/permission` shows the preset; `/permission NAME` switches it.
    Permission(Option<PermissionPreset>),
    /// Starts a new session.
    Clear,
    /// Summarizes older history into a checkpoint now (idle agent only).
    Compact,
    /// `/goal [<objective>|clear|edit <objective>|pause|resume]`, its raw arguments.
    Goal(String),
    /// `/plan` toggles plan mode; `/plan on` and `/plan off` set it.
    Plan(Option<bool>),
    /// `/search [WORDS]`: the search picker over this workspace's sessions.
    Search(String),
    Quit,
}

/// Why a line starting with `/` is not a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlashError {
    #[error("unknown command /{0}; /help lists the commands")]
    Unknown(String),
    #[error("Usage: {0}")]
    Usage(&'static str),
    #[error(
        "unknown permission preset {0:?}; choose read-only, workspace-write or danger-full-access"
    )]
    Preset(String),
}

impl SlashError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unknown(_) => "UNKNOWN_COMMAND",
            Self::Usage(_) => "COMMAND_USAGE",
            Self::Preset(_) => "UNKNOWN_PRESET",
        }
    }
}

/// What a submitted line is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// A prompt for the agent. `//text` escapes a prompt that starts with `/`.
    Prompt(String),
    Command(Result<SlashCommand, SlashError>),
}

/// Tells prompts from commands.
pub fn classify(line: &str) -> Submitted {
    let trimmed = line.trim();
    if let Some(escaped) = trimmed.strip_prefix("//") {
        return Submitted::Prompt(format!("/{escaped}"));
    }
    match trimmed.strip_prefix('/') {
        Some(command) if !command.is_empty() && !command.starts_with(char::is_whitespace) => {
            Submitted::Command(parse(command))
        }
        _ => Submitted::Prompt(line.to_owned()),
    }
}

fn parse(command: &str) -> Result<SlashCommand, SlashError> {
    let mut words = command.split_whitespace();
    let name = words.next().unwrap_or_default();
    let arg = words.next().map(str::to_owned);
    let extra = words.next().is_some();
    let no_args = |command: SlashCommand, usage| {
        if arg.is_some() {
            Err(SlashError::Usage(usage))
        } else {
            Ok(command)
        }
    };
    match name {
        "help" | "?" => no_args(SlashCommand::Help, "/help"),
        "model" if !extra => Ok(SlashCommand::Model(arg)),
        "model" => Err(SlashError::Usage("/model [NAME]")),
        "sessions" => no_args(SlashCommand::Sessions, "/sessions"),
        "agents" => match (arg, extra) {
            (None, _) => Ok(SlashCommand::Agents),
            (Some(id), false) => Ok(SlashCommand::Agent(id)),
            (Some(_), true) => Err(SlashError::Usage("/agents [ID]")),
        },
        "resume" => match (arg, extra) {
            // Without an id, the session picker.
            (None, _) => Ok(SlashCommand::Sessions),
            (Some(id), false) => Ok(SlashCommand::Resume(id)),
            (Some(_), true) => Err(SlashError::Usage("/resume [SESSION_ID]")),
        },
        "fork" => no_args(SlashCommand::Fork, "/fork"),
        "permission" | "permissions" => match (arg, extra) {
            (None, _) => Ok(SlashCommand::Permission(None)),
            (Some(name), false) => preset(&name).map(|p| SlashCommand::Permission(Some(p))),
            (Some(_), true) => Err(SlashError::Usage("/permission [PRESET]")),
        },
        "clear" | "new" => no_args(SlashCommand::Clear, "/clear"),
        "compact" => no_args(SlashCommand::Compact, "/compact (no arguments)"),
        "goal" => Ok(SlashCommand::Goal(command[name.len()..].trim().to_owned())),
        "search" => Ok(SlashCommand::Search(
            command[name.len()..].trim().to_owned(),
        )),
        "plan" => match (arg.as_deref(), extra) {
            (None, _) => Ok(SlashCommand::Plan(None)),
            (Some("on"), false) => Ok(SlashCommand::Plan(Some(true))),
            (Some("off"), false) => Ok(SlashCommand::Plan(Some(false))),
            _ => Err(SlashError::Usage("/plan [on|off]")),
        },
        "quit" | "exit" => no_args(SlashCommand::Quit, "/quit"),
        other => Err(SlashError::Unknown(other.to_owned())),
    }
}

fn preset(name: &str) -> Result<PermissionPreset, SlashError> {
    name.parse()
        .map_err(|_| SlashError::Preset(name.to_owned()))
}

/// The `/help` text, one entry per line.
pub const HELP: &[&str] = &[
    "commands:",
    "  /help               this list",
    "  /model [NAME]       choose the model from a list, or switch to NAME (next step)",
    "  /sessions           choose one of this workspace's sessions to resume",
    "  /resume [ID]        continue a session (the list without an ID)",
    "  /agents [ID]        list this session's subagents, or show one's transcript",
    "  /search [WORDS]     search this workspace's sessions; resume or fork from a hit",
    "  /fork               fork this session and continue in the copy",
    "  /permission [NAME]  choose or switch: read-only, workspace-write, danger-full-access",
    "  /clear              start a new session",
    "  /compact            summarize older history now to free context (agent idle)",
    "  /goal [OBJECTIVE|pause|resume|clear|edit TEXT]  work toward OBJECTIVE round after round",
    "  /plan [on|off]      plan mode: read-only until you approve a plan (Shift-Tab toggles)",
    "  /quit               leave (Ctrl-C twice does too)",
    "keys:",
    "  Enter    send; while the agent works, steer it (read at its next step)",
    "  Tab      queue a follow-up for after the current turn",
    "  Shift-Tab  switch plan mode on or off",
    "  Esc      cancel the running turn or /compact; queued input stays (Enter on an empty",
    "           line sends it)",
    "  Up/Down  move between lines; on the first/last line, recall earlier prompts",
    "  Ctrl-R   search earlier prompts (Ctrl-R again: older; Enter keeps; Esc cancels)",
    "  Ctrl-J   new line in the prompt (also Shift-Enter or Alt-Enter, or \\ then Enter)",
    "  Ctrl-A/E start/end of the line; Alt-B/F a word back/forward",
    "  Ctrl-W   delete the word before; Alt-D the word after; Ctrl-U/K to line start/end",
    "  @path    complete a workspace file (Tab or Enter inserts it, Up/Down choose)",
    "  @session:  reference an earlier session by title (completes to @session:ID)",
    "  !cmd     run cmd in the workspace sandbox; its output is shown, not sent",
    "  Esc Esc  on an empty line: fork from before your last prompt and edit it",
    "  Ctrl-T   show or hide the model's thinking",
    "  Ctrl-O   show or hide compaction summaries (shows the latest one again)",
    "  //text   send a prompt that starts with /",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn command(line: &str) -> Result<SlashCommand, SlashError> {
        match classify(line) {
            Submitted::Command(command) => command,
            Submitted::Prompt(text) => Err(SlashError::Unknown(format!("prompt {text}"))),
        }
    }

    #[test]
    fn plan_toggles_or_sets() {
        assert_eq!(command("/plan"), Ok(SlashCommand::Plan(None)));
        assert_eq!(command("/plan on"), Ok(SlashCommand::Plan(Some(true))));
        assert_eq!(command("/plan off"), Ok(SlashCommand::Plan(Some(false))));
        assert_eq!(
            command("/plan maybe"),
            Err(SlashError::Usage("/plan [on|off]"))
        );
    }

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(command("/help"), Ok(SlashCommand::Help));
        assert_eq!(command(" /model "), Ok(SlashCommand::Model(None)));
        assert_eq!(
            command("/model deepseek-v4-pro"),
            Ok(SlashCommand::Model(Some("deepseek-v4-pro".into())))
        );
        assert_eq!(
            command("/resume session-7"),
            Ok(SlashCommand::Resume("session-7".into()))
        );
        assert_eq!(
            command("/permission read-only"),
            Ok(SlashCommand::Permission(Some(PermissionPreset::ReadOnly)))
        );
        assert_eq!(command("/clear"), Ok(SlashCommand::Clear));
        assert_eq!(command("/agents"), Ok(SlashCommand::Agents));
        assert_eq!(
            command("/agents 1a2b"),
            Ok(SlashCommand::Agent("1a2b".into()))
        );
        assert_eq!(
            command("/agents a b"),
            Err(SlashError::Usage("/agents [ID]"))
        );
        assert_eq!(command("/compact"), Ok(SlashCommand::Compact));
        assert_eq!(command("/quit"), Ok(SlashCommand::Quit));
        // `/goal` keeps its whole argument text: the objective is free text.
        assert_eq!(command("/goal"), Ok(SlashCommand::Goal(String::new())));
        assert_eq!(
            command("/goal  Make  the tests pass "),
            Ok(SlashCommand::Goal("Make  the tests pass".into()))
        );
        assert_eq!(
            command("/goal pause"),
            Ok(SlashCommand::Goal("pause".into()))
        );
    }

    #[test]
    fn bad_commands_say_why() {
        assert_eq!(command("/resume"), Ok(SlashCommand::Sessions));
        assert_eq!(
            command("/resume a b"),
            Err(SlashError::Usage("/resume [SESSION_ID]"))
        );
        assert_eq!(command("/fork now"), Err(SlashError::Usage("/fork")));
        assert_eq!(
            command("/compact everything"),
            Err(SlashError::Usage("/compact (no arguments)"))
        );
        assert_eq!(
            SlashError::Usage("/compact (no arguments)").to_string(),
            "Usage: /compact (no arguments)"
        );
        assert_eq!(
            command("/frobnicate"),
            Err(SlashError::Unknown("frobnicate".into()))
        );
        assert_eq!(
            command("/permission yolo"),
            Err(SlashError::Preset("yolo".into()))
        );
    }

    #[test]
    fn prompts_are_not_commands() {
        assert_eq!(classify("fix it"), Submitted::Prompt("fix it".into()));
        assert_eq!(
            classify("//etc/hosts is odd"),
            Submitted::Prompt("/etc/hosts is odd".into())
        );
        assert_eq!(classify("/ spaced"), Submitted::Prompt("/ spaced".into()));
    }
}
