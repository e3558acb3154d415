"""The runtime without ``fcntl`` (as on Windows): the public API imports, and the runtime's
tests that need nothing POSIX-only pass in a Python where ``import fcntl`` fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PORTABLE_RUNTIME_TESTS = (
    "test_host",
    "test_store",
    "test_selection",
    "test_public_api",
    "test_pipeline",
    "test_bad_input",
    "test_budget",
    "test_subagents",
)
BLOCK_FCNTL = "import sys\nsys.modules['fcntl'] = None  # `import fcntl` now raises ImportError\n"


def run_without_fcntl(code: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_FCNTL + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def test_the_public_api_imports_without_fcntl():
    done = run_without_fcntl(
        "from ctxengine_host import ContextHost, Session, AsyncContextHost\n"
        "import ctxengine_host, ctxengine_legacy, ctxengine_lcm\n"
        "[getattr(ctxengine_host, name) for name in ctxengine_host.__all__]\n"
        "from ctxengine_host.cli import main\n"
        "assert main(['engines', '--json']) == 0\n"
        "print('imported')\n",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("imported")


@pytest.mark.slow
def test_the_runtime_tests_pass_without_fcntl():
    """The runtime's in-process behaviour (host, sessions, store and leases, selection,
    quarantine), not its timing tests (those measure the machine, not portability)."""
    files = [f"tests/runtime/{name}.py" for name in PORTABLE_RUNTIME_TESTS]
    done = run_without_fcntl(
        "import pytest\n"
        f"sys.exit(pytest.main({[*files, 'tests/host_core/test_slot.py']!r} + ['-q',\n"
        "    '-p', 'no:cacheprovider', '-m', 'not slow and not postgres']))\n",
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]  # the tests ran (none skipped wholesale)
