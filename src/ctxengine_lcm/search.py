"""Search helpers: safe FTS5 queries, time arguments, bounded regex scans and snippets."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import regex

from .store import SearchHit, StatementTimedOut

_T = TypeVar("_T")

_WORD = re.compile(r"\w", re.UNICODE)
#: A quoted phrase, or a run of non-space characters.
_TOKEN = re.compile(r'"([^"]*)"|(\S+)')
#: One operand of a built query: a quoted phrase, optionally a prefix (``"fact" *``).
_OPERAND = re.compile(r'"(?:[^"]|"")*"(?: \*)?')
OPERATORS = ("AND", "OR", "NOT")
#: The epoch seconds of 0001-01-01 and 9999-12-31 (UTC): the range of a time argument.
_EARLIEST = -62_135_596_800
_LATEST = 253_402_300_799
#: Characters of context shown either side of a regex match.
SNIPPET_RADIUS = 120


class QuerySyntaxError(ValueError):
    """The search text uses an operator in a way that has no meaning; the message says why."""


@dataclass(frozen=True)
class FtsQuery:
    """A full-text query built from user text, safe to pass to FTS5 ``MATCH``.

    ``expression`` only ever holds quoted operands, ``*`` after a quoted operand and the
    operators AND / OR / NOT between operands: nothing in the user's text can change its
    structure (column filters, NEAR, parentheses and stray quotes are matched as words).
    """

    expression: str
    #: The operands in order (each a valid query on its own).
    operands: tuple[str, ...]
    #: True when the user wrote an operator (AND, OR, NOT); plain words are joined by OR.
    explicit: bool
    #: Operands left out past ``max_operands`` (repeats among alternatives are dropped
    #: without counting here: they change nothing).
    dropped: int = 0


def fts_query(text: str, max_operands: int | None = None) -> FtsQuery | None:
    """The query for ``text``; None if it has no words.

    Words and "quoted phrases" are alternatives (OR): a natural-language question need not
    match every word; ranking puts texts with more and rarer terms first. Uppercase AND,
    OR and NOT between two terms keep their FTS5 meaning (NOT binds tightest, then AND,
    then OR); ``word*`` matches a prefix. An operator with nothing on one side is ignored,
    except a leading NOT, which would exclude from nothing (an error naming the fix).
    Without operators, a repeated operand is kept once; past ``max_operands`` the rest of
    the text is left out (counted in ``dropped``).
    """
    # SQLite reads the query as a C string: a NUL would cut it short.
    text = text.replace("\x00", " ")
    parts: list[str] = []
    operands: list[str] = []
    pending: str | None = None
    explicit = False
    dropped = 0
    # Without operators every operand is an alternative: a repeat changes nothing.
    alternatives_only = not any(m.group(2) in OPERATORS for m in _TOKEN.finditer(text))
    for match in _TOKEN.finditer(text):
        phrase, word = match.group(1), match.group(2)
        if max_operands is not None and len(operands) >= max_operands:
            dropped += word not in OPERATORS
            continue
        if word in OPERATORS:
            if not operands:
                if word == "NOT":
                    raise QuerySyntaxError("NOT needs a term before it, e.g. 'timeout NOT retry'")
                continue
            pending, explicit = word, True
            continue
        raw = phrase if phrase is not None else word
        prefix = phrase is None and raw.endswith("*") and bool(_WORD.search(raw.rstrip("*")))
        raw = raw.rstrip("*") if prefix else raw
        if not _WORD.search(raw):
            continue
        operand = '"' + raw.replace('"', '""') + '"' + (" *" if prefix else "")
        if alternatives_only and operand in operands:
            continue
        if operands:
            parts.append(pending or "OR")
        parts.append(operand)
        operands.append(operand)
        pending = None
    if not operands:
        return None
    return FtsQuery(" ".join(parts), tuple(operands), explicit, dropped)


def query_operands(expression: str) -> list[str]:
    """The operands of an expression built by :func:`fts_query`, each a query of its own."""
    return _OPERAND.findall(expression)


@dataclass(frozen=True)
class Operand:
    """One operand of a built expression: its text (unquoted) and whether it is a prefix."""

    text: str
    prefix: bool


#: An operand, or an operator between two of them.
_PART = re.compile(r'"((?:[^"]|"")*)"( \*)?|(AND|OR|NOT)')


def query_structure(expression: str) -> list[list[list[Operand]]]:
    """An expression built by :func:`fts_query`, grouped by FTS5's precedence, for a backend
    that writes it in another query language: alternatives (OR) of conjunctions (AND) of
    exclusion chains (the first operand NOT each of the others).

    ``a OR b AND c NOT d`` is ``[[[a]], [[b], [c, d]]]``: a, or b and (c but not d).
    """
    alternatives: list[list[list[Operand]]] = [[[]]]
    for match in _PART.finditer(expression):
        text, prefix, operator = match.groups()
        if operator == "OR":
            alternatives.append([[]])
        elif operator == "AND":
            alternatives[-1].append([])
        elif operator is None:  # NOT continues the chain: what follows is excluded
            alternatives[-1][-1].append(Operand(text.replace('""', '"'), prefix is not None))
    return alternatives


def parse_time(value: object, name: str) -> float | None:
    """Epoch seconds from a number or an ISO 8601 string (UTC when no offset is given),
    between years 1 and 9999 (NaN, infinities and JSON's ``1e400`` are errors)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"'{name}' must be an ISO 8601 time or epoch seconds, not a boolean")
    if isinstance(value, int | float):
        seconds = value
    elif isinstance(value, str):
        try:
            if len(value) > 64:
                raise ValueError
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            seconds = parsed.timestamp()
        except (ValueError, OverflowError):
            raise ValueError(
                f"'{name}' is not an ISO 8601 time (got {value[:64]!r}); "
                "use e.g. 2026-01-31T12:00:00Z"
            ) from None
    else:
        raise ValueError(
            f"'{name}' must be an ISO 8601 time or epoch seconds (got {type(value).__name__})"
        )
    if not _EARLIEST <= seconds <= _LATEST:  # also NaN
        raise ValueError(
            f"'{name}' must be a time between years 1 and 9999 (got {str(value)[:40]!r})"
        )
    return float(seconds)


#: A counted repeat: ``{m}``, ``{m,}``, ``{m,n}`` or ``{,n}``.
_COUNTED = re.compile(r"\{(\d*)(,?)(\d*)\}")
#: Escapes whose argument is in braces (``\p{L}``, ``\N{...}``, ``\x{263a}``, ``\g{1}``).
_BRACED_ESCAPES = frozenset("pPNxXgkuU")


def regex_cost_problem(pattern: str, max_weight: int, max_depth: int) -> str | None:
    """Why compiling ``pattern`` could be too costly, or None.

    The regex module expands a counted repeat into that many copies of its operand at
    compile time (``a{30000000}`` takes seconds and gigabytes, with the GIL held, before
    any timeout applies). The weight of a pattern is what it expands to: an atom weighs 1,
    a counted repeat multiplies its operand's weight (a group's weight is the sum of its
    contents), a sequence or alternation adds up. Weight above ``max_weight`` or groups
    nested deeper than ``max_depth`` is refused before compiling.
    """
    totals = [0]  # weight so far of each open group, outermost first
    last = 0  # weight of the atom a quantifier would apply to
    i, end = 0, len(pattern)
    while i < end:
        char = pattern[i]
        weight = 1
        if char == "\\":
            if pattern[i + 1 : i + 2] in _BRACED_ESCAPES and pattern[i + 2 : i + 3] == "{":
                close = pattern.find("}", i + 3)
                i = close + 1 if close > 0 else end
            else:
                i += 2
        elif char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            if len(totals) > max_depth:
                return f"groups are nested deeper than {max_depth} levels"
            totals.append(0)
            last, i = 0, i + 1
            continue
        elif char == ")" and len(totals) > 1:
            weight, i = max(1, totals.pop()), i + 1
        elif char == "{" and (counted := _COUNTED.match(pattern, i)) and counted.group(0) != "{,}":
            low, _, high = counted.groups()
            count = max(int(low or 0), int(high or 0), 1)
            totals[-1] += last * (count - 1)
            last *= count
            i = counted.end()
            if totals[-1] > max_weight:
                return _too_heavy(max_weight)
            continue
        elif char in "*+?":
            i += 1
            continue
        else:
            i += 1
        totals[-1] += weight
        last = weight
        if totals[-1] > max_weight:
            return _too_heavy(max_weight)
    return None


def _too_heavy(max_weight: int) -> str:
    return (
        f"its counted repeats expand to more than {max_weight} elements; use smaller "
        "counts such as {1,50}, or + and *"
    )


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start``."""
    i = start + 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return len(pattern)


@dataclass
class WorkBudget:
    """What one tool call may still spend: time, and store statements. A search checks it
    before each step and stops early, marking its result partial, instead of running past
    the hook timeout; the store interrupts a statement still running at the deadline
    (``LcmStore.read_deadline``), which ends the search the same way."""

    deadline: float
    statements: int
    #: Why the work stopped early ("time", "work"), None while within budget.
    exhausted: str | None = None

    def spend(self, statements: int = 1) -> bool:
        """Take ``statements`` from the budget; False (and ``exhausted`` set) when out."""
        if time.monotonic() >= self.deadline:
            self.exhausted = self.exhausted or "time"
            return False
        if statements > self.statements:
            self.exhausted = self.exhausted or "work"
            return False
        self.statements -= statements
        return True

    def read(self, step: Callable[[], _T], fallback: _T, statements: int = 1) -> _T:
        """What ``step`` (store reads) returns if the budget allows ``statements`` more,
        else ``fallback``; ``fallback`` too, out of time, when the store interrupted it at
        the deadline."""
        if not self.spend(statements):
            return fallback
        try:
            return step()
        except StatementTimedOut:
            self.exhausted = "time"
            return fallback


@dataclass
class RegexScan:
    """The outcome of a bounded regex scan."""

    hits: list[tuple[SearchHit, str, int]] = field(default_factory=list)
    rows_scanned: int = 0
    timed_out: bool = False


def regex_scan(
    pattern: regex.Pattern[str],
    rows: Iterable[SearchHit],
    limit: int,
    deadline: float,
    whole_chars: int,
) -> RegexScan:
    """Match ``pattern`` against rows until ``limit`` hits, the rows run out, or ``deadline``.

    Each search gets the time left as the regex module's timeout, so a catastrophic
    pattern stops at the deadline instead of hanging the tool; a page of rows the store
    stopped reading at its deadline ends the scan the same way.
    """
    scan = RegexScan()
    try:
        _scan_rows(pattern, rows, limit, deadline, whole_chars, scan)
    except StatementTimedOut:
        scan.timed_out = True
    return scan


def _scan_rows(
    pattern: regex.Pattern[str],
    rows: Iterable[SearchHit],
    limit: int,
    deadline: float,
    whole_chars: int,
    scan: RegexScan,
) -> None:
    """The loop of :func:`regex_scan`, adding to ``scan``."""
    for row in rows:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            scan.timed_out = True
            break
        scan.rows_scanned += 1
        try:
            match = pattern.search(row.text, timeout=remaining)
        except TimeoutError:
            scan.timed_out = True
            break
        if match is None:
            continue
        try:
            count = sum(
                1
                for _ in pattern.finditer(row.text, timeout=max(0.001, deadline - time.monotonic()))
            )
        except TimeoutError:
            count = 1
        scan.hits.append(
            (row, regex_snippet(row.text, match.start(), match.end(), whole_chars), count)
        )
        if len(scan.hits) >= limit:
            break


def regex_snippet(text: str, start: int, end: int, whole_chars: int) -> str:
    """A short text whole; else the match with some context either side, unmarked so that
    values can be copied exactly."""
    if len(text) <= whole_chars:
        return text
    left = max(0, start - SNIPPET_RADIUS)
    right = min(len(text), max(end, start + 2 * SNIPPET_RADIUS) + SNIPPET_RADIUS)
    return ("…" if left else "") + text[left:right] + ("…" if right < len(text) else "")
