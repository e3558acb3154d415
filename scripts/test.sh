#!/usr/bin/env bash
# The test command: set up .venv, build the wheelhouse and the framework
# environments, run the whole suite. Extra arguments go to pytest
# (e.g. `bash scripts/test.sh -m "not slow"`). Each phase prints its time.
set -euo pipefail
cd "$(dirname "$0")/.."

timed() {
    local name="$1" start
    shift
    start=$(date +%s)
    echo "test.sh: $name ..." >&2
    "$@"
    echo "test.sh: $name took $(($(date +%s) - start)) s" >&2
}

timed "install (.venv)" bash scripts/dev-install.sh
export CTXENGINE_WHEELHOUSE="${CTXENGINE_WHEELHOUSE:-$PWD/wheelhouse}"
timed "wheelhouse" bash scripts/build-wheelhouse.sh "$CTXENGINE_WHEELHOUSE"
# Framework environments (one line each): scripts/framework-env.sh NAME builds
# .envs/NAME once from the package index; the integration tests use it.
timed "framework env agents" bash scripts/framework-env.sh agents
timed "framework env hermes" bash scripts/framework-env.sh hermes
timed "framework env gateway (node 24, openclaw, our plugin)" bash scripts/gateway-env.sh

# One worker per core (at most 4), each test file on one worker so its module fixtures
# (a gateway, a built wheel) are made once; `-n 0` among the arguments runs one process.
# The slowest tests are listed at the end, so the CI budget stays visible.
start=$(date +%s)
set +e
.venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadfile --durations 15 "$@"
status=$?
set -e
echo "test.sh: tests took $(($(date +%s) - start)) s" >&2
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: treating that as a failure" >&2
    exit 1
fi
exit "$status"
