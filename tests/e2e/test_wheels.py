"""Our wheels in a fresh virtual environment, offline, with a third-party engine.

Installs from the wheelhouse (``CTXENGINE_WHEELHOUSE``, built by
``scripts/build-wheelhouse.sh``) with ``--no-index``: nothing reaches the
network. Our four wheels are rebuilt from the working tree for this run so the
test never checks stale code. A third-party engine distribution is written and
built here, like a plugin author would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
OUR_PROJECTS = (
    "packages/ctxengine-host",
    "packages/ctxengine-legacy",
    "packages/ctxengine-lcm",
    ".",
)


def wheelhouse() -> Path:
    value = os.environ.get("CTXENGINE_WHEELHOUSE")
    path = Path(value) if value else REPO / "wheelhouse"
    if not any(path.glob("hatchling-*.whl")):
        reason = (
            f"no wheelhouse with hatchling at {path}; build it with "
            f"`bash scripts/build-wheelhouse.sh` (or run `bash scripts/test.sh`)"
        )
        if os.environ.get("CTXENGINE_REQUIRE_WHEELHOUSE") or os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def offline_env(**extra: str) -> dict[str, str]:
    """The environment with pip confined to the given links and ctxengine vars cleared."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "CTXENGINE_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(extra)
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path | None = None, check: bool = True):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{cmd} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result


def write_engine_project(root: Path, dist: str, engine: str, module: str, marker: Path) -> Path:
    """A third-party engine distribution whose module records that it was imported."""
    project = root / dist
    (project / module).mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [build-system]
            requires = ["hatchling"]
            build-backend = "hatchling.build"

            [project]
            name = "{dist}"
            version = "0.2.0"
            dependencies = ["ctxengine-host"]

            [project.entry-points."ctxengine.engines"]
            {engine} = "{module}.engine:ThirdPartyEngine"

            [tool.hatch.build.targets.wheel]
            packages = ["{module}"]
            """
        )
    )
    (project / module / "__init__.py").write_text("")
    (project / module / "engine.py").write_text(
        textwrap.dedent(
            f"""
            import pathlib

            pathlib.Path({str(marker)!r}).write_text("imported")

            from ctxengine_host import ContextEngine


            class ThirdPartyEngine(ContextEngine):
                name = {engine!r}
                version = "0.2.0"

                def __init__(self, context=None):
                    super().__init__(context=context)

                def update_from_response(self, usage):
                    self.last_prompt_tokens = usage.get("prompt_tokens", 0)

                def should_compress(self, prompt_tokens=None):
                    return False

                def compress(self, messages, current_tokens=None, focus_topic=None):
                    return messages
            """
        )
    )
    return project


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv with `ctxengine` installed from our freshly built wheels, offline."""
    house = wheelhouse()
    root = tmp_path_factory.mktemp("e2e")
    links = root / "links"
    links.mkdir()
    for wheel in house.glob("*.whl"):
        if not wheel.name.startswith(("ctxengine-", "ctxengine_")):
            (links / wheel.name).symlink_to(wheel)
    env = offline_env()
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(links)]
    try:
        import hatchling  # noqa: F401

        build.append("--no-build-isolation")
    except ImportError:
        build += ["--no-index", "--find-links", str(links)]
    run(build + [str(REPO / p) for p in OUR_PROJECTS], env)
    venv_dir = root / "venv"
    run([sys.executable, "-m", "venv", str(venv_dir)], env)
    pip = [str(venv_dir / "bin" / "python"), "-m", "pip", "install", "--no-index"]
    pip += ["--find-links", str(links)]
    run([*pip, "ctxengine", "ctxengine-lcm"], env)
    return {"root": root, "bin": venv_dir / "bin", "pip": pip}


def ctxengine(venv, *args: str, check: bool = True, **env: str):
    cwd = venv["root"] / "cwd"
    cwd.mkdir(exist_ok=True)
    full_env = offline_env(
        XDG_CONFIG_HOME=str(venv["root"] / "config"),
        CTXENGINE_DATA_DIR=str(venv["root"] / "data"),
        **env,
    )
    return run([str(venv["bin"] / "ctxengine"), *args], full_env, cwd=cwd, check=check)


def test_wheels_third_party_engine_selection_and_clash(venv):
    root = venv["root"]
    tiny_marker, sleepy_marker = root / "tiny-imported", root / "sleepy-imported"
    projects = root / "projects"
    tiny = write_engine_project(projects, "tpe-tiny", "tiny", "tpe_tiny", tiny_marker)
    sleepy = write_engine_project(projects, "tpe-sleepy", "sleepy", "tpe_sleepy", sleepy_marker)
    run(venv["pip"] + [str(tiny), str(sleepy)], offline_env())

    listed = json.loads(ctxengine(venv, "engines", "--json").stdout)
    rows = {row["name"]: row for row in listed["engines"]}
    assert set(rows) == {"legacy", "lcm", "tiny", "sleepy", "builtin-last-resort"}
    assert (rows["tiny"]["distribution"], rows["tiny"]["version"]) == ("tpe-tiny", "0.2.0")
    assert rows["legacy"]["selected"] and rows["legacy"]["distribution"] == "ctxengine-legacy"
    assert not tiny_marker.exists() and not sleepy_marker.exists()

    # Selection through the environment variable.
    report = json.loads(ctxengine(venv, "doctor", "--json", CTXENGINE_ENGINE="tiny").stdout)
    assert report["ok"] and report["engine"]["name"] == "tiny"
    assert report["slot"] == {"name": "tiny", "source": "env", "configured": "tiny"}
    assert tiny_marker.exists() and not sleepy_marker.exists()

    # Selection through the config file (written by `ctxengine use`).
    assert "engine slot set to 'tiny'" in ctxengine(venv, "use", "tiny").stdout
    report = json.loads(ctxengine(venv, "doctor", "--json").stdout)
    assert report["engine"]["name"] == "tiny" and report["slot"]["source"] == "config"
    assert not sleepy_marker.exists()

    # A second distribution claiming the same name: listing warns, selection is refused.
    clone = write_engine_project(projects, "tpe-tiny-clone", "tiny", "tpe_tiny_clone", root / "c")
    run(venv["pip"] + [str(clone)], offline_env())
    listed = json.loads(ctxengine(venv, "engines", "--json").stdout)
    claims = [row for row in listed["engines"] if row["name"] == "tiny"]
    assert {c["distribution"] for c in claims} == {"tpe-tiny", "tpe-tiny-clone"}
    assert all(c["warnings"] for c in claims)
    clash = ctxengine(venv, "doctor", check=False)
    assert clash.returncode == 1
    said = clash.stdout + clash.stderr  # problems and warnings go to stderr
    assert "'tpe-tiny'" in said and "'tpe-tiny-clone'" in said
    assert not (root / "c").exists()

    # --check imports every engine (the marker mechanism does detect imports), and our
    # engines load from the wheels.
    checked = json.loads(ctxengine(venv, "engines", "--check", "--json", check=False).stdout)
    assert sleepy_marker.exists()
    results = {(r["name"], r["distribution"]): r["check"] for r in checked["engines"]}
    assert results[("legacy", "ctxengine-legacy")]["ok"], results
    assert results[("lcm", "ctxengine-lcm")]["ok"], results
    assert results[("sleepy", "tpe-sleepy")]["ok"], results


def test_without_legacy_the_builtin_last_resort_runs_with_a_warning(venv):
    run(
        [
            str(venv["bin"] / "python"),
            "-m",
            "pip",
            "uninstall",
            "-y",
            "ctxengine",
            "ctxengine-legacy",
        ],
        offline_env(),
    )
    result = ctxengine(venv, "doctor", "--json", check=False, CTXENGINE_ENGINE="legacy")
    report = json.loads(result.stdout)
    assert result.returncode == 0
    assert report["engine"]["name"] == "builtin-last-resort"
    assert any("last-resort" in w for w in report["warnings"])
    listed = json.loads(ctxengine(venv, "engines", "--json").stdout)["engines"]
    assert not any(row["name"] == "legacy" for row in listed)
