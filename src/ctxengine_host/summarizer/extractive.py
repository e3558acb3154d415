"""The extractive backend: pick the sentences a later turn is likely to need.

Offline and deterministic. The input is cut into short units (sentences or
lines); each unit is scored by who said it (the user's asks weigh most, tool
output must carry a clear signal), by cue words (decisions, constraints,
errors, outcomes, open tasks), by the identifiers it carries (paths, URLs,
``key=value``, versions, addresses, hashes, error codes, names, dates), by its
rare words (few units of the new content use them) and by the focus topic.
Listing rows, totals and test-runner banners are never worth a line.

The summary has the sections of :mod:`.structure`: the task's opening in the
user's own words is pinned (it takes up to ``TASK_SHARE`` of the budget before
anything else, and is the first line of the Task section, so a later merge
finds it again), documents the framework injected become one line of context
each, the files read and edited and the symbols involved are kept as three
short lines (:mod:`.files`), tool output is quoted and cut shorter than other
text, and open items that a later outcome closed are dropped. The user's later
requests compete like other units; once a summary carried them they are
history and weigh as much as the assistant's words, so a rolling summary keeps
the facts the user stated but not every step they asked for.

Units are chosen greedily by value per token. Values only fall as the choice
grows (an identifier counts once, a rare word already chosen counts a little,
each further unit from the same message is worth less), so a lazy heap keeps
the cost at O(n log n). A previous summary (or, for a condensed summary, the
summaries being condensed) is parsed back into units that keep their section;
a previous summary's words are not counted for rarity, so its facts keep their
value while new content does not repeat them, and a unit whose key a newer unit
sets to another value is dropped (superseded).

Token sizes are estimated from characters during selection; the result is
counted exactly once (and trimmed if the estimate was short).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import chain, filterfalse
from operator import itemgetter
from typing import Any

from . import structure as st
from .features import CUE_WEIGHTS, IDENT_WEIGHTS, extract, leading_exception
from .files import FileLedger
from .render import labelled_pieces

#: Units longer than this are cut into chunks.
MAX_UNIT_CHARS = 280
#: Tool output is cut shorter: a long log or listing line holds one fact and a tail.
MAX_TOOL_UNIT_CHARS = 160
#: Aggressive mode keeps units shorter.
AGGRESSIVE_UNIT_CHARS = 160
#: Characters per token used for estimates (on the safe side for code and identifiers).
CHARS_PER_TOKEN = 4.2
#: Units worth less than this are never chosen (keeps filler out of summaries).
MIN_VALUE = 2.0
#: Tool output must clear a higher bar: it is mostly listings, code and logs.
MIN_TOOL_VALUE = 2.6
#: So must a line with no identifier and no cue ("Let me know if you want more").
MIN_NOTE_VALUE = 3.0
#: Each unit already taken from the same message divides a unit's value by ``1 + this``.
SAME_MESSAGE_DECAY = 0.5

#: The task's opening (the first user message's opening units, or the first line of an
#: earlier summary's Task section) is kept first, in order, within this share of the budget.
TASK_SHARE = 0.06
#: The task's opening units (sentences or lines) are pinned; the rest compete like others.
TASK_UNITS = 4
#: A request an earlier summary carried (a user line of its Task section after the
#: opening) is history: it weighs as much as the assistant's words, not the user's.
CARRIED_REQUEST_WEIGHT = 0.8
#: A tool line of a few words that states a distinctive value (``Version: 3.3.7``, an
#: address, a key=value) is what later questions ask about; this raises it over the
#: tool-output bar (log and history lines, longer, do not get it).
KEY_VALUE_BONUS = 1.6
KEY_VALUE_KINDS = frozenset({"version", "kv", "addr", "code", "hex", "url", "email"})
#: Listing rows, totals and banners carry nothing a later turn needs.
NOISE_PENALTY = 4.0
#: The assistant announcing its next step ("Now let me run the tests:") says less than the
#: call that follows it; the cue words such lines carry would otherwise win them a place.
NARRATION_PENALTY = 1.0

SOURCE_WEIGHTS = {
    "user": 1.5,
    "assistant": 0.8,
    "system": 1.0,
    "call": 0.3,
    "text": 1.0,
    "note": 1.0,
    "context": 0.6,
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
#: A sketched unit's ceiling sums its identifiers' weights in another order than its value
#: will: one within this of its bar is scored, whatever the rounding.
CEILING_SLACK = 1e-9

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_TAG_LINE_RE = re.compile(r"^</?[\w-]+>$")
#: Listing rows, totals, banners, and a traceback's header (its last line says what
#: failed; in a short span the header's words look rare and it took that line's place).
_NOISE_LINE_RE = re.compile(
    r"^(?:[-dlcbps][rwxsStT-]{9}[.+@]?\s|total \d+$|={3,}.*={3,}$|-{5,}$|\S+\s+\d+%\s"
    r"|Traceback \(most recent call last\):$)"
)
_WORD_RE = re.compile(r"[a-z0-9]{3,}")
_STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        "the and for with that this from into about what when where which have has was were "
        "are you your our their them they its it's not but all any can will would should",
    )
)
_NOT_LETTERS_RE = re.compile(r"[^A-Za-z]+")
#: Every byte but the ASCII letters: deleted to count the letters of an ASCII text.
_NOT_LETTER_BYTES = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalpha())
_NARRATION_RE = re.compile(
    r"(?i)^(?:(?:now|next|first|then|so|ok|okay|great|good|perfect)[,!.]?\s+)*"
    r"(?:let me|let's|i'll|i will|i'm going to)\b"
)
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
    cues: frozenset[str] = frozenset()
    pinned: bool = False  # the task: kept first, within TASK_SHARE of the budget
    found: tuple[tuple[str, str], ...] = ()  # (kind, value) identifiers of the text
    weight: float = 0.0  # of its source, or the one its caller gave
    sketched: bool = False  # valued at its ceiling, not scored: under its bar (collect)

    @property
    def min_value(self) -> float:
        if self.source.startswith("tool"):
            return MIN_TOOL_VALUE
        return MIN_NOTE_VALUE if self.section == st.OTHER else MIN_VALUE


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (characters / 4.2, rounded up)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def split_units(text: str, max_chars: int) -> list[str]:
    """Cut text into sentences or lines no longer than ``max_chars``."""
    units: list[str] = []
    whole = min(80, max_chars)  # a line this short is a unit as it is (most lines are)
    for line in text.splitlines():
        line = line.strip()
        if (
            not line
            or line.startswith("```")
            or not any(map(str.isalnum, line))
            or (line[0] == "<" and _TAG_LINE_RE.match(line))
        ):
            continue
        if len(line) <= whole:
            units.append(line)
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


#: Cues that put a unit in the errors section (a set built once: sections are asked per unit).
_ERROR_CUES = frozenset({"error", "outcome"})
#: Identifiers too plain to make the assistant's words a key value.
_WEAK_KINDS = frozenset({"num", "ident"})


def _section(source: str, cues: frozenset[str], kinds: AbstractSet[str]) -> str:
    """Where a unit belongs in the summary, from who said it and what it says."""
    if source.startswith("context"):
        return st.CONTEXT
    if source == "user":
        if "decision" in cues:
            return st.DECISIONS
        if "task" in cues:
            return st.STATE
        return st.CONSTRAINTS if "constraint" in cues else st.TASK
    if source.startswith("tool"):
        if not _ERROR_CUES.isdisjoint(cues):
            return st.ERRORS
        return st.VALUES if kinds else st.OTHER
    if source == "call":
        return st.FILES if "path" in kinds else st.VALUES
    if "decision" in cues:
        return st.DECISIONS
    if "task" in cues:
        return st.STATE
    if not _ERROR_CUES.isdisjoint(cues):
        return st.ERRORS
    return st.VALUES if kinds - _WEAK_KINDS else st.OTHER


def source_weight(source: str) -> float:
    """What a unit from ``source`` weighs before its content counts."""
    default = TOOL_WEIGHT if source.startswith("tool") else 1.0
    return SOURCE_WEIGHTS.get(source.split(" ", 1)[0], default)


_NO_KINDS: AbstractSet[str] = frozenset()
_NOTHING_COVERED: frozenset[str] = frozenset()


def make_unit(text: str, source: str, order: int, terms: tuple[str, ...]) -> Unit:
    """Score one unit whatever its value (all but the parts that depend on coverage and
    word rarity): :func:`sketch_unit` then :func:`score_unit`."""
    unit = sketch_unit(text, source, order, terms)
    score_unit(unit, terms)
    return unit


def sketch_unit(
    text: str,
    source: str,
    order: int,
    terms: tuple[str, ...],
    from_previous: bool = False,
    section: str | None = None,
    weight: float | None = None,
) -> Unit:
    """A unit with what word rarity, duplicates, supersession and sections need, valued at
    its ceiling: the most its shape and identifiers can add is in its base, it has no
    identifiers yet. Under its bar even with its rare words counted, it cannot be chosen
    and is never scored (:func:`score_unit`): most tool lines, whose shape (log, code,
    listing) need not be read then."""
    found, cues, words, keys = extract(text)
    tool = source.startswith("tool")
    if weight is None:
        weight = source_weight(source)
    # Most units have no cue and there is no focus: their plain base is their weight.
    ceiling = _plain_base(text, source, weight, cues, terms) if cues or terms else weight
    kinds: AbstractSet[str]
    if found:
        kinds = set(map(itemgetter(0), found))
        gain = sum(map(IDENT_WEIGHTS.__getitem__, map(itemgetter(0), found)))
        if tool and kinds & KEY_VALUE_KINDS:
            ceiling += KEY_VALUE_BONUS
    else:
        kinds, gain = _NO_KINDS, 0.0
    if tool and leading_exception(text):
        gain += IDENT_WEIGHTS["exception"]
    if gain:
        ceiling += min(gain, MAX_IDENT_GAIN)
    cost = estimate_tokens(text) + 3 + (len(source) + 5 if tool else 0)
    # Positional: a slots dataclass is built faster so, and there is one per unit.
    return Unit(
        text,
        source,
        order,
        ceiling,
        (),
        words,
        keys,
        section or _section(source, cues, kinds),
        cost,
        from_previous,
        (),
        0,
        cues,
        False,
        found,
        weight,
        True,
    )


def _plain_base(
    text: str, source: str, weight: float, cues: frozenset[str], terms: tuple[str, ...]
) -> float:
    """A unit's base from its source, cue words and the focus topic (its shape aside)."""
    base = weight + sum(map(CUE_WEIGHTS.__getitem__, cues)) if cues else weight
    if source != "user" and "constraint" in cues:
        base -= CUE_WEIGHTS["constraint"] / 2
    if terms:
        lowered = text.lower()
        hits = sum(1 for term in terms if term in lowered)
        base += 3.0 * hits / len(terms)
    return base


def score_unit(unit: Unit, terms: tuple[str, ...]) -> None:
    """Give a sketched unit (:func:`sketch_unit`) its base and identifiers: the line's shape
    (too short, a log or code line, few letters, a listing row, a traceback's last line, a
    short ``key: value``, narration) and the identifiers it carries."""
    text, source, weight, found = unit.text, unit.source, unit.weight, unit.found
    kinds = set(map(itemgetter(0), found)) if found else _NO_KINDS
    tool = source.startswith("tool")
    base = _plain_base(text, source, weight, unit.cues, terms)
    if not found and not unit.cues and len(text.split()) <= 3:
        base -= weight / 2  # "ok thanks": too short to carry anything
    if _MACHINE_LINE_RE.match(text):
        base -= MACHINE_LINE_PENALTY
    if text.isascii():  # 5x faster than a findall list of the letters
        letters = len(text.encode("ascii").translate(None, _NOT_LETTER_BYTES))
    else:
        letters = len(_NOT_LETTERS_RE.sub("", text))
    if letters < len(text) * 0.3:
        base -= 1.0
    exception = leading_exception(text) if tool else None
    if _NOISE_LINE_RE.match(text):
        base -= NOISE_PENALTY
    elif exception:  # a traceback's last line (``E   KeyError: 'id'``) says what failed
        found = (("exception", exception), *found)
    elif tool and kinds & KEY_VALUE_KINDS and len(text.split()) <= 4:
        base += KEY_VALUE_BONUS
    elif source == "assistant" and _NARRATION_RE.match(text):
        base -= NARRATION_PENALTY
    unit.base = base
    unit.sketched = False
    if found:
        unit.idents = tuple(
            dict.fromkeys((value.lower().strip("`"), IDENT_WEIGHTS[kind]) for kind, value in found)
        )


def _parsed_units(
    text: str,
    terms: tuple[str, ...],
    max_chars: int,
    ledger: FileLedger,
    first: int,
    previous: bool,
) -> list[Unit]:
    """Units of a summary (a previous one, or those a condensed summary merges), each
    keeping its section; its file lines go back into ``ledger``.

    The first line of the (first) Task section is the task's opening: pinned. The
    user's later lines there are requests already summarized: they compete with
    ``CARRIED_REQUEST_WEIGHT``.
    """
    units: list[Unit] = []
    opening_seen = False
    for line in st.parse_lines(text):
        if line.section == st.FILES and ledger.merge_line(line.text):
            continue
        in_task = line.section == st.TASK and line.source in ("user", "note")
        opening, opening_seen = in_task and not opening_seen, opening_seen or in_task
        weight = CARRIED_REQUEST_WEIGHT if in_task and not opening else None
        for piece in split_units(line.text, _unit_chars(line.source, max_chars)):
            unit = sketch_unit(
                piece, line.source, first + len(units), terms, previous, line.section, weight
            )
            unit.group = -1 - first - len(units)
            unit.pinned = opening
            units.append(unit)
    return units


def _unit_chars(source: str, max_chars: int) -> int:
    """How long a unit from ``source`` may be (tool output is cut shorter)."""
    return min(max_chars, MAX_TOOL_UNIT_CHARS) if source.startswith("tool") else max_chars


def _content_units(
    content: str | list[dict[str, Any]],
    terms: tuple[str, ...],
    max_chars: int,
    ledger: FileLedger,
    first: int,
    has_task: bool = False,
) -> list[Unit]:
    """Units of the new content; unless a previous summary gave the task (``has_task``),
    the first user message is the task (its opening pinned)."""
    if isinstance(content, str) and st.is_structured(content):
        return _parsed_units(content, terms, max_chars, ledger, first, previous=False)
    units: list[Unit] = []
    task_group: int | None = None
    last_paths: list[str] = []
    for group, (source, text) in enumerate(labelled_pieces(content)):
        if source.startswith("context"):
            pieces = [_document_digest(source.split(" ", 1)[1], text)]
        else:
            pieces = split_units(text, _unit_chars(source, max_chars))
        if source == "call":
            last_paths = ledger.call(text.split("(", 1)[0], text)
        elif source.startswith("tool"):
            ledger.output(text, last_paths)
        elif source == "assistant":
            ledger.mentioned(text)
        elif source == "user" and task_group is None and not has_task:
            task_group = group
        section = st.FILES if source == "call" and last_paths else None
        weight = source_weight(source)
        for number, piece in enumerate(pieces):
            unit = sketch_unit(piece, source, first + len(units), terms, False, section, weight)
            unit.group = group
            unit.pinned = group == task_group and number < TASK_UNITS
            units.append(unit)
    last_said = next((u.group for u in reversed(units) if u.source == "assistant"), None)
    for unit in units:
        if unit.group == last_said and unit.section == st.OTHER:
            unit.section = st.STATE  # where the work stood when this span ended
    return units


def _document_digest(tag: str, text: str) -> str:
    """One line for a document the framework injected: what it is, never its requests."""
    lines = [line.strip() for line in text.splitlines()[1:] if line.strip()]
    title = next((line.lstrip("# ") for line in lines if line.startswith("#")), "")
    return f"{(title or tag)[:80]} ({len(text)} characters)"


def _closed(units: list[Unit]) -> set[int]:
    """Open items a later outcome closed: it shares at least two content words with them."""
    closed: set[int] = set()
    outcomes = [(i, set(u.words)) for i, u in enumerate(units) if "outcome" in u.cues]
    for index, unit in enumerate(units):
        if "task" not in unit.cues or unit.section != st.STATE:
            continue
        words = set(unit.words)
        if any(i > index and len(words & done) >= 2 for i, done in outcomes):
            closed.add(index)
    return closed


def collect(
    content: str | list[dict[str, Any]],
    previous: str | None,
    focus_topic: str | None,
    max_chars: int = MAX_UNIT_CHARS,
) -> tuple[list[Unit], FileLedger]:
    """All candidate units (the previous summary's first, then the new content's) and
    the files and symbols the input touched.

    Exact duplicates keep their latest occurrence; a unit whose key a later unit
    sets to another value is dropped (superseded), and so is an open item a later
    outcome closed. A word is rare when it occurs in few units of the new content:
    the previous summary's own words do not count, so its facts stay rare while new
    content does not repeat them. Only a unit that can clear its bar with its rare words
    (and the task's opening) is scored; the rest keep their ceiling, under the bar.
    """
    terms = focus_terms(focus_topic)
    ledger = FileLedger()
    units = _parsed_units(previous, terms, max_chars, ledger, 0, True) if previous else []
    has_task = any(unit.pinned for unit in units)
    units += _content_units(content, terms, max_chars, ledger, len(units), has_task)
    frequency = Counter(chain.from_iterable(u.words for u in units if not u.from_previous))
    normed = [_norm(unit.text) for unit in units]
    latest_text = {text: index for index, text in enumerate(normed)}
    latest_key: dict[str, tuple[int, str]] = {}
    for index, unit in enumerate(units):
        for key, value in unit.keys:
            latest_key[key] = (index, value)
    closed = _closed(units)
    kept = []
    for index, unit in enumerate(units):
        if latest_text[normed[index]] != index or index in closed:
            continue
        if unit.keys and any(
            latest_key[k][0] > index and latest_key[k][1] != v for k, v in unit.keys
        ):
            continue
        kept.append(unit)
    rare_df = max(RARE_DF, int(len(units) * RARE_DF_SHARE))
    common = {word for word, n in frequency.items() if n > rare_df}
    for unit in kept:
        unit.rare = tuple(filterfalse(common.__contains__, unit.words))
        # A sketch's value with nothing covered is the most it can ever be worth.
        if unit.pinned or _value(unit, _NOTHING_COVERED) >= unit.min_value - CEILING_SLACK:
            score_unit(unit, terms)
    return kept, ledger


def _value(unit: Unit, covered: AbstractSet[str], same_message: int = 0) -> float:
    """What choosing ``unit`` adds, given what is covered and taken from its message."""
    gain = (
        sum(weight for ident, weight in unit.idents if ident not in covered) if unit.idents else 0
    )
    rare = (
        RARE_WEIGHT * sum(1 if word not in covered else COVERED_RARE_SHARE for word in unit.rare)
        if unit.rare
        else 0.0
    )
    value = unit.base + min(gain, MAX_IDENT_GAIN) + min(rare, MAX_RARE_GAIN)
    return value / (1.0 + SAME_MESSAGE_DECAY * same_message)


def select_units(
    units: list[Unit], budget_tokens: int, task_share: float = TASK_SHARE
) -> list[Unit]:
    """The pinned task units first (in order, within ``task_share`` of the budget), then a
    greedy choice by value per token (lazy: values only fall as the choice grows).

    Identifiers and rare words count once; each further unit from the same
    message is worth less, so one long listing cannot fill the summary.
    """
    if not units or budget_tokens <= 0:
        return []
    chosen: list[int] = []
    covered: set[str] = set()
    taken: Counter[int] = Counter()
    used = 0

    def take(index: int) -> None:
        nonlocal used
        unit = units[index]
        chosen.append(index)
        used += unit.cost
        taken[unit.group] += 1
        covered.update(ident for ident, _ in unit.idents)
        covered.update(unit.rare)

    task_budget = int(budget_tokens * task_share)
    for index, unit in enumerate(units):
        if unit.pinned and used + unit.cost <= task_budget:
            take(index)
    picked = set(chosen)
    # A unit's value only falls, so one already under its bar is never taken: left out
    # (most tool lines, never scored), it is not popped and valued again, nor given a scale.
    values = {
        i: value
        for i, u in enumerate(units)
        if not u.sketched and i not in picked and (value := _value(u, covered)) >= u.min_value
    }
    last = max(1, units[-1].order)
    # Newer units rank a little higher per token; recency never makes a unit eligible.
    scale = {
        i: (1.0 + 0.3 * max(0, units[i].order) / last) / (units[i].cost / 40.0 + 1.0)
        for i in values
    }
    heap = [(-value * scale[i], i) for i, value in values.items()]
    heapq.heapify(heap)
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
        take(index)
    chosen.sort()
    return [units[i] for i in chosen]


def render_summary(
    units: list[Unit], focus_topic: str | None, ledger: FileLedger | None = None
) -> str:
    """The sections of :mod:`.structure`, units chronological inside each; the files and
    symbols of ``ledger`` first in theirs (those no unit names). The task's opening (the
    pinned units) is one line, the first of its section, so a later merge finds it."""
    said = "\n".join(u.text for u in units)
    files = ledger.lines(said) if ledger else []
    sections: dict[str, list[str]] = {st.FILES: [f"- {line}" for line in files]}
    opening = [u for u in units if u.pinned and u.section == st.TASK]
    if opening:
        text = " ".join(u.text for u in opening)
        sections[st.TASK] = [st.render_line(opening[0].source, text)]
    for unit in units:
        if not (unit.pinned and unit.section == st.TASK):
            sections.setdefault(unit.section, []).append(st.render_line(unit.source, unit.text))
    return st.render(sections, focus_topic)


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
        units, found = collect(content, previous, focus_topic, max_chars)
        ledger: FileLedger | None = found
        overhead = 4 * len({u.section for u in units} | {st.FILES})
        overhead += sum(estimate_tokens(line) + 2 for line in found.lines())
        if overhead > target_tokens // 3:  # a small target: the file lists give way first
            ledger, overhead = None, 4 * len(st.SECTIONS)
        chosen = select_units(units, max(0, target_tokens - overhead))
        text = render_summary(chosen, focus_topic, ledger) or _nothing_kept(content)
        for _ in range(6):
            excess = self._count_text(text) - target_tokens
            if excess <= 0 or not (chosen or ledger):
                break
            if not chosen:
                ledger = None
            chosen = _drop_weakest(chosen, int(excess * 1.2) + 1)
            text = render_summary(chosen, focus_topic, ledger)
        return text


def _nothing_kept(content: str | list[dict[str, Any]]) -> str:
    """What an input without one line worth keeping held: its tool outputs, counted.

    An empty summary would make the service truncate the raw input into the context
    instead (listings and test banners, the very noise the summary leaves out).
    """
    tools = Counter(source for source, _ in labelled_pieces(content) if source.startswith("tool"))
    listed = ", ".join(f"{name.split(' ', 1)[1]}: {n}" for name, n in tools.most_common(6))
    what = f"tool outputs ({listed})" if tools else "messages"
    return st.render({st.OTHER: [f"- nothing worth keeping in these {what}"]})


def _drop_weakest(units: list[Unit], tokens: int) -> list[Unit]:
    """Drop the least valuable units until about ``tokens`` are freed (the task last)."""
    ranked = sorted(
        range(len(units)), key=lambda i: (units[i].pinned, _value(units[i], set()), units[i].order)
    )
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
    ranked = sorted(units, key=lambda u: -_value(u, _NOTHING_COVERED))
    return [u.text for u in sorted(ranked[:max_lines], key=lambda u: u.order)]
