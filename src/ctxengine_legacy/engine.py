"""The default engine ``legacy`` (minimal version: a sliding window).

Its real algorithm (head and tail kept, the middle summarized) replaces this.
"""

from __future__ import annotations

from ctxengine_host.fallback import SlidingWindowEngine


class LegacyEngine(SlidingWindowEngine):
    name = "legacy"
    version = "0.1.0"
    display_name = "Legacy compressor"
