//! The goal vocabulary: snapshots, the durable `goal/change` record, views and errors.
//!
//! Shapes and key order follow the original's log format exactly, so sessions it wrote with
//! goals load and continue here, and ours load there.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::fmt;

/// The `version` every `goal/change` carries.
pub const GOAL_CHANGE_VERSION: u64 = 1;

/// A goal's durable phase. Whether rounds may start now is [`Activation`], never logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalPhase {
    Active,
    Paused,
    Blocked,
    Complete,
}

impl GoalPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Blocked => "blocked",
            Self::Complete => "complete",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "active" => Self::Active,
            "paused" => Self::Paused,
            "blocked" => Self::Blocked,
            "complete" => Self::Complete,
            _ => return None,
        })
    }
}

impl fmt::Display for GoalPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether this process may start the next round by itself. Process-local: every
/// session start (new, resumed, forked) begins `Disarmed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Armed,
    Disarmed,
}

impl Activation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Armed => "armed",
            Self::Disarmed => "disarmed",
        }
    }
}

/// Why a goal is blocked: a lower-kebab-case `code` and a trimmed, non-empty `message`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockReason {
    pub code: String,
    pub message: String,
}

impl BlockReason {
    /// Checks and normalizes a reason (the message is trimmed).
    pub fn new(code: &str, message: &str) -> Result<Self, GoalError> {
        let message = message.trim();
        if !is_lower_kebab(code) || message.is_empty() {
            return Err(GoalError::InvalidBlockReason);
        }
        Ok(Self {
            code: code.to_owned(),
            message: message.to_owned(),
        })
    }
}

/// Compare-and-set identity of one goal revision.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalRef {
    pub id: String,
    pub revision: u64,
}

/// The whole durable state of a goal, as every non-clear `goal/change` writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalSnapshot {
    pub id: String,
    pub revision: u64,
    pub objective: String,
    pub phase: GoalPhase,
    pub max_goal_rounds: u64,
    /// Present exactly while the phase is `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<BlockReason>,
}

impl GoalSnapshot {
    pub fn reference(&self) -> GoalRef {
        GoalRef {
            id: self.id.clone(),
            revision: self.revision,
        }
    }
}

/// The operation a `goal/change` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalOperation {
    Create,
    Edit,
    Pause,
    Resume,
    Complete,
    Block,
    Clear,
}

impl GoalOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Edit => "edit",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Complete => "complete",
            Self::Block => "block",
            Self::Clear => "clear",
        }
    }

    fn parse_snapshot(word: &str) -> Option<Self> {
        Some(match word {
            "create" => Self::Create,
            "edit" => Self::Edit,
            "pause" => Self::Pause,
            "resume" => Self::Resume,
            "complete" => Self::Complete,
            "block" => Self::Block,
            _ => return None,
        })
    }
}

impl fmt::Display for GoalOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The payload of one `goal/change` event (log-only). Decoding is strict: exact key sets,
/// version 1, positive revisions and caps, normalized text; anything else is refused, on
/// append and on replay alike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum GoalChange {
    /// Every operation but `clear`: the whole post-change state.
    Snapshot {
        operation: GoalOperation,
        goal: GoalSnapshot,
        rounds_started: u64,
        created_at: u64,
        updated_at: u64,
    },
    /// `clear`: a tombstone one revision past the cleared goal.
    Clear { cleared: GoalRef, cleared_at: u64 },
}

impl GoalChange {
    pub fn operation(&self) -> GoalOperation {
        match self {
            Self::Snapshot { operation, .. } => *operation,
            Self::Clear { .. } => GoalOperation::Clear,
        }
    }

    /// The revision identity the change carries (the tombstone's for a clear).
    pub fn reference(&self) -> GoalRef {
        match self {
            Self::Snapshot { goal, .. } => goal.reference(),
            Self::Clear { cleared, .. } => cleared.clone(),
        }
    }
}

impl dsh_session::PluginEvent for GoalChange {
    const TYPE: &'static str = "goal/change";
}

impl From<GoalChange> for Value {
    fn from(change: GoalChange) -> Value {
        match change {
            GoalChange::Snapshot {
                operation,
                goal,
                rounds_started,
                created_at,
                updated_at,
            } => json!({
                "kind": "goal/change",
                "version": GOAL_CHANGE_VERSION,
                "operation": operation.as_str(),
                "goal": goal,
                "roundsStarted": rounds_started,
                "createdAt": created_at,
                "updatedAt": updated_at,
            }),
            GoalChange::Clear {
                cleared,
                cleared_at,
            } => json!({
                "kind": "goal/change",
                "version": GOAL_CHANGE_VERSION,
                "operation": "clear",
                "cleared": cleared,
                "clearedAt": cleared_at,
            }),
        }
    }
}

impl TryFrom<Value> for GoalChange {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, String> {
        let record = value.as_object().ok_or("goal change must be a record")?;
        if record.get("kind").and_then(Value::as_str) != Some("goal/change") {
            return Err("goal change kind must be \"goal/change\"".into());
        }
        if record.get("version").and_then(Value::as_u64) != Some(GOAL_CHANGE_VERSION) {
            return Err(format!(
                "unsupported goal change version {}",
                record.get("version").unwrap_or(&Value::Null)
            ));
        }
        let operation = record
            .get("operation")
            .and_then(Value::as_str)
            .ok_or("goal change operation is invalid")?;
        if operation == "clear" {
            exact_keys(
                record,
                &["cleared", "clearedAt", "kind", "operation", "version"],
                "goal clear change",
            )?;
            let cleared = record.get("cleared").ok_or("goal clear lacks cleared")?;
            let cleared_record = cleared
                .as_object()
                .ok_or("goal clear tombstone must have exactly id and revision fields")?;
            exact_keys(cleared_record, &["id", "revision"], "goal clear tombstone")?;
            let id = non_empty_string(cleared_record.get("id"), "cleared.id")?;
            let revision = positive(cleared_record.get("revision"), "cleared.revision")?;
            return Ok(Self::Clear {
                cleared: GoalRef { id, revision },
                cleared_at: non_negative(record.get("clearedAt"), "clearedAt")?,
            });
        }
        let operation =
            GoalOperation::parse_snapshot(operation).ok_or("goal change operation is invalid")?;
        exact_keys(
            record,
            &[
                "createdAt",
                "goal",
                "kind",
                "operation",
                "roundsStarted",
                "updatedAt",
                "version",
            ],
            "goal snapshot change",
        )?;
        let created_at = non_negative(record.get("createdAt"), "createdAt")?;
        let updated_at = non_negative(record.get("updatedAt"), "updatedAt")?;
        if updated_at < created_at {
            return Err("goal change updatedAt cannot precede createdAt".into());
        }
        Ok(Self::Snapshot {
            operation,
            goal: decode_snapshot(record.get("goal").unwrap_or(&Value::Null))?,
            rounds_started: non_negative(record.get("roundsStarted"), "roundsStarted")?,
            created_at,
            updated_at,
        })
    }
}

fn decode_snapshot(value: &Value) -> Result<GoalSnapshot, String> {
    let record = value
        .as_object()
        .ok_or("goal change goal must be a record")?;
    let id = non_empty_string(record.get("id"), "goal.id")?;
    let objective = record
        .get("objective")
        .and_then(Value::as_str)
        .filter(|o| !o.trim().is_empty() && o.trim() == *o)
        .ok_or("goal change goal.objective must be non-empty and normalized")?
        .to_owned();
    let phase = record
        .get("phase")
        .and_then(Value::as_str)
        .and_then(GoalPhase::parse)
        .ok_or("goal change goal.phase is invalid")?;
    let mut keys = vec!["id", "maxGoalRounds", "objective", "phase", "revision"];
    if phase == GoalPhase::Blocked {
        keys.push("blockedReason");
    }
    exact_keys(record, &keys, "goal change goal")?;
    let blocked_reason = match record.get("blockedReason") {
        None => None,
        Some(reason) => Some(decode_block_reason(reason)?),
    };
    Ok(GoalSnapshot {
        id,
        revision: positive(record.get("revision"), "goal.revision")?,
        objective,
        phase,
        max_goal_rounds: positive(record.get("maxGoalRounds"), "goal.maxGoalRounds")?,
        blocked_reason,
    })
}

fn decode_block_reason(value: &Value) -> Result<BlockReason, String> {
    let record = value
        .as_object()
        .ok_or("goal change goal.blockedReason must be a record")?;
    exact_keys(
        record,
        &["code", "message"],
        "goal change goal.blockedReason",
    )?;
    let code = record
        .get("code")
        .and_then(Value::as_str)
        .filter(|c| is_lower_kebab(c))
        .ok_or("goal change goal.blockedReason.code must be lower-kebab-case")?;
    let message = record
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty() && m.trim() == *m)
        .ok_or("goal change goal.blockedReason.message must be non-empty and normalized")?;
    Ok(BlockReason {
        code: code.to_owned(),
        message: message.to_owned(),
    })
}

fn exact_keys(record: &Map<String, Value>, keys: &[&str], what: &str) -> Result<(), String> {
    if record.len() == keys.len() && keys.iter().all(|k| record.contains_key(*k)) {
        return Ok(());
    }
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    Err(format!(
        "{what} must have exactly {} fields",
        sorted.join(",")
    ))
}

fn non_empty_string(value: Option<&Value>, field: &str) -> Result<String, String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("goal change {field} must be a non-empty string"))
}

/// JavaScript's safe-integer bound: the original writes numbers through `JSON.stringify`.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

fn positive(value: Option<&Value>, field: &str) -> Result<u64, String> {
    value
        .and_then(Value::as_u64)
        .filter(|n| (1..=MAX_SAFE_INTEGER).contains(n))
        .ok_or_else(|| format!("goal change {field} must be a positive safe integer"))
}

fn non_negative(value: Option<&Value>, field: &str) -> Result<u64, String> {
    value
        .and_then(Value::as_u64)
        .filter(|n| *n <= MAX_SAFE_INTEGER)
        .ok_or_else(|| format!("goal change {field} must be a non-negative safe integer"))
}

/// `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`
pub(crate) fn is_lower_kebab(code: &str) -> bool {
    let mut chars = code.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_lowercase()) {
        return false;
    }
    !code.ends_with('-')
        && !code.contains("--")
        && code
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Checks a caller's round cap (positive, safe).
pub(crate) fn check_max_rounds(value: u64) -> Result<u64, GoalError> {
    if (1..=MAX_SAFE_INTEGER).contains(&value) {
        Ok(value)
    } else {
        Err(GoalError::InvalidMaxRounds)
    }
}

/// Checks and trims an objective.
pub(crate) fn check_objective(value: &str) -> Result<String, GoalError> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(GoalError::InvalidObjective);
    }
    Ok(trimmed.to_owned())
}

/// The current goal as callers see it: the durable snapshot, its counters and the
/// process-local activation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoalView {
    pub goal: GoalSnapshot,
    pub rounds_started: u64,
    pub created_at: u64,
    pub updated_at: u64,
    pub activation: Activation,
}

impl GoalView {
    pub fn reference(&self) -> GoalRef {
        self.goal.reference()
    }

    /// Active and armed: the driver starts the next round when the agent goes idle.
    pub fn is_running(&self) -> bool {
        self.goal.phase == GoalPhase::Active && self.activation == Activation::Armed
    }

    /// The compact value the goal tools return (`{goal:{…}, activation}`).
    pub fn tool_value(&self) -> Value {
        let mut goal = json!({
            "id": self.goal.id,
            "revision": self.goal.revision,
            "objective": self.goal.objective,
            "phase": self.goal.phase.as_str(),
            "roundsStarted": self.rounds_started,
            "maxGoalRounds": self.goal.max_goal_rounds,
        });
        if let (Some(reason), Some(map)) = (&self.goal.blocked_reason, goal.as_object_mut()) {
            map.insert(
                "blockedReason".into(),
                json!({"code": reason.code, "message": reason.message}),
            );
        }
        json!({"goal": goal, "activation": self.activation.as_str()})
    }
}

/// What the goal domain refuses, with the original's stable codes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GoalError {
    #[error("agent \"{0}\" is not live in this registry")]
    AgentNotLive(String),
    #[error("maxGoalRounds must be a positive safe integer")]
    InvalidMaxRounds,
    #[error("goal objective must be a non-empty string")]
    InvalidObjective,
    #[error("goal block reason requires a lower-kebab-case code and a non-empty message")]
    InvalidBlockReason,
    #[error("goal \"{id}\" already exists with phase \"{phase}\"")]
    AlreadyExists { id: String, phase: GoalPhase },
    #[error("goal edit requires objective and/or maxGoalRounds")]
    InvalidEdit,
    #[error("{0}")]
    InvalidTransition(String),
    #[error("no current goal")]
    NotFound,
    #[error("stale goal ref \"{given_id}\" revision {given_revision}; current is \"{current_id}\" revision {current_revision}")]
    StaleRevision {
        given_id: String,
        given_revision: u64,
        current_id: String,
        current_revision: u64,
    },
    /// The session's log breaks the goal rules (strict replay).
    #[error("goal replay failed at session event {seq}: {reason}")]
    Replay { seq: u64, reason: String },
    /// The session refused the `goal/change` record.
    #[error("could not record the goal change: {0}")]
    Append(String),
}

impl GoalError {
    /// The stable code (the original's `GoalError` codes, plus two of ours).
    pub fn code(&self) -> &'static str {
        match self {
            Self::AgentNotLive(_) => "GOAL_AGENT_NOT_LIVE",
            Self::InvalidMaxRounds => "GOAL_INVALID_MAX_ROUNDS",
            Self::InvalidObjective => "GOAL_INVALID_OBJECTIVE",
            Self::InvalidBlockReason => "GOAL_INVALID_BLOCK_REASON",
            Self::AlreadyExists { .. } => "GOAL_ALREADY_EXISTS",
            Self::InvalidEdit => "GOAL_INVALID_EDIT",
            Self::InvalidTransition(_) => "GOAL_INVALID_TRANSITION",
            Self::NotFound => "GOAL_NOT_FOUND",
            Self::StaleRevision { .. } => "GOAL_STALE_REVISION",
            Self::Replay { .. } => "GOAL_REPLAY_INVALID",
            Self::Append(_) => "GOAL_CHANGE_REFUSED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_round_trips_with_the_original_key_order() {
        let text = r#"{"kind":"goal/change","version":1,"operation":"create","goal":{"id":"goal-1","revision":1,"objective":"Ship it","phase":"active","maxGoalRounds":2},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#;
        let change: GoalChange = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&change).unwrap(), text);
        let blocked = r#"{"kind":"goal/change","version":1,"operation":"block","goal":{"id":"goal-1","revision":2,"objective":"Ship it","phase":"blocked","maxGoalRounds":2,"blockedReason":{"code":"round-limit","message":"Goal reached its configured limit of 2 rounds."}},"roundsStarted":2,"createdAt":0,"updatedAt":5}"#;
        let change: GoalChange = serde_json::from_str(blocked).unwrap();
        assert_eq!(serde_json::to_string(&change).unwrap(), blocked);
        let clear = r#"{"kind":"goal/change","version":1,"operation":"clear","cleared":{"id":"goal-1","revision":3},"clearedAt":9}"#;
        let change: GoalChange = serde_json::from_str(clear).unwrap();
        assert_eq!(serde_json::to_string(&change).unwrap(), clear);
    }

    #[test]
    fn decoding_refuses_extra_keys_bad_versions_and_unnormalized_text() {
        let bad = [
            r#"{"kind":"goal/change","version":2,"operation":"create","goal":{"id":"g","revision":1,"objective":"x","phase":"active","maxGoalRounds":2},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#,
            r#"{"kind":"goal/change","version":1,"operation":"create","goal":{"id":"g","revision":1,"objective":" x","phase":"active","maxGoalRounds":2},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#,
            r#"{"kind":"goal/change","version":1,"operation":"create","goal":{"id":"g","revision":0,"objective":"x","phase":"active","maxGoalRounds":2},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#,
            r#"{"kind":"goal/change","version":1,"operation":"create","goal":{"id":"g","revision":1,"objective":"x","phase":"active","maxGoalRounds":2},"roundsStarted":0,"createdAt":0,"updatedAt":0,"extra":1}"#,
            r#"{"kind":"goal/change","version":1,"operation":"block","goal":{"id":"g","revision":2,"objective":"x","phase":"blocked","maxGoalRounds":2},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#,
            r#"{"kind":"goal/change","version":1,"operation":"block","goal":{"id":"g","revision":2,"objective":"x","phase":"blocked","maxGoalRounds":2,"blockedReason":{"code":"Bad","message":"m"}},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#,
            r#"{"kind":"goal/change","version":1,"operation":"create","goal":{"id":"g","revision":1,"objective":"x","phase":"active","maxGoalRounds":2},"roundsStarted":0,"createdAt":5,"updatedAt":4}"#,
            r#"{"kind":"goal/change","version":1,"operation":"explode","goal":{},"roundsStarted":0,"createdAt":0,"updatedAt":0}"#,
        ];
        for text in bad {
            assert!(serde_json::from_str::<GoalChange>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn lower_kebab_codes() {
        for good in ["round-limit", "a", "model-reported", "x1-2"] {
            assert!(is_lower_kebab(good), "{good}");
        }
        for bad in ["", "Round", "-a", "a-", "a--b", "a_b", "1a"] {
            assert!(!is_lower_kebab(bad), "{bad}");
        }
    }
}
