"""``ctxengine compare`` end to end: table, charts, HTML, compare.json."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import SHORT, run_cli


def test_compare_two_engines_on_the_short_sample(tmp_path) -> None:
    out = tmp_path / "cmp"
    result = run_cli("compare", str(SHORT), "--engines", "legacy,lcm", "--out", str(out))
    assert result.returncode == 0, result.stderr
    header, *rows = [
        line for line in result.stdout.splitlines() if line.startswith(("session", "short"))
    ]
    assert header.split()[:3] == ["session", "engine", "turns"]
    assert [r.split()[1] for r in rows] == ["legacy", "lcm"]

    data = json.loads((out / "compare.json").read_text())
    assert data["schema"] == "ctxengine.compare/1"
    [session] = data["sessions"]
    assert [run["engine"] for run in session["runs"]] == ["legacy", "lcm"]
    for run in session["runs"]:
        assert run["summary"]["turns"] == 60 and run["summary"]["turns_over_budget"] == 0
        report = json.loads(Path(run["report"]).read_text())
        assert len(report["turns"]) == 60

    svg = (out / "short-60.request_tokens.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 2
    html = (out / "report.html").read_text()
    assert "<svg" in html and "legacy" in html and "lcm" in html
    assert "<script" not in html and "http" not in html.replace('xmlns="http://www.w3.org', "")
    assert (out / "short-60" / "legacy" / "transcripts.db").stat().st_size > 0


def test_compare_bad_input(tmp_path) -> None:
    missing = run_cli("compare", str(SHORT), "--engines", "legacy,nope", "--out", str(tmp_path))
    assert missing.returncode == 2 and "unknown engine 'nope'" in missing.stderr
    dup = run_cli("compare", str(SHORT), "--engines", "legacy,legacy", "--out", str(tmp_path))
    assert dup.returncode == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = run_cli("compare", str(empty), "--engines", "legacy", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "empty" in result.stderr
