"""What every importer produces, and the pairing repairs they share.

An importer turns another tool's transcript into messages of one shape (the shape
closest to what the tool sent its model, so nothing is flattened that need not be)
and counts what it could not keep, by reason: ``ctxengine convert`` prints that
count, nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...contract.messages import well_formed
from ...jsonl import jsonl_lines
from ..sessionfile import FORMAT_VERSION, HEADER_KEY

Message = dict[str, Any]

#: The repair of a text holding half of a character.
LONE_SURROGATES = (
    "lone UTF-16 surrogate replaced with U+FFFD (half of a character, cut by a truncation)"
)


class TranscriptError(ValueError):
    """The input is not a transcript of the format asked for; says what and where."""


@dataclass
class Imported:
    """An imported transcript: messages in ``shape``, and what was left out."""

    source_format: str
    shape: str
    messages: list[Message] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)

    def drop(self, reason: str, count: int = 1) -> None:
        """Record something the session file cannot keep."""
        self.dropped[reason] += count

    def repair_lone_surrogates(self) -> None:
        """Replace each lone UTF-16 surrogate (half of an emoji the tool cut in two when
        truncating a text; UTF-8 cannot encode it) with U+FFFD, counted."""
        for index, message in enumerate(self.messages):
            self.messages[index], count = well_formed(message)
            if count:
                self.repaired[LONE_SURROGATES] += count

    def header(self, source: str) -> dict[str, Any]:
        generator = {"name": "ctxengine convert", "from": self.source_format, "source": source}
        body: dict[str, Any] = {"format_version": FORMAT_VERSION, "shape": self.shape}
        if self.tools:
            body["tools"] = self.tools
        body["generator"] = generator
        return {HEADER_KEY: body}

    def to_jsonl(self, source: str) -> str:
        """The session file: the header, then one message per line."""
        lines = [self.header(source), *self.messages]
        return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines)

    def report(self) -> dict[str, Any]:
        return {
            "from": self.source_format,
            "shape": self.shape,
            "messages": len(self.messages),
            "dropped": dict(sorted(self.dropped.items())),
            "repaired": dict(sorted(self.repaired.items())),
        }


#: What the report calls a last line cut short.
CUT_SHORT = "a last line cut short (the file was copied while being written)"
#: What the report calls a line holding several JSON values with no newline between them.
GLUED = "lines holding several JSON values with no newline between them (split)"


def read_json_or_jsonl(
    text: str, what: str, imported: Imported | None = None
) -> list[tuple[int, Any]]:
    """(line, value) for a JSON document (line 1) or JSONL; TranscriptError naming the line.

    A UTF-8 byte order mark is skipped. A JSONL file copied while its tool was writing it
    ends in part of a line, with no newline after it: with ``imported`` given, that line
    is left out and reported; a line holding several values with no newline between them
    (seen in real Claude Code files: an answer line and a summary line glued together) is
    read as those values, reported (any other line that is not JSON is an error)."""
    text = text.removeprefix("\ufeff")
    stripped = text.strip()
    if not stripped:
        raise TranscriptError(f"the {what} file is empty")
    if stripped[0] in "[{":
        try:
            return [(1, json.loads(stripped))]
        except json.JSONDecodeError:
            pass  # JSONL whose lines are objects
    out = []
    lines = jsonl_lines(text)
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            try:
                out.append((number, json.loads(raw)))
            except json.JSONDecodeError as exc:
                glued = _glued_values(raw)
                if glued is not None and imported is not None:
                    out.extend((number, value) for value in glued)
                    imported.repaired[GLUED] += 1
                    continue
                cut_short = number == len(lines) and not text.endswith(("\n", "\r"))
                if cut_short and imported is not None and out:
                    imported.drop(CUT_SHORT)
                    continue
                raise TranscriptError(
                    f"line {number}: invalid JSON ({exc.msg}); is this a {what} file?"
                ) from None
    return out


def _glued_values(line: str) -> list[Any] | None:
    """The JSON values of ``line`` when it is two or more of them one after the other
    (whitespace between them allowed), else None."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = len(line) - len(line.lstrip())
    try:
        while at < len(line):
            value, at = decoder.raw_decode(line, at)
            values.append(value)
            at += len(line[at:]) - len(line[at:].lstrip())
    except json.JSONDecodeError:
        return None
    return values if len(values) > 1 else None


def as_blocks(content: Any) -> list[Any]:
    """A message's content as a list of blocks: a string is one text block."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def arguments_text(value: Any) -> str:
    """Tool-call arguments as the JSON text a Chat message carries."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def text_of(content: Any) -> str:
    """Plain text of a string or a list of text parts / blocks (others skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) if isinstance(p, dict) else str(p)
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and "text" in p)
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)
