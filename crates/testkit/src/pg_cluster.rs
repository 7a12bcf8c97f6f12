//! A throwaway PostgreSQL cluster for the PostgreSQL tests (the store's and the binary's):
//! `initdb` into a temp dir as an unprivileged user, listening on a free 127.0.0.1 port with
//! its socket in the temp dir, stopped on drop.
//!
//! Without the server binaries the tests fail, unless `DSH_SKIP_PG_E2E=1` outside CI, when
//! they skip loudly.
// A test fixture: failing loudly when the cluster cannot start is its job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Cluster {
    /// At most a few clusters at once: each takes ~30 MB and a server's memory, and the
    /// machine is shared.
    _slot: std::sync::MutexGuard<'static, ()>,
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
}

static SLOTS: [std::sync::Mutex<()>; 2] = [std::sync::Mutex::new(()), std::sync::Mutex::new(())];

/// Waits for a free cluster slot.
fn take_slot() -> std::sync::MutexGuard<'static, ()> {
    loop {
        for slot in &SLOTS {
            match slot.try_lock() {
                Ok(guard) => return guard,
                // A test that panicked still freed its slot.
                Err(std::sync::TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DSH_PG_BIN") {
        let dir = PathBuf::from(dir);
        return dir.join("initdb").is_file().then_some(dir);
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

/// Runs a server binary, as `nobody` when the tests run as root (initdb refuses root).
fn run_as_owner(program: &Path, args: &[&str]) -> std::process::Output {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args).env_remove("PGDATA");
    command.output().expect("run a PostgreSQL server binary")
}

fn check(output: std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Hands `path` to the user the server binaries run as (see [`run_as_owner`]).
fn give_to_owner(path: &Path) {
    if is_root() {
        let c_path = std::ffi::CString::new(path.to_str().expect("utf-8 path")).expect("c path");
        // SAFETY: a valid NUL-terminated path; 65534 is nobody/nogroup.
        let rc = unsafe { libc::chown(c_path.as_ptr(), 65534, 65534) };
        assert_eq!(rc, 0, "chown {} to nobody", path.display());
    }
}

/// Where this process keeps its initdb templates, removed when it exits.
fn templates_root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove_templates() {
        if let Some(root) = ROOT.get() {
            let _ = std::fs::remove_dir_all(root);
        }
    }
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("dsh-pg-templates-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create the initdb templates dir");
        give_to_owner(&root);
        // SAFETY: registers a plain function that only removes a directory.
        unsafe { libc::atexit(remove_templates) };
        root
    })
}

/// A data directory `initdb` made for `password` (none: trust), made once per process and
/// copied for every cluster: initdb runs the server through its whole bootstrap, many times
/// what a copy costs, and a test binary starts a dozen clusters.
fn template(bin: &Path, password: Option<&str>) -> PathBuf {
    static MADE: std::sync::Mutex<Vec<(Option<String>, PathBuf)>> =
        std::sync::Mutex::new(Vec::new());
    let mut made = MADE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = password.map(str::to_owned);
    if let Some((_, data)) = made.iter().find(|(k, _)| *k == key) {
        return data.clone();
    }
    let dir = templates_root().join(format!("template-{}", made.len()));
    std::fs::create_dir_all(&dir).expect("create an initdb template dir");
    give_to_owner(&dir);
    let data = dir.join("data");
    let pwfile = dir.join("pwfile");
    let mut auth = vec!["--auth=trust".to_owned()];
    if let Some(password) = password {
        std::fs::write(&pwfile, password).expect("write the password file");
        auth = vec![
            "--auth=scram-sha-256".to_owned(),
            format!("--pwfile={}", pwfile.display()),
        ];
    }
    check(
        run_as_owner(
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().expect("utf-8 path"),
                "-U",
                "dsh",
                &auth[0],
                auth.get(1).map_or("--no-sync", String::as_str),
                "-E",
                "UTF8",
                "--no-sync",
                "--wal-segsize=1",
            ],
        ),
        "initdb",
    );
    let _ = std::fs::remove_file(&pwfile);
    made.push((key, data.clone()));
    data
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

impl Cluster {
    /// A running cluster, or `None` when skipping is allowed and the binaries are missing.
    pub fn start() -> Option<Cluster> {
        Self::start_with(None)
    }

    /// A cluster whose user `dsh` must log in with `password` (SCRAM).
    pub fn start_with_password(password: &str) -> Option<Cluster> {
        Self::start_with(Some(password))
    }

    fn start_with(password: Option<&str>) -> Option<Cluster> {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let Some(bin) = server_bin() else {
            if !ci && std::env::var("DSH_SKIP_PG_E2E").is_ok_and(|v| v == "1") {
                eprintln!(
                    "!!! SKIPPING PostgreSQL test: no server binaries under /usr/lib/postgresql \
                     (DSH_SKIP_PG_E2E=1)"
                );
                return None;
            }
            panic!(
                "PostgreSQL server binaries not found under /usr/lib/postgresql: install \
                 Debian's postgresql-15 (as .ci/run does), set DSH_PG_BIN, or set \
                 DSH_SKIP_PG_E2E=1 locally"
            );
        };
        let slot = take_slot();
        let dir = tempfile::Builder::new()
            .prefix("dsh-pg-")
            .tempdir()
            .expect("temp dir");
        give_to_owner(dir.path());
        let data = dir.path().join("data");
        let template = template(&bin, password);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&template)
            .arg(&data)
            .output()
            .expect("run cp");
        check(copied, "copying the initdb template");
        let mut cluster = Cluster {
            _slot: slot,
            bin,
            dir,
            port: 0,
        };
        cluster.port = cluster.launch();
        Some(cluster)
    }

    fn launch(&self) -> u16 {
        let port = free_port();
        self.start_on(port, "pg_ctl start");
        port
    }

    fn start_on(&self, port: u16, what: &str) {
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB",
            self.dir.path().display()
        );
        let (data, log) = (data.to_str().expect("utf-8"), log.to_str().expect("utf-8"));
        check(
            run_as_owner(
                &self.bin.join("pg_ctl"),
                &["-D", data, "-l", log, "-o", &options, "-w", "start"],
            ),
            what,
        );
    }

    /// Stops the server (start it again with [`restart`](Self::restart)).
    pub fn stop_server(&self) {
        let data = self.dir.path().join("data");
        let _ = run_as_owner(
            &self.bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap_or(""),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
    }

    /// Starts a stopped server again on the same port.
    pub fn start_server(&self) {
        self.start_on(self.port, "pg_ctl start");
    }

    /// Stops the server (every connection dies) and starts it again on the same port.
    pub fn restart(&self) {
        self.stop_server();
        self.start_on(self.port, "pg_ctl restart");
    }

    pub fn url(&self) -> String {
        format!("postgres://dsh@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop_server();
    }
}
