"""The framework's context-engine test assertions under the released package's ABC
(tests/testing_kit/test_framework_abc.py runs them under the current-ABC shim)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.frameworks import REPO, framework_python
from tests.support.network import assert_no_escape, guarded_env
from tests.testing_kit.framework_abc_checks import CHECKS

MAIN = Path(__file__).with_name("abc_checks_main.py")


def test_framework_assertions_hold_under_the_released_abc(tmp_path):
    python = framework_python("hermes")
    env = guarded_env(tmp_path)
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{REPO}"
    env.update(HERMES_HOME=str(tmp_path / "hermes-home"), HOME=str(tmp_path))
    proc = subprocess.run(
        [str(python), str(MAIN)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_no_escape(env)
    results = json.loads(proc.stdout)
    expected = {f"{e}/{c}" for e in ("lcm", "legacy") for c in CHECKS}
    assert set(results) == expected
    failures = {k: v for k, v in results.items() if v != "ok"}
    assert not failures, failures
