"""The runtime without ``fcntl`` (as on Windows): the public API imports, and the runtime's
tests that need nothing POSIX-only pass in a Python where ``import fcntl`` fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
    """In-process tests only: worker processes are real POSIX processes here."""
    done = run_without_fcntl(
        "import pytest\n"
        "sys.exit(pytest.main(['tests/runtime', 'tests/host_core/test_slot.py', '-q', '-x',\n"
        "    '-p', 'no:cacheprovider', '-m', 'not slow and not postgres',\n"
        "    '--deselect', 'tests/runtime/test_process_isolation.py']))\n",
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
