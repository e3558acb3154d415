"""Standard builds: ``python -m build`` in each distribution's folder.

Builds the sdist, then the wheel *from that sdist* (what a publisher and pip do),
without network (``--no-isolation``: the dev venv's hatchling), and checks that
the sdist carries the code, the wheel carries the package, the metadata is
complete and ``twine check --strict`` accepts both.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {
    "packages/ctxengine-host": "ctxengine_host",
    "packages/ctxengine-legacy": "ctxengine_legacy",
    "packages/ctxengine-lcm": "ctxengine_lcm",
    ".": None,  # the umbrella: metadata only
}


def build(folder: str, out: Path) -> tuple[Path, Path]:
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), folder],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


@pytest.mark.parametrize("folder", sorted(DISTRIBUTIONS))
def test_sdist_carries_the_code_and_the_wheel_builds_from_it(folder, tmp_path):
    package = DISTRIBUTIONS[folder]
    sdist, wheel = build(folder, tmp_path)
    with tarfile.open(sdist) as archive:
        members = archive.getmembers()
    names = [m.name.split("/", 1)[1] for m in members if "/" in m.name]
    assert not any(m.issym() or m.islnk() for m in members), "links do not survive an sdist"
    assert "LICENSE" in {Path(n).name for n in names}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # only this distribution's own project file (the umbrella used to take every one)
    assert [n for n in names if n.endswith("pyproject.toml")] == ["pyproject.toml"]
    with zipfile.ZipFile(wheel) as archive:
        wheel_names = archive.namelist()
        (metadata_name,) = [n for n in wheel_names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    if package:
        assert f"src/{package}/__init__.py" in names
        assert f"src/{package}/py.typed" in names
        assert f"{package}/__init__.py" in wheel_names
        assert f"{package}/py.typed" in wheel_names
        pins = [r for r in metadata.get_all("Requires-Dist") or [] if r.startswith("ctxengine")]
        assert not [r for r in pins if "==" in r.split(";")[0]], pins
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("Classifier")
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_lcm_depends_on_the_host_not_the_umbrella(tmp_path):
    _, wheel = build("packages/ctxengine-lcm", tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = Parser().parsestr(archive.read(name).decode()).get_all("Requires-Dist")
    ours = [r for r in requires if r.startswith("ctxengine")]
    assert ours == ["ctxengine-host~=0.1.0"], ours


def test_each_distribution_has_one_version_source():
    import ctxengine_host
    import ctxengine_lcm
    import ctxengine_legacy
    from ctxengine_lcm.engine import LcmEngine
    from ctxengine_legacy.engine import LegacyEngine

    assert ctxengine_host.__version__ == ctxengine_lcm.__version__ == ctxengine_legacy.__version__
    assert LcmEngine.version == ctxengine_lcm.__version__
    assert LegacyEngine.version == ctxengine_legacy.__version__
    licences = {(REPO / d / "LICENSE").read_text() for d in (*DISTRIBUTIONS, "packages/ctxengine")}
    assert len(licences) == 1, "the LICENSE copies differ"
