//! `dsh-bench <name>|all`: benchmark programs that print figures.
//!
//! Each benchmark is a module with a `run()` that prints median and p90 figures together
//! with the command that reproduces them. Run in release mode:
//! `cargo run --release -p dsh-bench -- all`.

mod acp;
mod adapter_ingest;
mod agent_step;
mod agents_many;
mod child_process;
mod compaction;
mod core_stack;
mod counting;
mod derive_messages;
mod goal_fold;
mod hook_dispatch;
mod mcp_call;
mod memory;
mod memory_step;
mod postgres;
mod read_path;
mod sandbox_spawn;
mod session_append;
mod session_list;
mod session_resume;
mod stats;
mod store_append;
mod subagents;
mod token_meter;
mod tool_loop;
mod tui_render;
mod web;
mod workload;

use std::process::ExitCode;

/// Counts allocations only while a bench asks for it (see `counting`).
#[global_allocator]
static ALLOCATOR: counting::CountingAlloc = counting::CountingAlloc;

/// A named benchmark.
struct Bench {
    name: &'static str,
    about: &'static str,
    run: fn() -> anyhow::Result<()>,
}

const BENCHES: &[Bench] = &[
    Bench {
        name: "session-append",
        about: "Session::append of small events (budget: median <= 2 us)",
        run: session_append::run,
    },
    Bench {
        name: "derive-messages",
        about: "Session::derive_messages of a 10k-message log (budget: <= 5 ms)",
        run: derive_messages::run,
    },
    Bench {
        name: "store-append",
        about: "100k streamed chunks into a persisted session (budget: >= 200,000 events/s)",
        run: store_append::run,
    },
    Bench {
        name: "session-resume",
        about: "resume a 100k-event session from disk (budget: <= 150 ms)",
        run: session_resume::run,
    },
    Bench {
        name: "read-path",
        about: "a 1,000-step session read back: read + validate 10k/100k events (<= 8/80 ms), resume to the first request byte (<= 12 ms), `dsh sessions verify` (<= 12 ms)",
        run: read_path::run,
    },
    Bench {
        name: "session-list",
        about: "list 10k stored sessions with a fresh index (budget: <= 50 ms)",
        run: session_list::run,
    },
    Bench {
        name: "postgres",
        about: "the session benches on PostgreSQL beside files: checkpointed appends, 100k resume, 10k/100k list",
        run: postgres::run,
    },
    Bench {
        name: "tool-loop",
        about: "20-step tool loop against the mock server (budget: harness <= 1 ms/step)",
        run: tool_loop::run,
    },
    Bench {
        name: "adapter-ingest",
        about: "adapter ingests a 10k-chunk stream over HTTP (budget: >= 200,000 chunks/s)",
        run: adapter_ingest::run,
    },
    Bench {
        name: "mcp-call",
        about: "MCP tool call over stdio vs a bare round trip; mount with 5 servers (budget: <= 1 ms/call)",
        run: mcp_call::run,
    },
    Bench {
        name: "agent-step",
        about: "agent core per step, scripted model + no-op tool (budget: median <= 50 us)",
        run: agent_step::run,
    },
    Bench {
        name: "agents-1000",
        about: "1,000 agents run a 3-step turn at once (budget: <= 100 KiB RSS per idle agent)",
        run: agents_many::run,
    },
    Bench {
        name: "subagents",
        about: "100 continuable children x 3 tool steps at once (budgets: <= 58 us/child step, <= 150 KiB per idle child, <= 1 ms to start one)",
        run: subagents::run,
    },
    Bench {
        name: "token-meter",
        about: "token meter per event, pressure check per step at 10k/100k/1M tokens (budget: <= 20 us/step)",
        run: token_meter::run,
    },
    Bench {
        name: "compaction",
        about: "a compaction's harness overhead (<= 5 ms) and resume of a compacted session (<= 150 ms), 100k events",
        run: compaction::run,
    },
    Bench {
        name: "hook-dispatch",
        about: "hooks around a tool call apart from the hook process (figures only)",
        run: hook_dispatch::run,
    },
    Bench {
        name: "tui-render",
        about: "TUI frame per streamed chunk of a 2,000-line markdown answer (budget: flat, << 16.7 ms)",
        run: tui_render::run,
    },
    Bench {
        name: "acp",
        about: "dsh acp over stdio: initialize -> session/new (budget: <= 20 ms), per chunk, per tool call",
        run: acp::run,
    },
    Bench {
        name: "memory",
        about: "session memory: index 10k sessions, search (<= 20 ms), index size, agent-step overhead (<= 2 %)",
        run: memory::run,
    },
    Bench {
        name: "memory-step",
        about: "agent-step with the JSONL store, without / with the memory row, alternating (budget: <= +2 %)",
        run: memory_step::run,
    },
    Bench {
        name: "sandbox-spawn",
        about: "one confined bash call vs an unconfined one (figures only, no budget)",
        run: sandbox_spawn::run,
    },
    Bench {
        name: "goal-fold",
        about: "strict goal fold over a 100k-event session with goal rounds (budget: <= 10 ms)",
        run: goal_fold::run,
    },
    Bench {
        name: "web",
        about: "dsh web: first byte of / and a 10k-event history page (<= 30 ms each), 20 streaming clients, RSS of 50 idle sessions",
        run: web::run,
    },
];

fn usage() {
    eprintln!("usage: dsh-bench <name>|all");
    for bench in BENCHES {
        eprintln!("  {:<18} {}", bench.name, bench.about);
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(child_process::HELPER_ARG) {
        return match child_process::helper_main() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("spawn helper failed: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    let [name] = args.as_slice() else {
        usage();
        return ExitCode::from(2);
    };
    let selected: Vec<&Bench> = BENCHES
        .iter()
        .filter(|b| name == "all" || b.name == name)
        .collect();
    if selected.is_empty() {
        eprintln!("unknown benchmark `{name}`");
        usage();
        return ExitCode::from(2);
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; figures are meaningless without --release");
    }
    for bench in selected {
        println!("== {} ({})", bench.name, bench.about);
        if let Err(error) = (bench.run)() {
            eprintln!("{} failed: {error:#}", bench.name);
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
