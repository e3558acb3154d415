"""Fixtures for the runtime tests: a host factory over a temp store."""

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


#: The timeout a test that hangs an engine on purpose gives it, so the test stays fast.
#: Only such tests use it: on a loaded CI machine a healthy call can take longer (one did).
#: The host gives the default engine it falls back to the same timeout: at 0.2 s, the
#: fallback's first ``compress`` (its summarizer's first use) once took longer with four
#: test workers and the gateway tests on two cores, and the turn failed.
HANG_TIMEOUT = 0.5
#: The timeout every other test gives: only a hung engine reaches it. Longer than a test
#: engine's hang (``RELEASE.wait(10)``), so a hang test that forgets ``HANG_TIMEOUT``
#: fails (the engine answers in time) instead of passing ten seconds later.
HEALTHY_TIMEOUT = 30.0


def timeout_for(fault: str) -> float:
    """The timeout of a test injecting ``fault``: only a hang needs the short one."""
    return HANG_TIMEOUT if fault == "hang" else HEALTHY_TIMEOUT


def config(
    hook_timeout: float = HEALTHY_TIMEOUT, context_timeout: float = HEALTHY_TIMEOUT, **context
) -> LoadedConfig:
    """A config whose timeouts only a hung engine reaches; hang tests pass ``HANG_TIMEOUT``."""
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

    def make(
        engine, *, context_length=8192, reserve=256, cfg=None, timeout=HEALTHY_TIMEOUT, **kwargs
    ) -> ContextHost:
        loaded = cfg or config(timeout, timeout, reserve_output_tokens=reserve)
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
