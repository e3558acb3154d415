"""``ctxengine validate FILE [--probes PATH] [--strict] [--json]``: check a session file.

Every problem is reported with its line number; exit code 2 when there are errors.
``--strict`` makes unknown message fields errors, listed field by field with their lines
(by default they are one summary warning: kept, not sent to providers).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_OK, add_command, examples
from .output import emit_json


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "validate",
        epilog=examples("ctxengine validate session.jsonl", "ctxengine validate s.jsonl --strict"),
        help="check a session file (and its NAME.probes.json) for problems",
        description="Check a session file: JSON on every line, OpenAI message shapes, tool "
        "calls answered, usage fields; and its probe file when there is one.",
    )
    parser.add_argument("file", metavar="FILE", help="session file (.jsonl, .json, .gz)")
    parser.add_argument("--probes", metavar="PATH", help="probe file (default: NAME.probes.json)")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="unknown message fields are errors (each listed with its lines)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..limits import loads_json
    from ..replay.probes import check_probes
    from ..replay.sessionfile import (
        Problem,
        SessionFileError,
        parse_session,
        probes_path_for,
        read_text,
    )

    path = Path(args.file)
    report: dict[str, Any] = {"file": str(path), "ok": False, "problems": []}
    try:
        if not path.is_file():
            raise SessionFileError(f"{path}: no such session file; check the path")
        parsed = parse_session(read_text(path), str(path))
    except SessionFileError as exc:
        report["problems"] = [{"line": None, "severity": "error", "message": str(exc)}]
        return _finish(report, args.json, [str(exc)])
    problems = list(parsed.problems)
    if args.strict:
        problems.extend(_strict_problems(parsed.unknown_fields, Problem))
    probe_file = Path(args.probes) if args.probes else probes_path_for(path)
    probe_problems: list[Problem] = []
    probe_count = None
    if args.probes or probe_file.is_file():
        try:
            document = loads_json(read_text(probe_file), what="the probe file")
            probes, probe_problems = check_probes(document, parsed)
            probe_count = len(probes)
        except FileNotFoundError:
            probe_problems = [Problem(None, "no such probe file; check the path")]
        except OSError as exc:
            probe_problems = [Problem(None, f"cannot read the probe file: {exc}")]
        except json.JSONDecodeError as exc:
            probe_problems = [Problem(exc.lineno, f"invalid JSON: {exc.msg}")]
        except ValueError as exc:  # nested past the limit, a number too long to convert
            probe_problems = [Problem(None, str(exc))]
        except SessionFileError as exc:
            probe_problems = [Problem(None, str(exc))]
    errors = [p for p in problems + probe_problems if p.severity == "error"]
    report.update(
        ok=not errors,
        shape=parsed.shape,
        messages=len(parsed.messages),
        turns=len(parsed.turns()),
        tools=len(parsed.tools),
        probes_file=str(probe_file) if probe_count is not None or probe_problems else None,
        probes=probe_count,
        problems=[{**p.to_dict(), "file": str(path)} for p in problems]
        + [{**p.to_dict(), "file": str(probe_file)} for p in probe_problems],
    )
    lines = [p.render(str(path)) for p in problems] + [
        p.render(str(probe_file)) for p in probe_problems
    ]
    return _finish(report, args.json, lines)


def _strict_problems(unknown: dict[str, list[int]], problem_type: Any) -> list[Any]:
    """One error per unknown field, at its first line, naming every line that has it."""
    out = []
    for name, lines in sorted(unknown.items()):
        shown = ", ".join(str(n) for n in lines[:20])
        more = f" and {len(lines) - 20} more" if len(lines) > 20 else ""
        out.append(
            problem_type(
                lines[0],
                f"unknown field '{name}' (strict) on line(s) {shown}{more}; strict providers "
                "reject it: remove it, or let it through with "
                "open_session(send_unknown_fields=True)",
            )
        )
    return out


def _finish(report: dict[str, Any], as_json: bool, lines: list[str]) -> int:
    if as_json:
        emit_json(report)
    else:
        for line in lines:
            print(line)
        if report["ok"]:
            probes = report.get("probes")
            extra = f", {probes} probes" if probes is not None else ""
            print(
                f"{report['file']}: ok ({report['messages']} messages, "
                f"{report['turns']} turns{extra})"
            )
    return EXIT_OK if report["ok"] else EXIT_BAD_INPUT
