"""The extractive backend: pick the sentences a later turn is likely to need.

Offline and deterministic. The input is cut into short units (sentences or
lines); each unit is scored by who said it (the user's asks weigh most, tool
output must carry a clear signal), by cue words (decisions, constraints,
errors, outcomes, open tasks), by the identifiers it carries (paths, URLs,
``key=value``, versions, hashes, error codes, names, dates), by its rare words
(few units of the new content use them) and by the focus topic.

Units are chosen greedily by value per token. Values only fall as the choice
grows (an identifier counts once, a rare word already chosen counts a little,
each further unit from the same message is worth less), so a lazy heap keeps
the cost at O(n log n). A previous summary is parsed back into units that
compete with the new ones; its words are not counted for rarity, so its facts
keep their value while new content does not repeat them, and a unit whose key
a newer unit sets to another value is dropped (superseded).

Token sizes are estimated from characters during selection; the result is
counted exactly once (and trimmed if the estimate was short).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .features import CUE_WEIGHTS, IDENT_WEIGHTS, extract
from .render import labelled_pieces

#: Units longer than this are cut into chunks.
MAX_UNIT_CHARS = 280
#: Aggressive mode keeps units shorter.
AGGRESSIVE_UNIT_CHARS = 160
#: Characters per token used for estimates (on the safe side for code and identifiers).
CHARS_PER_TOKEN = 4.2
#: Units worth less than this are never chosen (keeps filler out of summaries).
MIN_VALUE = 2.0
#: Tool output must clear a higher bar: it is mostly listings, code and logs.
MIN_TOOL_VALUE = 2.6
#: Each unit already taken from the same message divides a unit's value by ``1 + this``.
SAME_MESSAGE_DECAY = 0.5

SECTIONS = (
    "User requests and constraints",
    "Decisions",
    "Facts and values",
    "Errors and outcomes",
    "Commands and tool calls",
    "Open tasks",
    "Other notes",
)

SOURCE_WEIGHTS = {
    "user": 1.5,
    "assistant": 0.8,
    "system": 1.0,
    "call": 0.3,
    "text": 1.0,
    "note": 1.0,
}
TOOL_WEIGHT = 0.0

#: A unit's identifier gain is capped so one dense line cannot win alone.
MAX_IDENT_GAIN = 2.0
#: Each rare word (a component seen in at most ``RARE_DF`` units) adds this much.
RARE_WEIGHT = 0.8
MAX_RARE_GAIN = 3.2
RARE_DF = 2
#: A rare word already in the summary still counts this share (sibling facts share words).
COVERED_RARE_SHARE = 0.3
#: In long inputs a word stays rare up to this share of the units.
RARE_DF_SHARE = 0.001
#: Lines that look like logs, grep hits or code carry little a later turn needs.
MACHINE_LINE_PENALTY = 0.8

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_BULLET_RE = re.compile(
    r"^\s*-\s+(?:(user|assistant|system|call|text|note|tool [\w.\-]+):\s+)?(.*)$"
)
_WORD_RE = re.compile(r"[a-z0-9]{3,}")
_STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        "the and for with that this from into about what when where which have has was were "
        "are you your our their them they its it's not but all any can will would should",
    )
)
_NOISE_CHARS_RE = re.compile(r"[A-Za-z]")
_MACHINE_LINE_RE = re.compile(
    r"^(?:\d{1,2}:\d{2}(?::\d{2})?\b|\d{4}-\d{2}-\d{2}[T ]|[\w./-]+:\d+:|[+\-@]{1,3}\s"
    r"|def |class |import |from \S+ import |return\b|raise |if .*:$|for .*:$|[>E] {3,})"
)


@dataclass(slots=True)
class Unit:
    """One candidate sentence or line, with what its value depends on."""

    text: str
    source: str
    order: int
    base: float
    idents: tuple[tuple[str, float], ...]
    words: tuple[str, ...]
    keys: tuple[tuple[str, str], ...]
    section: str
    cost: int
    from_previous: bool = False
    rare: tuple[str, ...] = ()
    group: int = 0  # the message (or previous-summary line) the unit comes from

    @property
    def min_value(self) -> float:
        return MIN_TOOL_VALUE if self.source.startswith("tool") else MIN_VALUE


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (characters / 4.2, rounded up)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def split_units(text: str, max_chars: int) -> list[str]:
    """Cut text into sentences or lines no longer than ``max_chars``."""
    units: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("```") or not any(ch.isalnum() for ch in line):
            continue
        for sentence in _SENTENCE_SPLIT_RE.split(line) if len(line) > 80 else (line,):
            sentence = sentence.strip()
            while len(sentence) > max_chars:
                cut = sentence.rfind(" ", max_chars // 2, max_chars)
                cut = cut if cut > 0 else max_chars
                units.append(sentence[:cut].rstrip())
                sentence = sentence[cut:].lstrip()
            if sentence:
                units.append(sentence)
    return units


def focus_terms(focus_topic: str | None) -> tuple[str, ...]:
    """The content words of a focus topic."""
    if not focus_topic:
        return ()
    words = _WORD_RE.findall(focus_topic.lower())
    return tuple(dict.fromkeys(w for w in words if w not in _STOPWORDS))


def _section(source: str, cues: set[str], has_idents: bool) -> str:
    if "task" in cues:
        return "Open tasks"
    if "decision" in cues:
        return "Decisions"
    if source == "user":
        return "User requests and constraints"
    if "error" in cues or (source.startswith("tool") and "outcome" in cues):
        return "Errors and outcomes"
    if source == "call":
        return "Commands and tool calls"
    if has_idents:
        return "Facts and values"
    return "Other notes"


def make_unit(
    text: str, source: str, order: int, terms: tuple[str, ...], from_previous: bool = False
) -> Unit:
    """Score one unit (all but the parts that depend on coverage and word rarity)."""
    features = extract(text)
    found, cues = features.idents, features.cues
    weight = SOURCE_WEIGHTS.get(source, TOOL_WEIGHT if source.startswith("tool") else 1.0)
    base = weight + sum(CUE_WEIGHTS[c] for c in cues)
    if source != "user" and "constraint" in cues:
        base -= CUE_WEIGHTS["constraint"] / 2
    if terms:
        lowered = text.lower()
        hits = sum(1 for term in terms if term in lowered)
        base += 3.0 * hits / len(terms)
    if not found and not cues and len(text.split()) <= 3:
        base -= weight / 2  # "ok thanks": too short to carry anything
    if _MACHINE_LINE_RE.match(text):
        base -= MACHINE_LINE_PENALTY
    letters = len(_NOISE_CHARS_RE.findall(text))
    if letters < len(text) * 0.3:
        base -= 1.0
    idents = tuple(
        dict.fromkeys((value.lower().strip("`"), IDENT_WEIGHTS[kind]) for kind, value in found)
    )
    return Unit(
        text=text,
        source=source,
        order=order,
        base=base,
        idents=idents,
        words=features.words,
        keys=features.keys,
        section=_section(source, cues, bool(found)),
        cost=estimate_tokens(text) + 3,
        from_previous=from_previous,
    )


def _previous_units(previous: str, terms: tuple[str, ...], max_chars: int) -> list[Unit]:
    units: list[Unit] = []
    for line in previous.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.lower().startswith("focus:"):
            continue
        match = _BULLET_RE.match(stripped)
        source, text = (match.group(1) or "note", match.group(2)) if match else ("note", stripped)
        for piece in split_units(text, max_chars):
            unit = make_unit(piece, source, len(units), terms, from_previous=True)
            unit.group = -1 - len(units)
            units.append(unit)
    return units


def collect_units(
    content: str | list[dict[str, Any]],
    previous: str | None,
    focus_topic: str | None,
    max_chars: int = MAX_UNIT_CHARS,
) -> list[Unit]:
    """All candidate units: the previous summary's first, then the new content's.

    Exact duplicates keep their latest occurrence; a unit whose key a later unit
    sets to another value is dropped (superseded). A word is rare when it occurs
    in few units of the new content: the previous summary's own words do not
    count, so its facts stay rare while new content does not repeat them.
    """
    terms = focus_terms(focus_topic)
    units = _previous_units(previous, terms, max_chars) if previous else []
    order = len(units)
    for group, (source, text) in enumerate(labelled_pieces(content)):
        for piece in split_units(text, max_chars):
            unit = make_unit(piece, source, order, terms)
            unit.group = group
            units.append(unit)
            order += 1
    frequency = Counter(word for unit in units if not unit.from_previous for word in unit.words)
    latest_text: dict[str, int] = {}
    latest_key: dict[str, tuple[int, str]] = {}
    for index, unit in enumerate(units):
        latest_text[_norm(unit.text)] = index
        for key, value in unit.keys:
            latest_key[key] = (index, value)
    kept = []
    for index, unit in enumerate(units):
        if latest_text[_norm(unit.text)] != index:
            continue
        if any(latest_key[k][0] > index and latest_key[k][1] != v for k, v in unit.keys):
            continue
        kept.append(unit)
    rare_df = max(RARE_DF, int(len(units) * RARE_DF_SHARE))
    for unit in kept:
        unit.rare = tuple(w for w in unit.words if frequency[w] <= rare_df)
    return kept


def _value(unit: Unit, covered: set[str], same_message: int = 0) -> float:
    """What choosing ``unit`` adds, given what is covered and taken from its message."""
    gain = sum(weight for ident, weight in unit.idents if ident not in covered)
    rare = RARE_WEIGHT * sum(1 if word not in covered else COVERED_RARE_SHARE for word in unit.rare)
    value = unit.base + min(gain, MAX_IDENT_GAIN) + min(rare, MAX_RARE_GAIN)
    return value / (1.0 + SAME_MESSAGE_DECAY * same_message)


def select_units(units: list[Unit], budget_tokens: int) -> list[Unit]:
    """Greedy choice by value per token (lazy: values only fall as the choice grows).

    Identifiers and rare words count once; each further unit from the same
    message is worth less, so one long listing cannot fill the summary.
    """
    if not units or budget_tokens <= 0:
        return []
    last = max(1, units[-1].order)
    # Newer units rank a little higher per token; recency never makes a unit eligible.
    scale = [(1.0 + 0.3 * max(0, u.order) / last) / (u.cost / 40.0 + 1.0) for u in units]
    covered: set[str] = set()
    taken: Counter[int] = Counter()
    heap = [(-_value(u, covered) * scale[i], i) for i, u in enumerate(units)]
    heapq.heapify(heap)
    chosen: list[int] = []
    used = 0
    while heap:
        _, index = heapq.heappop(heap)
        unit = units[index]
        value = _value(unit, covered, taken[unit.group])
        priority = value * scale[index]
        if heap and priority < -heap[0][0] - 1e-9:
            heapq.heappush(heap, (-priority, index))
            continue
        if value < unit.min_value or used + unit.cost > budget_tokens:
            continue
        chosen.append(index)
        used += unit.cost
        taken[unit.group] += 1
        covered.update(ident for ident, _ in unit.idents)
        covered.update(unit.rare)
    chosen.sort()
    return [units[i] for i in chosen]


def render_summary(units: list[Unit], focus_topic: str | None, aggressive: bool) -> str:
    """Sections in a fixed order, units chronological inside each (flat when aggressive)."""
    if aggressive:
        return "\n".join(f"- {u.text}" for u in units)
    lines = [f"Focus: {focus_topic}"] if focus_topic else []
    for section in SECTIONS:
        members = [u for u in units if u.section == section]
        if not members:
            continue
        lines.append(f"## {section}")
        lines.extend(f"- {u.source}: {u.text}" for u in members)
    return "\n".join(lines)


class ExtractiveBackend:
    """Deterministic extractive summaries that respect the target size."""

    name = "extractive"

    def __init__(self, count_text: Callable[[str], int]) -> None:
        self._count_text = count_text

    def summarize(
        self,
        content: str | list[dict[str, Any]],
        target_tokens: int,
        focus_topic: str | None = None,
        previous: str | None = None,
        level: int = 0,
    ) -> str:
        aggressive = level >= 1
        max_chars = AGGRESSIVE_UNIT_CHARS if aggressive else MAX_UNIT_CHARS
        units = collect_units(content, previous, focus_topic, max_chars)
        overhead = 0 if aggressive else 4 * len(SECTIONS)
        budget = max(0, target_tokens - overhead)
        chosen = select_units(units, budget)
        text = render_summary(chosen, focus_topic, aggressive)
        for _ in range(6):
            excess = self._count_text(text) - target_tokens
            if excess <= 0 or not chosen:
                break
            chosen = _drop_weakest(chosen, int(excess * 1.2) + 1)
            text = render_summary(chosen, focus_topic, aggressive)
        return text


def _drop_weakest(units: list[Unit], tokens: int) -> list[Unit]:
    """Drop the least valuable units until about ``tokens`` are freed."""
    ranked = sorted(range(len(units)), key=lambda i: (_value(units[i], set()), units[i].order))
    dropped: set[int] = set()
    freed = 0
    for index in ranked:
        if freed >= tokens:
            break
        dropped.add(index)
        freed += units[index].cost
    return [u for i, u in enumerate(units) if i not in dropped]


def salient_lines(text: str, max_lines: int = 2, max_chars: int = 160) -> list[str]:
    """The few lines of a text most worth keeping, in their original order."""
    pieces = split_units(text, max_chars)
    units = [make_unit(piece, "text", i, ()) for i, piece in enumerate(pieces)]
    frequency = Counter(word for unit in units for word in unit.words)
    for unit in units:
        unit.rare = tuple(w for w in unit.words if frequency[w] <= 1)
    ranked = sorted(units, key=lambda u: -_value(u, set()))
    return [u.text for u in sorted(ranked[:max_lines], key=lambda u: u.order)]
