"""Startup cost of ``ctxengine engines --json`` with 100 extra engine distributions installed.

Three commands run interleaved, side by side in one run:

* ``python -c pass`` (the interpreter alone);
* ``ctxengine engines --json`` with an empty extra site directory on the path;
* the same with a site directory holding 100 engine distributions, each a real
  ``*.dist-info`` (METADATA, entry_points.txt, RECORD, INSTALLER) with an entry
  point whose module is expensive to import (it sleeps 0.2 s and writes a
  marker file, so an import would show in the timings and on disk).

Targets (issue 2): with-100 at most 1.3x none, and at most 150 ms over bare python.

    .venv/bin/python benchmarks/bench_discovery.py [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXTRA_ENGINES = 100
RATIO_TARGET = 1.3
OVERHEAD_TARGET_MS = 150.0


def make_site(site: Path, count: int, marker_dir: Path) -> None:
    """``count`` installed-looking engine distributions with expensive modules."""
    site.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        dist, module = f"bench-engine-{i:03d}", f"bench_engine_{i:03d}"
        (site / f"{module}.py").write_text(
            "import pathlib, time\n"
            f"pathlib.Path({str(marker_dir / module)!r}).write_text('imported')\n"
            "time.sleep(0.2)\n"
            "TABLE = [i * i for i in range(200_000)]\n"
        )
        info = site / f"{module}-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0.0\nSummary: bench\n\n"
            + "A long description line.\n" * 50
        )
        (info / "entry_points.txt").write_text(
            f"[ctxengine.engines]\nengine-{i:03d} = {module}:Engine\n"
        )
        (info / "RECORD").write_text(f"{module}.py,,\n{info.name}/METADATA,,\n")
        (info / "INSTALLER").write_text("pip\n")


def time_command(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    script = Path(sys.executable).with_name("ctxengine")
    engines_cmd = [str(script), "engines", "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        empty, full, markers = root / "empty", root / "full", root / "markers"
        empty.mkdir()
        markers.mkdir()
        make_site(full, EXTRA_ENGINES, markers)
        # Bytecode caches as a real install has them (pip compiles on install): the
        # warm-up run below writes them when the environment had turned that off.
        base_env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CTXENGINE_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        base_env.update(XDG_CONFIG_HOME=str(root / "config"), CTXENGINE_DATA_DIR=str(root / "d"))
        commands = {
            "python -c pass": (
                [sys.executable, "-c", "pass"],
                {**base_env, "PYTHONPATH": str(empty)},
            ),
            "engines (none)": (engines_cmd, {**base_env, "PYTHONPATH": str(empty)}),
            "engines (+100)": (engines_cmd, {**base_env, "PYTHONPATH": str(full)}),
        }
        listed = subprocess.run(
            engines_cmd, env=commands["engines (+100)"][1], capture_output=True, text=True
        )
        found = len(json.loads(listed.stdout)["engines"])
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for cmd, env in commands.values():  # warm the page and bytecode caches
            time_command(cmd, env)
        for _ in range(args.runs):
            for name, (cmd, env) in commands.items():
                samples[name].append(time_command(cmd, env))
        imported = len(list(markers.iterdir()))

    median = {name: statistics.median(values) for name, values in samples.items()}
    ratio = median["engines (+100)"] / median["engines (none)"]
    overhead = median["engines (+100)"] - median["python -c pass"]
    result = {
        "runs": args.runs,
        "median_ms": {k: round(v, 1) for k, v in median.items()},
        "engines_listed_with_100": found,
        "modules_imported": imported,
        "ratio_100_vs_none": round(ratio, 3),
        "overhead_over_python_ms": round(overhead, 1),
        "ratio_ok": ratio <= RATIO_TARGET,
        "overhead_ok": overhead <= OVERHEAD_TARGET_MS,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, value in result["median_ms"].items():
            print(f"{name:<16} median {value:7.1f} ms  (n={args.runs})")
        print(f"engines listed with +100: {found}; engine modules imported: {imported}")
        print(f"ratio +100 / none: {ratio:.3f} (target <= {RATIO_TARGET})")
        print(f"+100 over bare python: {overhead:.1f} ms (target <= {OVERHEAD_TARGET_MS:.0f} ms)")
    ok = result["ratio_ok"] and result["overhead_ok"] and imported == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
