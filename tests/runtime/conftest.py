"""Fixtures for the runtime tests: a host factory over a temp store, short timeouts."""

from __future__ import annotations

import pytest

from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.runtime.isolation import forget_quarantine
from ctxengine_host.stores.quarantine import QuarantineLog

from .engines import RELEASE


@pytest.fixture(autouse=True)
def clean_process_state(monkeypatch, tmp_path):
    """No quarantine carried between tests; hung test engines released at the end."""
    monkeypatch.chdir(tmp_path)
    forget_quarantine()
    RELEASE.clear()
    yield
    RELEASE.set()
    forget_quarantine()


def config(hook_timeout: float = 0.2, context_timeout: float = 0.2, **context) -> LoadedConfig:
    """A config with short timeouts (hang tests stay fast)."""
    cfg = CtxConfig(
        compression=CompressionSection(
            hook_timeout_seconds=hook_timeout, context_timeout_seconds=context_timeout
        )
    )
    for key, value in context.items():
        setattr(cfg.context, key, value)
    return LoadedConfig(config=cfg)


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "transcripts.db"


@pytest.fixture
def make_host(store_path):
    """Build hosts over one temp store; all closed at the end of the test."""
    hosts: list[ContextHost] = []

    def make(engine, *, context_length=8192, reserve=256, cfg=None, **kwargs) -> ContextHost:
        loaded = cfg or config(reserve_output_tokens=reserve)
        host = ContextHost(
            engine,
            model="gpt-4",
            context_length=context_length,
            config=loaded,
            store_path=kwargs.pop("store_path", store_path),
            observers=[],
            **kwargs,
        )
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


@pytest.fixture
def quarantine_log() -> QuarantineLog:
    return QuarantineLog()
