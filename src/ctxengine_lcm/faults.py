"""Named crash points for crash-safety tests, armed by an environment variable.

``CTXENGINE_FAULT_POINT=<name>`` makes the process SIGKILL itself when it reaches that
point (optionally only on the N-th hit with ``CTXENGINE_FAULT_HIT=N``), so a test can
prove that a crash anywhere leaves the store consistent. Unarmed, a point costs one
environment lookup.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "CTXENGINE_FAULT_POINT"
FAULT_HIT_ENV = "CTXENGINE_FAULT_HIT"

#: The points this package defines.
POINTS = (
    "lcm.ingest.mid_batch",
    "lcm.sweep.before_commit",
    "lcm.sweep.after_commit",
)

_hits: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Kill the process here when ``name`` is armed (and its hit count is reached)."""
    if os.environ.get(FAULT_ENV) != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= int(os.environ.get(FAULT_HIT_ENV) or 1):
        os.kill(os.getpid(), signal.SIGKILL)
