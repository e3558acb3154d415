"""A directory engine that fails at its first compaction, to see quarantines in replay."""

from __future__ import annotations

from typing import Any

from ctxengine_host.discovery.fallback import SlidingWindowEngine


class BrittleEngine(SlidingWindowEngine):
    name = "brittle"
    version = "0.1.0"
    display_name = "Raises in compress (test engine)"

    def compress(self, messages: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
        raise RuntimeError("brittle engine: compress is broken on purpose")
