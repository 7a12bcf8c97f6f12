use super::*;
use crate::testing::{session, FakeAgent};
use crate::{Agent, InboxClaimed, InboxDiscarded, InboxInserted};
use dsh_kernel::Context;
use dsh_session::{SeedSource, SessionEvent, SessionHeader};
use serde_json::{json, Value};

type Log = Arc<Mutex<Vec<String>>>;

fn text(m: &Message) -> String {
    m.text()
}

fn record(root: &Context) -> Log {
    let log: Log = Arc::default();
    let l = log.clone();
    root.on::<InboxInserted>(move |e| {
        l.lock()
            .unwrap()
            .push(format!("inserted {}", text(&e.data)));
        Ok(())
    })
    .unwrap()
    .forget();
    let l = log.clone();
    root.on::<InboxDiscarded>(move |e| {
        l.lock()
            .unwrap()
            .push(format!("discarded {}", text(&e.data)));
        Ok(())
    })
    .unwrap()
    .forget();
    let l = log.clone();
    root.on::<InboxClaimed>(move |e| {
        l.lock().unwrap().push(format!(
            "claimed {} turn {}",
            text(&e.data.message),
            e.data.turn
        ));
        Ok(())
    })
    .unwrap()
    .forget();
    log
}

fn msg(text: &str) -> Message {
    let mut m = Message::user_text(text);
    m.id = MessageId::from(format!("id-{text}"));
    m
}

/// The data of every logged splice, as JSON.
fn splices(session: &Session) -> Vec<Value> {
    session
        .events()
        .iter()
        .map(|e| {
            let mut data = e.data.to_value();
            if let Some(inserted) = data.get_mut("inserted").and_then(Value::as_array_mut) {
                for m in inserted.iter_mut() {
                    *m = m["id"].clone();
                }
            }
            data
        })
        .collect()
}

fn texts(list: Vec<Arc<Message>>) -> Vec<String> {
    list.iter().map(|m| m.text()).collect()
}

#[test]
fn mutations_are_logged_first_and_normalized_like_array_splice() {
    let root = Context::root();
    let log = record(&root);
    let agent = FakeAgent::create(&root, session("s"));
    let inbox = agent.inbox();
    inbox.append(InboxTarget::NextTurn, msg("a")).unwrap();
    inbox.append(InboxTarget::NextTurn, msg("b")).unwrap();
    inbox.prepend(InboxTarget::NextTurn, msg("z")).unwrap();
    // Negative start counts from the end; the delete count is clamped.
    let removed = inbox
        .splice(InboxTarget::NextTurn, -1, 5, vec![msg("c")])
        .unwrap();
    assert_eq!(texts(removed), ["b"]);
    // Nothing removed, nothing inserted: no event at all.
    assert!(inbox
        .splice(InboxTarget::NextStep, 3, 1, vec![])
        .unwrap()
        .is_empty());
    assert_eq!(texts(inbox.next_turn()), ["z", "a", "c"]);
    assert_eq!(
        splices(agent.session()),
        vec![
            json!({"target": "next-turn", "start": 0, "inserted": ["id-a"]}),
            json!({"target": "next-turn", "start": 1, "inserted": ["id-b"]}),
            json!({"target": "next-turn", "start": 0, "inserted": ["id-z"]}),
            json!({"target": "next-turn", "start": 2, "removedCount": 1, "inserted": ["id-c"], "outcome": "canceled"}),
        ]
    );
    assert_eq!(
        *log.lock().unwrap(),
        [
            "inserted a",
            "inserted b",
            "inserted z",
            "discarded b",
            "inserted c"
        ]
    );
}

#[test]
fn a_duplicate_pending_id_is_refused_without_writing() {
    let root = Context::root();
    let agent = FakeAgent::create(&root, session("s"));
    let inbox = agent.inbox();
    inbox.append(InboxTarget::NextTurn, msg("a")).unwrap();
    let err = inbox.append(InboxTarget::NextStep, msg("a")).unwrap_err();
    assert_eq!(err.to_string(), "message \"id-a\" is already pending");
    assert_eq!(err.code(), "DUPLICATE_PENDING_MESSAGE");
    assert_eq!(agent.session().len(), 1);
    assert!(inbox.next_step().is_empty());
    // Replacing a message by itself is fine: the old one leaves as the new one enters.
    assert!(inbox.replace(&MessageId::from("id-a"), msg("a")).unwrap());
}

#[test]
fn claim_is_a_pure_deletion_of_all_next_step_and_the_first_prompt() {
    let root = Context::root();
    let log = record(&root);
    let agent = FakeAgent::create(&root, session("s"));
    let inbox = agent.inbox();
    for t in ["p1", "p2"] {
        inbox.append(InboxTarget::NextTurn, msg(t)).unwrap();
    }
    for t in ["s1", "s2"] {
        inbox.append(InboxTarget::NextStep, msg(t)).unwrap();
    }
    log.lock().unwrap().clear();
    let claimed = inbox.claim(InboxTarget::NextTurn, 3).unwrap();
    assert_eq!(texts(claimed), ["s1", "s2", "p1"]);
    assert_eq!(
        splices(agent.session())[4..],
        [
            json!({"target": "next-step", "start": 0, "removedCount": 2, "inserted": []}),
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
        ]
    );
    assert_eq!(
        *log.lock().unwrap(),
        [
            "claimed s1 turn 3",
            "claimed s2 turn 3",
            "claimed p1 turn 3"
        ]
    );
    // A step-boundary claim never takes a prompt; an empty claim writes nothing.
    assert!(inbox.claim(InboxTarget::NextStep, 3).unwrap().is_empty());
    assert_eq!(agent.session().len(), 6);
    assert_eq!(texts(inbox.next_turn()), ["p2"]);
}

#[test]
fn clear_cancels_next_step_then_next_turn_and_replace_remove_are_discards() {
    let root = Context::root();
    let log = record(&root);
    let agent = FakeAgent::create(&root, session("s"));
    let inbox = agent.inbox();
    inbox.append(InboxTarget::NextTurn, msg("t")).unwrap();
    inbox.append(InboxTarget::NextStep, msg("s")).unwrap();
    inbox.append(InboxTarget::NextStep, msg("x")).unwrap();
    assert!(inbox.replace(&MessageId::from("id-s"), msg("r")).unwrap());
    assert!(inbox.remove(&MessageId::from("id-x")).unwrap());
    assert!(!inbox.remove(&MessageId::from("id-x")).unwrap());
    inbox.clear().unwrap();
    assert!(!inbox.has_pending());
    assert_eq!(
        splices(agent.session())[3..],
        [
            json!({"target": "next-step", "start": 0, "removedCount": 1, "inserted": ["id-r"], "outcome": "canceled"}),
            json!({"target": "next-step", "start": 1, "removedCount": 1, "inserted": [], "outcome": "canceled"}),
            json!({"target": "next-step", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"}),
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"}),
        ]
    );
    assert_eq!(
        log.lock().unwrap()[3..],
        [
            "discarded s",
            "inserted r",
            "discarded x",
            "discarded r",
            "discarded t"
        ]
    );
}

#[test]
fn listeners_may_mutate_the_inbox_from_a_notification() {
    let root = Context::root();
    let agent = FakeAgent::create(&root, session("s"));
    let weak = Arc::downgrade(&agent);
    root.on::<InboxInserted>(move |e| {
        if e.data.text() == "a" {
            if let Some(agent) = weak.upgrade() {
                agent.inbox().append(InboxTarget::NextStep, msg("b"))?;
            }
        }
        Ok(())
    })
    .unwrap()
    .forget();
    agent
        .inbox()
        .append(InboxTarget::NextTurn, msg("a"))
        .unwrap();
    assert_eq!(texts(agent.inbox().next_step()), ["b"]);
}

fn replayed(events: Vec<Value>, seed_length: Option<u64>) -> Result<Inbox, AgentError> {
    let seed: Vec<SessionEvent> = events
        .into_iter()
        .enumerate()
        .map(|(seq, data)| {
            SessionEvent::from_value(
                &json!({"type": "agent/inbox/spliced", "seq": seq, "time": 1, "data": data}),
            )
            .unwrap()
        })
        .collect();
    let mut header = SessionHeader::new("r".into(), 1);
    header.seed_length = seed_length;
    let session = Session::with_seed(header, seed, SeedSource::Import).unwrap();
    let root = Context::root();
    Inbox::restore(
        session,
        AgentEvents::new(root, dsh_kernel::ScopeKey::new("r")),
    )
}

fn user(id: &str) -> Value {
    json!({"id": id, "role": "user", "content": [{"type": "text", "text": id}], "source": {"kind": "user"}})
}

#[test]
fn restore_replays_from_the_seed_length_and_validates() {
    let events = vec![
        json!({"target": "next-turn", "start": 0, "inserted": [user("a"), user("b")]}),
        json!({"target": "next-step", "start": 0, "inserted": [user("c")]}),
        json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
    ];
    let inbox = replayed(events.clone(), None).unwrap();
    assert_eq!(texts(inbox.next_turn()), ["b"]);
    assert_eq!(texts(inbox.next_step()), ["c"]);
    // A fork does not inherit its parent's pending items.
    let forked = replayed(events[..2].to_vec(), Some(2)).unwrap();
    assert!(!forked.has_pending());

    let bad = vec![
        json!({"target": "next-turn", "start": 0, "inserted": [user("a")]}),
        json!({"target": "next-step", "start": 0, "inserted": [user("a")]}),
    ];
    let err = replayed(bad, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid persisted inbox splice at session seq 1: message \"a\" is already pending"
    );
    let out_of_range = vec![json!({"target": "next-turn", "start": 1, "inserted": [user("a")]})];
    assert!(replayed(out_of_range, None)
        .unwrap_err()
        .to_string()
        .starts_with("invalid persisted inbox splice at session seq 0: "));
}
