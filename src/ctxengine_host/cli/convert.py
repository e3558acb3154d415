"""``ctxengine convert --from FORMAT IN OUT``: another tool's transcript as a session file.

Writes OUT (``.jsonl``, or ``.jsonl.gz``) in the message shape closest to the tool's
own, checks it like ``validate``, and prints what could not be kept and what was
repaired (``--json``: the same as an object). Exit code 2 when the input cannot be
read or the result would not be a valid session file (then nothing is written).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path
from typing import Any

from . import EXIT_OK, CliError, add_command, examples
from .output import emit_json


def register(subparsers: Any) -> None:
    from ..replay.importers import FORMATS

    parser = add_command(
        subparsers,
        "convert",
        epilog=examples(
            "ctxengine convert --from claude-code ~/.claude/projects/x/abc.jsonl session.jsonl",
            "ctxengine convert --from codex rollout.jsonl session.jsonl.gz --json",
        ),
        help="convert another tool's transcript into a session file",
        description="Convert a transcript (Claude Code, Codex CLI, mini-swe-agent, SWE-agent, "
        "OpenHands, OpenAI Agents SDK, LangChain) into a session file for replay and "
        "compare; reports what it could not keep.",
    )
    parser.add_argument("--from", dest="source_format", required=True, choices=FORMATS)
    parser.add_argument("input", metavar="IN", help="the transcript")
    parser.add_argument("output", metavar="OUT", help="the session file to write (.jsonl[.gz])")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..replay.importers import TranscriptError, import_file
    from ..replay.sessionfile import parse_session

    out = Path(args.output)
    try:
        imported = import_file(args.input, args.source_format)
    except TranscriptError as exc:
        raise CliError(str(exc)) from exc
    text = imported.to_jsonl(Path(args.input).name)
    parsed = parse_session(text, str(out))
    if parsed.errors:
        shown = "\n".join(p.render(str(out)) for p in parsed.errors[:10])
        raise CliError(f"the converted session would not be valid; nothing written:\n{shown}")
    data = text.encode("utf-8")
    if out.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    report = {
        **imported.report(),
        # Counted as `validate` and `replay` count them (Chat messages: an Anthropic user
        # line of several tool results is several); `lines` as the file holds them.
        "messages": len(parsed.messages),
        "lines": len(imported.messages),
        "input": str(args.input),
        "output": str(out),
        "turns": len(parsed.turns()),
        "warnings": [p.message for p in parsed.warnings],
    }
    if args.json:
        emit_json(report)
    else:
        print(_render(report))
    return EXIT_OK


def _render(report: dict[str, Any]) -> str:
    written = f" in {report['lines']} lines" if report["lines"] != report["messages"] else ""
    lines = [
        f"{report['output']}: {report['messages']} messages{written}, {report['turns']} turns "
        f"(shape {report['shape']}, from {report['from']})"
    ]
    for title, key in (("not kept", "dropped"), ("repaired", "repaired")):
        for reason, count in report[key].items():
            lines.append(f"  {title}: {reason}: {count}")
    if not report["dropped"] and not report["repaired"]:
        lines.append("  everything kept, nothing repaired")
    lines.extend(f"  warning: {w}" for w in report["warnings"])
    return "\n".join(lines)
