"""Bounds for parsing outside input: nesting depth and size of JSON and TOML documents.

Python's parsers recurse once per nesting level: a small file of ``[[[[...`` raises
``RecursionError`` (not the parser's own error), and a document just under the
recursion limit still breaks the next recursive walk over it (validation, ``json.dumps``).
These helpers turn both into a :class:`InputLimitError` that names the limit, so every
reader of hostile input reports it like any other malformed input.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

#: Deepest nesting of lists and objects accepted in outside input (messages, manifests,
#: config files and tool arguments nest a few levels; 64 leaves ample room).
MAX_NESTING = 64


class InputLimitError(ValueError):
    """A document is nested deeper or is larger than a limit; the message names the limit."""


def check_nesting(value: Any, max_depth: int = MAX_NESTING, what: str = "the document") -> None:
    """Raise :class:`InputLimitError` when ``value`` (parsed JSON/TOML: dicts, lists,
    scalars) nests lists and dicts deeper than ``max_depth``. Iterative: it cannot itself
    hit the recursion limit."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > max_depth:
            raise InputLimitError(f"{what} is nested deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children)


#: A JSON string literal with its escapes; an unterminated one runs to the end of the text.
_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")


def nesting_depth_of_text(text: str) -> int:
    """The deepest bracket nesting (``[``/``{``) of JSON ``text``, outside strings; cheap
    enough to run before parsing, so a hostile document never reaches the parser.

    Strings and every other character are cut out by two linear regex passes first, so
    the loop only sees the brackets (a session line of code and prose has a few)."""
    depth = deepest = 0
    for char in _NOT_BRACKET_RE.sub("", _STRING_RE.sub("", text)):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads_json(
    text: str | bytes,
    max_depth: int = MAX_NESTING,
    max_chars: int | None = None,
    what: str = "the JSON text",
) -> Any:
    """``json.loads`` that refuses text longer than ``max_chars`` or nested deeper than
    ``max_depth`` with :class:`InputLimitError` (before parsing); other syntax errors stay
    ``json.JSONDecodeError``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if max_chars is not None and len(text) > max_chars:
        raise InputLimitError(f"{what} is {len(text)} characters; the limit is {max_chars}")
    # Fewer brackets than the limit cannot nest deeper than it: most texts skip the scan.
    opened = text.count("[") + text.count("{")
    if opened > max_depth and nesting_depth_of_text(text) > max_depth:
        raise InputLimitError(f"{what} is nested deeper than {max_depth} levels")
    return json.loads(text)


def loads_toml(text: str, max_depth: int = MAX_NESTING, what: str = "the TOML text") -> Any:
    """``tomllib.loads`` whose result nests at most ``max_depth`` levels; a document deep
    enough to exhaust the parser's recursion is :class:`InputLimitError` too."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise InputLimitError(f"{what} is nested deeper than {max_depth} levels") from None
    check_nesting(data, max_depth, what)
    return data
