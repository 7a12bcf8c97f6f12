//! A harness with the hooks plugin mounted over hook files written for the test.

use dsh_hooks::{Dialect, HookSource, HooksConfig, HooksPlugin, SourceScope};
use dsh_session::SessionEvent;
use dsh_testkit::harness::{Harness, ScriptedTool};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::ScriptEntry;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

pub struct HookFiles {
    pub dir: tempfile::TempDir,
    pub sources: Vec<HookSource>,
}

impl HookFiles {
    pub fn new() -> Self {
        dsh_session::register_event_types(dsh_hooks::EVENT_TYPES).unwrap();
        Self {
            dir: tempfile::tempdir().unwrap(),
            sources: Vec::new(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Adds a file holding `json` in `dialect`.
    pub fn file(mut self, name: &str, dialect: Dialect, json: &str) -> Self {
        let path = self.path(name);
        std::fs::write(&path, json).unwrap();
        self.sources.push(HookSource {
            path,
            dialect,
            scope: SourceScope::User,
        });
        self
    }

    pub fn claude(self, json: &str) -> Self {
        self.file("settings.json", Dialect::ClaudeCode, json)
    }

    pub fn config(&self) -> HooksConfig {
        HooksConfig {
            sources: self.sources.clone(),
            project_dir: Some(self.dir.path().to_path_buf()),
            ..HooksConfig::default()
        }
    }
}

/// A harness with tools `bash` and `edit` (scripted) and the hooks plugin over `files`.
pub fn harness(
    files: &HookFiles,
    config: HooksConfig,
    script: impl IntoIterator<Item = ScriptEntry>,
) -> Harness {
    let _ = files;
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("bash"), ScriptedTool::new("edit")])
        .script(script)
        .build();
    h.ctx().plugin::<HooksPlugin>(config).unwrap();
    h
}

/// The log as lines: the outline, with `hook/*` records as their data (duration zeroed).
pub fn log_lines(events: &[Arc<SessionEvent>]) -> Vec<String> {
    let lines = outline(events);
    events
        .iter()
        .zip(lines)
        .filter(|(_, line)| {
            !line.starts_with("request/")
                && !line.starts_with("chunk")
                && !line.starts_with("splice")
                && line != "step/usage"
        })
        .map(|(event, line)| {
            let json = serde_json::to_value(event.as_ref()).unwrap();
            let kind = json["type"].as_str().unwrap_or("").to_owned();
            if kind.starts_with("hook/") {
                let mut data = json["data"].clone();
                if data.get("durationMs").is_some() {
                    data["durationMs"] = Value::from(0);
                }
                format!("{kind} {data}")
            } else {
                line.split(" cites ").next().unwrap_or_default().to_owned()
            }
        })
        .collect()
}
