"""Small output helpers shared by the commands (no heavy imports)."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def warn(message: str) -> None:
    """A warning on stderr."""
    print(f"warning: {message}", file=sys.stderr)
