#!/usr/bin/env bash
# Developer install: create/update .venv with all four distributions editable
# (pointing at src/) and the test tools, in one pip command so that the local
# distributions satisfy each other's dependencies without an index.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet \
    -e packages/ctxengine-host \
    -e packages/ctxengine-legacy \
    -e . \
    -e packages/ctxengine-lcm \
    -r requirements-dev.txt
echo "dev install ready: .venv ($(.venv/bin/python --version))"
