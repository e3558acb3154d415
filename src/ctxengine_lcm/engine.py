"""The ``lcm`` engine (minimal version: a sliding window).

Lossless Context Management (verbatim store, summary DAG, recall tools) replaces this.
"""

from __future__ import annotations

from ctxengine_host.fallback import SlidingWindowEngine


class LcmEngine(SlidingWindowEngine):
    name = "lcm"
    version = "0.1.0"
    display_name = "Lossless Context Management"
    owns_compaction = True
