#!/bin/sh
# Runs dsh fully offline: starts the scripted mock model server (dsh-mock-llm) with
# examples/demo-script.json, runs one tool-using turn against it in the repository root,
# and stops the server. Set DSH_HOME to keep the session somewhere; by default it goes to
# a fresh temporary directory so your ~/.dsh is not touched.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --quiet --release -p dsh-cli -p dsh-testkit --bins
bin=${CARGO_TARGET_DIR:-$root/target}/release
home=${DSH_HOME:-$(mktemp -d)}

announce=$(mktemp)
"$bin/dsh-mock-llm" --script examples/demo-script.json >"$announce" &
mock=$!
trap 'kill "$mock" 2>/dev/null || true; rm -f "$announce"' EXIT INT TERM

tries=0
until grep -q '^listening on ' "$announce"; do
    tries=$((tries + 1))
    if [ "$tries" -gt 200 ]; then
        echo "demo: the mock server did not start" >&2
        exit 1
    fi
    sleep 0.05
done
url=$(sed -n 's/^listening on //p' "$announce")

# Under the default approval policy the demo's `ls` runs inside the workspace-write
# sandbox without a prompt, so this headless run needs no answers.
status=0
DSH_HOME=$home "$bin/dsh" run --provider openai-compatible --base-url "$url" \
    "What is this project?" || status=$?

echo
echo "The session log is in $home/sessions. Look at it with:"
echo "  DSH_HOME=$home $bin/dsh sessions list"
echo "  DSH_HOME=$home $bin/dsh sessions show <id>"
exit "$status"
