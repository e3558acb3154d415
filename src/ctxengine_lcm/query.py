"""Query expansion for natural-language ``lcm_grep`` queries: other spellings and words
for each term, weighted below the term itself.

A question is worded in the asker's vocabulary ("which release of the driver is
installed?") while the fact is in the session's ("Version: 3.3.7"); lexical search then
finds nothing, or only the one common word both share. Each plain term of a query gets
alternatives:

- identifier forms: a camelCase word split into its parts (``resolveTenant`` finds
  ``resolve_tenant`` and "resolve tenant"), a hyphenated word or two adjacent words
  joined (``multi-value`` and ``flush batch`` find ``MultiValue`` and ``flushBatch``);
  snake_case, kebab-case and paths are split by the tokenizer already;
- derived forms: the tokenizer's stemmer maps inflections both ways ("changing" and
  "changed" to "change") but keeps derivations apart, so "write" also looks for
  "writer", "configure" for "configuration" (and their bases);
- synonyms from a small thesaurus of the words agents and their tools use for the same
  thing (release / version, listen / port, edit / patch).

Alternatives never compete with the terms as written: the store searches them as a
second, separate query (its hits are extra candidates, scored below the query's own
best), and reranking credits a hit, per original term, with the term's weight when it
holds the term, else with the best weight of an alternative it holds times that
alternative's factor. An alternative the session does not hold matches nothing and its
weight comes from the session's own matches, so the session's vocabulary decides which
alternatives count and how much (rarer weighs more).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .search import FtsQuery
from .store import SearchHit

#: Factor of an identifier form of a term (the same name spelled otherwise).
IDENTIFIER_FACTOR = 0.9
#: Factor of a derived form of a term (the writer of "write"): a near relative.
DERIVED_FACTOR = 0.7
#: Factor of a synonym (a different word for the same thing: weaker evidence).
SYNONYM_FACTOR = 0.5
#: Synonyms added per term, and alternatives per query.
MAX_SYNONYMS_PER_TERM = 8
MAX_DERIVED_PER_TERM = 3
MAX_ALTERNATIVES = 64

#: Words that name the same thing in agent sessions (questions, tool calls, outputs).
#: A word may sit in several groups; every other word of its groups is an alternative.
SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("version", "release", "tag"),
    ("install", "installed", "pip", "package", "dependency", "requirement"),
    ("library", "package", "module", "driver", "dependency"),
    ("port", "listen", "bind", "socket", "address", "endpoint"),
    ("connection", "connect", "listen", "socket", "port"),
    ("accept", "listen", "receive"),
    ("host", "hostname", "address", "server"),
    ("timeout", "deadline", "limit", "expire", "seconds"),
    ("stop", "stopped", "kill", "abort", "timeout", "cancel", "terminate"),
    ("long", "duration", "timeout", "seconds"),
    ("error", "exception", "failure", "fail", "traceback", "abort", "code"),
    ("crash", "panic", "abort", "exception"),
    ("change", "edit", "modify", "patch", "update", "rewrite", "replace"),
    ("fix", "patch", "repair", "resolve"),
    ("alone", "untouched", "unchanged", "modify", "touch"),
    ("file", "path", "filename"),
    ("folder", "directory", "dir", "path"),
    ("function", "method", "def", "func"),
    ("class", "type", "struct"),
    ("config", "configuration", "setting", "option", "conf", "cfg", "toml", "yaml", "ini"),
    ("variable", "env", "environment", "var", "flag"),
    ("switch", "flag", "toggle", "env", "option"),
    ("test", "tests", "pytest", "spec", "suite"),
    ("bug", "issue", "defect", "problem", "regression"),
    ("slow", "latency", "performance", "bottleneck", "timeout"),
    ("memory", "ram", "oom", "heap"),
    ("remove", "delete", "drop", "rm", "unlink"),
    ("undo", "undone", "revert", "restore", "rollback", "reset", "discard", "checkout"),
    ("add", "create", "insert", "new"),
    ("read", "load", "fetch", "open", "cat"),
    ("write", "save", "store", "persist", "dump"),
    ("run", "execute", "exec", "invoke", "launch"),
    ("start", "begin", "launch", "boot"),
    ("command", "cmd", "shell", "script", "bash"),
    ("output", "log", "stdout", "stderr", "print"),
    ("database", "db", "sql", "postgres", "postgresql", "mysql", "sqlite", "schema"),
    ("table", "schema", "column"),
    ("query", "select", "sql"),
    ("password", "secret", "credential", "token", "key"),
    ("user", "customer", "tenant", "account", "client"),
    ("owner", "responsible", "maintainer", "lead", "owns"),
    ("ship", "shipping", "release", "deploy", "rollout", "launch"),
    ("production", "prod", "live"),
    ("deploy", "deployment", "rollout", "release"),
    ("document", "doc", "docs", "wiki", "page", "readme", "playbook", "guide"),
    ("url", "link", "address", "wiki"),
    ("queue", "broker", "queueing", "messaging"),
    ("job", "task", "worker", "cron"),
    ("worker", "service", "daemon", "process"),
    ("build", "compile", "make"),
    ("commit", "change", "revision", "sha"),
    ("branch", "ref"),
    ("request", "http", "api", "call", "endpoint"),
    ("response", "reply", "result", "status"),
    ("decide", "decision", "choose", "chose", "chosen", "agreed", "settle", "because"),
    ("reason", "because", "why", "cause"),
    ("why", "because", "reason"),
    ("cache", "memo", "cached"),
    ("retry", "retries", "backoff", "attempt"),
    ("size", "length", "limit", "max", "count"),
    ("number", "count", "value", "amount"),
    ("batch", "chunk", "batching", "page"),
    ("row", "record", "rows", "records"),
    ("disk", "storage", "volume"),
    ("network", "net", "http", "tcp"),
    ("millisecond", "milliseconds", "ms", "millis"),
    ("second", "seconds", "sec", "secs"),
    ("minute", "minutes", "mins"),
    ("megabyte", "megabytes", "mb"),
    ("gigabyte", "gigabytes", "gb"),
)

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_PLAIN_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_SEPARATORS = re.compile(r"[-.]")
_EDGE_PUNCTUATION = ".,;:!?()[]{}'`"
_INFLECTIONS = ("ing", "ed", "s")
_SUFFIXES = ("ing", "ed", "es", "s", "ion", "ions", "er", "ers", "ly")


class Alternative(NamedTuple):
    """Another way to write one term: its text, factor and operand (quoted, for the
    store; built once by :func:`alternative`, as a query's expansion compares operands
    many times)."""

    text: str
    factor: float
    operand: str


def alternative(text: str, factor: float) -> Alternative:
    """The alternative ``text`` with its operand."""
    return Alternative(text, factor, '"' + text.replace('"', '""') + '"')


@dataclass(frozen=True)
class Expansion:
    """The alternatives of each term of a query (by the term, lowercased) and the
    operands that find them (each once)."""

    alternatives: dict[str, tuple[Alternative, ...]]
    operands: tuple[str, ...]

    @property
    def expression(self) -> str | None:
        """The operands joined by ``OR``; None when there is none."""
        return " OR ".join(self.operands) if self.operands else None

    def of(self, terms: Sequence[tuple[str, bool]]) -> list[list[tuple[str, float]]]:
        """(text, factor) of the alternatives of each of ``terms`` (ranking's terms)."""
        return [
            [(a.text.lower(), a.factor) for a in self.alternatives.get(text, ())]
            for text, _ in terms
        ]

    def combined(self, expression: str) -> str:
        """``expression`` or any alternative: what snippets and inner hits match."""
        return f"{expression} OR {self.expression}" if self.expression else expression


def expand_query(query: FtsQuery) -> Expansion:
    """The alternatives of a plain query (operators or quotes written: none, the query
    is searched as written)."""
    terms = [_plain(operand) for operand in query.operands]
    if query.explicit:
        return Expansion({}, ())
    taken = {t.lower() for t in terms if t}
    # Per term, by kind in order of priority: when the cap is reached, joins go first.
    kinds: list[tuple[tuple[Alternative, ...], ...]] = []
    for i, term in enumerate(terms):
        following = terms[i + 1] if i + 1 < len(terms) else None
        split, synonyms, derived, joined = _term_alternatives(term, following)
        mine = tuple(a for a in synonyms if a.text not in taken)[:MAX_SYNONYMS_PER_TERM]
        kinds.append((split, mine, derived, joined))
    ranked = [a for kind in range(4) for forms in kinds for a in forms[kind]]
    allowed = set(
        list(dict.fromkeys(a.operand for a in ranked if a.text.lower() not in taken))[
            :MAX_ALTERNATIVES
        ]
    )
    operands: dict[str, None] = {}
    kept: dict[str, tuple[Alternative, ...]] = {}
    for operand, forms in zip(query.operands, kinds, strict=True):
        mine = tuple(a for kind in forms for a in kind if a.operand in allowed)
        operands.update(dict.fromkeys(a.operand for a in mine))
        key = operand[1:-1].replace('""', '"').lower()  # as ranking.query_terms reads it
        kept.setdefault(key, mine)
    return Expansion(kept, tuple(operands))


@functools.lru_cache(maxsize=4096)
def _term_alternatives(
    term: str | None, following: str | None
) -> tuple[tuple[Alternative, ...], ...]:
    """The alternatives of one plain term (None: a phrase or a prefix, which has none) by
    kind: its identifier parts, its synonyms (all: the query's other terms are taken out
    after), its derived forms, and it joined with the next term. A pure function of the
    words, kept for the words an agent searches again."""
    if term is None:
        return (), (), (), ()
    split, joined = _identifier_forms(term, following)
    return (
        tuple(alternative(f, IDENTIFIER_FACTOR) for f in split),
        tuple(alternative(w, SYNONYM_FACTOR) for w in synonyms_of(term)),
        tuple(alternative(f, DERIVED_FACTOR) for f in derived_forms(term)),
        tuple(alternative(f, IDENTIFIER_FACTOR) for f in joined),
    )


def merge_candidates(
    found: Sequence[SearchHit], extra: Sequence[SearchHit], factor: float = SYNONYM_FACTOR
) -> list[SearchHit]:
    """The query's own matches, then the alternatives' matches it did not find, their
    store scores rescaled so that the best of them is ``factor`` times the query's best
    (scores are "lower is better", as the stores report them)."""
    seen = {(h.kind, h.id) for h in found}
    fresh = [h for h in extra if (h.kind, h.id) not in seen]
    if not fresh:
        return list(found)
    top = max((-(h.score or 0.0) for h in found), default=0.0) or 1.0
    top_extra = max(-(h.score or 0.0) for h in fresh) or 1.0
    scale = factor * top / top_extra
    return [*found, *(h._replace(score=(h.score or 0.0) * scale) for h in fresh)]


def synonyms_of(word: str) -> list[str]:
    """The other words of every thesaurus group holding ``word`` (or its base form),
    in group order."""
    key = word.lower()
    found: list[str] = []
    for form in _base_forms(key):
        for group in _GROUPS_BY_WORD.get(form, ()):
            found += [w for w in group if w != form and w != key and w not in found]
        if found:
            break
    return found


def _base_forms(word: str) -> list[str]:
    """``word`` and what it is with a common suffix taken off (and an "e" put back)."""
    forms = [word]
    for suffix in _SUFFIXES:
        stem = word.removesuffix(suffix)
        if stem != word and len(stem) >= 3:
            forms += [stem, stem + "e"]
            if len(stem) > 3 and stem[-1] == stem[-2]:  # "stopped" -> "stop"
                forms.append(stem[:-1])
    return forms


def _identifier_forms(term: str, following: str | None) -> tuple[list[str], list[str]]:
    """Other spellings of the name ``term``: its camelCase parts as a phrase, a hyphenated
    or dotted ``term`` as one word (``multi-value`` finds ``MultiValue``); and ``term``
    joined with the next word (``flush batch`` finds ``flushBatch``)."""
    split: list[str] = []
    parts = _CAMEL.findall(term)
    if _PLAIN_WORD.match(term) and len(parts) > 1:
        split.append(" ".join(p.lower() for p in parts))
    pieces = _SEPARATORS.split(term)
    if len(pieces) > 1 and all(_PLAIN_WORD.match(p) for p in pieces):
        split.append("".join(pieces).lower())
    joined = []
    if following is not None and _PLAIN_WORD.match(term) and _PLAIN_WORD.match(following):
        joined.append((term + following).lower())
    return split, joined


def derived_forms(word: str) -> list[str]:
    """Forms of ``word`` the stemmer keeps apart: its base without an inflection, the
    agent noun ("write": "writer") and the "-ation" noun ("configure": "configuration")."""
    key = word.lower()
    if not key.isalpha() or len(key) < 4:
        return []
    base = next(
        (key[: -len(s)] for s in _INFLECTIONS if key.endswith(s) and len(key) - len(s) >= 4),
        key,
    )
    stem = base[:-1] if base.endswith("e") else base
    forms = [base, stem + "er"]
    if not base.endswith(("ion", "er", "or")):
        forms.append(stem + "ation")
    return [f for f in dict.fromkeys(forms) if f != key][:MAX_DERIVED_PER_TERM]


def _plain(operand: str) -> str | None:
    """The word of a plain operand (``"word"``), None for a phrase or a prefix."""
    if operand.endswith(" *"):
        return None
    text = operand[1:-1].replace('""', '"').strip(_EDGE_PUNCTUATION)
    return text if text and " " not in text and '"' not in text else None


def _groups_by_word(groups: Sequence[tuple[str, ...]]) -> dict[str, list[tuple[str, ...]]]:
    index: dict[str, list[tuple[str, ...]]] = {}
    for group in groups:
        for word in group:
            index.setdefault(word, []).append(group)
    return index


_GROUPS_BY_WORD = _groups_by_word(SYNONYM_GROUPS)
