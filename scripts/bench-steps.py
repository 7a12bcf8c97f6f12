#!/usr/bin/env python3
"""Per-step cost of a whole `dsh run` (issue 21): a 20-step `read` turn against
`dsh-mock-llm` versus a 1-step turn, run in pairs.

Usage: scripts/bench-steps.py [PAIRS] [BIN_DIR]

PAIRS defaults to 30; BIN_DIR to $CARGO_TARGET_DIR/release (or target/release). Build first:
`cargo build --release -p dsh-cli -p dsh-testkit --bins`.

Each pair runs the 1-step turn and the 20-step turn back to back (their order alternates
from pair to pair), each a fresh process in the same workspace and `$DSH_HOME`, with the
mock server (no scripted delay) already listening. The figure per pair is
(wall of the 20-step run - wall of the 1-step run) / 19: what one more `read` step costs
the whole process, checkpoints (fdatasync) included. Prints min / median / max over the
pairs, the two runs' medians, and the load average before and after.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

STEPS = 20


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


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    bin_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(target, "release")
    dsh = os.path.join(bin_dir, "dsh")
    with tempfile.TemporaryDirectory() as scratch:
        home = os.path.join(scratch, "home")
        ws = os.path.join(scratch, "ws")
        os.makedirs(home)
        os.makedirs(ws)
        with open(os.path.join(ws, "notes.md"), "w") as f:
            f.write("# Notes\n\nA short file the model reads.\n")
        mocks = {}
        try:
            for steps in (1, STEPS):
                script = os.path.join(scratch, f"script-{steps}.json")
                write_script(script, steps)
                mocks[steps] = start_mock(bin_dir, script)
            env = dict(os.environ, DSH_HOME=home)

            def run(steps):
                url = mocks[steps][1]
                cmd = [dsh, "run", "--provider", "openai-compatible", "--base-url", url,
                       "Read notes.md until done."]
                started = time.perf_counter()
                done = subprocess.run(cmd, cwd=ws, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
                wall = time.perf_counter() - started
                if done.returncode != 0:
                    sys.exit(f"dsh run ({steps} steps) failed: {done.stderr.decode()[-2000:]}")
                return wall

            for _ in range(3):  # warm-up: page cache, first session directory
                run(1)
                run(STEPS)
            before = load()
            per_step, ones, many = [], [], []
            for pair in range(pairs):
                if pair % 2 == 0:
                    one, twenty = run(1), run(STEPS)
                else:
                    twenty, one = run(STEPS), run(1)
                ones.append(one)
                many.append(twenty)
                per_step.append((twenty - one) / (STEPS - 1))
            after = load()
        finally:
            for mock, _ in mocks.values():
                mock.terminate()
                mock.wait()
    ms = lambda s: f"{s * 1000:.3f} ms"
    print(f"load average before / after (1/5/15 min): {before} / {after}")
    print(f"{pairs} pairs; 1-step run median {ms(statistics.median(ones))}, "
          f"{STEPS}-step run median {ms(statistics.median(many))}")
    print(f"per extra read step: min {ms(min(per_step))}  median {ms(statistics.median(per_step))}"
          f"  max {ms(max(per_step))}  (budget 0.6 ms at the median)")
    print("command: scripts/bench-steps.py " + str(pairs))


if __name__ == "__main__":
    main()
