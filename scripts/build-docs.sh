#!/usr/bin/env bash
# Build the documentation site into ./site with warnings as errors (CI runs this).
# Needs the dev venv (scripts/dev-install.sh); the docs tools come from requirements-docs.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pip install --quiet -r requirements-docs.txt
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
echo "docs built: site/index.html"
