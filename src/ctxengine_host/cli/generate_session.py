"""``ctxengine generate-session OUT --turns N --seed S [--probes N]``: a synthetic session.

Writes OUT (gzip when it ends in .gz) and ``NAME.probes.json`` beside it. The same
arguments always produce the same bytes (generator version in the file header).
``--shape single-loop --steps N`` writes one user task and N tool-call steps instead
(generator version 2); the default multi-turn shape is version 1, unchanged.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_OK, CliError, add_command, examples
from .output import emit_json


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "generate-session",
        epilog=examples(
            "ctxengine generate-session long.jsonl --turns 400 --seed 7",
            "ctxengine generate-session loop.jsonl.gz --shape single-loop --steps 300",
        ),
        help="write a deterministic synthetic coding-agent session with probes",
        description="Generate a long coding-agent session (tool calls, large tool outputs, "
        "topic shifts, planted facts) and its probe file. Deterministic per seed.",
    )
    parser.add_argument("out", metavar="OUT", help="output file: NAME.jsonl or NAME.jsonl.gz")
    parser.add_argument(
        "--shape",
        choices=("multi-turn", "single-loop"),
        default="multi-turn",
        help="multi-turn (default: many user turns) or single-loop (one task, many tool calls)",
    )
    parser.add_argument("--turns", type=int, default=None, help="number of user turns")
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="single-loop: tool-call steps (a quarter of them make two parallel calls)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--probes", type=int, default=None, help="planted facts to probe (default ~turns/40)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..replay.generator import SHAPES, generate_session, generate_single_loop, write_session

    if not args.out.endswith((".jsonl", ".jsonl.gz")):
        raise CliError(f"OUT must end in .jsonl or .jsonl.gz, got {args.out!r}")
    single = args.shape == "single-loop"
    (wanted, count), (unwanted, other) = (
        (("--steps", args.steps), ("--turns", args.turns))
        if single
        else (("--turns", args.turns), ("--steps", args.steps))
    )
    if count is None:
        raise CliError(f"--shape {args.shape} needs {wanted} N")
    if other is not None:
        raise CliError(f"{unwanted} does not apply to --shape {args.shape}; use {wanted}")
    try:
        if single:
            session = generate_single_loop(args.steps, args.seed, args.probes)
        else:
            session = generate_session(args.turns, args.seed, args.probes)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    turns = 1 if single else args.turns
    path, probes_path = write_session(args.out, session)
    info = {
        "file": str(path),
        "probes_file": str(probes_path),
        "messages": len(session.messages),
        "shape": args.shape,
        "turns": turns,
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in session.messages),
        "probes": len(session.probes),
        "seed": args.seed,
        "generator_version": SHAPES[args.shape],
        "bytes": path.stat().st_size,
    }
    if args.json:
        emit_json(info)
    else:
        print(
            f"wrote {path} ({info['messages']} messages, {turns} turns, "
            f"{info['bytes']:,} bytes) and {probes_path} ({info['probes']} probes)"
        )
    return EXIT_OK
