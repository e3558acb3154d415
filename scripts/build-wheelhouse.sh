#!/usr/bin/env bash
# Build the wheelhouse the offline (fresh-venv) tests install from:
#   - our four wheels, always rebuilt from the working tree;
#   - every runtime dependency, the testing extra (pytest), the build backend
#     (hatchling and its dependencies) and the publishing tools an engine author runs
#     (build, twine: docs/authoring.md, tested by tests/testing_kit/test_author_path.py), fetched once and again only when the dependency list changes.
# Usage: bash scripts/build-wheelhouse.sh [DIR]   (default: $CTXENGINE_WHEELHOUSE or ./wheelhouse)
# Needs the dev venv (scripts/dev-install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

WHEELHOUSE="$(realpath -m "${1:-${CTXENGINE_WHEELHOUSE:-wheelhouse}}")"
PY=.venv/bin/python
mkdir -p "$WHEELHOUSE"

rm -f "$WHEELHOUSE"/ctxengine-*.whl "$WHEELHOUSE"/ctxengine_*.whl
"$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$WHEELHOUSE" \
    packages/ctxengine-host packages/ctxengine-legacy packages/ctxengine-lcm .

# Third-party requirements: the host's runtime dependencies plus the build backend.
REQS="$("$PY" - <<'PY'
import tomllib
host = tomllib.load(open("packages/ctxengine-host/pyproject.toml", "rb"))
build = tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]
testing = host["project"].get("optional-dependencies", {}).get("testing", [])  # the kit's extra
publishing = ["build", "twine", "editables"]  # the author path: pip install -e, build, twine
print("\n".join(sorted(set(host["project"]["dependencies"]) | set(build) | set(testing) | set(publishing))))
PY
)"
if [ ! -f "$WHEELHOUSE/.requirements" ] || [ "$(cat "$WHEELHOUSE/.requirements")" != "$REQS" ]; then
    printf '%s\n' "$REQS" > "$WHEELHOUSE/requirements.in"
    "$PY" -m pip wheel --quiet -w "$WHEELHOUSE" -r "$WHEELHOUSE/requirements.in"
    printf '%s' "$REQS" > "$WHEELHOUSE/.requirements"
fi
echo "wheelhouse ready: $WHEELHOUSE ($(ls "$WHEELHOUSE"/*.whl | wc -l) wheels)"
