#!/usr/bin/env bash
# Regenerates crates/cli/assets/syntaxes.packdump, the trimmed syntax set code blocks are
# highlighted with, from syntect's bundled syntaxes (filtered to KEPT in
# crates/cli/src/tui/markdown/syntaxes.rs) and the grammars in crates/cli/assets/syntaxes/.
# Nothing is downloaded. The second run checks the new dump against its sources.
set -euo pipefail
cd "$(dirname "$0")/.."
# The first run writes the dump (and fails its comparison when the old one is stale).
DSH_WRITE_SYNTAXES=1 cargo test -p dsh-cli --lib -- \
    tui::markdown::syntaxes::tests::the_committed_dump_matches_its_sources >/dev/null 2>&1 || true
cargo test -p dsh-cli --lib -- tui::markdown::syntaxes
ls -l crates/cli/assets/syntaxes.packdump
