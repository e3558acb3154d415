"""The contract test kit (ctxengine_host.testing) run against the LCM engine, on each
backend (``database``: a SQLite file, then a fresh PostgreSQL schema)."""

from __future__ import annotations

import pytest

from ctxengine_host.testing import ContextEngineContract
from ctxengine_lcm.engine import LcmEngine


class TestLcmContract(ContextEngineContract):
    @pytest.fixture
    def engine(self, engine_context, database):
        engine = LcmEngine(config={"database": database}, context=engine_context)
        yield engine
        engine.dispose()
