"""``emit_json`` prints the indented JSON in one write (``json.dump`` writes each piece)."""

from __future__ import annotations

import io
import json

import pytest

from ctxengine_host.cli.output import emit_json


class CountingStdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_report_is_printed_in_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    report = {"turns": [{"turn": i, "tokens": [i, i + 1], "note": None} for i in range(50)]}
    out = CountingStdout()
    monkeypatch.setattr("sys.stdout", out)
    emit_json(report)
    assert out.writes == 1
    assert out.getvalue() == json.dumps(report, indent=2) + "\n"
    assert json.loads(out.getvalue()) == report
