"""examples/postgres_gateway.py works as documented: retried turns store nothing twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .fixtures import pg_connect

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "postgres_gateway.py"


def test_the_gateway_example_retries_turns_idempotently(pg_url):
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), pg_url, "demo", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 6 and lines[1] == f"{lines[0]} (retried)"
    with pg_connect(pg_url) as conn:
        (rows,) = conn.execute(
            "SELECT count(*) FROM transcript_messages WHERE session_id = 'demo'"
        ).fetchone()
    assert rows == 6  # three turns, user + assistant each, none twice
