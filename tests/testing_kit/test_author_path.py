"""The author path works verbatim: every ``sh`` block of docs/authoring.md and of the
generated engine's README runs, as written and in order, in a fresh virtual environment.

The commands are extracted from those files at run time, so the docs and this test
cannot drift apart. pip is confined to the wheelhouse (``PIP_FIND_LINKS`` and
``PIP_NO_INDEX``: the unpublished-host setup the docs describe, offline).
"""

from __future__ import annotations

import os
import re
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
AUTHORING = REPO / "docs" / "authoring.md"
ENGINE = "topic-router"
SH_BLOCK = re.compile(r"^( *)```sh\n(.*?)^\1```", re.S | re.M)


def sh_blocks(markdown: str) -> list[str]:
    """The ``sh`` fenced blocks of a markdown text, dedented (list items indent them)."""
    blocks = []
    for indent, body in SH_BLOCK.findall(markdown):
        blocks.append("\n".join(line[len(indent) :] for line in body.splitlines()))
    return blocks


def wheelhouse() -> Path:
    value = os.environ.get("CTXENGINE_WHEELHOUSE")
    path = Path(value) if value else REPO / "wheelhouse"
    if not any(path.glob("twine-*.whl")):
        message = f"no wheelhouse with twine at {path}: run bash scripts/build-wheelhouse.sh"
        if os.environ.get("CI") or os.environ.get("CTXENGINE_REQUIRE_WHEELHOUSE"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def run_script(script: str, cwd: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, (
        f"a documented command failed (exit {proc.returncode}):\n{script}\n"
        f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    )


def test_every_documented_author_command_works(tmp_path):
    user = tmp_path / "user-venv"
    venv.create(user, with_pip=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "CTXENGINE_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(
        PATH=f"{user / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(user),
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse()),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    guide = sh_blocks(AUTHORING.read_text(encoding="utf-8"))
    assert len(guide) >= 3 and any(f"new-engine {ENGINE}" in b for b in guide)
    run_script("\n".join(guide), tmp_path, env)

    project = tmp_path / f"ctxengine-{ENGINE}"
    readme = sh_blocks((project / "README.md").read_text(encoding="utf-8"))
    use, develop, publish = readme
    assert f"pip install ctxengine-{ENGINE}" in use and "pytest" in develop
    # The README's own order of use is develop, publish, then install what was published.
    (tmp_path / "try").rename(tmp_path / "try-from-guide")
    run_script(develop, project, env)
    run_script(publish, project, env)
    env["PIP_FIND_LINKS"] += f" {project / 'dist'}"
    run_script(use, tmp_path, env)
    listed = subprocess.run(
        [str(user / "bin" / "ctxengine"), "engines", "--json"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert ENGINE in listed.stdout, listed.stderr
