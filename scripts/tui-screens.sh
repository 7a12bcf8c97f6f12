#!/bin/sh
# Regenerates the text captures of the TUI's main views in docs/tui.md from the real UI
# state and renderer (crates/cli/tests/suite/tui_screens.rs). CI checks they match.
set -eu
cd "$(dirname "$0")/.."
DSH_UPDATE_SCREENS=1 cargo test -p dsh-cli --test all -- suite::tui_screens --exact suite::tui_screens::the_docs_show_the_views_as_rendered
