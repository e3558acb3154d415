"""Fresh instances where the framework makes them, and checks that exercise the clone path."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

from ctxengine_host.contract.engine import ContextEngine
from ctxengine_host.discovery.compat.cloning import clone_problems, give_fresh_clones


class ConnectionEngine(ContextEngine):
    """Keeps a database connection and the inherited deep-copy clone."""

    name = "connection"

    def __init__(self, config=None, context=None):
        super().__init__(config, context)
        self.db = sqlite3.connect(":memory:")

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


def test_a_failed_deep_copy_gives_a_fresh_instance():
    engine = ConnectionEngine()
    assert clone_problems(engine)  # cannot pickle 'sqlite3.Connection'
    give_fresh_clones(engine, ConnectionEngine, always=False)
    clone = engine.clone_for_agent()
    assert isinstance(clone, ConnectionEngine) and clone.db is not engine.db
    assert clone_problems(engine) == [] and clone_problems(clone) == []


def test_an_engine_with_its_own_clone_is_left_alone():
    class OwnClone(ConnectionEngine):
        def clone_for_agent(self):
            return self

    engine = OwnClone()
    give_fresh_clones(engine, OwnClone, always=False)
    assert engine.clone_for_agent() is engine


ENGINE_DIR_INIT = """\
import sqlite3

from agent.context_engine import ContextEngine


class Uncopyable(ContextEngine):
    def __init__(self):
        self.db = sqlite3.connect(":memory:")
        self.made = 1

    @property
    def name(self):
        return "uncopyable"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages

    def clone_for_agent(self):
        raise RuntimeError("this engine cannot be cloned")


def register(ctx):
    ctx.register_context_engine(Uncopyable())
"""


def test_engines_check_and_doctor_exercise_the_clone_path(tmp_path):
    """An engine whose own clone_for_agent fails is reported, not called `ok`."""
    plugin = tmp_path / "plugins" / "uncopyable"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: uncopyable\n")
    (plugin / "__init__.py").write_text(textwrap.dedent(ENGINE_DIR_INIT))
    env = {
        **os.environ,
        "CTXENGINE_PLUGINS_DIR": str(tmp_path / "plugins"),
        "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
        "CTXENGINE_QUARANTINE_FILE": str(tmp_path / "quarantine.jsonl"),
    }

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "ctxengine_host.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    # A directory engine gets a fresh instance per agent: its own failing clone is
    # never called, so the check passes, as it does for the framework's directory loader.
    checked = cli("engines", "--check", "--json")
    [row] = [r for r in json.loads(checked.stdout)["engines"] if r["name"] == "uncopyable"]
    assert row["check"]["ok"], row
    doctor = cli("doctor", "--engine", "uncopyable", "--json")
    assert json.loads(doctor.stdout)["engine"]["name"] == "uncopyable", doctor.stdout


INSTALLED_MODULE = ENGINE_DIR_INIT.replace(
    "from agent.context_engine import ContextEngine",
    "from ctxengine_host.contract.engine import ContextEngine",
)


def test_an_installed_engine_whose_clone_fails_is_reported_by_check_and_doctor(tmp_path):
    """The session-open clone is exercised at selection: doctor and --check say why,
    instead of `ok` followed by a quarantine at every session open."""
    from tests.host_core.distfactory import make_dist

    site = tmp_path / "site"
    make_dist(
        site,
        "tpe-uncopyable",
        entry_points={"ctxengine.engines": {"uncopyable": "tpe_uncopyable:Uncopyable"}},
        modules={
            "tpe_uncopyable.py": INSTALLED_MODULE.replace(
                "    def __init__(self):\n", "    def __init__(self, config=None, context=None):\n"
            )
        },
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
        "CTXENGINE_QUARANTINE_FILE": str(tmp_path / "quarantine.jsonl"),
    }

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "ctxengine_host.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    checked = cli("engines", "--check", "--json")
    [row] = [r for r in json.loads(checked.stdout)["engines"] if r["name"] == "uncopyable"]
    assert not row["check"]["ok"]
    assert "clone_for_agent() raised RuntimeError: this engine cannot be cloned" in str(row)
    doctor = json.loads(cli("doctor", "--engine", "uncopyable", "--json").stdout)
    assert not doctor["ok"] and "clone_for_agent() raised" in " ".join(doctor["problems"])


FLAKY_CLONE = """\
from ctxengine_host.contract.engine import ContextEngine


class FlakyClone(ContextEngine):
    name = "flaky-clone"
    clones = 0

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages

    def clone_for_agent(self):
        type(self).clones += 1
        return type(self)() if type(self).clones == 1 else None
"""


def test_replay_reports_a_quarantine_at_session_open_as_a_fallback(tmp_path):
    from ctxengine_host.testing import samples
    from tests.host_core.distfactory import make_dist

    site = tmp_path / "site"
    make_dist(
        site,
        "tpe-flaky-clone",
        entry_points={"ctxengine.engines": {"flaky-clone": "tpe_flaky_clone:FlakyClone"}},
        modules={"tpe_flaky_clone.py": FLAKY_CLONE},
    )
    session = tmp_path / "session.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in samples.conversation(4)))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "CTXENGINE_DATA_DIR": str(tmp_path / "data"),
        "CTXENGINE_QUARANTINE_FILE": str(tmp_path / "quarantine.jsonl"),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxengine_host.cli",
            "replay",
            str(session),
            "--engine",
            "flaky-clone",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    engine = json.loads(proc.stdout)["engine"]
    assert engine["fallback"] is True and engine["name"] == "legacy", engine
    assert "quarantined" in engine["reason"]
