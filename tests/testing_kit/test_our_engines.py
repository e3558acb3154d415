"""Both of our engines pass the contract kit, as any third-party engine would run it."""

from __future__ import annotations

import pytest

from ctxengine_host.testing import ContextEngineContract
from ctxengine_lcm.engine import LcmEngine
from ctxengine_legacy.engine import LegacyEngine


class TestLegacyEngine(ContextEngineContract):
    @pytest.fixture
    def engine(self, engine_context):
        return LegacyEngine(context=engine_context)


class TestLcmEngine(ContextEngineContract):
    @pytest.fixture
    def engine(self, engine_context):
        return LcmEngine(context=engine_context)
