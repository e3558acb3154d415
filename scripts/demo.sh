#!/usr/bin/env bash
# The main job: set up .venv (if needed) with the project installed, then replay the
# 2,000-turn sample session on the active engine (the slot; legacy by default). No API key,
# no network beyond pip. Extra arguments go to `ctxengine replay` (e.g. --json, --out DIR,
# --context-length 16000). What it is doing goes to stderr; the report to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "demo: $*" >&2; }
start=$(date +%s)
if [ -x .venv/bin/ctxengine ]; then
    say "updating .venv (the four distributions, editable) ..."
else
    say "first run: creating .venv and installing ctxengine and its dependencies (about a minute) ..."
fi
bash scripts/dev-install.sh >/dev/null
say "ready after $(($(date +%s) - start)) s; replaying examples/sessions/long-2000.jsonl.gz" \
    "(12,178 messages) through the active engine ..."
.venv/bin/ctxengine replay examples/sessions/long-2000.jsonl.gz "$@"
say "done in $(($(date +%s) - start)) s"
