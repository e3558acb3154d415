"""Fixtures for the host-core tests: a temp site dir on sys.path, fresh discovery caches."""

from __future__ import annotations

import sys

import pytest

from ctxengine_host.discovery import engines as discovery
from ctxengine_host.discovery import plugins


@pytest.fixture(autouse=True)
def fresh_caches():
    discovery.clear_cache()
    plugins.clear_cache()
    yield
    discovery.clear_cache()
    plugins.clear_cache()


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A directory on sys.path for test distributions; their modules are unloaded after."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    before = set(sys.modules)
    yield path
    for name in set(sys.modules) - before:
        if name.startswith(("tpe_", "ctxengine_dir_plugins")):
            del sys.modules[name]


@pytest.fixture
def plugins_dir(tmp_path, monkeypatch):
    path = tmp_path / "plugins"
    path.mkdir()
    monkeypatch.setenv("CTXENGINE_PLUGINS_DIR", str(path))
    return path
