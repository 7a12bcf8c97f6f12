//! `postgres`: the file benches' workloads on the PostgreSQL backend, with the file
//! backend's figure beside each one for the ratio.
//!
//! The database: `DSH_BENCH_PG_URL` if set, else a throwaway cluster this program starts
//! (`initdb` into a temp dir, as `nobody` when run as root, on a free loopback port, with
//! the server's default durability, `fsync` on, as the file backend syncs each append),
//! stopped at the end. Needs the server binaries (`/usr/lib/postgresql/*/bin` or
//! `DSH_PG_BIN`).
//!
//! - append with checkpoints: 1,000 realistic turns (100k events) written in the batches the
//!   agent loop's checkpoints produce (before each model request, before the tool body, at
//!   the turn's end), one durable append per batch, as events/s;
//! - resume of that 100k-event session: a fresh backend (new connection) prepares it and
//!   derives the model history; the read is also timed alone;
//! - list of 10k sessions (one realistic turn each, written through the backend) and of 100k
//!   (the other 90k added as summary rows by SQL, since listing reads the sessions table
//!   only and 9M more event rows would take this machine an hour to write).

use crate::stats::{report, report_rate, summarize};
use crate::workload::{append_turn, Texts, EVENTS_PER_TURN};
use dsh_protocol::SessionId;
use dsh_session::{Session, SessionEvent, SessionHeader};
use dsh_store::{JsonlBackend, JsonlConfig, SessionPersistence};
use dsh_store_postgres::{PgConfig, PostgresBackend};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TURNS: u64 = 1_000;
const APPEND_RUNS: usize = 3;
const RESUME_RUNS: usize = 7;
const LIST_RUNS: usize = 9;
const SESSIONS: u64 = 10_000;
const MORE_SESSIONS: u64 = 90_000;
const WORKSPACES: u64 = 20;
const BUILDERS: u64 = 4;

/// A 1,000-turn session and the checkpoint cuts of its batches.
fn long_session(id: &str) -> anyhow::Result<(SessionHeader, Vec<Arc<SessionEvent>>, Vec<usize>)> {
    let mut header = SessionHeader::new(id.into(), 1_700_000_000_000);
    header.cwd = Some("/home/user/project".into());
    let time = Arc::new(AtomicU64::new(1_700_000_000_000));
    let session = Session::builder(header.clone())
        .clock(Arc::new(move || time.fetch_add(7, Ordering::Relaxed)))
        .build()?;
    let mut texts = Texts::new(7);
    let mut cuts = Vec::new();
    for turn in 1..=TURNS {
        cuts.extend(append_turn(&session, turn, &mut texts)?);
        cuts.push(session.len() - 1);
    }
    let cuts = cuts.into_iter().map(|c| c as usize + 1).collect();
    Ok((header, session.events().to_vec(), cuts))
}

fn write_batches(
    backend: &dyn SessionPersistence,
    header: &SessionHeader,
    events: &[Arc<SessionEvent>],
    cuts: &[usize],
) -> anyhow::Result<usize> {
    backend.create(header)?;
    let mut from = 0usize;
    let mut batches = 0;
    for &to in cuts {
        if to > from {
            backend.append(&header.id, &events[from..to])?;
            batches += 1;
        }
        from = to;
    }
    backend.release(&header.id);
    Ok(batches)
}

fn open(url: &str) -> anyhow::Result<PostgresBackend> {
    Ok(PostgresBackend::open(PgConfig::parse(url, None)?)?.0)
}

fn append_case(url: &str) -> anyhow::Result<()> {
    let mut files = Vec::new();
    let mut database = Vec::new();
    let mut batches = 0;
    for run in 0..APPEND_RUNS {
        let id = format!("bench-append-{run}");
        let (header, events, cuts) = long_session(&id)?;
        let dir = tempfile::tempdir()?;
        let backend = JsonlBackend::new(JsonlConfig::new(dir.path()));
        let t = Instant::now();
        batches = write_batches(&backend, &header, &events, &cuts)?;
        files.push(t.elapsed());

        let backend = open(url)?;
        let t = Instant::now();
        write_batches(&backend, &header, &events, &cuts)?;
        database.push(t.elapsed());
    }
    let events = TURNS * EVENTS_PER_TURN;
    println!("append: {events} events in {batches} checkpoint batches (one durable append each)");
    report_rate(
        "postgres",
        "append 100k, checkpoints: files (zstd)",
        events,
        &summarize(files),
    );
    report_rate(
        "postgres",
        "append 100k, checkpoints: postgres",
        events,
        &summarize(database),
    );
    Ok(())
}

fn resume_case(url: &str) -> anyhow::Result<()> {
    let id = "bench-resume";
    let (header, events, cuts) = long_session(id)?;
    let dir = tempfile::tempdir()?;
    write_batches(
        &JsonlBackend::new(JsonlConfig::new(dir.path())),
        &header,
        &events,
        &cuts,
    )?;
    write_batches(&open(url)?, &header, &events, &cuts)?;
    let session = SessionId::new(id);
    let mut files = Vec::new();
    let mut database = Vec::new();
    let mut connect = Vec::new();
    let mut read = Vec::new();
    for _ in 0..RESUME_RUNS {
        let t = Instant::now();
        let backend = JsonlBackend::new(JsonlConfig::new(dir.path()));
        let prepared = backend.prepare(&session)?;
        std::hint::black_box(prepared.session.derive_messages());
        files.push(t.elapsed());
        backend.release(&session);

        let t = Instant::now();
        let backend = open(url)?;
        connect.push(t.elapsed());
        let prepared = backend.prepare(&session)?;
        std::hint::black_box(prepared.session.derive_messages());
        database.push(t.elapsed());
        backend.release(&session);
        anyhow::ensure!(
            prepared.session.len() as u64 >= TURNS * EVENTS_PER_TURN,
            "unexpected resume"
        );

        let t = Instant::now();
        std::hint::black_box(backend.read_from(&session, 0)?);
        read.push(t.elapsed());
    }
    report(
        "postgres",
        "resume 100k events: files (zstd, packed)",
        &summarize(files),
    );
    report(
        "postgres",
        "resume 100k events: postgres",
        &summarize(database),
    );
    report(
        "postgres",
        "  part: connect + schema check",
        &summarize(connect),
    );
    report(
        "postgres",
        "  part: read_from(0) (query + parse, warm)",
        &summarize(read),
    );
    Ok(())
}

fn list_header(n: u64) -> SessionHeader {
    let mut header = SessionHeader::new(
        SessionId::new(format!("session-{n:06}")),
        1_700_000_000_000 + n * 1000,
    );
    header.cwd = Some(format!("/home/user/project-{}", n % WORKSPACES));
    header
}

fn build_list_store(url: &str) -> anyhow::Result<()> {
    let template = Session::builder(list_header(0))
        .clock(Arc::new(|| 1_700_000_000_500))
        .build()?;
    append_turn(&template, 1, &mut Texts::new(3))?;
    let events = template.events();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..BUILDERS)
            .map(|worker| {
                let events = &events;
                scope.spawn(move || -> anyhow::Result<()> {
                    let backend = open(url)?;
                    for n in (worker..SESSIONS).step_by(BUILDERS as usize) {
                        let header = list_header(n);
                        backend.create(&header)?;
                        backend.append(&header.id, events)?;
                        backend.release(&header.id);
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| anyhow::anyhow!("builder panicked"))?)
    })
}

fn list_once(url: &str, expected: u64) -> anyhow::Result<(Duration, Duration)> {
    let start = Instant::now();
    let backend = open(url)?;
    let opened = start.elapsed();
    let listed = backend.list()?;
    let elapsed = start.elapsed();
    // The append and resume cases' sessions are in the same database.
    let listed = listed
        .iter()
        .filter(|s| s.id.starts_with("session-"))
        .count();
    anyhow::ensure!(listed as u64 == expected, "unexpected listing: {listed}");
    Ok((elapsed, elapsed - opened))
}

fn list_case(url: &str, bin: Option<&Path>) -> anyhow::Result<()> {
    let build = Instant::now();
    build_list_store(url)?;
    println!(
        "list: {SESSIONS} sessions in {WORKSPACES} workspaces, {EVENTS_PER_TURN} events each \
         (built through the backend in {:.1?})",
        build.elapsed()
    );
    let measure = |expected: u64, label: &str| -> anyhow::Result<()> {
        let mut total = Vec::new();
        let mut query = Vec::new();
        for _ in 0..LIST_RUNS {
            let (all, list) = list_once(url, expected)?;
            total.push(all);
            query.push(list);
        }
        report(
            "postgres",
            &format!("list {label}: connect + list"),
            &summarize(total),
        );
        report(
            "postgres",
            &format!("list {label}: list alone"),
            &summarize(query),
        );
        Ok(())
    };
    measure(SESSIONS, "10k")?;
    // 90k more summary rows, like the 10k but with no event rows (listing never reads them).
    psql(
        url,
        bin,
        &format!(
            "INSERT INTO dsh_sessions (id, workspace_key, workspace_path, header, parent_session, \
             delegation_depth, title, created_at, updated_at, turns, events, size, \
             last_outcome, next_seq) \
             SELECT 'session-x' || lpad(n::text, 6, '0'), workspace_key, workspace_path, header, \
             parent_session, delegation_depth, title, created_at + n, updated_at + n, turns, \
             events, size, last_outcome, next_seq \
             FROM generate_series(1, {MORE_SESSIONS}) AS n \
             JOIN dsh_sessions s ON s.id = 'session-' || lpad((n % {SESSIONS})::text, 6, '0'); \
             ANALYZE dsh_sessions"
        ),
    )?;
    measure(SESSIONS + MORE_SESSIONS, "100k")
}

fn psql(url: &str, bin: Option<&Path>, sql: &str) -> anyhow::Result<()> {
    let program = bin.map_or_else(|| PathBuf::from("psql"), |b| b.join("psql"));
    let status = Command::new(program)
        .args([url, "-v", "ON_ERROR_STOP=1", "-qc", sql])
        .status()?;
    anyhow::ensure!(status.success(), "psql failed");
    Ok(())
}

pub fn run() -> anyhow::Result<()> {
    let cluster;
    let (url, bin) = match std::env::var("DSH_BENCH_PG_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let Some(bin) = server_bin() else {
                println!(
                    "skipped: no PostgreSQL server binaries (set DSH_PG_BIN or DSH_BENCH_PG_URL)"
                );
                return Ok(());
            };
            cluster = Cluster::start(bin)?;
            println!(
                "database: a throwaway cluster ({}), default durability (fsync on)",
                cluster.bin.display()
            );
            (cluster.url(), Some(cluster.bin.clone()))
        }
    };
    append_case(&url)?;
    resume_case(&url)?;
    list_case(&url, bin.as_deref())
}

/// A throwaway cluster, as the tests start one.
struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

/// `DSH_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin` holding `initdb`.
fn server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DSH_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn as_owner(program: &Path, args: &[&str]) -> anyhow::Result<()> {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let output = command.args(args).env_remove("PGDATA").output()?;
    anyhow::ensure!(
        output.status.success(),
        "{} failed: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

impl Cluster {
    fn start(bin: PathBuf) -> anyhow::Result<Cluster> {
        let dir = tempfile::Builder::new().prefix("dsh-pg-bench-").tempdir()?;
        if is_root() {
            let status = Command::new("chown")
                .args(["nobody:nogroup"])
                .arg(dir.path())
                .status()?;
            anyhow::ensure!(status.success(), "chown the cluster dir");
        }
        let data = dir.path().join("data");
        let data = data.to_str().unwrap_or_default().to_owned();
        as_owner(
            &bin.join("initdb"),
            &[
                "-D",
                &data,
                "-U",
                "dsh",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1",
            dir.path().display()
        );
        let log = dir.path().join("server.log");
        as_owner(
            &bin.join("pg_ctl"),
            &[
                "-D",
                &data,
                "-l",
                log.to_str().unwrap_or_default(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )?;
        Ok(Cluster { bin, dir, port })
    }

    fn url(&self) -> String {
        format!("postgres://dsh@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = as_owner(
            &self.bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap_or_default(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
    }
}
