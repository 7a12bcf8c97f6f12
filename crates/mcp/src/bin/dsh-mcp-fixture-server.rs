//! A minimal stdio MCP server for tests and the benchmark (newline-delimited JSON-RPC); not
//! part of dsh itself.
//!
//! Tools: `add {a, b}`, `echo {text}`, `wait` (answers only when cancelled: never), and, with
//! `FIXTURE_MODE=dup`, a duplicate `add`; `FIXTURE_MODE=badschema` adds a tool whose schema is a
//! string. `tools/list` answers in two pages. Every received method (and a cancelled request's
//! id) is appended to `$FIXTURE_LOG` when set.

use serde_json::{json, Value};
use std::io::{BufRead, Write};

fn main() {
    let mode = std::env::var("FIXTURE_MODE").unwrap_or_default();
    let log = std::env::var("FIXTURE_LOG").ok();
    let record = |line: &str| {
        if let Some(path) = &log {
            if let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(file, "{line}");
            }
        }
    };
    record(&format!("pid {}", std::process::id()));
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = message["method"].as_str().unwrap_or("").to_owned();
        if method == "notifications/cancelled" {
            record(&format!("cancelled {}", message["params"]["requestId"]));
            continue;
        }
        record(&method);
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        let result = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "fixture", "version": "1.0.0"}
            }),
            "tools/list" => {
                let object = json!({"type": "object"});
                if message["params"]["cursor"].is_null() {
                    let mut tools = vec![json!({"name": "add", "description": "Adds.",
                        "inputSchema": {"type": "object", "properties": {
                            "a": {"type": "number"}, "b": {"type": "number"}}}})];
                    if mode == "dup" {
                        tools.push(json!({"name": "add", "inputSchema": object}));
                    }
                    json!({"tools": tools, "nextCursor": "page2"})
                } else {
                    let mut tools = vec![
                        json!({"name": "echo", "inputSchema": object}),
                        json!({"name": "wait", "inputSchema": object}),
                    ];
                    if mode == "badschema" {
                        tools.push(json!({"name": "bad", "inputSchema": {"type": "string"}}));
                    }
                    json!({"tools": tools})
                }
            }
            "tools/call" => {
                let args = &message["params"]["arguments"];
                match message["params"]["name"].as_str().unwrap_or("") {
                    "add" => {
                        let sum =
                            args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                        json!({"content": [{"type": "text", "text": format!("{sum}")}],
                               "structuredContent": {"sum": sum}})
                    }
                    "echo" => {
                        json!({"content": [{"type": "text", "text": args["text"].as_str().unwrap_or("(none)")}]})
                    }
                    "wait" => continue,
                    other => {
                        json!({"isError": true, "content": [{"type": "text", "text": format!("unknown tool {other}")}]})
                    }
                }
            }
            _ => {
                let reply = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}});
                let _ = writeln!(stdout, "{reply}");
                let _ = stdout.flush();
                continue;
            }
        };
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(stdout, "{reply}").is_err() || stdout.flush().is_err() {
            break;
        }
    }
}
