#!/usr/bin/env bash
# Build (once) the virtual environment of one third-party framework that an
# integration test drives: .envs/NAME, from scripts/framework-envs/NAME.txt,
# with our four distributions installed editable. Rebuilt only when the
# requirements file changes. Usage: bash scripts/framework-env.sh NAME
set -euo pipefail
cd "$(dirname "$0")/.."

name="${1:?usage: framework-env.sh NAME (a file scripts/framework-envs/NAME.txt)}"
reqs="scripts/framework-envs/$name.txt"
[ -f "$reqs" ] || { echo "framework-env: no requirements file $reqs" >&2; exit 2; }
env_dir=".envs/$name"
stamp="$env_dir/.requirements.sha256"
want="$(sha256sum "$reqs" | cut -d' ' -f1)"
if [ -x "$env_dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "framework-env: $env_dir is up to date"
    exit 0
fi
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
rm -rf "$env_dir"
"$PYTHON" -m venv "$env_dir"
"$env_dir/bin/python" -m pip install --quiet --upgrade pip
"$env_dir/bin/python" -m pip install --quiet \
    -e packages/ctxengine-host -e packages/ctxengine-legacy -e . -e packages/ctxengine-lcm \
    -r "$reqs"
echo "$want" > "$stamp"
echo "framework-env: built $env_dir"
