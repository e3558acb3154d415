"""``ctxengine compare FILE... --engines a,b,c --out DIR``: engines side by side.

Replays every session on every engine, prints a table, and writes into DIR the
per-run reports, a request-tokens chart per session (SVG; PNG too when matplotlib
is installed), ``compare.json`` and a self-contained ``report.html``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_OK, CliError, add_command, common_options, examples
from .output import emit_json
from .replay import add_run_options


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "compare",
        parents=[common_options()],
        epilog=examples(
            "ctxengine compare session.jsonl --engines legacy,lcm --out compare/",
            "ctxengine compare a.jsonl b.jsonl --engines legacy,lcm --out cmp --json",
        ),
        help="replay sessions on several engines and write a side-by-side report",
        description="Replay the same sessions through several engines; write a table, "
        "charts of request tokens per turn and a self-contained HTML report.",
    )
    parser.add_argument("files", metavar="FILE", nargs="+", help="session files")
    parser.add_argument(
        "--engines", required=True, metavar="A,B,C", help="comma-separated engine names"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    add_run_options(parser)
    parser.add_argument("--json", action="store_true", help="print compare.json to stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..replay import ReplayInputError, ReplayOptions
    from ..replay.compare import compare_files, table_rows
    from ..replay.driver import check_engine_installed
    from ..replay.render import ProgressBar
    from ..replay.sessionfile import SessionFileError, load_session, session_stem

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines:
        raise CliError("--engines needs at least one engine name, e.g. --engines legacy,lcm")
    if len(set(engines)) != len(engines):
        raise CliError("--engines lists an engine twice")
    stems = [session_stem(f) for f in args.files]
    if len(set(stems)) != len(stems):
        raise CliError("two session files share a name; rename one so their reports don't clash")
    if args.context_length is not None and args.context_length <= 0:
        raise CliError("--context-length must be a positive number of tokens")
    try:
        plugins_directory = load_config(args.config).config.plugins.directory
        for engine in engines:
            check_engine_installed(engine, plugins_directory)
        for file in args.files:
            load_session(file)  # fail fast, before any engine runs
        comparison = compare_files(
            args.files,
            engines,
            ReplayOptions(
                model=args.model,
                context_length=args.context_length,
                config_path=args.config,
                one_core=args.one_core,
            ),
            Path(args.out),
            progress_for=lambda label: ProgressBar(label, log_when_piped=True),
        )
    except (ReplayInputError, SessionFileError) as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    if args.json:
        emit_json(comparison.to_dict())
        return EXIT_OK
    rows = table_rows(comparison)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(w) if i < 2 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    print()
    print(f"report: {comparison.html}")
    for chart in comparison.charts.values():
        print(f"chart:  {chart}")
    for png in comparison.pngs.values():
        print(f"chart:  {png}")
    return EXIT_OK
