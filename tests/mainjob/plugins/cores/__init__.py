"""A directory engine that records the CPUs its thread may run on, at every ingest.

Engine calls run on the runtime's worker threads, so this shows whether a replay's
pinning reached the threads that do the work. The file is named by ``CORES_LOG``.
"""

from __future__ import annotations

import os
from typing import Any

from ctxengine_host.discovery.fallback import SlidingWindowEngine


class CoresEngine(SlidingWindowEngine):
    name = "cores"
    version = "0.1.0"
    display_name = "Sliding window that logs its CPU affinity (test engine)"

    def ingest(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        cpus = sorted(os.sched_getaffinity(0))
        with open(os.environ["CORES_LOG"], "a", encoding="utf-8") as log:
            log.write(",".join(map(str, cpus)) + "\n")
