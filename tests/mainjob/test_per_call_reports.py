"""Reports for real shapes: a per-provider-call view beside the per-turn one, charts that
stay readable at thousands of turns and calls, compare progress when piped."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET

from ctxengine_host.replay.figures import chart_svgs
from ctxengine_host.replay.model import CallRow, ReplayReport, TurnRow
from ctxengine_host.replay.svgchart import MAX_POINTS

from .conftest import SHORT, run_cli

NS = "{http://www.w3.org/2000/svg}"


def single_loop_session(path, calls: int = 40) -> None:
    """One user message, then ``calls`` tool calls: the shape of a coding agent's run."""
    lines = [{"role": "user", "content": "Fix the failing test in the exporter."}]
    for n in range(calls):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        lines.append({"role": "assistant", "content": None, "tool_calls": [call]})
        lines.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"line {n} " * 40})
    lines.append({"role": "assistant", "content": "Fixed."})
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))


def test_a_single_turn_tool_loop_gets_one_row_per_provider_call(tmp_path):
    session = tmp_path / "loop.jsonl"
    single_loop_session(session)
    result = run_cli("replay", str(session), "--engine", "legacy", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["turns"]) == 1 and report["turns"][0]["provider_calls"] == 41
    calls = report["calls"]
    assert [c["call"] for c in calls] == list(range(1, 42))
    assert all(c["turn"] == 1 for c in calls)
    assert calls[-1]["cumulative_sent_tokens"] == report["summary"]["tokens_sent_total"]
    assert calls[-1]["messages_sent"] > calls[0]["messages_sent"]
    text = run_cli("replay", str(session), "--engine", "legacy")
    table = text.stdout.split("\n\n")[0].splitlines()
    assert table[0].split()[:3] == ["call", "turn", "request"]  # per call: a tool loop
    assert len(table) == 1 + 41


def synthetic_runs(turns: int = 2_000, calls: int = 5_000) -> dict[str, ReplayReport]:
    rng = random.Random(7)
    runs = {}
    for engine in ("legacy", "lcm", "third"):
        report = ReplayReport("s", engine, engine, False, None, "gpt-4", 32_768, calls)
        total = 0
        for n in range(1, calls + 1):
            tokens = rng.randint(2_000, 30_000)
            total += tokens
            report.calls.append(
                CallRow(n, n * turns // calls + 1, tokens, tokens, 28_000, 9, total)
            )
        report.turns = [
            TurnRow(turn=t, request_tokens=rng.randint(2_000, 30_000)) for t in range(1, turns + 1)
        ]
        runs[engine] = report
    return runs


def points(element) -> int:
    return len(element.get("points").split())


def test_charts_stay_readable_at_2000_turns_and_5000_calls():
    svgs = chart_svgs("big", synthetic_runs())
    for kind in ("request_tokens_per_call", "request_tokens_per_turn"):
        root = ET.fromstring(svgs[kind])
        lines = root.findall(f"{NS}polyline")
        bands = root.findall(f"{NS}polygon")
        assert len(lines) == len(bands) == 3  # one small panel per engine
        assert all(points(line) <= MAX_POINTS for line in lines)
        assert all(points(band) <= 2 * MAX_POINTS for band in bands)  # upper and lower edge
    cumulative = ET.fromstring(svgs["cumulative_sent"])
    lines = cumulative.findall(f"{NS}polyline")
    assert len(lines) == 3 and all(points(line) <= MAX_POINTS for line in lines)
    ys = [float(p.split(",")[1]) for p in lines[0].get("points").split()]
    assert ys == sorted(ys, reverse=True)  # cumulative: only grows (SVG y goes down)
    labels = [t.text for t in cumulative.iter(f"{NS}text")]
    assert any(label.startswith("legacy ") and label.endswith("M") for label in labels)


def test_compare_reports_progress_on_stderr_when_piped(tmp_path):
    result = run_cli("compare", str(SHORT), "--engines", "legacy", "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert "short-60 on legacy: 60/60 turns (100%)" in result.stderr
    assert "short-60 on legacy: 30/60 turns (50%)" in result.stderr
    assert "turns (" not in result.stdout
    data = json.loads((tmp_path / "o" / "compare.json").read_text())
    charts = data["sessions"][0]["charts_svg"]
    assert set(charts) == {"request_tokens_per_call", "request_tokens_per_turn", "cumulative_sent"}
    html = (tmp_path / "o" / "report.html").read_text()
    assert "Per provider call" in html and html.count("<svg") == 3
