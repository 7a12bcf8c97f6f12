//! A throwaway PostgreSQL cluster: `initdb` into a temp dir as an unprivileged user,
//! listening on a free 127.0.0.1 port with its socket in the temp dir, stopped on drop.
//!
//! Without the server binaries the tests fail, unless `DSH_SKIP_PG_E2E=1` outside CI, when
//! they skip loudly.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
}

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

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

impl Cluster {
    /// A running cluster, or `None` when skipping is allowed and the binaries are missing.
    pub fn start() -> Option<Cluster> {
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
        let dir = tempfile::Builder::new()
            .prefix("dsh-pg-")
            .tempdir()
            .expect("temp dir");
        if is_root() {
            let path =
                std::ffi::CString::new(dir.path().to_str().expect("utf-8 path")).expect("c path");
            // SAFETY: a valid NUL-terminated path; 65534 is nobody/nogroup.
            let rc = unsafe { libc::chown(path.as_ptr(), 65534, 65534) };
            assert_eq!(rc, 0, "chown the cluster dir to nobody");
        }
        let data = dir.path().join("data");
        let data = data.to_str().expect("utf-8 path");
        check(
            run_as_owner(
                &bin.join("initdb"),
                &[
                    "-D",
                    data,
                    "-U",
                    "dsh",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
            ),
            "initdb",
        );
        let mut cluster = Cluster { bin, dir, port: 0 };
        cluster.port = cluster.launch();
        Some(cluster)
    }

    fn launch(&self) -> u16 {
        let port = free_port();
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.dir.path().display()
        );
        check(
            run_as_owner(
                &self.bin.join("pg_ctl"),
                &[
                    "-D",
                    data.to_str().expect("utf-8"),
                    "-l",
                    log.to_str().expect("utf-8"),
                    "-o",
                    &options,
                    "-w",
                    "start",
                ],
            ),
            "pg_ctl start",
        );
        port
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

    /// Stops the server (every connection dies) and starts it again on the same port.
    pub fn restart(&self) {
        self.stop_server();
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        check(
            run_as_owner(
                &self.bin.join("pg_ctl"),
                &[
                    "-D",
                    data.to_str().expect("utf-8"),
                    "-l",
                    log.to_str().expect("utf-8"),
                    "-o",
                    &options,
                    "-w",
                    "start",
                ],
            ),
            "pg_ctl restart",
        );
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
