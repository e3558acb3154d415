"""A directory engine for the bridge tests: ``legacy`` whose status holds a value JSON
cannot hold, as ``$CTXENGINE_TEST_STATUS`` says: ``nan`` (JSON has no NaN) or
``datetime`` (no JSON type at all). A third party's bug the server must still answer."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from ctxengine_legacy.engine import LegacyEngine


class OddStatusEngine(LegacyEngine):
    name = "oddstatus"

    def get_status(self) -> dict[str, Any]:
        odd = {"nan": float("nan"), "datetime": datetime.now(UTC)}
        return {**super().get_status(), "odd": odd[os.environ["CTXENGINE_TEST_STATUS"]]}


def register(ctx: Any) -> None:
    ctx.register_context_engine(OddStatusEngine(config=ctx.config, context=ctx.context))
