use super::*;
use crate::reader::read_log;
use serde_json::json;
use std::sync::{Arc, Mutex};

fn event(seq: u64) -> Value {
    json!({"type": "turn/start", "seq": seq, "time": 10 + seq, "data": {"turn": seq}})
}

fn plain() -> LogFormat {
    LogFormat {
        compression: Compression::None,
        pack_chunks: false,
    }
}

/// A sink over a real file that fails on the n-th write after writing half the bytes,
/// like a disk filling up mid-write; optionally its truncate fails too.
struct FlakySink {
    file: File,
    writes_until_failure: usize,
    truncate_fails: bool,
    truncations: Arc<Mutex<Vec<u64>>>,
}

impl Sink for FlakySink {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if self.writes_until_failure == 0 {
            self.file.write_at(offset, &bytes[..bytes.len() / 2])?;
            return Err(io::Error::other("disk full"));
        }
        self.writes_until_failure -= 1;
        self.file.write_at(offset, bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.truncations.lock().unwrap().push(len);
        if self.truncate_fails {
            return Err(io::Error::other("truncate refused"));
        }
        self.file.set_len(len)
    }
}

fn flaky_writer(
    dir: &Path,
    format: LogFormat,
    truncate_fails: bool,
) -> (PathBuf, LogWriter, Arc<Mutex<Vec<u64>>>) {
    let path = dir.join(format.compression.file_name());
    let mut real = LogWriter::create_lazy(&path, format, LogHeader::new("s", 1));
    real.append(&[event(0)]).unwrap();
    let len = real.durable_len().unwrap();
    drop(real);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let truncations = Arc::new(Mutex::new(Vec::new()));
    let sink = FlakySink {
        file,
        writes_until_failure: 1,
        truncate_fails,
        truncations: truncations.clone(),
    };
    let writer = LogWriter::with_sink(&path, format, Box::new(sink), len, 1);
    (path, writer, truncations)
}

#[test]
fn a_failed_append_leaves_the_log_as_it_was() {
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let format = LogFormat {
            compression,
            pack_chunks: true,
        };
        let (path, mut writer, truncations) = flaky_writer(dir.path(), format, false);
        writer.append(&[event(1)]).unwrap();
        let good_len = fs::metadata(&path).unwrap().len();
        let err = writer.append(&[event(2), event(3)]).unwrap_err();
        assert_eq!(err.code(), "SESSION_PERSISTENCE_IO");
        assert_eq!(*truncations.lock().unwrap(), vec![good_len]);
        assert_eq!(fs::metadata(&path).unwrap().len(), good_len);
        // the seq did not advance: the same events may be retried
        assert_eq!(writer.next_seq(), 2);
        let log = read_log(&path, compression, Some("s")).unwrap();
        assert_eq!(log.events, vec![event(0), event(1)]);
        assert_eq!(log.torn_tail, None);
    }
}

#[test]
fn an_undoable_failure_poisons_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut writer, _) = flaky_writer(dir.path(), plain(), true);
    writer.append(&[event(1)]).unwrap();
    assert_eq!(
        writer.append(&[event(2)]).unwrap_err().code(),
        "SESSION_PERSISTENCE_IO"
    );
    assert_eq!(
        writer.append(&[event(2)]).unwrap_err().code(),
        "SESSION_WRITER_POISONED"
    );
}

#[test]
fn creation_is_lazy_and_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proj/sess/session.jsonl");
    let mut writer = LogWriter::create_lazy(&path, plain(), LogHeader::new("sess", 7));
    writer.append(&[]).unwrap();
    assert!(!dir.path().join("proj").exists());
    assert!(!writer.is_materialized());
    writer.append(&[event(0)]).unwrap();
    assert!(writer.is_materialized());
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        concat!(
            r#"{"type":"session","version":0,"id":"sess","createdAt":7,"delegationDepth":0}"#,
            "\n",
            r#"{"type":"turn/start","seq":0,"time":10,"data":{"turn":0}}"#,
            "\n"
        )
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(&dir.path().join("proj")), 0o700);
    }
    // no staging file is left behind
    let names: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["session.jsonl".to_owned()]);
}

#[test]
fn publication_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s/session.jsonl");
    let mut first = LogWriter::create_lazy(&path, plain(), LogHeader::new("s", 1));
    let mut second = LogWriter::create_lazy(&path, plain(), LogHeader::new("s", 2));
    first.append(&[event(0)]).unwrap();
    let before = fs::read(&path).unwrap();
    let err = second.append(&[event(0)]).unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(!second.is_materialized());
}

#[test]
fn appends_must_continue_the_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s/session.jsonl");
    let mut writer = LogWriter::create_lazy(&path, plain(), LogHeader::new("s", 1));
    assert_eq!(
        writer.append(&[event(1)]).unwrap_err().code(),
        "SESSION_SEQ_MISMATCH"
    );
    assert_eq!(
        writer.append(&[event(0), event(2)]).unwrap_err().code(),
        "SESSION_SEQ_MISMATCH"
    );
    assert_eq!(
        writer.append(&[json!({"seq": 0})]).unwrap_err().code(),
        "SESSION_EVENT_INVALID"
    );
    assert!(!path.exists());
}

#[test]
fn one_writer_per_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s/session.jsonl.zstd");
    let mut writer = LogWriter::create_lazy(&path, LogFormat::default(), LogHeader::new("s", 1));
    writer.append(&[event(0)]).unwrap();
    let log = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    assert_eq!(
        LogWriter::open(&log, true).unwrap_err().code(),
        "SESSION_LOCKED"
    );
    drop(writer);
    let mut reopened = LogWriter::open(&log, true).unwrap();
    reopened.append(&[event(1)]).unwrap();
    let log = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    assert_eq!(log.events, vec![event(0), event(1)]);
}
