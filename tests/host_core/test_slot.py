"""The slot: precedence, resolution, construction, fallback and hard errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ctxengine_host.config import ConfigError, LoadedConfig, parse_config
from ctxengine_host.contract.context import EngineContext
from ctxengine_host.discovery.engines import ENGINE_GROUP, list_engines
from ctxengine_host.discovery.slot import (
    EngineSelectionError,
    SlotChoice,
    choose_slot,
    load_default_engine,
    resolve_engine,
)
from ctxengine_host.stores.quarantine import QuarantineLog

from .distfactory import engine_module, make_dist


def loaded_from(text: str = "", path: str = "/tmp/test-ctxengine.toml") -> LoadedConfig:
    return LoadedConfig(config=parse_config(text, path), path=Path(path), source="flag")


def make_context(name: str) -> EngineContext:
    return EngineContext(
        engine_name=name,
        data_dir=Path("/nonexistent") / name,
        count_tokens=lambda value: len(str(value)) // 4,
        summarize=lambda *a, **k: None,
    )


def resolve(name: str, loaded: LoadedConfig | None = None, **kwargs):
    return resolve_engine(
        SlotChoice(name, "config", name),
        loaded or loaded_from(),
        make_context=make_context,
        **kwargs,
    )


def install(site: Path, dist: str, engine: str, source: str | None = None, **kw) -> None:
    module = "tpe_" + engine.replace("-", "_")
    make_dist(
        site,
        dist,
        "1.0",
        {ENGINE_GROUP: {engine: f"{module}:Engine"}},
        {f"{module}.py": source or engine_module("Engine", engine, **kw)},
    )


# --- precedence ---------------------------------------------------------------


def test_precedence_flag_env_config_default(monkeypatch):
    loaded = loaded_from('[context]\nengine = "from-config"\n')
    assert choose_slot(None, loaded_from()) == SlotChoice("legacy", "default", None)
    assert choose_slot(None, loaded) == SlotChoice("from-config", "config", "from-config")
    monkeypatch.setenv("CTXENGINE_ENGINE", "from-env")
    assert choose_slot(None, loaded) == SlotChoice("from-env", "env", "from-env")
    assert choose_slot("from-flag", loaded) == SlotChoice("from-flag", "flag", "from-flag")


@pytest.mark.parametrize("alias", ["", "none", "None", "legacy", "compressor", " compressor "])
def test_default_aliases(alias, monkeypatch):
    assert choose_slot(alias, loaded_from()).name == "legacy"
    monkeypatch.setenv("CTXENGINE_ENGINE", alias)
    choice = choose_slot(None, loaded_from('[context]\nengine = "lcm"\n'))
    assert (choice.name, choice.source, choice.configured) == ("legacy", "env", alias)


# --- resolution -----------------------------------------------------------------


def test_resolves_selected_engine_and_imports_only_it(site, tmp_path):
    marker = tmp_path / "other-imported"
    install(site, "tpe-chosen", "chosen")
    install(site, "tpe-other", "other", marker=marker)
    resolved = resolve("chosen")
    assert (resolved.name, resolved.fallback, resolved.reason) == ("chosen", False, None)
    assert type(resolved.engine).__module__ == "tpe_chosen"
    assert resolved.entry.distribution == "tpe-chosen"
    assert not marker.exists() and "tpe_other" not in sys.modules


def test_construction_passes_validated_config_and_context(site):
    extra = """
    from pydantic import BaseModel


    class Settings(BaseModel):
        database: str
        depth: int = 3


    Engine.config_model = Settings
    """
    install(site, "tpe-cfg", "cfg", extra=extra)
    loaded = loaded_from('[engines.cfg]\nenabled = true\ndatabase = "x.db"\ndepth = 5\n')
    resolved = resolve("cfg", loaded)
    assert resolved.engine.config.database == "x.db" and resolved.engine.config.depth == 5
    assert resolved.engine.context.engine_name == "cfg"


def test_config_of_wrong_type_names_file_key_and_type(site):
    extra = """
    from pydantic import BaseModel


    class Settings(BaseModel):
        depth: int


    Engine.config_model = Settings
    """
    install(site, "tpe-badcfg", "badcfg", extra=extra)
    loaded = loaded_from('[engines.badcfg]\ndepth = "deep"\n', "/tmp/my.toml")
    with pytest.raises(ConfigError, match=r"/tmp/my.toml: key 'engines.badcfg.depth'.*integer"):
        resolve("badcfg", loaded)


def test_only_declared_constructor_arguments_are_passed(site):
    source = (
        engine_module("Engine", "bare") + "\n    def __init__(self):\n        super().__init__()\n"
    )
    install(site, "tpe-bare", "bare", source=source)
    factory = """
from tpe_bare_impl import Engine as _E


def Engine(context):
    engine = _E()
    engine.got_context = context
    return engine
"""
    make_dist(
        site, "tpe-bare-impl", "1", {}, {"tpe_bare_impl.py": engine_module("Engine", "factoried")}
    )
    install(site, "tpe-factoried", "factoried", source=factory)
    assert resolve("bare").engine.config is None
    engine = resolve("factoried").engine
    assert engine.got_context.engine_name == "factoried" and engine.config is None


def test_config_without_model_is_passed_raw(site):
    install(site, "tpe-raw", "raw")
    resolved = resolve("raw", loaded_from("[engines.raw]\nenabled = true\nlevel = 2\n"))
    assert resolved.engine.config == {"level": 2}


def test_not_installed_falls_back_with_suggestions_and_no_quarantine(tmp_path):
    log = QuarantineLog(tmp_path / "q.jsonl")
    resolved = resolve("lcn", loaded_from('[context]\nengine = "lcn"\n'), quarantine=log)
    assert (resolved.name, resolved.fallback) == ("legacy", True)
    assert resolved.choice.configured == "lcn"  # configured value kept
    assert "unknown engine 'lcn'" in resolved.reason and "Did you mean 'lcm'" in resolved.reason
    assert "pip install ctxengine-lcn" in resolved.reason and "legacy" in resolved.reason
    assert "selected by [context] engine in" in resolved.reason
    assert log.records() == []  # a typo is not a fault: nothing to quarantine


def test_disabled_engine_runs_default_and_keeps_slot(site, tmp_path):
    install(site, "tpe-off", "off")
    log = QuarantineLog(tmp_path / "q.jsonl")
    resolved = resolve("off", loaded_from("[engines.off]\nenabled = false\n"), quarantine=log)
    assert (resolved.name, resolved.fallback, resolved.choice.name) == ("legacy", True, "off")
    assert "enabled = false" in resolved.reason
    assert "tpe_off" not in sys.modules and log.records() == []


def test_duplicate_claim_is_a_hard_error_naming_both(site):
    install(site, "tpe-first", "twin")
    make_dist(site, "tpe-second", "2.0", {ENGINE_GROUP: {"twin": "tpe_twin2:Engine"}})
    with pytest.raises(EngineSelectionError, match=r"'tpe-first'.*'tpe-second'"):
        resolve("twin")
    assert "tpe_twin" not in sys.modules


def test_broken_import_is_quarantined_and_host_unaffected(site, tmp_path):
    install(site, "tpe-crash", "crash", source="raise SystemExit('dependency missing')\n")
    log = QuarantineLog(tmp_path / "q.jsonl")
    resolved = resolve("crash", quarantine=log)
    assert (resolved.name, resolved.fallback) == ("legacy", True)
    assert "failed to import" in resolved.reason and "dependency missing" in resolved.reason
    assert log.records()[0].engine == "crash"


def test_constructor_raising_falls_back(site):
    source = (
        engine_module("Engine", "boom")
        + "\n    def __init__(self, config=None):\n        raise OSError('disk full')\n"
    )
    install(site, "tpe-boom", "boom", source=source)
    resolved = resolve("boom")
    assert resolved.fallback and "OSError: disk full" in resolved.reason


def test_name_mismatch_fails_the_contract_check(site):
    install(site, "tpe-mismatch", "mismatch", source=engine_module("Engine", "something-else"))
    resolved = resolve("mismatch")
    assert resolved.fallback
    assert "'something-else'" in resolved.reason and "'mismatch'" in resolved.reason


def test_name_as_property_is_checked_on_the_instance(site):
    source = engine_module("Engine", "placeholder").replace(
        "name = 'placeholder'", "@property\n    def name(self):\n        return 'prop'"
    )
    install(site, "tpe-prop", "prop", source=source)
    assert resolve("prop").fallback is False


def test_misspelled_parameter_fails_the_contract_check(site):
    source = engine_module("Engine", "typo").replace("focus_topic=None", "focus=None")
    install(site, "tpe-typo", "typo", source=source)
    resolved = resolve("typo")
    assert resolved.fallback and "compress() declares parameter(s) focus" in resolved.reason


def test_unmet_host_requirements_fail_closed(site):
    extra = """
    Engine.host_requirements = {
        "maintain": {"capabilities": ["maintain", "gpu"], "message": "needs a GPU host"},
    }
    """
    install(site, "tpe-needy", "needy", extra=extra)
    with pytest.raises(EngineSelectionError, match="gpu for 'maintain': needs a GPU host"):
        resolve("needy")
    ok = resolve("needy", capabilities=frozenset({"maintain", "gpu"}))
    assert ok.name == "needy" and not ok.fallback


def test_blocked_engine_falls_back_without_quarantine(site, tmp_path, monkeypatch):
    install(site, "tpe-blocked", "blocked")
    monkeypatch.setenv("CTXENGINE_BLOCK_PLUGINS", "blocked")
    log = QuarantineLog(tmp_path / "q.jsonl")
    resolved = resolve("blocked", quarantine=log)
    assert resolved.fallback and "CTXENGINE_BLOCK_PLUGINS" in resolved.reason
    assert log.records() == [] and "tpe_blocked" not in sys.modules


def test_directory_engine_selected_by_slot(plugins_dir):
    eng = plugins_dir / "fromdir"
    eng.mkdir()
    (eng / "plugin.yaml").write_text("name: fromdir\n")
    (eng / "__init__.py").write_text(engine_module("DirEngine", "fromdir"))
    resolved = resolve("fromdir")
    assert (resolved.name, resolved.entry.source, resolved.fallback) == (
        "fromdir",
        "directory",
        False,
    )


def test_default_missing_uses_builtin_last_resort():
    entries = [e for e in list_engines() if e.name != "legacy"]
    resolved = load_default_engine(loaded_from(), make_context=make_context, entries=entries)
    assert resolved.name == "builtin-last-resort" and resolved.fallback
    assert "not installed" in resolved.reason
    engine = resolve("nope", entries=entries)
    assert engine.name == "builtin-last-resort" and "unknown engine 'nope'" in engine.reason


def test_default_engine_resolves_without_fallback():
    resolved = resolve("legacy")
    assert (resolved.name, resolved.fallback, resolved.entry.distribution) == (
        "legacy",
        False,
        "ctxengine-legacy",
    )


def test_listing_warnings_of_the_selected_engine_reach_the_result(site, plugins_dir):
    install(site, "tpe-shadow", "shadow")
    (plugins_dir / "shadow").mkdir()
    (plugins_dir / "shadow" / "plugin.toml").write_text("")
    (plugins_dir / "shadow" / "__init__.py").write_text("")
    resolved = resolve("shadow")
    assert resolved.entry.source == "entry-point" and not resolved.fallback
    assert "installed distribution wins" in resolved.warnings[0]
