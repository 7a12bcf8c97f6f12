//! `dsh-mock-llm`: serve a mock script over HTTP for out-of-process tests.
//!
//! Prints `listening on http://127.0.0.1:PORT` as its first stdout line (so a test can read
//! the URL), appends every received request as one JSON line to `--record` (flushed per
//! line, so it can be read while the server runs), and exits with status 0 on SIGINT or
//! SIGTERM after closing every connection. It keeps no request in memory once answered, so
//! a long benchmark run does not grow it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use dsh_testkit::mock_llm::{MockOptions, MockServer, RecordedRequest, Script};
use tokio::signal::unix::{signal, SignalKind};

/// Fault-injecting OpenAI-compatible mock model server.
#[derive(Debug, Parser)]
#[command(name = "dsh-mock-llm", version)]
struct Args {
    /// The script (JSON) to serve.
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append each received request to this file as a JSON line.
    #[arg(long, value_name = "FILE.jsonl")]
    record: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("dsh-mock-llm: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("dsh-mock-llm: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let script = Script::load(&args.script).map_err(|e| e.to_string())?;
    for warning in script.warnings() {
        eprintln!("dsh-mock-llm: warning: field not understood: {warning}");
    }
    // Nothing in this process reads the requests back; only `--record` keeps them.
    let mut options = MockOptions::default().port(args.port).forget_requests();
    let mut recorder = None;
    if let Some(path) = &args.record {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let (sink, records) = tokio::sync::mpsc::unbounded_channel();
        options = options.record_sink(sink);
        recorder = Some(tokio::task::spawn_blocking(move || {
            write_records(file, records)
        }));
    }
    // Install handlers before announcing the URL, so a signal sent right after the
    // announcement is never missed.
    let mut terminate = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let server = MockServer::start_with(script, options)
        .await
        .map_err(|e| e.to_string())?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {}", server.base_url()).map_err(|e| e.to_string())?;
        stdout.flush().map_err(|e| e.to_string())?;
    }
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    server.shutdown().await;
    if let Some(recorder) = recorder {
        recorder
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot write the record file: {e}"))?;
    }
    Ok(())
}

/// Writes records until the server drops its sender (at shutdown).
fn write_records(
    mut file: std::fs::File,
    mut records: tokio::sync::mpsc::UnboundedReceiver<RecordedRequest>,
) -> std::io::Result<()> {
    while let Some(record) = records.blocking_recv() {
        let mut line = serde_json::to_string(&record)?;
        line.push('\n');
        file.write_all(line.as_bytes())?;
        file.flush()?;
    }
    Ok(())
}
