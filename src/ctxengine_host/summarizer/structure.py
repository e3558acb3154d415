"""The shape of a summary an agent can continue from: sections, line prefixes, parsing back.

Every summary (extractive, or asked of an LLM) uses the same headings in the same
order. Each line names who said it: the user's words (``- user:``), the agent's
(``- assistant:``, ``- call:`` for a tool call it made), a document the agent's
framework injected (``- context NAME:``, summarized, never a request), or a tool's
output, always quoted (``- tool NAME: "..."``) so that text from a tool never reads
as the user's or the system's words.

A summary is parsed back into ``(section, source, text)`` lines when it is merged
or condensed: prefixes are stripped however deeply an older summary nested them,
so condensing summaries of summaries keeps the structure and never nests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

TASK = "Task (the user's words)"
CONSTRAINTS = "Constraints and preferences (the user's)"
CONTEXT = "Context documents (injected by the framework, not requests)"
DECISIONS = "Decisions and reasons"
FILES = "Files and symbols touched"
ERRORS = "Errors and resolutions"
VALUES = "Key values"
STATE = "Current state and open items"
OTHER = "Other notes"

SECTIONS = (TASK, CONSTRAINTS, CONTEXT, DECISIONS, FILES, ERRORS, VALUES, STATE, OTHER)

#: Headings of summaries written before this structure, read as their nearest section.
_OLD_HEADINGS = {
    "user requests and constraints": TASK,
    "decisions": DECISIONS,
    "facts and values": VALUES,
    "errors and outcomes": ERRORS,
    "commands and tool calls": FILES,
    "open tasks": STATE,
    "other notes": OTHER,
}
_HEADING_KEYS = {s.split(" (")[0].lower(): s for s in SECTIONS} | _OLD_HEADINGS

#: One line prefix: the source of the line (when an old summary nested them, a tool named
#: anywhere wins, else the innermost).
_PREFIX_RE = re.compile(
    r"^\s*(?:[-*]\s+)?(user|assistant|system|call|text|note|context [\w.\-]+|tool [\w.\-]+)"
    r"(?:\s+said)?:\s+"
)
#: Lines of LCM's summary frame (``[Summary sum_3 | ...]``, ``[Details: ...]``) and markers.
_FRAME_RE = re.compile(r"^\s*\[(?:Summary \w+ \||Details:|Context summary\]|End of context)")


@dataclass(frozen=True, slots=True)
class Line:
    """One parsed summary line."""

    section: str | None  # None: not under a known heading
    source: str
    text: str


def heading_section(line: str) -> str | None:
    """The section a ``## Heading`` line opens, or None for another heading."""
    title = line.lstrip("#").strip().lower()
    return _HEADING_KEYS.get(title.split(" (")[0].rstrip(":"))


def is_structured(text: str) -> bool:
    """True when ``text`` holds summary sections (a summary, or LCM's summary blocks)."""
    return any(
        line.startswith("#") and heading_section(line) for line in text.splitlines()
    ) or bool(_FRAME_RE.match(text))


def parse_lines(text: str) -> Iterator[Line]:
    """The lines of a summary with their section and source, prefixes and quotes removed."""
    section: str | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or _FRAME_RE.match(stripped) or stripped.lower().startswith("focus:"):
            continue
        if stripped.startswith("#"):
            section = heading_section(stripped) or section
            continue
        source, body = "note", stripped
        while True:
            match = _PREFIX_RE.match(body)
            if not match:
                break
            if not source.startswith("tool"):  # text a tool said stays the tool's
                source = match.group(1)
            body = body[match.end() :]
        if body.startswith("- "):
            body = body[2:]
        if source.startswith("tool"):
            body = unquote(body)
        if body.strip():
            yield Line(section, source, body.strip())


def quote(text: str) -> str:
    """Tool text as a quotation (inner double quotes become single ones)."""
    return '"' + text.replace('"', "'") + '"'


def unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    return text


def render_line(source: str, text: str) -> str:
    """One summary line: its source prefix, tool text quoted."""
    if source.startswith("tool"):
        return f"- {source}: {quote(text)}"
    if source in ("note", "text"):
        return f"- {text}"
    return f"- {source}: {text}"


def render(sections: dict[str, list[str]], focus_topic: str | None = None) -> str:
    """Headings in the fixed order, each with its rendered lines; empty sections left out."""
    out = [f"Focus: {focus_topic}"] if focus_topic else []
    for section in SECTIONS:
        if sections.get(section):
            out.append(f"## {section}")
            out.extend(sections[section])
    return "\n".join(out)


PROMPT_SECTIONS = (
    f"{TASK}: the user's task and requests, in their own words, always kept; "
    f"{CONSTRAINTS}: what the user asked for or ruled out; "
    f"{CONTEXT}: one line per document the framework injected (workspace or microagent "
    "files), summarized as context; "
    f"{DECISIONS}: each decision with its reason; "
    f"{FILES}: files read and edited, functions and classes involved; "
    f"{ERRORS}: each error met and how it was resolved (or that it is not); "
    f"{VALUES}: ports, versions, ids, paths, settings with their current value; "
    f"{STATE}: where the work stands and only the items still open; "
    f"{OTHER}"
)
