#!/usr/bin/env bash
# The test command: set up .venv, build the wheelhouse, run the whole suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m "not slow"`).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/dev-install.sh
export CTXENGINE_WHEELHOUSE="${CTXENGINE_WHEELHOUSE:-$PWD/wheelhouse}"
bash scripts/build-wheelhouse.sh "$CTXENGINE_WHEELHOUSE"

set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: treating that as a failure" >&2
    exit 1
fi
exit "$status"
