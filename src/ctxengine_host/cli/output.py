"""Small output helpers shared by the commands (no heavy imports)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout, in one write: ``json.dump`` writes each
    of its pieces on its own (half a million for a 2,000-turn replay report)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def warn(message: str) -> None:
    """A warning on stderr (silenced by ``-q``), never on stdout."""
    logging.getLogger("ctxengine.cli").warning("warning: %s", message)


def note(message: str) -> None:
    """A note on stderr (silenced by ``-q``): something the user may not expect."""
    logging.getLogger("ctxengine.cli").warning("note: %s", message)
