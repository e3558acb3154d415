"""Fixtures for the message-shape tests: hosts over a temp store with a quiet engine."""

from __future__ import annotations

import pytest
from pg.fixtures import pg_database  # noqa: F401  (fixture)

from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig
from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.runtime.host import ContextHost


class PassEngine(ContextEngine):
    """Never compacts, never selects: the request is the live view."""

    name = "pass"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


@pytest.fixture
def make_host(tmp_path):
    hosts: list[ContextHost] = []

    def make(engine=None, *, context_length=16_384, store_path=None) -> ContextHost:
        cfg = CtxConfig(compression=CompressionSection(hook_timeout_seconds=5))
        cfg.context.reserve_output_tokens = 256
        host = ContextHost(
            engine if engine is not None else PassEngine(),
            model="gpt-4",
            context_length=context_length,
            config=LoadedConfig(config=cfg),
            store_path=store_path or tmp_path / "transcripts.db",
            data_dir=tmp_path / "data",
            observers=[],
        )
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()
