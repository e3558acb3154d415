"""Find the virtual environment of a third-party framework for an integration test.

``scripts/framework-env.sh NAME`` builds ``.envs/NAME`` (``scripts/test.sh`` runs it
before pytest). Outside CI a missing environment skips the test with the command
that builds it; under CI (``CI`` set) it fails, so a framework that cannot be
installed is never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def framework_python(name: str) -> Path:
    """The interpreter of ``.envs/NAME``, or skip/fail as the module docstring says."""
    root = Path(os.environ.get("CTXENGINE_FRAMEWORK_ENVS", REPO / ".envs"))
    python = root / name / "bin" / "python"
    if python.exists():
        return python
    message = f"framework environment {name!r} missing: run bash scripts/framework-env.sh {name}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
