"""How good are the summaries an engine sent? The checks of docs/quality.md.

Applied to the final request of a replay: the *summary text* is every non-system
message of that request that is not a message of the session (what the engine
wrote). Four figures:

- ``task_kept``: share of the task statement's content words (the first user
  message that is not a framework-injected document) present in the request;
- ``noise_share``: share of summary lines that are tool-output debris (file
  listings, tool-output headings, doubled prefixes, lines without words);
- ``injected_lines``: summary lines that restate tool-output text as the user's or
  the system's words. Every summary reaches the model inside a user- or system-role
  message, so a line speaks in that voice unless it quotes: a line is injected when
  its unquoted text shares a run of ``SHINGLE`` words that only tool outputs said
  (not the user, the assistant or its tool-call arguments). Quoted means inside
  double quotes on a line attributed to a tool (``- tool NAME: "..."``);
- ``score``: ``task_kept * (1 - noise_share)``, 0 when any line is injected, and None
  when the engine wrote no summary at all (nothing to judge; the probe figures tell).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from .probes import searchable_text
from .sessionfile import message_text

SHINGLE = 6
INJECTED_DOCUMENT = re.compile(r"^\s*<(workspace_context|environment_context|user_instructions)")
NOISE_PATTERNS = (
    re.compile(r"^\W*[-dlcbps][rwxsStT-]{9}\s"),  # ls -l rows
    re.compile(r"^\W*total \d+\s*$"),
    re.compile(r"(?i)^\W*(- )?(text|tool)( \w+)?:\s*-\s*(text|tool)"),  # doubled prefixes
    re.compile(r"(?i)^\W*-?\s*(text: )?-?\s*tool \w+:\s*#+\s"),  # tool-output headings
    re.compile(r"^\W*={3,}.*={3,}\W*$"),  # test-runner banners
)
SPEAKER = re.compile(r"^[\s*-]*(?:(?:tool|call) [\w.-]+|user|assistant|system|text|call):\s*")
#: A line that attributes its text to a tool: ``- tool NAME:`` or ``- tool NAME (...):``.
TOOL_ATTRIBUTION = re.compile(r"^[\s*-]*tool [\w.-]+[^:\"]*:")
#: A quotation; one a summary was cut inside runs to the end of the line.
QUOTED = re.compile(r'"[^"]*(?:"|$)|\u201c[^\u201d]*(?:\u201d|$)')
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]+")
STOP = frozenset(
    "the and for with that this from into your have will not are was were our you".split()  # noqa: SIM905
)


@dataclass
class SummaryQuality:
    """The figures of one final request; ``to_dict`` for JSON."""

    summary_lines: int
    task_kept: float
    noise_share: float
    injected_lines: int
    score: float | None  # None: the engine wrote no summary to judge
    examples: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_statement(messages: list[dict[str, Any]]) -> str:
    """The user's task: the first user message that is not an injected document."""
    for message in messages:
        if message.get("role") != "user":
            continue
        text = message_text(message)
        if not INJECTED_DOCUMENT.match(text):
            return text
    return ""


def summary_text(session: list[dict[str, Any]], final: list[dict[str, Any]]) -> list[str]:
    """Lines the engine wrote: non-system final messages that are not session messages.

    Tool-role messages are skipped: an output the engine pruned or shortened is still
    in the tool's voice, not a summary speaking as the user or the system.
    """
    originals = {message_text(m) for m in session}
    lines: list[str] = []
    for message in final:
        if message.get("role") in ("system", "tool"):
            continue
        text = message_text(message)
        if text in originals:
            continue
        lines += [line for line in text.splitlines() if line.strip()]
    return lines


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _strip_speaker(line: str) -> str:
    """A summary line without its bullet and one ``- tool NAME:`` / ``- user:`` prefix."""
    return SPEAKER.sub("", line, count=1)


def _unquoted(line: str) -> str:
    """What a line says in its own voice: quoted text of an attributed line removed."""
    match = TOOL_ATTRIBUTION.match(line)
    if not match:
        return line
    return QUOTED.sub(" ", line[match.end() :])


def tool_only_shingles(session: list[dict[str, Any]]) -> set[tuple[str, ...]]:
    """Word runs of tool outputs that no user, assistant or system text (or call) said."""
    tool: set[tuple[str, ...]] = set()
    spoken: set[tuple[str, ...]] = set()
    for message in session:
        if message.get("role") == "tool":
            tool |= _shingles(message_text(message))
        else:
            spoken |= _shingles(searchable_text(message))
    return tool - spoken


def _is_noise(line: str) -> bool:
    if any(p.search(line) for p in NOISE_PATTERNS):
        return True
    bare = _strip_speaker(line)
    return any(p.search(bare) for p in NOISE_PATTERNS) or not _words(bare)


def evaluate_summaries(
    session: list[dict[str, Any]], final: list[dict[str, Any]]
) -> SummaryQuality:
    """The figures of docs/quality.md for one replay's final request."""
    lines = summary_text(session, final)
    task_words = {w for w in _words(task_statement(session)) if len(w) > 3 and w not in STOP}
    request_words = set(_words("\n".join(message_text(m) for m in final)))
    task_kept = len(task_words & request_words) / len(task_words) if task_words else 1.0
    tool_shingles = tool_only_shingles(session)
    noise = [line for line in lines if _is_noise(line)]
    injected = [line for line in lines if _shingles(_unquoted(line)) & tool_shingles]
    noise_share = len(noise) / len(lines) if lines else 0.0
    score = None if not lines else 0.0 if injected else task_kept * (1 - noise_share)
    return SummaryQuality(
        summary_lines=len(lines),
        task_kept=round(task_kept, 3),
        noise_share=round(noise_share, 3),
        injected_lines=len(injected),
        score=None if score is None else round(score, 3),
        examples=[line[:160] for line in (injected + noise)[:4]],
    )
