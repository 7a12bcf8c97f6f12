//! A harness agent core with the jobs plugin, a `start_job` tool whose jobs the test settles
//! by hand, and a one-line-per-event digest of a whole log.

use dsh_jobs::{JobHandle, JobKind, JobOutcome, JobRegistry, JobTicket, JobsConfig, JobsPlugin};
use dsh_testkit::harness::Harness;
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Slot = Arc<Mutex<Option<JobTicket>>>;

/// The tickets of the jobs `start_job` started, by id.
#[derive(Clone, Default)]
pub struct Jobs {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Jobs {
    /// Settles job `id` as its runner would.
    pub fn settle(&self, id: &str, outcome: JobOutcome) -> bool {
        let slot = self.slots.lock().unwrap().get(id).cloned().unwrap();
        let ticket = slot.lock().unwrap().take().unwrap();
        ticket.settle(outcome)
    }

    pub fn append(&self, id: &str, bytes: &[u8]) {
        let slot = self.slots.lock().unwrap().get(id).cloned().unwrap();
        slot.lock().unwrap().as_ref().unwrap().append_output(bytes);
    }

    pub fn done(code: i32) -> JobOutcome {
        JobOutcome::Completed {
            detail: Some(format!("exit code: {code}")),
            output: None,
        }
    }
}

/// Stops a job by settling it killed, as a bash runner does once the group is gone.
struct SlotHandle(Slot);

impl JobHandle for SlotHandle {
    fn kill(&self) -> BoxFuture<'static, ()> {
        if let Some(ticket) = self.0.lock().unwrap().take() {
            ticket.settle(JobOutcome::Killed {
                detail: Some("signal: SIGTERM".into()),
            });
        }
        Box::pin(async {})
    }
}

struct StartJob(Jobs);

impl Tool for StartJob {
    fn name(&self) -> &str {
        "start_job"
    }
    fn description(&self) -> String {
        "Start a background job.".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
    }
    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let caller = exec.caller().unwrap();
            let registry = caller.ctx().get::<JobRegistry>().unwrap();
            let slot: Slot = Arc::default();
            let label = args["label"].as_str().unwrap_or_default().to_owned();
            let ticket = registry
                .start(
                    caller.agent(),
                    JobKind::Bash,
                    label,
                    Arc::new(SlotHandle(slot.clone())),
                )
                .map_err(|e| ToolFailure::coded("JobError", e.code(), e.to_string()))?;
            let id = ticket.id().to_string();
            *slot.lock().unwrap() = Some(ticket);
            self.0.slots.lock().unwrap().insert(id.clone(), slot);
            Ok(json!(format!("started background job {id}")))
        })
    }
}

/// A harness with `jobs` (config `config`) and `start_job` mounted.
pub fn harness(
    builder: dsh_testkit::harness::HarnessBuilder,
    config: Value,
) -> (Harness, Jobs, Arc<JobRegistry>) {
    let jobs = Jobs::default();
    let h = builder
        .custom_tool(Arc::new(StartJob(jobs.clone())))
        .build();
    let config: JobsConfig = serde_json::from_value(config).unwrap();
    h.ctx().plugin::<JobsPlugin>(config).unwrap();
    let registry = h.ctx().require::<JobRegistry>().unwrap();
    (h, jobs, registry)
}

fn texts(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| match b["type"].as_str() {
            Some("text") => b["text"].as_str().unwrap_or_default().to_owned(),
            Some("tool-call") => format!(
                "call {}({})",
                b["name"].as_str().unwrap_or_default(),
                b["arguments"].as_str().unwrap_or_default()
            ),
            Some("tool-result") => format!("result {}", texts(&b["content"])),
            other => format!("<{}>", other.unwrap_or("?")),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn message(m: &Value) -> String {
    let source = match m["source"]["kind"].as_str() {
        Some("plugin") => format!(
            "plugin:{}",
            m["source"]["plugin"].as_str().unwrap_or_default()
        ),
        Some(kind) => kind.to_owned(),
        None => "?".into(),
    };
    format!("{source}: {}", texts(&m["content"]))
}

/// Every event of a whole log as one line (chunks, headers and snapshots reduced to their type).
pub fn digest(log: &Value) -> Vec<String> {
    let lines: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or_default();
            let d = &e["data"];
            match t {
                "turn/start" => format!("turn/start {}", d["turn"]),
                "turn/end" => format!(
                    "turn/end {} {}",
                    d["turn"],
                    d["reason"]["kind"].as_str().unwrap_or_default()
                ),
                "step/start" | "step/end" => format!("{t} {}.{}", d["turn"], d["step"]),
                "agent/inbox/spliced" => {
                    let inserted: Vec<String> = d["inserted"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(message)
                        .collect();
                    if inserted.is_empty() {
                        format!(
                            "inbox {} -{}",
                            d["target"].as_str().unwrap_or_default(),
                            d["removedCount"]
                        )
                    } else {
                        format!(
                            "inbox {} + {}",
                            d["target"].as_str().unwrap_or_default(),
                            inserted.join(" ; ")
                        )
                    }
                }
                "user/message" => format!("user/message {}", message(d)),
                "assistant/message" | "tool/result" => format!("{t} {}", message(&d["message"])),
                "tool/call" => format!(
                    "tool/call {}({})",
                    d["name"].as_str().unwrap_or_default(),
                    d["arguments"].as_str().unwrap_or_default()
                ),
                other => other.to_owned(),
            }
        })
        .collect();
    // A run of chunk events reads as one line.
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        if line == "assistant/chunk" && out.last().is_some_and(|l| l.starts_with("assistant/chunk"))
        {
            continue;
        }
        out.push(line);
    }
    out
}

/// `user/message` of the notice for job `id` (`kind: label`) settled with `status`.
pub fn notice(id: &str, label: &str, status: &str) -> String {
    format!("background job {id} (bash: {label}) finished [status: {status}]. Read its output with job_output.")
}

/// One scripted model step and its log lines: chunks, the assistant message.
pub fn said(text: &str) -> Vec<String> {
    vec![
        "assistant/chunk".into(),
        format!("assistant/message model: {text}"),
    ]
}

/// A step that calls `name(args)` and gets `result`.
pub fn called(name: &str, args: &str, result: &str) -> Vec<String> {
    vec![
        "assistant/chunk".into(),
        format!("assistant/message model: call {name}({args})"),
        format!("tool/call {name}({args})"),
        format!("tool/result tool: result {result}"),
    ]
}

/// Lines, flattened.
pub fn lines(parts: Vec<Vec<String>>) -> Vec<String> {
    parts.into_iter().flatten().collect()
}

pub fn l(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}
