"""A directory engine for the gateway tests: ``legacy``, counting its ``maintain`` runs.

Each run appends a line to ``$CTXENGINE_TEST_MAINTAIN_LOG``: the session, and whether
the call came from the gateway (its transcript can rewrite the gateway's entries)
or from our runtime's own turn end.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ctxengine_legacy.engine import LegacyEngine


class CountingEngine(LegacyEngine):
    name = "counting"

    def maintain(self, session_id: str, runtime_settings: Any, transcript: Any) -> Any:
        from_gateway = getattr(transcript, "rewrite_transcript_entries", None) is not None
        line = json.dumps({"session": session_id, "gateway": from_gateway})
        with open(os.environ["CTXENGINE_TEST_MAINTAIN_LOG"], "a", encoding="utf-8") as log:
            log.write(line + "\n")


def register(ctx: Any) -> None:
    ctx.register_context_engine(CountingEngine(config=ctx.config, context=ctx.context))
