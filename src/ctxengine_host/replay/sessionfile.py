"""Session files: recorded conversations that ``replay``, ``compare`` and ``validate`` read.

A session file is JSONL (one message per line) or one JSON array of messages,
optionally gzip-compressed; the messages are in one shape (OpenAI Chat, OpenAI
Responses items or Anthropic Messages, see :mod:`ctxengine_host.shapes`) and are
read as internal (Chat) messages. An optional first entry
``{"ctxengine_session": {...}}`` carries the tool schemas, the shape and generator
metadata.
Problems are collected with their line numbers rather than raised one at a time,
so ``ctxengine validate`` can list them all. The format is described in
docs/session-format.md.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..contract.messages import well_formed
from ..contract.models import PERSISTENCE_ONLY_FIELDS
from ..jsonl import jsonl_lines
from ..limits import check_nesting, loads_json
from ..shapes import (
    SHAPES,
    ShapeConverter,
    ShapeError,
    detect_shape,
    timestamp_problem,
    unknown_fields,
)

FORMAT_VERSION = 1
HEADER_KEY = "ctxengine_session"
ROLES = ("system", "developer", "user", "assistant", "tool")
HEAD_ROLES = ("system", "developer")
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
GZIP_MAGIC = b"\x1f\x8b"
SESSION_SUFFIXES = (".jsonl.gz", ".json.gz", ".jsonl", ".json", ".gz")
#: The JSON escape of a UTF-16 surrogate (``\ud83d``), any case.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
#: Largest session text read, after decompression: a small gzip file can expand a
#: thousandfold, and the whole text is held in memory.
MAX_SESSION_BYTES = 256 * 2**20

Message = dict[str, Any]


class SessionFileError(ValueError):
    """A session or probe file cannot be used; the message lists the problems and the fix."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, at a 1-based line (None: the file as a whole)."""

    line: int | None
    message: str
    severity: Literal["error", "warning"] = "error"

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        return f"{where}: {self.severity}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "severity": self.severity, "message": self.message}


@dataclass
class Turn:
    """One user turn: the user message(s) and the replies and tool results that follow."""

    index: int
    user: list[Message]
    replies: list[Message]
    first_message_index: int


@dataclass
class ParsedSession:
    """A parsed session file; ``problems`` holds errors and warnings with line numbers."""

    source: str
    messages: list[Message] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    usages: list[dict[str, int] | None] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: The file's message shape (declared in the header or detected; ``chat`` when
    #: nothing tells).
    shape: str = "chat"
    #: Fields no API defines, with the lines that carry them: kept, not sent.
    unknown_fields: dict[str, list[int]] = field(default_factory=dict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.header.get("tools") or [])

    @property
    def system_prompt(self) -> str | None:
        """The leading system (and developer) messages joined, or None when there are none."""
        parts = []
        for message in self.messages:
            if message["role"] not in HEAD_ROLES:
                break
            parts.append(message_text(message))
        return "\n\n".join(parts) if parts else None

    @property
    def conversation(self) -> list[Message]:
        """The messages after the leading system messages."""
        start = 0
        while start < len(self.messages) and self.messages[start]["role"] in HEAD_ROLES:
            start += 1
        return self.messages[start:]

    def turns(self) -> list[Turn]:
        """Group the conversation into turns, each starting at a run of user messages."""
        offset = len(self.messages) - len(self.conversation)
        turns: list[Turn] = []
        for i, message in enumerate(self.conversation, start=offset):
            if message["role"] == "user" and (not turns or turns[-1].replies):
                turns.append(Turn(len(turns) + 1, [], [], i))
            if not turns:
                continue
            (turns[-1].user if message["role"] == "user" else turns[-1].replies).append(message)
        return turns


def message_text(message: Message) -> str:
    """All the text a message carries: its content and its tool calls' names and arguments."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            parts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(parts)


def read_text(path: str | Path) -> str:
    """The file's text, decompressed when it is gzip (detected by its magic bytes), at
    most :data:`MAX_SESSION_BYTES` of it."""
    try:
        if Path(path).stat().st_size > MAX_SESSION_BYTES:
            raise SessionFileError(
                f"{path}: larger than {MAX_SESSION_BYTES // 2**20} MiB; split the session "
                "into smaller files"
            )
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read the file: {exc}") from exc
    if data[:2] == GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unpacked:
                data = unpacked.read(MAX_SESSION_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise SessionFileError(
                f"{path}: the gzip data is corrupt ({exc}); re-compress the file"
            ) from exc
    if len(data) > MAX_SESSION_BYTES:
        raise SessionFileError(
            f"{path}: more than {MAX_SESSION_BYTES // 2**20} MiB of session text (decompressed); "
            "split the session into smaller files"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SessionFileError(
            f"{path}: not UTF-8 text (byte {exc.start}); save the session as UTF-8 JSONL"
        ) from exc


def session_stem(path: str | Path) -> str:
    """The file name without its session suffix (``a.jsonl.gz`` -> ``a``)."""
    name = Path(path).name
    for suffix in SESSION_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def probes_path_for(path: str | Path) -> Path:
    """Where the probe sidecar of a session file lives: ``NAME.probes.json`` beside it."""
    return Path(path).with_name(session_stem(path) + ".probes.json")


def parse_session(text: str, source: str = "<session>") -> ParsedSession:
    """Parse session text (JSONL or a JSON array) and check every message; never raises."""
    parsed = ParsedSession(source=source)
    entries = _split_entries(text, parsed)
    if not entries and not parsed.problems:
        parsed.problems.append(
            Problem(None, "the file is empty; a session needs at least one user message")
        )
        return parsed
    items = []
    for position, (line, value) in enumerate(entries):
        if isinstance(value, dict) and HEADER_KEY in value:
            _read_header(parsed, line, value, position)
        else:
            items.append((line, value))
    # UTF-8 text holds a surrogate only as a JSON escape: without one, no message is checked.
    escaped_surrogates = _SURROGATE_ESCAPE.search(text) is not None
    for line, message in _internal_messages(parsed, items):
        message = _check_message(parsed, line, message)
        if message is not None and escaped_surrogates:
            message = _without_lone_surrogates(parsed, line, message)
        if message is not None:
            usage = message.pop("usage", None)
            parsed.messages.append(message)
            parsed.lines.append(line)
            parsed.usages.append(usage)
    _check_sequence(parsed)
    _summarize_unknown_fields(parsed)
    return parsed


def _internal_messages(
    parsed: ParsedSession, items: list[tuple[int, Any]]
) -> list[tuple[int, Any]]:
    """The entries as internal messages with their lines; shape problems recorded."""
    declared = parsed.header.get("shape")
    shape = declared or next(
        (found for _, v in items if (found := detect_shape(v)) is not None), "chat"
    )
    parsed.shape = shape
    converter = ShapeConverter(shape)
    out: list[tuple[int, Any]] = []
    for line, value in items:
        found = detect_shape(value)
        if found is not None and found != shape:
            how = "declared in the header" if declared else "of the first distinctive message"
            parsed.problems.append(
                Problem(
                    line,
                    f"this message is in the {found} shape but the file uses the {shape} "
                    f"shape ({how}); a session file holds one shape (convert it with "
                    "`ctxengine convert`)",
                )
            )
            continue
        try:
            out.extend(converter.feed(value, line))
        except ShapeError as exc:
            parsed.problems.append(Problem(line, str(exc)))
    return out + converter.flush()


def _without_lone_surrogates(parsed: ParsedSession, line: int, message: Message) -> Message:
    """``message`` with its lone UTF-16 surrogates made U+FFFD, as the runtime stores and
    sends it, and a warning saying so."""
    message, count = well_formed(message)
    if count:
        parsed.problems.append(
            Problem(
                line,
                f"{count} lone UTF-16 surrogate(s): half of a character (an emoji a tool cut "
                "in two when truncating its output); stored and sent as U+FFFD, as providers "
                "refuse the request otherwise",
                "warning",
            )
        )
    return message


def _summarize_unknown_fields(parsed: ParsedSession) -> None:
    """ONE warning for the whole file naming the unknown fields (``validate --strict``
    lists every line)."""
    if not parsed.unknown_fields:
        return
    described = ", ".join(
        f"'{name}' ({len(lines)} line{'s' if len(lines) > 1 else ''}, first line {lines[0]})"
        for name, lines in sorted(parsed.unknown_fields.items())
    )
    parsed.problems.append(
        Problem(
            None,
            f"unknown message fields are kept but not sent to providers: {described}",
            "warning",
        )
    )


def load_session(path: str | Path) -> ParsedSession:
    """Read and parse a session file; raises SessionFileError listing its errors."""
    path = Path(path)
    if not path.is_file():
        raise SessionFileError(f"{path}: no such session file; check the path")
    parsed = parse_session(read_text(path), str(path))
    if parsed.errors:
        shown = "\n".join(p.render(str(path)) for p in parsed.errors[:20])
        more = len(parsed.errors) - 20
        tail = f"\n... and {more} more (run `ctxengine validate {path}`)" if more > 0 else ""
        raise SessionFileError(f"{path} is not a valid session file:\n{shown}{tail}", parsed.errors)
    return parsed


def _split_entries(text: str, parsed: ParsedSession) -> list[tuple[int, Any]]:
    """(line, decoded value) per entry, for JSONL or a JSON array."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return _split_array(text, parsed)
    entries = []
    for number, raw in enumerate(jsonl_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            entries.append((number, loads_json(raw, what="the line")))
        except json.JSONDecodeError as exc:
            parsed.problems.append(
                Problem(number, f"invalid JSON: {exc.msg} at column {exc.colno}")
            )
        except ValueError as exc:  # nested too deep; a number too long to convert
            parsed.problems.append(Problem(number, f"{exc}; a message nests a few levels"))
    return entries


def _split_array(text: str, parsed: ParsedSession) -> list[tuple[int, Any]]:
    """Decode a JSON array element by element, remembering the line each one starts on."""
    decoder = json.JSONDecoder()
    entries: list[tuple[int, Any]] = []
    line_of = _LineCounter(text)
    pos = text.index("[") + 1
    while True:
        pos = _skip_space(text, pos)
        if pos >= len(text):
            parsed.problems.append(Problem(line_of(pos), "the JSON array is not closed"))
            return entries
        if text[pos] == "]":
            if text[pos + 1 :].strip():
                parsed.problems.append(
                    Problem(line_of(pos + 1), "unexpected text after the JSON array")
                )
            return entries
        try:
            value, end = decoder.raw_decode(text, pos)
            check_nesting(value, what="the element")
        except json.JSONDecodeError as exc:
            parsed.problems.append(Problem(exc.lineno, f"invalid JSON: {exc.msg}"))
            return entries
        except (RecursionError, ValueError) as exc:  # nested too deep; a huge number
            reason = exc if isinstance(exc, ValueError) else "the element is nested too deep"
            parsed.problems.append(Problem(line_of(pos), f"{reason}"))
            return entries
        entries.append((line_of(pos), value))
        pos = _skip_space(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos < len(text) and text[pos] != "]":
            parsed.problems.append(
                Problem(line_of(pos), "expected ',' or ']' between array elements")
            )
            return entries


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


class _LineCounter:
    """Line numbers of increasing positions, counting each newline once (not from 0 each time).

    Recounting from the start for every array element made reading a large JSON-array
    session quadratic (25 s for the 12,178-message sample).
    """

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, pos: int) -> int:
        if pos < self.pos:
            return _line_of(self.text, pos)
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _read_header(parsed: ParsedSession, line: int, value: dict[str, Any], position: int) -> None:
    header = value[HEADER_KEY]
    if position != 0:
        parsed.problems.append(
            Problem(line, f"the '{HEADER_KEY}' header must be the first entry of the file")
        )
        return
    if not isinstance(header, dict):
        parsed.problems.append(Problem(line, f"'{HEADER_KEY}' must be an object"))
        return
    version = header.get("format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        parsed.problems.append(
            Problem(
                line,
                f"format_version {version!r} is not supported (this ctxengine reads "
                f"{FORMAT_VERSION}); upgrade ctxengine or regenerate the file",
            )
        )
    shape = header.get("shape")
    if shape is not None and shape not in SHAPES:
        parsed.problems.append(
            Problem(line, f"'shape' must be one of {', '.join(SHAPES)}; got {shape!r}")
        )
        header = {k: v for k, v in header.items() if k != "shape"}
    tools = header.get("tools", [])
    if not isinstance(tools, list) or not all(
        isinstance(t, dict) and isinstance(t.get("function"), dict) for t in tools
    ):
        parsed.problems.append(
            Problem(line, "'tools' must be a list of OpenAI tool schemas ({type, function})")
        )
        header = {**header, "tools": []}
    parsed.header = header


def _check_message(parsed: ParsedSession, line: int, value: Any) -> Message | None:
    """A clean copy of the message, or None when it is unusable (problem recorded)."""

    def problem(text: str, severity: Literal["error", "warning"] = "error") -> None:
        parsed.problems.append(Problem(line, text, severity))

    if not isinstance(value, dict):
        problem(f"expected a message object, got {type(value).__name__}")
        return None
    role = value.get("role")
    if role not in ROLES:
        problem(f"'role' must be one of {', '.join(ROLES)}; got {role!r}")
        return None
    message: Message = {k: v for k, v in value.items() if k not in PERSISTENCE_ONLY_FIELDS}
    for key in unknown_fields(message):
        parsed.unknown_fields.setdefault(key, []).append(line)
    stamp = timestamp_problem(message)
    if stamp:
        problem(stamp)
        return None
    content = message.get("content")
    if not _valid_content(content):
        problem("'content' must be a string, a list of content parts, or null")
        return None
    if role == "assistant":
        if content is None and not message.get("tool_calls"):
            problem("an assistant message needs 'content' or 'tool_calls'")
            return None
        if "tool_calls" in message and not _check_tool_calls(message["tool_calls"], problem):
            return None
    else:
        if "tool_calls" in message:
            problem(f"'tool_calls' is only allowed on assistant messages, not {role}")
            return None
        if content is None:
            problem(f"a {role} message needs 'content'")
            return None
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        problem("a tool message needs 'tool_call_id' (the id of the call it answers)")
        return None
    if "usage" in message and not _check_usage(message, role, problem):
        message.pop("usage")
    return message


def _valid_content(content: Any) -> bool:
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(p, str) or (isinstance(p, dict) and "type" in p) for p in content
    )


def _check_tool_calls(calls: Any, problem: Any) -> bool:
    if not isinstance(calls, list) or not calls:
        problem("'tool_calls' must be a non-empty list")
        return False
    seen: set[str] = set()
    for n, call in enumerate(calls, start=1):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
            problem(f"tool call {n} needs a non-empty string 'id'")
            return False
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            problem(f"tool call {n} needs 'function': {{'name': str, 'arguments': str}}")
            return False
        if not isinstance(fn.get("arguments", ""), str):
            problem(f"tool call {n}: 'function.arguments' must be a JSON string")
            return False
        if call["id"] in seen:
            problem(f"tool call id {call['id']!r} appears twice in one message")
            return False
        seen.add(call["id"])
    return True


def _check_usage(message: Message, role: str, problem: Any) -> bool:
    usage = message["usage"]
    if role != "assistant":
        problem("'usage' is only meaningful on assistant lines; it is ignored", "warning")
        return False
    if not isinstance(usage, dict):
        problem("'usage' must be an object with prompt_tokens and completion_tokens")
        return False
    for key in USAGE_FIELDS:
        value = usage.get(key)
        if value is None and key == "total_tokens":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problem(f"usage.{key} must be a non-negative integer; got {value!r}")
            return False
    return True


def _check_sequence(parsed: ParsedSession) -> None:
    """Ordering rules: system first, a user message opens the talk, tool calls answered."""
    seen_other = False
    pending: dict[str, int] = {}
    pending_line = 0
    for message, line in zip(parsed.messages, parsed.lines, strict=True):
        role = message["role"]
        if role in HEAD_ROLES:
            if seen_other:
                parsed.problems.append(
                    Problem(
                        line,
                        f"a {role} message after the conversation started; move it to the "
                        "top or make it a user message",
                    )
                )
            elif "\x00" in message_text(message):
                parsed.problems.append(
                    Problem(
                        line,
                        f"the {role} message holds a NUL character; it becomes the session's "
                        "system prompt, which the runtime's store keeps as given and no store "
                        "can hold NUL: remove it",
                    )
                )
            continue
        if not seen_other and role != "user":
            parsed.problems.append(
                Problem(line, f"the conversation must start with a user message, not {role}")
            )
        seen_other = True
        if role == "tool":
            call_id = message["tool_call_id"]
            if call_id not in pending:
                parsed.problems.append(
                    Problem(
                        line,
                        f"tool result for {call_id!r} does not answer a call of the preceding "
                        "assistant message",
                    )
                )
            pending.pop(call_id, None)
            continue
        if pending:
            parsed.problems.append(
                Problem(
                    pending_line,
                    f"tool call(s) {', '.join(sorted(pending))} are not answered before the "
                    f"next {role} message (line {line})",
                )
            )
            pending = {}
        if role == "assistant":
            pending = {c["id"]: line for c in message.get("tool_calls") or ()}
            pending_line = line
    if pending:
        parsed.problems.append(
            Problem(
                pending_line,
                f"tool call(s) {', '.join(sorted(pending))} at the end of the file have no "
                "result; add the tool results or remove the calls",
            )
        )
    if parsed.messages and not any(m["role"] == "user" for m in parsed.messages):
        parsed.problems.append(Problem(None, "the session has no user message"))
