"""Building a host: by name, from config, the slot, update_model with config thresholds."""

from __future__ import annotations

from ctxengine_host.config import CompressionSection, CtxConfig, LoadedConfig
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.stores.quarantine import QuarantineLog

from .engines import RecordingEngine


def test_engine_by_name_and_from_config(tmp_path, monkeypatch):
    with ContextHost("legacy", store_path=tmp_path / "a.db", observers=[]) as host:
        assert host.engine_name == "legacy" and not host.resolved.fallback
        assert host.context_length == 32_768 and host.model == "gpt-4"
    config = tmp_path / "ctxengine.toml"
    config.write_text('[context]\nengine = "legacy"\ncontext_length = 4096\nmodel = "gpt-4o"\n')
    with ContextHost.from_config(config, store_path=tmp_path / "b.db", observers=[]) as host:
        assert host.resolved.choice.source == "config"
        assert host.context_length == 4096 and host.counter.encoding_name == "o200k_base"
    monkeypatch.setenv("CTXENGINE_ENGINE", "legacy")
    with ContextHost.from_config(store_path=tmp_path / "c.db", observers=[]) as host:
        assert host.resolved.choice.source == "env"


def test_an_unknown_engine_name_falls_back_without_a_record(tmp_path):
    with ContextHost("no-such-engine", store_path=tmp_path / "a.db", observers=[]) as host:
        assert host.engine_name == "legacy" and host.resolved.fallback
        assert "unknown engine" in host.resolved.reason
    assert QuarantineLog().records() == []  # a typo, not a fault of the engine


def test_update_model_gets_the_config_thresholds_first(tmp_path):
    engine = RecordingEngine()
    loaded = LoadedConfig(
        config=CtxConfig(compression=CompressionSection(model_thresholds={"gpt-5": 0.5}))
    )
    with ContextHost(
        engine,
        model="openai:gpt-5-mini",
        context_length=100_000,
        config=loaded,
        store_path=tmp_path / "a.db",
        observers=[],
    ) as host:
        assert engine.threshold_tokens == 50_000
        assert engine.context_length == 100_000
        session = host.open_session("s")
        assert session.guard.engine.threshold_tokens == 50_000
        settings = session.runtime_settings()
        assert settings.model.name == "gpt-5-mini" and settings.model.provider == "openai"
        assert settings.limits.budget_tokens == session.budget_tokens
        assert settings.engine_selection.selected == "recording"
