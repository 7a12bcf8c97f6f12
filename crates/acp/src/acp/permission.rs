//! Approval questions as `session/request_permission`: the session's approval flow decides
//! when to ask (policy, rules, sandbox escalations); the client only answers.

use super::session::lock;
use super::tools;
use super::updates::Translator;
use crate::rpc::Peer;
use dsh_protocol::SessionId;
use dsh_tools_builtin::approval::{ApprovalAnswerer, ApprovalDecision, ApprovalQuestion};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

pub const ALLOW_ONCE: &str = "allow-once";
pub const ALLOW_ALWAYS: &str = "allow-always";
pub const REJECT_ONCE: &str = "reject-once";

/// Puts one ACP session's approval questions to its client.
pub struct AcpAnswerer {
    peer: Peer,
    session: SessionId,
    translator: Arc<Mutex<Translator>>,
}

impl AcpAnswerer {
    pub fn new(peer: Peer, session: SessionId, translator: Arc<Mutex<Translator>>) -> Self {
        Self {
            peer,
            session,
            translator,
        }
    }

    /// The request's params: the tool call as the client already saw it (title, kind,
    /// arguments, files, diff) plus why dsh asks, and the choices.
    pub fn params(&self, question: &ApprovalQuestion) -> Value {
        let call = lock(&self.translator)
            .call(question.call_id.as_str())
            .cloned();
        let (tool, args) = call.unwrap_or_else(|| (question.tool.clone(), Value::Null));
        let mut why = question.summary.clone();
        if let Some(reason) = &question.reason {
            why.push_str(&format!("\n\n{reason}"));
        }
        let mut tool_call = json!({
            "toolCallId": question.call_id.as_str(),
            "title": tools::title(&tool, &args),
            "kind": tools::kind(&tool),
            "status": "pending",
            "rawInput": args,
            "content": [tools::text_content(why)],
        });
        let root = self.root();
        if let Some(diff) = tools::diff(&tool, &args, &root) {
            tool_call["content"] = json!([diff, tools::text_content(question.summary.clone())]);
        }
        let locations = tools::locations(&tool, &args, &root);
        if !locations.is_empty() {
            tool_call["locations"] = Value::Array(locations);
        }
        let mut options =
            vec![json!({"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"})];
        if let Some(grant) = &question.grant {
            options.push(json!({
                "optionId": ALLOW_ALWAYS,
                "name": format!("Allow for this session ({})", grant_label(grant)),
                "kind": "allow_always",
            }));
        }
        options.push(json!({"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"}));
        json!({ "sessionId": self.session.as_str(), "toolCall": tool_call, "options": options })
    }

    fn root(&self) -> std::path::PathBuf {
        lock(&self.translator).root().to_path_buf()
    }
}

fn grant_label(grant: &dsh_tools_builtin::approval::SessionGrant) -> String {
    serde_json::to_value(grant)
        .ok()
        .and_then(|v| {
            v.as_object().map(|o| {
                o.values()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "calls like this".into())
}

/// The client's answer as a decision: only `allow-once` and `allow-always` let the call run.
pub fn decision(answer: Result<Value, crate::rpc::RpcError>) -> ApprovalDecision {
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            return ApprovalDecision::Deny {
                feedback: Some(format!("the editor did not answer: {}", error.message)),
            }
        }
    };
    let outcome = &answer["outcome"];
    match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
        (Some("selected"), Some(ALLOW_ONCE)) => ApprovalDecision::AllowOnce,
        (Some("selected"), Some(ALLOW_ALWAYS)) => ApprovalDecision::AllowForSession,
        (Some("cancelled"), _) => ApprovalDecision::Deny {
            feedback: Some("the editor cancelled the permission request".into()),
        },
        _ => ApprovalDecision::Deny { feedback: None },
    }
}

impl ApprovalAnswerer for AcpAnswerer {
    fn answer(&self, question: ApprovalQuestion) -> BoxFuture<'_, ApprovalDecision> {
        Box::pin(async move {
            let params = self.params(&question);
            // Waits as long as the person takes; a cancelled turn drops this future (and
            // the reply slot with it).
            decision(
                self.peer
                    .request("session/request_permission", params)
                    .await,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::RpcError;

    #[test]
    fn answers_map_to_decisions() {
        let selected = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        assert_eq!(decision(selected(ALLOW_ONCE)), ApprovalDecision::AllowOnce);
        assert_eq!(
            decision(selected(ALLOW_ALWAYS)),
            ApprovalDecision::AllowForSession
        );
        assert_eq!(
            decision(selected(REJECT_ONCE)),
            ApprovalDecision::Deny { feedback: None }
        );
        assert_eq!(
            decision(selected("other")),
            ApprovalDecision::Deny { feedback: None }
        );
        assert!(matches!(
            decision(Ok(json!({"outcome": {"outcome": "cancelled"}}))),
            ApprovalDecision::Deny { feedback: Some(_) }
        ));
        assert!(matches!(
            decision(Err(RpcError::internal("gone"))),
            ApprovalDecision::Deny { feedback: Some(_) }
        ));
        assert_eq!(
            decision(Ok(json!(42))),
            ApprovalDecision::Deny { feedback: None }
        );
    }
}
