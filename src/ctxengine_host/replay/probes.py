"""Probe files: questions about facts planted in a session, checked after a replay.

A probe file is the sidecar ``NAME.probes.json`` of the session ``NAME.jsonl[.gz]``.
Each probe names the message that planted its answer (``message_index``, 0-based
over the session's messages, header excluded) so a probe file that belongs to
another session is caught: the answer must be in that message's text. The
format is described in docs/session-format.md.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..contract.messages import content_text
from .sessionfile import (
    FORMAT_VERSION,
    ParsedSession,
    Problem,
    SessionFileError,
    read_text,
)


def message_pieces(message: dict[str, Any]) -> list[str]:
    """The decoded texts a message holds: its content, each tool call's name and the string
    values of its arguments, and the strings inside content that is itself JSON text.

    Answers are matched against these, never against JSON-escaped text: an answer with a
    quote, a backslash or a non-ASCII letter is written escaped inside ``arguments``.
    """
    pieces = [content_text(message)]
    pieces += _json_strings(pieces[0])
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            pieces.append(str(fn.get("name", "")))
            arguments = fn.get("arguments", "")
            pieces += _json_strings(arguments) or [str(arguments)]
    return [p for p in pieces if p]


def searchable_text(message: dict[str, Any]) -> str:
    """:func:`message_pieces` joined: what a probe answer is looked for in."""
    return "\n".join(message_pieces(message))


def _json_strings(text: Any) -> list[str]:
    """The string values inside ``text`` when it is a JSON object or array, else []."""
    if not isinstance(text, str) or text.lstrip()[:1] not in ("{", "["):
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


@dataclass(frozen=True)
class Probe:
    """A question whose expected answer string was planted at ``message_index``."""

    id: str
    question: str
    answer: str
    turn: int
    message_index: int
    kind: str = "fact"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def probes_document(session_name: str, message_count: int, probes: list[Probe]) -> dict:
    """The JSON document of a probe file."""
    return {
        "format_version": FORMAT_VERSION,
        "session": session_name,
        "message_count": message_count,
        "probes": [p.to_dict() for p in probes],
    }


def check_probes(document: Any, session: ParsedSession) -> tuple[list[Probe], list[Problem]]:
    """The probes of a decoded probe file and the problems found matching it to ``session``."""
    problems: list[Problem] = []
    if not isinstance(document, dict) or not isinstance(document.get("probes"), list):
        return [], [Problem(None, "a probe file is an object with a 'probes' list")]
    expected = document.get("message_count")
    if expected is not None and expected != len(session.messages):
        problems.append(
            Problem(
                None,
                f"the probe file is for a session of {expected} messages but "
                f"{session.source} has {len(session.messages)}; it belongs to another session",
            )
        )
    turn_of = _turn_by_message(session)
    probes: list[Probe] = []
    for n, raw in enumerate(document["probes"], start=1):
        probe, problem = _check_one(n, raw, session, turn_of)
        if problem:
            problems.append(Problem(None, f"probe {n}: {problem}"))
        elif probe is not None:
            probes.append(probe)
    ids = [p.id for p in probes]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(Problem(None, f"probe id {dup!r} is used more than once"))
    return probes, problems


def load_probes(path: str | Path, session: ParsedSession) -> list[Probe]:
    """Read a probe file and match it to ``session``; raises SessionFileError on problems."""
    path = Path(path)
    try:
        document = json.loads(read_text(path))
    except FileNotFoundError as exc:
        raise SessionFileError(f"{path}: no such probe file; check the path") from exc
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read the probe file: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise SessionFileError(
            f"{path}:{exc.lineno}: invalid JSON in the probe file: {exc.msg}"
        ) from exc
    probes, problems = check_probes(document, session)
    if problems:
        shown = "\n".join(p.render(str(path)) for p in problems[:20])
        raise SessionFileError(f"{path} does not match {session.source}:\n{shown}", problems)
    return probes


def _turn_by_message(session: ParsedSession) -> dict[int, int]:
    turn_of: dict[int, int] = {}
    for turn in session.turns():
        count = len(turn.user) + len(turn.replies)
        for i in range(turn.first_message_index, turn.first_message_index + count):
            turn_of[i] = turn.index
    return turn_of


def _check_one(
    n: int, raw: Any, session: ParsedSession, turn_of: dict[int, int]
) -> tuple[Probe | None, str | None]:
    if not isinstance(raw, dict):
        return None, "must be an object"
    for key, kind in (("question", str), ("answer", str), ("message_index", int)):
        if not isinstance(raw.get(key), kind) or raw.get(key) in ("", None):
            return None, f"'{key}' is missing or not a {kind.__name__}"
    question, answer, index = raw["question"], raw["answer"], raw["message_index"]
    if answer.lower() in question.lower():
        return None, "the answer appears in the question; rephrase the question"
    if not 0 <= index < len(session.messages):
        return None, (
            f"message_index {index} is outside the session ({len(session.messages)} "
            "messages); the probe file belongs to another session"
        )
    if answer not in searchable_text(session.messages[index]):
        return None, (
            f"answer {answer!r} is not in message {index} (line {session.lines[index]}); "
            "the probe file belongs to another session or the session was edited"
        )
    turn = turn_of.get(index, 0)
    if raw.get("turn") not in (None, turn):
        return None, f"'turn' is {raw['turn']} but message {index} is in turn {turn}"
    probe = Probe(
        id=str(raw.get("id") or f"p{n}"),
        question=question,
        answer=answer,
        turn=turn,
        message_index=index,
        kind=str(raw.get("kind") or "fact"),
    )
    return probe, None
