//! What a killed run does: the short tool turn, or a long reading turn that compacts.

use super::super::run_support::Sandbox;
use super::checks::Layout;
use super::process::KillPoint;
use super::{tool_turn_script, workspace, Profiles};
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use serde_json::json;

/// What the killed run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// A short turn of shell and file tools.
    Tools,
    /// A long reading turn under a small context window: several compactions.
    Compaction,
}

/// Steps of the compaction scenario's turn.
pub const LONG_TURN_STEPS: usize = 24;
/// The window the compaction scenario gives its model.
const SMALL_WINDOW: u64 = 9_000;

impl Scenario {
    pub fn script(self) -> Script {
        match self {
            Self::Tools => tool_turn_script(),
            Self::Compaction => long_turn_script(),
        }
    }

    pub fn prompt(self) -> &'static str {
        match self {
            Self::Tools => "look around",
            Self::Compaction => "read every note",
        }
    }

    /// A fresh workspace for one run of this scenario.
    pub fn workspace(self, layout: Layout) -> Sandbox {
        let sandbox = workspace(layout);
        if self == Self::Compaction {
            for n in 0..LONG_TURN_STEPS {
                let line = format!("note {n}: lorem ipsum dolor sit amet, consectetur elit. ");
                std::fs::write(
                    sandbox.cwd.path().join(format!("note{n}.txt")),
                    line.repeat(28),
                )
                .unwrap();
            }
            let path = sandbox.home.path().join("settings.toml");
            let mut settings = std::fs::read_to_string(&path).unwrap_or_default();
            settings.push_str(&format!(
                "[[providers.openai-compatible.models]]\nid = {:?}\ncontext_window = {SMALL_WINDOW}\n",
                dsh_cli::config::DEFAULT_MODEL
            ));
            std::fs::write(path, settings).unwrap();
        }
        sandbox
    }

    /// Where to kill the first run: anywhere (tools), or mostly at a compaction.
    pub fn kill_point(self, rng: &mut fastrand::Rng, profiles: &Profiles) -> KillPoint {
        match self {
            Self::Tools => KillPoint::pick(rng, &profiles.first),
            Self::Compaction => match rng.u8(0..5) {
                0 => KillPoint::pick(rng, &profiles.first),
                1 | 2 if !profiles.summary_requests.is_empty() => {
                    let at =
                        profiles.summary_requests[rng.usize(..profiles.summary_requests.len())];
                    KillPoint::AtRequest(at, std::time::Duration::from_micros(rng.u64(0..25_000)))
                }
                _ => {
                    let at =
                        profiles.compaction_lines[rng.usize(..profiles.compaction_lines.len())];
                    KillPoint::AtLine(at, std::time::Duration::from_micros(rng.u64(0..2_000)))
                }
            },
        }
    }
}

/// The compaction scenario's turn: read `note0.txt` .. `note23.txt`, then answer; summary
/// requests (recognised by the summariser's instruction) get a paced, streamed summary.
fn long_turn_script() -> Script {
    let mut script = Script::new().rule(
        RuleMatch::any().last_message_contains("Your job now is to compact the conversation"),
        Reply::text("## Primary Request and Intent\n- read every note\n## Current Work\n- reading")
            .chunks(6)
            .delay_ms(3),
    );
    for n in 0..LONG_TURN_STEPS {
        script = script.respond(
            Reply::tool_call("read", json!({"file_path": format!("note{n}.txt")}))
                .arg_chunks(2)
                .delay_ms(1),
        );
    }
    script.respond(Reply::text("All notes read.").chunks(3).delay_ms(2))
}
