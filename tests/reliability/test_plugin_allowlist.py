"""An engine or plugin not on CTXENGINE_LOAD_PLUGINS is never imported, whatever asks for it.

Three hostile packages (an entry-point engine, an entry-point observer plugin, a plugins-dir
engine) each write a marker file when imported. Fresh interpreters list, check, select and
run them with the allowlist set; no marker may appear. The same run without the allowlist
imports them (the positive control that proves the markers work).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from host_core.distfactory import engine_module, make_dist

SELECT_EVERYTHING = """
import json, sys
from ctxengine_host.discovery.engines import list_engines
from ctxengine_host.runtime.host import ContextHost
from ctxengine_host.discovery.plugins import load_plugins

names = sorted(e.name for e in list_engines())
load_plugins()
used = []
for name in ("evil", "evildir"):
    host = ContextHost(engine=name, store_path=sys.argv[1], context_length=8192)
    with host.open_session(name) as session:
        session.add_user_message("hello")
        session.build_request()
    used.append(host.engine_name)
    host.close()
print(json.dumps({"listed": names, "used": used}))
"""


@pytest.fixture
def hostile(tmp_path) -> dict:
    markers = {k: tmp_path / f"imported-{k}" for k in ("engine", "plugin", "dir")}
    site = tmp_path / "site"
    make_dist(
        site, "evil-engines", "1", {"ctxengine.engines": {"evil": "evil_engine:Evil"}},
        {"evil_engine.py": engine_module("Evil", "evil", marker=markers["engine"])},
    )  # fmt: skip
    make_dist(
        site, "evil-plugins", "1", {"ctxengine.plugins": {"spy": "evil_plugin"}},
        {"evil_plugin.py": f"import pathlib\npathlib.Path({str(markers['plugin'])!r}).touch()\n"},
    )  # fmt: skip
    plugin_dir = tmp_path / "plugins" / "evildir"
    plugin_dir.mkdir(parents=True)
    (plugin_dir / "plugin.toml").write_text('name = "evildir"\n')
    (plugin_dir / "__init__.py").write_text(
        engine_module("EvilDir", "evildir", marker=markers["dir"])
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXENGINE_FAULT")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["CTXENGINE_PLUGINS_DIR"] = str(tmp_path / "plugins")
    return {"env": env, "markers": markers, "db": tmp_path / "t.db"}


def run(hostile: dict, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SELECT_EVERYTHING, str(hostile["db"])],
        env={**hostile["env"], **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def cli(hostile: dict, *args: str, **env: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("ctxengine")
    return subprocess.run(
        [str(exe), *args], env={**hostile["env"], **env}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def imported(hostile: dict) -> list[str]:
    return sorted(k for k, path in hostile["markers"].items() if path.exists())


@pytest.mark.parametrize("allow", ["", "someone-else", "ctxengine-lcm"])
def test_nothing_off_the_allowlist_is_imported(hostile, allow):
    done = run(hostile, CTXENGINE_LOAD_PLUGINS=allow)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["used"] == ["legacy", "legacy"]
    for args in (["engines", "--check"], ["doctor", "--engine", "evil"], ["engines", "--json"]):
        cli(hostile, *args, CTXENGINE_LOAD_PLUGINS=allow)
    assert imported(hostile) == []


def test_blocked_entry_points_are_never_imported(hostile):
    done = run(hostile, CTXENGINE_BLOCK_PLUGINS="evil,spy,evildir")
    assert done.returncode == 0, done.stderr
    cli(hostile, "engines", "--check", CTXENGINE_BLOCK_PLUGINS="evil,spy,evildir")
    assert imported(hostile) == []


def test_positive_control_without_the_allowlist_they_are_imported(hostile):
    done = run(hostile)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["used"] == ["evil", "evildir"]
    assert imported(hostile) == ["dir", "engine", "plugin"]


SELECT_ONE = """
import json, sys
from ctxengine_host.runtime.host import ContextHost

host = ContextHost(engine=sys.argv[2], store_path=sys.argv[1], context_length=8192)
with host.open_session("s") as session:
    session.add_user_message("hello")
    session.build_request()
print(json.dumps({"used": host.engine_name}))
host.close()
"""


@pytest.mark.parametrize("claimed", ["ctxengine-lcm", "ctxengine", "ctxengine_host"])
def test_a_directory_engine_cannot_pass_for_ours_by_its_manifest_name(tmp_path, claimed):
    marker = tmp_path / "imported"
    plugin_dir = tmp_path / "plugins" / "impostor"
    plugin_dir.mkdir(parents=True)
    (plugin_dir / "plugin.toml").write_text(f'name = "{claimed}"\n')
    (plugin_dir / "__init__.py").write_text(engine_module("Impostor", claimed, marker=marker))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXENGINE_")}
    env.update(CTXENGINE_PLUGINS_DIR=str(tmp_path / "plugins"), CTXENGINE_LOAD_PLUGINS="")
    done = subprocess.run(
        [sys.executable, "-c", SELECT_ONE, str(tmp_path / "t.db"), claimed],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["used"] != claimed
    exe = Path(sys.executable).with_name("ctxengine")
    for args in (["engines", "--check"], ["doctor", "--engine", claimed]):
        subprocess.run([str(exe), *args], env=env, capture_output=True, timeout=120)
    listing = subprocess.run(
        [str(exe), "engines", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert not marker.exists()
    assert "takes the name of the installed distribution" in listing.stdout
