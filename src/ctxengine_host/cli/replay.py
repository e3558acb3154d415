"""``ctxengine replay FILE``: a recorded session through the real runtime, turn by turn.

Prints a per-turn table and a summary (or ``--json``: the same, per turn, with the
field names of docs/replay.md). ``--out DIR`` keeps the transcript store and writes
``report.json`` and ``report.txt`` there; otherwise the store is a temp dir.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_OK, CliError, add_command, common_options, examples
from .output import emit_json


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options replay and compare share."""
    parser.add_argument("--model", metavar="M", help="model name (default: gpt-4, cl100k)")
    parser.add_argument(
        "--context-length",
        metavar="N",
        type=int,
        help="context window in tokens (default: 32768)",
    )
    parser.add_argument(
        "--all-cores",
        dest="one_core",
        action="store_false",
        help="let the replay run on every core (default: pinned to one, which is faster "
        "for its one thread of work hopping between the runtime's workers)",
    )


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "replay",
        parents=[common_options(engine=True)],
        help="replay a session file through the active engine and report what it sent",
        description="Drive a recorded session through the runtime: each recorded assistant "
        "message plays the provider's answer, usage is computed from the assembled request. "
        "The table goes to stdout, progress to stderr.",
        epilog=examples(
            "ctxengine replay examples/sessions/coding-agent.jsonl",
            "ctxengine replay session.jsonl --engine lcm --context-length 16000 --out runs/lcm",
            "ctxengine replay transcript.jsonl --from claude-code --json > report.json",
        ),
    )
    parser.add_argument("file", metavar="FILE", help="session file (.jsonl, .json, .gz)")
    add_run_options(parser)
    parser.add_argument("--probes", metavar="PATH", help="probe file (default: NAME.probes.json)")
    parser.add_argument(
        "--from",
        dest="source_format",
        metavar="FORMAT",
        help="read FILE as another tool's transcript (the formats of `ctxengine convert`)",
    )
    parser.add_argument("--out", metavar="DIR", help="keep the store and write reports here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--every",
        metavar="N",
        type=int,
        default=0,
        help="table: show every N-th turn plus every turn that compacted "
        "(default: all turns up to 200, else about 100 rows)",
    )
    parser.add_argument(
        "--per",
        choices=("auto", "turn", "call"),
        default="auto",
        help="table rows: one per turn or one per provider call (default: per call for tool "
        "loops, at least 4 calls per turn on average)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..replay import ReplayInputError, ReplayOptions, replay_file
    from ..replay.render import ProgressBar, per_call_by_default, render_text

    if args.context_length is not None and args.context_length <= 0:
        raise CliError("--context-length must be a positive number of tokens")
    options = ReplayOptions(
        engine=args.engine,
        model=args.model,
        context_length=args.context_length,
        config_path=args.config,
        probes_path=args.probes,
        out_dir=args.out,
        source_format=args.source_format,
        one_core=args.one_core,
    )
    try:
        report = replay_file(args.file, options, ProgressBar(f"replay {Path(args.file).name}"))
    except ReplayInputError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    per = args.per
    if per == "auto":
        per = "call" if per_call_by_default(report) else "turn"
    rows = len(report.calls) if per == "call" else len(report.turns)
    every = args.every or (1 if rows <= 200 else rows // 100)
    text = render_text(report, every=every, per=per)
    if args.out:
        out = Path(args.out)
        (out / "report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        (out / "report.txt").write_text(render_text(report, per=per) + "\n")
    if args.json:
        emit_json(report.to_dict())
    else:
        print(text)
    return EXIT_OK
