//! Stores of hand-made and fixture sessions in a temporary directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_memory::{Memory, MemoryIndex};
use dsh_protocol::{ContentBlock, Message, MessageSource, SessionId};
use dsh_session::{
    AssistantMessage, EventData, SessionEvent, SessionHeader, SurfaceOp, ToolCall, TurnStart,
};
use dsh_store::{Compression, JsonlBackend, JsonlConfig, SessionPersistence};

pub const WORKSPACE: &str = "/home/user/project";
pub const OTHER_WORKSPACE: &str = "/home/user/elsewhere";

pub fn backend(root: &Path) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig {
        root: root.to_path_buf(),
        compression: Compression::None,
        pack_chunks: false,
    })
}

fn event(seq: u64, data: EventData) -> Arc<SessionEvent> {
    let surface = data.is_surface();
    Arc::new(SessionEvent {
        seq,
        time: 1_790_000_000_000 + seq * 1000,
        data,
        ignorable: false,
        surface_op: surface.then_some(SurfaceOp::Append),
        source_event_seqs: None,
    })
}

/// Events of one turn: the prompt, a tool call, the answer.
pub fn turn(
    first_seq: u64,
    turn: u64,
    prompt: &str,
    tool_args: &str,
    answer: &str,
) -> Vec<Arc<SessionEvent>> {
    let assistant = |text: &str| {
        EventData::AssistantMessage(AssistantMessage {
            turn,
            step: 1,
            message: Arc::new(Message::assistant(
                vec![ContentBlock::text(text)],
                MessageSource::Model {
                    provider: "p".into(),
                    model: "m".into(),
                    replay_state: None,
                },
            )),
            usage: None,
            interrupted: false,
        })
    };
    vec![
        event(first_seq, EventData::TurnStart(TurnStart { turn })),
        event(
            first_seq + 1,
            EventData::UserMessage(Arc::new(Message::user_text(prompt))),
        ),
        event(
            first_seq + 2,
            EventData::ToolCall(ToolCall {
                turn,
                step: 1,
                call_id: "call-1".into(),
                name: "bash".into(),
                arguments: tool_args.into(),
            }),
        ),
        event(first_seq + 3, assistant(answer)),
    ]
}

/// Writes a session of `turns` (prompt, tool arguments, answer) to the store.
pub fn write_session(
    store: &dyn SessionPersistence,
    id: &str,
    cwd: &str,
    parent: Option<&str>,
    turns: &[(&str, &str, &str)],
) {
    let mut header = SessionHeader::new(SessionId::new(id.to_owned()), 1_790_000_000_000);
    header.cwd = Some(cwd.to_owned());
    header.parent_session = parent.map(|p| SessionId::new(p.to_owned()));
    store.create(&header).unwrap();
    let mut events = Vec::new();
    for (i, (prompt, args, answer)) in turns.iter().enumerate() {
        events.extend(turn(
            events.len() as u64,
            i as u64 + 1,
            prompt,
            args,
            answer,
        ));
    }
    store
        .append(&SessionId::new(id.to_owned()), &events)
        .unwrap();
    store.release(&SessionId::new(id.to_owned()));
}

/// Appends one more turn to a stored session.
pub fn append_turn(store: &dyn SessionPersistence, id: &str, prompt: &str, answer: &str) {
    let sid = SessionId::new(id.to_owned());
    let next = store.next_seq(&sid).unwrap();
    let turns = store
        .load(&sid)
        .unwrap()
        .events
        .iter()
        .filter(|e| matches!(e.data, EventData::TurnStart(_)))
        .count() as u64;
    store
        .append(&sid, &turn(next, turns + 1, prompt, "{}", answer))
        .unwrap();
    store.release(&sid);
}

/// A temp dir holding a store root and an index path.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: Arc<JsonlBackend>,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(backend(&dir.path().join("sessions")));
        Self { dir, store }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("sessions")
    }

    pub fn index_path(&self) -> PathBuf {
        self.dir.path().join("memory").join(dsh_memory::INDEX_FILE)
    }

    pub fn memory(&self) -> Memory {
        let (index, _) = MemoryIndex::open(&self.index_path()).unwrap();
        Memory::new(Arc::new(index), self.store.clone(), None)
    }

    /// The three hand-made sessions most tests use: two in [`WORKSPACE`], one elsewhere.
    pub fn with_sessions() -> Self {
        let f = Self::new();
        write_session(
            f.store.as_ref(),
            "session-alpha",
            WORKSPACE,
            None,
            &[
                (
                    "Why does the flaky test fail on CI?",
                    r#"{"command":"cargo test flaky_widget"}"#,
                    "The flaky_widget test races the clock.",
                ),
                (
                    "Fix it with a fake clock",
                    "{}",
                    "Done: the widget now takes a FakeClock.",
                ),
            ],
        );
        write_session(
            f.store.as_ref(),
            "session-beta",
            WORKSPACE,
            Some("session-alpha"),
            &[(
                "Update the changelog",
                "{}",
                "Added a line about the widget clock fix.",
            )],
        );
        write_session(
            f.store.as_ref(),
            "session-gamma",
            OTHER_WORKSPACE,
            None,
            &[(
                "Secret project: the widget launch plan",
                "{}",
                "Launch is in March.",
            )],
        );
        f
    }
}

/// Copies the original's fixture session roots (every scenario, jsonl and zstd) into `root`.
pub fn copy_original_fixtures(root: &Path) -> usize {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0");
    assert!(
        base.is_dir(),
        "the original's fixtures are missing at {}",
        base.display()
    );
    let mut copied = 0;
    for scenario in std::fs::read_dir(&base).unwrap() {
        let scenario = scenario.unwrap().path();
        for form in ["jsonl", "zstd"] {
            let sessions = scenario.join(form).join("sessions");
            if sessions.is_dir() {
                copied += copy_tree(&sessions, root);
            }
        }
    }
    copied
}

fn copy_tree(from: &Path, to: &Path) -> usize {
    std::fs::create_dir_all(to).unwrap();
    let mut files = 0;
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            files += copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            files += 1;
        }
    }
    files
}
