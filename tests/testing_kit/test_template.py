"""``ctxengine new-engine``: the generated distribution works, from source and as a wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ctxengine_host.testing import samples

NAME = "demo-window"


def ctxengine(
    *args: str, cwd: Path, env: dict[str, str] | None = None, exe: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = (exe or [sys.executable, "-m", "ctxengine_host.cli"]) + list(args)
    return subprocess.run(
        command, cwd=cwd, env=env or dict(os.environ), capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def project(tmp_path) -> Path:
    proc = ctxengine("new-engine", NAME, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    assert written["distribution"] == f"ctxengine-{NAME}"
    return Path(written["directory"])


def test_generated_distribution_declares_the_engine(project):
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert meta["name"] == f"ctxengine-{NAME}"
    assert "ctxengine" in meta["keywords"]
    assert any(dep.startswith("ctxengine-host") for dep in meta["dependencies"])
    assert meta["entry-points"]["ctxengine.engines"] == {
        NAME: "ctxengine_demo_window.engine:DemoWindowEngine"
    }
    readme = (project / "README.md").read_text()
    assert "twine upload" in readme and f"ctxengine use {NAME}" in readme


def test_generated_tests_pass_from_source(project):
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout


@pytest.mark.parametrize(
    ("name", "message"),
    [("Bad_Name", "not valid"), ("legacy", "reserved"), ("none", "reserved")],
)
def test_bad_names_are_refused(tmp_path, name, message):
    proc = ctxengine("new-engine", name, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr
    assert not any(tmp_path.iterdir())


def test_a_non_empty_directory_needs_force(tmp_path, project):
    proc = ctxengine("new-engine", NAME, str(project), cwd=tmp_path)
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert ctxengine("new-engine", NAME, str(project), "--force", cwd=tmp_path).returncode == 0


def _wheelhouse() -> Path:
    path = os.environ.get("CTXENGINE_WHEELHOUSE")
    host_wheels = list(Path(path).glob("ctxengine_host-*.whl")) if path else []
    if not host_wheels:
        message = "no wheelhouse: run scripts/build-wheelhouse.sh and set CTXENGINE_WHEELHOUSE"
        if os.environ.get("CTXENGINE_REQUIRE_WHEELHOUSE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return Path(path)


@pytest.mark.slow
def test_wheel_installs_offline_passes_its_tests_and_is_selected(tmp_path, project):
    wheelhouse = _wheelhouse()
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(fresh)
    python = str(fresh / "bin" / "python")
    offline = ["--no-index", "--find-links", str(wheelhouse)]

    def pip(*args: str) -> None:
        proc = subprocess.run(
            [python, "-m", "pip", "--disable-pip-version-check", "-q", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr

    # Build the wheel (the build backend comes from the wheelhouse), then install it.
    pip("wheel", *offline, "--no-deps", "-w", str(tmp_path / "dist"), str(project))
    [wheel] = (tmp_path / "dist").glob("ctxengine_demo_window-*.whl")
    pip("install", *offline, str(wheel), "ctxengine-host[testing]")

    # Its own tests, against the installed wheel: the kit's entry-point check runs for real.
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {c.get("name"): c for c in ET.parse(report).getroot().iter("testcase")}
    assert len(cases) >= 20
    assert cases["test_entry_point_discovery"].find("skipped") is None

    # Listed, selected through the slot by `ctxengine use`, and run by a replay.
    exe = [str(fresh / "bin" / "ctxengine")]
    listed = ctxengine("engines", "--json", cwd=tmp_path, exe=exe)
    assert listed.returncode == 0, listed.stderr
    assert NAME in listed.stdout
    (tmp_path / "ctxengine.toml").write_text("[context]\nreserve_output_tokens = 512\n")
    used = ctxengine("use", NAME, "--local", cwd=tmp_path, exe=exe)
    assert used.returncode == 0, used.stderr
    session = tmp_path / "session.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in samples.conversation(20)))
    run = ctxengine(
        "replay", str(session), "--context-length", "3000", "--json", cwd=tmp_path, exe=exe
    )
    assert run.returncode == 0, run.stderr
    replay = json.loads(run.stdout)
    assert replay["engine"]["name"] == NAME and not replay["engine"]["fallback"]
    assert replay["summary"]["compactions"] >= 1 and replay["summary"]["quarantines"] == 0
