"""What a sentence carries: identifiers, cue words, rare-word candidates, supersession keys.

Everything works token by token with cheap string tests first (most tokens
are plain words and are skipped at once); regular expressions only run on
the few tokens that could be identifiers. That keeps a 100k-token input well
under a second.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

#: What each kind of identifier is worth to a summary.
IDENT_WEIGHTS = {
    "url": 1.0,
    "email": 0.8,
    "kv": 0.6,
    "path": 0.6,
    "version": 0.8,
    "addr": 0.8,
    "hex": 0.8,
    "code": 0.8,
    "name": 0.8,
    "date": 0.8,
    #: The exception a tool line opens with: the first line naming it says what failed
    #: (counted once, so repeated test runs do not all clear the tool-output bar).
    "exception": 1.6,
    "ident": 0.2,
    "num": 0.1,
}

#: Identifier kinds that also count as rare words when they are rare in the input.
DISTINCTIVE_KINDS = frozenset({"url", "email", "version", "addr", "hex", "code", "name", "date"})

CUE_WEIGHTS = {
    "decision": 1.6,
    "constraint": 0.8,
    "error": 1.2,
    "outcome": 0.6,
    "task": 1.2,
    "remember": 1.6,
}
_CUE_WORDS = {
    "decision": "decide decided decides decision decisions chose choose chosen agreed prefer "
    "preferred settled",
    "constraint": "must never always don't shouldn't should require required requires avoid ensure",
    "error": "error errors exception traceback failed failure fatal panic denied refused timeout "
    "cannot can't crash crashed crashes broken bug",
    "outcome": "passed succeeded success successful successfully fixed resolved works completed "
    "deployed merged created updated installed",
    "task": "todo remaining",
    "remember": "remember important fyi",
}
#: How the names of exception classes end (``KeyError``, ``IOException``).
_EXCEPTION_ENDINGS = ("Error", "Exception", "Failure", "Fault")
_EXCEPTION_ENDING = "(?:" + "|".join(_EXCEPTION_ENDINGS) + ")"
_ENDING_RE = re.compile(_EXCEPTION_ENDING)
_EXCEPTION_RE = re.compile(rf"(?<![A-Za-z])[A-Z][A-Za-z0-9]*{_EXCEPTION_ENDING}(?![a-z])")
#: A line opening with an exception's (dotted) name: a traceback's last line, or pytest's
#: ``E   KeyError: 'id'``.
_EXCEPTION_LINE_RE = re.compile(
    rf"^(?:E\s+)?((?:[a-z_]\w*\.)*[A-Z]\w*{_EXCEPTION_ENDING})(?::\s|:?$)"
)
CUE_BY_WORD = {word: cue for cue, words in _CUE_WORDS.items() for word in words.split()}
_CUE_WORD_SET = frozenset(CUE_BY_WORD)
CUE_PHRASES = (
    ("decision", ("we'll use", "we will use", "let's use", "let's go with", "we're going with",
                  "we are going with", "switch to", "switched to", "instead of", "settled on")),
    ("constraint", ("do not", "make sure")),
    ("error", ("timed out", "not found")),
    ("task", ("next step", "still need", "need to", "follow-up", "follow up", "open question",
              "not yet")),
    ("remember", ("note that", "keep in mind", "for the record", "heads-up", "heads up")),
)  # fmt: skip

CUE_BY_PHRASE = {phrase: cue for cue, phrases in CUE_PHRASES for phrase in phrases}


def _trie_pattern(phrases: Iterable[str]) -> str:
    """One pattern for a set of phrases, branching character by character.

    At each position it matches the longest phrase there, as the alternation sorted
    longest first does, in about half the time: a position is given up at the first
    character no phrase continues with, not tried against every phrase.
    """
    tree: dict[str, Any] = {}
    for phrase in phrases:
        node = tree
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = {}  # a phrase ends here

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        ends = "" in node
        if not branches:
            return ""
        if len(branches) == 1 and not ends:
            return branches[0]
        return "(?:" + "|".join(branches) + ")" + ("?" if ends else "")

    return pattern(tree)


_PHRASE_RE = re.compile(_trie_pattern(CUE_BY_PHRASE))
#: Any cue word or phrase anywhere, even inside a longer word: a text without one has no
#: cue, so its words need not be listed (most units; one scan instead of a word list).
_CUE_HINT_RE = re.compile(_trie_pattern([*CUE_BY_WORD, *CUE_BY_PHRASE]))

MONTHS = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
PATH_SUFFIXES = frozenset(
    [
        "py",
        "js",
        "ts",
        "tsx",
        "json",
        "yaml",
        "yml",
        "toml",
        "md",
        "cfg",
        "ini",
        "sh",
        "sql",
        "go",
        "rs",
        "java",
        "c",
        "h",
        "cpp",
        "txt",
        "log",
        "env",
        "lock",
        "html",
        "css",
        "conf",
        "xml",
        "csv",
        "parquet",
    ]
)
_STRIP = "\"'`()[]{}<>,;!?*"
_CORE_STRIP = _STRIP + ".:"
#: First characters the CamelCase pattern needs (a cheap test keeps most tokens from it).
_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_KV_SPLIT_RE = re.compile(r"\s*([=:])\s*")
#: ``host:port`` (``0.0.0.0:8080``, ``localhost:5432``, ``:8080``).
_ADDR_RE = re.compile(r"(?:[A-Za-z][\w-]*(?:\.[\w-]+)*|\d+(?:\.\d+){3})?:\d{2,5}")
#: A grep hit ``path:line:rest``: the rest is classified on its own.
_GREP_HIT_RE = re.compile(r"([\w./-]+):\d+:(\S+)")
_VERSION_RE = re.compile(r"v?\d+\.\d+\.\d+(?:[-+.][\w.]+)?")
_HEX_RE = re.compile(r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}")
_CODE_RE = re.compile(r"[A-Z][A-Z0-9]*(?:[_-][A-Z0-9]+)+|[A-Z]{1,5}-?\d{2,}")
_SNAKE_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_CAMEL_RE = re.compile(r"[a-z]+[A-Z][A-Za-z0-9]+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+")
_KEY_RE = re.compile(r"[A-Za-z_][\w.\-]{1,40}")
_WORDS_RE = re.compile(r"[a-z][a-z']*")
_ALPHA_COMPONENT_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
#: Words too common to count as rare even in a short input.
COMMON_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "about",
        "what",
        "when",
        "where",
        "which",
        "have",
        "has",
        "was",
        "were",
        "are",
        "you",
        "your",
        "our",
        "their",
        "them",
        "they",
        "its",
        "not",
        "but",
        "all",
        "any",
        "can",
        "will",
        "would",
        "should",
        "could",
        "there",
        "here",
        "then",
        "than",
        "been",
        "being",
        "does",
        "did",
        "done",
        "just",
        "also",
        "some",
        "more",
        "most",
        "other",
        "such",
        "only",
        "over",
        "very",
        "make",
        "made",
        "like",
        "want",
        "need",
        "please",
        "thanks",
        "look",
        "check",
        "file",
        "files",
        "test",
        "tests",
        "code",
        "line",
        "lines",
        "run",
        "running",
        "now",
        "new",
        "next",
        "still",
        "after",
        "before",
        "because",
        "while",
    ]
)
#: ``set X to Y`` / ``X is now Y`` statements name a key whose older values they supersede.
_SET_RE = re.compile(
    r"\b(?:set|change|changed|move|moved|update|updated|switch|switched|rename|renamed)\s+"
    r"(?:the\s+)?([\w.\-]+(?:\s[\w.\-]+){0,2})\s+(?:to|from\s+\S+\s+to)\s+(\S+)"
)
_IS_NOW_RE = re.compile(
    r"\b(?:the\s+)?([\w.\-]+(?:\s[\w.\-]+){0,2})\s+(?:is now|are now|is set to|should be)\s+(\S+)"
)
#: What each of the two statements needs (a search is cheaper than running them).
_SET_HINT_RE = re.compile(" (?:to|is now|are now|should be) ")


class Features(NamedTuple):
    """What one unit says; immutable, because :func:`extract` hands out cached ones (a tuple
    is built in a fifth of a frozen dataclass's time, and there is one per new unit text)."""

    idents: tuple[tuple[str, str], ...]  # (kind, value)
    cues: frozenset[str]
    words: tuple[str, ...]  # rare-word candidates
    keys: tuple[tuple[str, str], ...]  # (key, value) this sentence sets


def _classify(token: str) -> str | None:
    """The identifier kind of one whitespace token, or None for a plain word."""
    if token.isalpha():
        return None
    if "://" in token:
        return "url"
    if token.isdigit():
        return "num"
    if "@" in token and "." in token.rsplit("@", 1)[-1]:
        return "email"
    if ":" in token:  # a grep hit and an address both hold one
        hit = _GREP_HIT_RE.fullmatch(token)
        if hit:
            return _classify(hit.group(2))
        if _ADDR_RE.fullmatch(token):
            return "addr"
    if "=" in token:
        key, _, value = token.partition("=")
        return "kv" if key and value.strip("=") and _KEY_RE.fullmatch(key) else None
    if "/" in token and any(map(str.isalpha, token)):
        return "path"
    if "." in token:
        if _VERSION_RE.fullmatch(token):
            return "version"
        if token.rsplit(".", 1)[-1].lower() in PATH_SUFFIXES:
            return "path"
    if len(token) >= 7 and _HEX_RE.fullmatch(token):
        return "hex"
    first = token[:1]
    if "A" <= first <= "Z" and _CODE_RE.fullmatch(token):
        return "code"
    if "_" in token and _SNAKE_RE.fullmatch(token):
        return "ident"
    if first in _ASCII_LETTERS and _CAMEL_RE.fullmatch(token):
        return "ident"
    return "num" if any(map(str.isdigit, token)) else None


def _rare(core: str, out: list[str]) -> None:
    """Add the parts of a token that can be rare: a number of four or more digits, or its
    alphabetic parts (snake_case and CamelCase split) that are not common words."""
    if core.isdigit():
        if len(core) >= 4:
            out.append(core)
        return
    if core.isalpha() and (core.islower() or core.istitle() or core.isupper()):
        parts: list[str] | tuple[str] = (core,)
    else:
        parts = _ALPHA_COMPONENT_RE.findall(core)
    for part in parts:
        lowered = part.lower()
        if len(lowered) >= 4 and lowered not in COMMON_WORDS:
            out.append(lowered)


def _names_exception(text: str) -> bool:
    """``ValueError``, ``FileNotFoundError(``, ``TimeoutException``: an error met, though
    no cue word stands alone in it (the substring test keeps the regex off most lines)."""
    return bool(_ENDING_RE.search(text) and _EXCEPTION_RE.search(text))


def leading_exception(text: str) -> str | None:
    """The name of the exception a line opens with (``KeyError: 'id'``), or None."""
    match = _EXCEPTION_LINE_RE.match(text)
    return match.group(1) if match else None


#: Distinct units :func:`extract` remembers. A rolling summary is parsed back into units at
#: every merge, and the same lines recur in tool loops: about a third of the calls of a long
#: replay repeat a recent text.
EXTRACT_CACHE_SIZE = 8192
#: Distinct tokens whose own findings :func:`extract` remembers (``_token_findings``). Code
#: and log lines repeat their tokens (``payload=None``, ``INFO``, ``return``): two thirds of
#: the tokens that are not plain lowercase words in the 2,000-turn sample were seen before.
TOKEN_CACHE_SIZE = 65_536


#: What a whitespace token says on its own, as a plain tuple (built and unpacked faster than a
#: named one, once per token): its rare-word candidates; its core (without the surrounding
#: punctuation and a trailing ``.`` / ``:``); whether the core is alphabetic; the token without
#: the surrounding punctuation (the next token's ``previous``); the (kind, value) identifiers
#: in it; and a ``key:`` whose value is the next token, or None. Its neighbours decide the
#: rest: a name of two title-case words, a date, ``key: value``.
_TokenFindings = tuple[tuple[str, ...], str, bool, str, tuple[tuple[str, str], ...], "str | None"]

_token_cache: dict[str, _TokenFindings] = {}


def _token_findings(raw: str) -> _TokenFindings:
    """The findings of a token that is not a plain lowercase word, kept by its text."""
    core = raw.strip(_CORE_STRIP)
    rare: list[str] = []
    _rare(core, rare)
    is_word = core.isalpha()
    bare = raw.strip(_STRIP)
    idents: list[tuple[str, str]] = []
    key = None
    if not is_word or "`" in raw:  # a plain word is no identifier unless backticked
        token = bare.rstrip(".:")
        if raw.startswith("`") and raw.endswith("`") and len(raw) > 3:
            idents.append(("ident", token))
        elif token:
            key = _token_idents(raw, token, idents)
    findings = (tuple(rare), core, is_word, bare, tuple(idents), key)
    if len(_token_cache) >= TOKEN_CACHE_SIZE:
        _token_cache.clear()
    _token_cache[raw] = findings
    return findings


def _token_idents(raw: str, token: str, idents: list[tuple[str, str]]) -> str | None:
    """Add the identifiers of ``token`` to ``idents``; returns it when it is a ``key:``
    that names no identifier itself (the next token is then its value)."""
    hit = _GREP_HIT_RE.fullmatch(token) if ":" in token else None
    if hit:
        idents.append(("path", hit.group(1)))
        token = hit.group(2)
    kind = _classify(token)
    if kind:
        idents.append((kind, token))
        if kind == "kv":  # KEY=value: the key or the value may be distinctive itself
            name, _, value = token.partition("=")
            for part in (name, value.strip("=")):
                inner = _classify(part)
                if inner in DISTINCTIVE_KINDS:
                    idents.append((inner, part))
        return None
    if raw.endswith(":") and ("_" in token or "." in token) and _KEY_RE.fullmatch(token):
        return token
    return None


@lru_cache(maxsize=EXTRACT_CACHE_SIZE)
def extract(text: str) -> Features:
    """The features of one sentence or line, in one pass over its tokens."""
    tokens = text.split()
    found: list[tuple[str, str]] = []
    rare: list[str] = []
    previous = ""  # the previous token without surrounding punctuation
    known = _token_cache.get
    for i, raw in enumerate(tokens):
        if raw.isalpha() and raw.islower():  # half the tokens: what the full tests find
            if len(raw) >= 4 and raw not in COMMON_WORDS:  # is a rare-word candidate
                rare.append(raw)
            previous = raw
            continue
        findings = known(raw) or _token_findings(raw)
        parts, core, is_word, bare, idents, key = findings
        if parts:
            rare.extend(parts)
        if is_word:
            if (
                core.istitle()
                and previous.istitle()
                and previous.isalpha()
                and tokens[i - 1][-1:].isalpha()
            ):
                found.append(("name", f"{previous} {core}"))
        elif core.isdigit() and len(core) <= 2 and previous.lower() in MONTHS:
            found.append(("date", f"{previous} {core}"))
        previous = bare
        if idents:
            found.extend(idents)
        elif key is not None and i + 1 < len(tokens):
            value = tokens[i + 1].strip(_STRIP).rstrip(".")
            if value:
                found.append(("kv", f"{key}: {value}"))
    lowered = text.lower()
    cues = _cues(lowered) if _CUE_HINT_RE.search(lowered) else set()
    if "error" not in cues and _names_exception(text):
        cues.add("error")
    if found:
        rare.extend("#" + value.lower() for kind, value in found if kind in DISTINCTIVE_KINDS)
    return Features(
        tuple(found),
        frozenset(cues),
        tuple(dict.fromkeys(rare)),
        supersession_keys(lowered, found),
    )


def _cues(lowered: str) -> set[str]:
    """The cues of a lowercased text: its words that are cue words, and its cue phrases."""
    words = _WORDS_RE.findall(lowered)
    cues = (
        set()
        if _CUE_WORD_SET.isdisjoint(words)
        else {CUE_BY_WORD[w] for w in words if w in CUE_BY_WORD}
    )
    phrases = _PHRASE_RE.findall(lowered)
    if phrases:
        cues.update(CUE_BY_PHRASE[p] for p in phrases)
    return cues


def supersession_keys(lowered: str, idents: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Keys a sentence sets: ``some_key = value`` and ``set X to Y`` / ``X is now Y``."""
    keys: dict[str, str] = {}
    for kind, value in idents:
        if kind == "kv":
            key, _, val = _KV_SPLIT_RE.split(value, maxsplit=1)
            if any(map(key.__contains__, "_.-")) or any(map(str.isupper, key[1:])):
                keys[key.lower()] = val.strip("\"'`").lower()
    if _SET_HINT_RE.search(lowered):
        for pattern in (_SET_RE, _IS_NOW_RE):
            for match in pattern.finditer(lowered):
                keys[" ".join(match.group(1).split())] = match.group(2).strip(".,;\"'`")
    return tuple(keys.items())
