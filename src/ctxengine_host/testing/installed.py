"""The contract kit on an installed engine named on the command line.

Collected by the opt-in plugin when ``--ctxengine-engine NAME`` is given::

    python -m pytest -p ctxengine_host.testing.plugin --ctxengine-engine NAME
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

from ..contract.signatures import call_declared
from .contract import ENTRY_POINT_GROUP, ContextEngineContract


class TestInstalledEngine(ContextEngineContract):
    @pytest.fixture
    def engine(self, request: pytest.FixtureRequest, engine_context: Any) -> Any:
        name = request.config.getoption("ctxengine_engine", default=None)
        if not name:
            pytest.skip("pass --ctxengine-engine NAME (with -p ctxengine_host.testing.plugin)")
        found = [
            ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name
        ]
        if not found:
            pytest.fail(
                f"no installed engine named {name!r} (entry point group {ENTRY_POINT_GROUP})"
            )
        factory = found[0].load()
        config_model = getattr(factory, "config_model", None)
        config = config_model.model_validate({}) if config_model is not None else None
        return call_declared(factory, {"config": config, "context": engine_context})
