"""``ctxengine generate-session OUT --turns N --seed S [--probes N]``: a synthetic session.

Writes OUT (gzip when it ends in .gz) and ``NAME.probes.json`` beside it. The same
arguments always produce the same bytes (generator version in the file header).
"""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_OK, CliError, common_options
from .output import emit_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "generate-session",
        parents=[common_options()],
        help="write a deterministic synthetic coding-agent session with probes",
        description="Generate a long coding-agent session (tool calls, large tool outputs, "
        "topic shifts, planted facts) and its probe file. Deterministic per seed.",
    )
    parser.add_argument("out", metavar="OUT", help="output file: NAME.jsonl or NAME.jsonl.gz")
    parser.add_argument("--turns", type=int, required=True, help="number of user turns")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--probes", type=int, default=None, help="planted facts to probe (default ~turns/40)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..generator import GENERATOR_VERSION, generate_session, write_session

    if not args.out.endswith((".jsonl", ".jsonl.gz")):
        raise CliError(f"OUT must end in .jsonl or .jsonl.gz, got {args.out!r}")
    try:
        session = generate_session(args.turns, args.seed, args.probes)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    path, probes_path = write_session(args.out, session)
    info = {
        "file": str(path),
        "probes_file": str(probes_path),
        "messages": len(session.messages),
        "turns": args.turns,
        "probes": len(session.probes),
        "seed": args.seed,
        "generator_version": GENERATOR_VERSION,
        "bytes": path.stat().st_size,
    }
    if args.json:
        emit_json(info)
    else:
        print(
            f"wrote {path} ({info['messages']} messages, {args.turns} turns, "
            f"{info['bytes']:,} bytes) and {probes_path} ({info['probes']} probes)"
        )
    return EXIT_OK
