"""mypy is clean on the three packages (strict on the contract and the public API, as
pyproject.toml's [tool.mypy] says), and the lazy public names are visible to it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def mypy(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )


@pytest.mark.slow
def test_mypy_is_clean_on_the_packages(tmp_path):
    result = mypy(cache=tmp_path / "cache")  # files and strictness from pyproject.toml
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout


@pytest.mark.slow
def test_the_lazy_public_names_have_their_real_types(tmp_path):
    user = tmp_path / "user_code.py"
    user.write_text(
        "from ctxengine_host import ContextHost, ContextEngine, Session\n"
        "reveal_type(ContextHost)\nreveal_type(ContextEngine)\nreveal_type(Session)\n"
    )
    result = mypy(str(user), cache=tmp_path / "cache")
    for name in ("host.ContextHost", "engine.ContextEngine", "session.Session"):
        assert 'Revealed type is "def' in result.stdout and name in result.stdout, result.stdout
