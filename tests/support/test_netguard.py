"""The guard itself: loopback passes, anything else is refused and logged."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.network import assert_no_escape, guarded_env

PROBE = """
import socket, sys
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
socket.create_connection(srv.getsockname(), timeout=2).close()
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
except ConnectionRefusedError as exc:
    print("refused:", exc)
"""


def test_loopback_passes_and_outside_is_refused_and_logged(tmp_path):
    env = guarded_env(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert "netguard" in out.stdout
    with pytest.raises(AssertionError, match=r"192\.0\.2\.1"):
        assert_no_escape(env)
