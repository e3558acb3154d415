"""Observer plugin: logs the duration of every ``compress`` call.

Plugins only observe contract hooks (``wrapper=True``); the slot's engine owns context.
"""

from __future__ import annotations

import logging
import time

from ctxengine_host.contract.hookspecs import hookimpl

log = logging.getLogger("ctxengine.timing")
durations: list[float] = []


@hookimpl(wrapper=True)
def compress(messages):
    start = time.monotonic()
    try:
        return (yield)
    finally:
        durations.append(time.monotonic() - start)
        log.info("compress of %d messages took %.3f s", len(messages), durations[-1])
