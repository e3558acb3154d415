#!/usr/bin/env bash
# The main job: set up .venv (if needed) with the project installed, then replay the
# 2,000-turn sample session on the active engine (the slot; legacy by default). No API key, no network
# beyond pip. Extra arguments go to `ctxengine replay` (e.g. --json, --out DIR,
# --context-length 16000).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/dev-install.sh >/dev/null
.venv/bin/ctxengine replay examples/sessions/long-2000.jsonl.gz "$@"
