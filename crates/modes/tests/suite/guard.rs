//! Whole-log tests of the repeat-tool reminder.

use super::support::{call, digest, harness_with, settle};
use dsh_modes::guard::{detailed_reminder, GENTLE_REMINDER};
use dsh_testkit::harness::{msg, Harness, ScriptedTool};
use dsh_testkit::scripted::text_response;
use dsh_tools::{PreExecute, PreExecuteDecision};
use serde_json::json;

fn reminder_lines(text: &str, after: &str) -> Vec<String> {
    vec![
        after.to_owned(),
        format!("splice next-step @0 -0 +[{text:?}]"),
    ]
}

#[tokio::test]
async fn reminders_come_after_exactly_three_five_and_eight_identical_calls() {
    // Nine identical calls (the key order of the arguments does not matter), then an answer.
    let mut script: Vec<_> = (1..=9)
        .map(|n| {
            let args = if n % 2 == 0 {
                json!({"text": "TODO", "path": "src"})
            } else {
                json!({"path": "src", "text": "TODO"})
            };
            call(&format!("g{n}"), "grep", args)
        })
        .collect();
    script.push(text_response("I keep finding the same thing.").into());
    let h = harness_with(
        Harness::builder()
            .scripted_tools([ScriptedTool::new("grep")])
            .script(script),
        json!({}),
        Some(json!({})),
    );
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("find the TODOs")).unwrap();
    settle(&h, &agent).await;
    let log = digest(&h.session().events());
    let reminders: Vec<&String> = log
        .iter()
        .filter(|l| l.starts_with("user: ") && l != &"user: find the TODOs")
        .collect();
    let args = r#"{"path":"src","text":"TODO"}"#;
    assert_eq!(
        reminders,
        [
            &format!("user: {GENTLE_REMINDER}"),
            &format!("user: {}", detailed_reminder("grep", 5, args)),
            &format!("user: {}", detailed_reminder("grep", 8, args)),
        ]
    );
    // Each lands after its call's result, at the start of the next step.
    for (n, text) in [
        (3, GENTLE_REMINDER.to_owned()),
        (5, detailed_reminder("grep", 5, args)),
        (8, detailed_reminder("grep", 8, args)),
    ] {
        let at = log
            .iter()
            .position(|l| l.starts_with(&format!("tool/call g{n} ")))
            .unwrap();
        assert_eq!(
            log[at + 1..at + 3],
            reminder_lines(&text, "tool/result grep:TODO")[..]
        );
        assert_eq!(log[at + 3], format!("step/end 1.{n}"));
        assert_eq!(log[at + 6], format!("user: {text}"));
    }
    // None after the fourth call.
    let at = log
        .iter()
        .position(|l| l.starts_with("tool/call g4 "))
        .unwrap();
    assert_eq!(log[at + 2], "step/end 1.4");
    // The tool results themselves are untouched.
    assert_eq!(
        log.iter().filter(|l| *l == "tool/result grep:TODO").count(),
        9
    );
    // The reminder's source names the plugin and the count.
    let sources: Vec<serde_json::Value> = h
        .session()
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            dsh_session::EventData::UserMessage(m) => {
                Some(serde_json::to_value(&m.source).unwrap())
            }
            _ => None,
        })
        .collect();
    assert!(sources.contains(&json!({"kind": "plugin", "plugin": "repeat-tool-reminder", "form": "notice", "summary": "grep × 5"})));
    h.finish().await;
}

#[tokio::test]
async fn excluded_tools_are_transparent_denied_calls_count_and_a_person_resets_the_chain() {
    let grep = || call("g", "grep", json!({"text": "x"}));
    let h = harness_with(
        Harness::builder()
            .scripted_tools([
                ScriptedTool::new("grep"),
                ScriptedTool::new("todo_write"),
                ScriptedTool::new("rm"),
            ])
            .script([
                grep(),
                call("t", "todo_write", json!({"text": "plan"})),
                grep(),
                grep(),
                text_response("Same results.").into(),
                grep(),
                grep(),
                text_response("Still the same.").into(),
                call("r1", "rm", json!({"text": "a"})),
                call("r2", "rm", json!({"text": "a"})),
                call("r3", "rm", json!({"text": "a"})),
                text_response("Not allowed.").into(),
            ]),
        json!({}),
        Some(json!({"exclude": ["todo_*"]})),
    );
    h.ctx()
        .on_waterfall::<PreExecute, _, _>(|args, next| async move {
            if args.exec.name() == "rm" {
                return Ok(PreExecuteDecision::Deny {
                    reason: "no deleting".into(),
                });
            }
            next.run().await
        })
        .unwrap()
        .forget();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("look")).unwrap();
    settle(&h, &agent).await;
    agent.followup(msg("look again")).unwrap();
    settle(&h, &agent).await;
    agent.followup(msg("delete it")).unwrap();
    settle(&h, &agent).await;
    let log = digest(&h.session().events());
    let reminders: Vec<(usize, &String)> = log
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("user: ") && l.contains("repeating"))
        .collect();
    // One after the third grep of the first turn (todo_write in between neither counted nor
    // reset), none in the second turn (the person's message started over), one after the
    // third denied rm.
    assert_eq!(reminders.len(), 2, "{log:#?}");
    assert!(
        log[..reminders[0].0]
            .iter()
            .filter(|l| l.starts_with("tool/call g "))
            .count()
            == 3
    );
    assert!(log[reminders[0].0..reminders[1].0]
        .iter()
        .any(|l| l == "user: look again"));
    assert!(log[..reminders[1].0]
        .iter()
        .any(|l| l.starts_with("tool/call r3 ")));
    assert!(log
        .iter()
        .any(|l| l.starts_with("tool/result ERR Error: no deleting")));
    h.finish().await;
}
