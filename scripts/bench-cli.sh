#!/bin/bash
# Startup budget of the dsh binary: `dsh --version`, and one `dsh run` turn against the
# mock model server with no scripted delay (a fresh DSH_HOME and workspace, release build).
# Prints median and 90th-percentile wall time over N runs (default 30), and the largest
# max-RSS seen. Needs GNU time at /usr/bin/time.
set -euo pipefail

runs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --quiet --release -p dsh-cli -p dsh-testkit --bins
bin=${CARGO_TARGET_DIR:-$root/target}/release
scratch=$(mktemp -d)
trap 'kill "${mock:-}" 2>/dev/null || true; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/home" "$scratch/ws"
cat >"$scratch/script.json" <<'JSON'
{"index_by": "assistant_turns", "responses": [{"text": "A short answer from the mock server.", "chunks": 8}]}
JSON
"$bin/dsh-mock-llm" --script "$scratch/script.json" >"$scratch/announce" &
mock=$!
until grep -q '^listening on ' "$scratch/announce"; do sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$scratch/announce")
export DSH_HOME=$scratch/home

cd "$scratch/ws"
run=("$bin/dsh" run --provider openai-compatible --base-url "$url" "hello")
if command -v hyperfine >/dev/null; then
    hyperfine --shell=none --warmup 3 --runs "$runs" --export-json "$scratch/times.json" \
        "$bin/dsh --version" "${run[*]}" >/dev/null
    python3 - "$scratch/times.json" <<'PY' || cat "$scratch/times.json"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = sorted(r["times"])
    name = "dsh run" if " run " in r["command"] else "dsh --version"
    print(f"{name:14} median {r['median']*1000:6.1f} ms   p90 {t[int(len(t)*0.9)]*1000:6.1f} ms")
PY
else
    # Without hyperfine: wall time around each run (bash and date add ~1 ms).
    for name in version run; do
        times=()
        for _ in $(seq "$runs"); do
            start=$(date +%s%N)
            if [ $name = version ]; then "$bin/dsh" --version >/dev/null; else "${run[@]}" >/dev/null 2>&1; fi
            times+=($((($(date +%s%N) - start) / 1000)))
        done
        sorted=($(printf '%s\n' "${times[@]}" | sort -n))
        echo "dsh $name: median ${sorted[$((runs / 2))]} µs, p90 ${sorted[$((runs * 9 / 10))]} µs"
    done
fi
for cmd in version run; do
    rss=0
    for _ in 1 2 3 4 5; do
        if [ $cmd = version ]; then
            /usr/bin/time -o "$scratch/rss" -f '%M' "$bin/dsh" --version >/dev/null
        else
            /usr/bin/time -o "$scratch/rss" -f '%M' "${run[@]}" >/dev/null 2>&1
        fi
        kb=$(tail -1 "$scratch/rss")
        ((kb > rss)) && rss=$kb
    done
    echo "dsh $cmd: max RSS $((rss / 1024)).$(((rss % 1024) * 10 / 1024)) MB"
done
