"""Run framework processes under the network guard and fail on any escape.

``guarded_env(tmp_path)`` returns an environment whose Python processes load
``netguard/sitecustomize.py``; ``assert_no_escape(env)`` fails the test if any
of them tried to reach a host other than 127.0.0.1.
"""

from __future__ import annotations

import os
from pathlib import Path

NETGUARD_DIR = Path(__file__).parent / "netguard"


def guarded_env(tmp_path: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: os.environ) with the guard preloaded."""
    env = dict(os.environ if base is None else base)
    log = tmp_path / "netguard.log"
    log.write_text("", encoding="utf-8")
    env["CTXENGINE_NETGUARD_LOG"] = str(log)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(NETGUARD_DIR), env.get("PYTHONPATH", "")) if p
    )
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(proxy, None)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def assert_no_escape(env: dict[str, str]) -> None:
    """Fail if any guarded process tried to leave the loopback interface."""
    log = Path(env["CTXENGINE_NETGUARD_LOG"])
    attempts = log.read_text(encoding="utf-8").strip()
    assert not attempts, f"a process under test tried to reach the network:\n{attempts}"
