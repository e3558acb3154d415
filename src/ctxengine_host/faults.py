"""Named crash points for crash-safety tests, armed by one environment variable.

``CTXENGINE_FAULT_POINT=<name>`` makes the process SIGKILL itself the first time
it reaches ``fault_point("<name>")``; ``<name>:<N>`` kills on the N-th hit
(``CTXENGINE_FAULT_HIT=N`` is read too, the convention of
``ctxengine_lcm.faults``, so one variable pair arms either module's points).
The variable is read once, at import: unarmed, a point costs one comparison,
so the calls can stay in production code paths. See docs/reliability.md.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "CTXENGINE_FAULT_POINT"
FAULT_HIT_ENV = "CTXENGINE_FAULT_HIT"

#: The points the host defines (the LCM engine adds its own ``lcm.*`` points).
POINTS = (
    "host.ingest.before_engine",
    "store.append_live.mid_transaction",
    "host.maintain.background",
    "host.reset.after_begin",
    "host.reset.after_engine",
    "store.finish_reset.mid_transaction",
    "host.lease.acquired",
)


def parse_arming(value: str | None, hit: str | None = None) -> tuple[str | None, int]:
    """``(point, hit)`` from the variables' values; ``(None, 0)`` when unarmed.

    Raises ValueError for a hit count that is not a positive integer, so a typo in
    a crash test is loud instead of silently never firing.
    """
    if not value:
        return None, 0
    name, sep, count = value.rpartition(":")
    if not sep or not count.isdigit():
        name, count = value, hit or "1"
    if not count.isdigit() or int(count) < 1:
        raise ValueError(
            f"{FAULT_ENV}={value!r} / {FAULT_HIT_ENV}={hit!r}: the hit count must be a "
            "positive integer, e.g. CTXENGINE_FAULT_POINT=host.ingest.before_engine:3"
        )
    return name, int(count)


_ARMED, _KILL_ON_HIT = parse_arming(os.environ.get(FAULT_ENV), os.environ.get(FAULT_HIT_ENV))
_hits = 0


def arm_from_environment() -> str | None:
    """Read the variables again and reset the hit count; returns the armed point.

    For crash drivers that fork a pre-imported process and arm each child differently.
    """
    global _ARMED, _KILL_ON_HIT, _hits
    _ARMED, _KILL_ON_HIT = parse_arming(os.environ.get(FAULT_ENV), os.environ.get(FAULT_HIT_ENV))
    _hits = 0
    return _ARMED


def fault_point(name: str) -> None:
    """SIGKILL this process here when ``name`` is the armed point and its hit has come."""
    if name != _ARMED:
        return
    global _hits
    _hits += 1
    if _hits >= _KILL_ON_HIT:
        os.kill(os.getpid(), signal.SIGKILL)
