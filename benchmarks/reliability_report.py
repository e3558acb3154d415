"""Run the reliability suite and print its figures (docs/reliability.md).

    .venv/bin/python benchmarks/reliability_report.py            # the CI sizes
    .venv/bin/python benchmarks/reliability_report.py --soak     # hypothesis soak profile,
                                                                 # 64 x 200 load, 30 kills/point
    .venv/bin/python benchmarks/reliability_report.py --json     # the same, machine-readable

Figures: faults injected and survived (per family), kills per crash point survived,
hypothesis examples tried, load held (turns/s, p50/p99 time per turn in ctxengine), the
known bugs the suite pins as strict xfails, and the wall time of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import timeit
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "reliability"
FAULT_FILES = {
    "test_fault_injection": "engine method x fault",
    "test_summarizer_faults": "summarizer",
    "test_plugin_allowlist": "plugin allowlist",
    "test_hostile_input": "hostile input",
}


def run_suite(soak: bool, work: Path) -> tuple[dict, float, int]:
    figures = work / "figures.jsonl"
    junit = work / "junit.xml"
    env = {**os.environ, "CTXENGINE_RELIABILITY_FIGURES": str(figures)}
    if soak:
        env.update(
            HYPOTHESIS_PROFILE="soak", CTXENGINE_SOAK="1", CTXENGINE_CRASH_KILLS_PER_POINT="30"
        )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(SUITE), "-q", "-p", "no:cacheprovider",
         f"--junitxml={junit}"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if not junit.exists():
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit("the suite did not run; see the output above")
    records = (
        [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
    )
    return (
        {"records": records, "junit": junit, "pytest_tail": done.stdout.splitlines()[-1:]},
        elapsed,
        done.returncode,
    )


def outcomes(junit: Path) -> tuple[dict[str, Counter], list[str]]:
    """Per test file: passed / failed / xfailed counts; and the xfail reasons (known bugs)."""
    per_file: dict[str, Counter] = defaultdict(Counter)
    known: list[str] = []
    for case in ET.parse(junit).iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        skipped = case.find("skipped")
        if case.find("failure") is not None or case.find("error") is not None:
            per_file[module]["failed"] += 1
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            per_file[module]["xfailed"] += 1
            reason = (skipped.get("message") or "").removeprefix("xfail").strip(" :")
            if reason not in known:
                known.append(reason)
        elif skipped is not None:
            per_file[module]["skipped"] += 1
        else:
            per_file[module]["passed"] += 1
    return per_file, known


def unarmed_fault_point_ns() -> dict[str, float]:
    """Cost of an unarmed ``fault_point`` call next to an empty call (nanoseconds)."""
    setup = "from ctxengine_host.faults import fault_point\ndef nothing(name): return None"
    n = 1_000_000
    point = timeit.timeit("fault_point('report.unarmed')", setup=setup, number=n) / n * 1e9
    empty = timeit.timeit("nothing('report.unarmed')", setup=setup, number=n) / n * 1e9
    return {"fault_point_ns": round(point, 1), "empty_call_ns": round(empty, 1)}


def summarize(result: dict, elapsed: float, code: int) -> dict:
    per_file, known = outcomes(result["junit"])
    records = result["records"]
    faults = {
        label: {
            "injected": sum(per_file[m].values()),
            "survived": per_file[m]["passed"],
            "known_bugs": per_file[m]["xfailed"],
        }
        for m, label in FAULT_FILES.items()
    }
    crashes = [r for r in records if r["kind"] == "crash"]
    load = next((r for r in records if r["kind"] == "load"), {})
    hypothesis = {r["property"]: r["examples"] for r in records if r["kind"] == "hypothesis"}
    return {
        "faults": faults,
        "kills_per_point": {
            f"{c['engine']}: {point}": n
            for c in crashes
            for point, n in c["kills_per_point"].items()
        },
        "kills_survived_per_point": {
            f"{c['engine']}: {point}": n
            for c in crashes
            for point, n in c["survived_per_point"].items()
        },
        "hypothesis_examples": hypothesis,
        "load": {k: v for k, v in load.items() if k != "kind"},
        "known_bugs": known,
        "unarmed_fault_point": unarmed_fault_point_ns(),
        "tests": dict(sum(per_file.values(), Counter())),
        "suite_seconds": round(elapsed, 1),
        "pytest_exit_code": code,
    }


def render(s: dict) -> str:
    lines = ["Reliability figures", ""]
    lines.append("Faults injected / survived (known bugs pinned as strict xfail):")
    for label, f in s["faults"].items():
        lines.append(f"  {label:<24} {f['injected']:>4} / {f['survived']:<4} ({f['known_bugs']})")
    kills = s["kills_per_point"]
    lines += ["", f"Crash kills (SIGKILL) per point, survived: total "
              f"{sum(kills.values())} / {sum(s['kills_survived_per_point'].values())}"]  # fmt: skip
    for point, n in kills.items():
        lines.append(f"  {point:<44} {n:>3} / {s['kills_survived_per_point'].get(point, 0)}")
    examples = s["hypothesis_examples"]
    lines += ["", f"Hypothesis examples tried: {sum(examples.values())}"]
    lines += [f"  {name:<64} {n}" for name, n in examples.items()]
    load = s["load"]
    if load:
        lines += ["", f"Load held: {load['sessions']} sessions x {load['turns_per_session']} turns "
                  f"on threads, one host, one LCM database: {load['turns_per_second']} turns/s, "
                  f"p50 {load['p50_turn_ms']} ms, p99 {load['p99_turn_ms']} ms per turn, "
                  f"{load['compactions']} compactions"]  # fmt: skip
    cost = s["unarmed_fault_point"]
    lines.append(
        f"  an unarmed fault_point() call: {cost['fault_point_ns']} ns "
        f"(an empty function call: {cost['empty_call_ns']} ns)"
    )
    lines += ["", "Known bugs (strict xfail, reported):"]
    lines += [f"  - {reason}" for reason in s["known_bugs"]] or ["  none"]
    lines += ["", f"Tests: {s['tests']}; suite wall time {s['suite_seconds']} s; "
              f"pytest exit code {s['pytest_exit_code']}"]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run tests/reliability and print the figures.")
    parser.add_argument("--soak", action="store_true", help="the long opt-in sizes")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxengine-reliability-") as tmp:
        result, elapsed, code = run_suite(args.soak, Path(tmp))
        summary = summarize(result, elapsed, code)
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return code


if __name__ == "__main__":
    sys.exit(main())
