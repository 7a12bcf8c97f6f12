#!/usr/bin/env python3
"""Per-step cost of a whole `dsh run` (issue 21): a 20-step `read` turn against
`dsh-mock-llm` versus a 1-step turn, run in pairs.

Usage: scripts/bench-steps.py [--steps N] [PAIRS] [BIN_DIR] [BASELINE_BIN_DIR]

PAIRS defaults to 30; BIN_DIR to $CARGO_TARGET_DIR/release (or target/release). Build first:
`cargo build --release -p dsh-cli -p dsh-testkit --bins`. With BASELINE_BIN_DIR (a copy of
an earlier build's `dsh`), each pair is run with both binaries back to back (alternating
which goes first, each with its own `$DSH_HOME`), so a loaded machine weighs on both alike.

Each pair runs the 1-step turn and the 20-step turn back to back (their order alternates
from pair to pair), each a fresh process in the same workspace and `$DSH_HOME`, with the
mock server (no scripted delay) already listening. The figure per pair is
(wall of the 20-step run - wall of the 1-step run) / 19: what one more `read` step costs
the whole process, checkpoints (fdatasync) included; the same difference of the processes'
CPU time (user + system, from `getrusage` of the finished child, like `perf stat -e
task-clock`) is printed beside it, since on a shared machine the wall time also holds waits
for a core. Prints min / median / max over the pairs, the two runs' medians, and the load
average before and after.

`--steps N` (default 20, the budget's figure) runs N-step turns instead of 20-step ones: a
longer turn ends with a longer log, so work that grows with the log shows in the figure.
Also printed: the mock server's own CPU time per request (from `/proc/<pid>/schedstat`),
since `dsh` waits for its answers and that time is part of every step's wall time; and the
floor under the per-step figure on this machine: each step owes three checkpoints (before
the model request, before the tool body, before the next step), each an append of a few
hundred bytes and an `fdatasync`, and waits for the mock's answer. The fdatasync latency is
sampled in the same directory between the pairs (an append of 500 bytes, then
`os.fdatasync`), so it drifts with the disk as the runs do. What a step costs above
3 x fdatasync + the mock's CPU per request is what `dsh` itself adds.
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

STEPS = 20  # the budget's turn; `--steps N` changes it


def start_mock(bin_dir, script_path):
    mock = subprocess.Popen(
        [os.path.join(bin_dir, "dsh-mock-llm"), "--script", script_path],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = mock.stdout.readline().strip()
    if not line.startswith("listening on "):
        mock.kill()
        sys.exit(f"dsh-mock-llm did not announce its URL: {line!r}")
    return mock, line[len("listening on "):]


def write_script(path, steps):
    responses = [
        {
            "text": f"Step {n}: reading.",
            "tool_calls": [{"name": "read", "arguments": {"file_path": "notes.md"}}],
        }
        for n in range(1, steps)
    ]
    responses.append({"text": "All read.", "chunks": 4})
    with open(path, "w") as f:
        json.dump({"index_by": "assistant_turns", "responses": responses}, f)


def mock_cpu_ns(mock):
    """CPU time the mock process has used so far, in nanoseconds (Linux schedstat)."""
    total = 0
    for tid in os.listdir(f"/proc/{mock.pid}/task"):
        with open(f"/proc/{mock.pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def fdatasync_samples(path, count):
    """Latencies of `count` appends of 500 bytes, each followed by fdatasync, in seconds."""
    samples = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for _ in range(count):
            os.write(fd, b"x" * 500)
            started = time.perf_counter()
            os.fdatasync(fd)
            samples.append(time.perf_counter() - started)
    finally:
        os.close(fd)
    return samples


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def spread(values):
    ms = lambda s: f"{s * 1000:.3f} ms"
    return (f"min {ms(min(values))}  median {ms(statistics.median(values))}"
            f"  max {ms(max(values))}")


def main():
    global STEPS
    command = "scripts/bench-steps.py " + " ".join(sys.argv[1:])
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "--steps":
        STEPS = int(args[1])
        args = args[2:]
        if STEPS < 2:
            sys.exit("--steps must be at least 2")
    sys.argv = [sys.argv[0]] + args
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    bin_dir = os.path.abspath(sys.argv[2] if len(sys.argv) > 2
                              else os.path.join(target, "release"))
    binaries = {"this": os.path.join(bin_dir, "dsh")}
    if len(sys.argv) > 3:
        binaries["baseline"] = os.path.join(os.path.abspath(sys.argv[3]), "dsh")
    with tempfile.TemporaryDirectory() as scratch:
        ws = os.path.join(scratch, "ws")
        os.makedirs(ws)
        homes = {}
        for name in binaries:
            homes[name] = os.path.join(scratch, f"home-{name}")
            os.makedirs(homes[name])
        with open(os.path.join(ws, "notes.md"), "w") as f:
            f.write("# Notes\n\nA short file the model reads.\n")
        mocks = {}
        try:
            for steps in (1, STEPS):
                script = os.path.join(scratch, f"script-{steps}.json")
                write_script(script, steps)
                mocks[steps] = start_mock(bin_dir, script)

            def run(name, steps):
                url = mocks[steps][1]
                cmd = [binaries[name], "run", "--provider", "openai-compatible",
                       "--base-url", url, "Read notes.md until done."]
                env = dict(os.environ, DSH_HOME=homes[name])
                cpu = children_cpu()
                started = time.perf_counter()
                done = subprocess.run(cmd, cwd=ws, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
                wall = time.perf_counter() - started
                cpu = children_cpu() - cpu
                if done.returncode != 0:
                    sys.exit(f"{name} dsh run ({steps} steps) failed: "
                             f"{done.stderr.decode()[-2000:]}")
                return wall, cpu

            for _ in range(3):  # warm-up: page cache, first session directory
                for name in binaries:
                    run(name, 1)
                    run(name, STEPS)
            before = load()
            mock_before = {steps: (mock_cpu_ns(m), m) for steps, (m, _) in mocks.items()}
            requests = {steps: 0 for steps in mocks}
            syncs = []
            sync_path = os.path.join(homes[next(iter(binaries))], "fdatasync-probe")
            results = {name: {"wall": [], "cpu": [], "ones": [], "many": []}
                       for name in binaries}
            for pair in range(pairs):
                names = list(binaries) if pair % 2 == 0 else list(reversed(binaries))
                for name in names:
                    if pair % 2 == 0:
                        one, twenty = run(name, 1), run(name, STEPS)
                    else:
                        twenty, one = run(name, STEPS), run(name, 1)
                    r = results[name]
                    r["ones"].append(one[0])
                    r["many"].append(twenty[0])
                    r["wall"].append((twenty[0] - one[0]) / (STEPS - 1))
                    r["cpu"].append((twenty[1] - one[1]) / (STEPS - 1))
                    requests[1] += 1
                    requests[STEPS] += STEPS
                syncs.extend(fdatasync_samples(sync_path, 20))
            after = load()
            mock_per_request = {
                steps: (mock_cpu_ns(m) - ns) / requests[steps] / 1e9
                for steps, (ns, m) in mock_before.items()
            }
        finally:
            for mock, _ in mocks.values():
                mock.terminate()
                mock.wait()
    ms = lambda s: f"{s * 1000:.3f} ms"
    print(f"load average before / after (1/5/15 min): {before} / {after}")
    print(f"mock server CPU per model request (its title side request included): "
          f"{ms(mock_per_request[STEPS])} in the {STEPS}-step runs, "
          f"{ms(mock_per_request[1])} in the 1-step runs")
    sync = statistics.median(syncs)
    floor = 3 * sync + mock_per_request[STEPS]
    print(f"fdatasync of a 500-byte append here (median of {len(syncs)}, sampled between "
          f"pairs): {ms(sync)}; floor per step = 3 x fdatasync + mock CPU per request "
          f"= {ms(floor)}")
    for name, r in results.items():
        print(f"[{name}: {binaries[name]}]")
        print(f"  {pairs} pairs; 1-step run median {ms(statistics.median(r['ones']))}, "
              f"{STEPS}-step run median {ms(statistics.median(r['many']))}")
        budget = "  (budget 0.6 ms at the median)" if STEPS == 20 else ""
        print(f"  per extra read step, wall: {spread(r['wall'])}{budget}")
        print(f"  per extra read step, CPU:  {spread(r['cpu'])}")
        print(f"  above the floor (median wall - floor): "
              f"{ms(statistics.median(r['wall']) - floor)}")
    print(f"command: {command}")


if __name__ == "__main__":
    main()
