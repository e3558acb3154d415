"""``json.dumps`` text without ``json.dumps``'s setup on every call.

``json.dumps`` with any option builds a ``JSONEncoder``, and its ``encode`` builds the C
encoder again for every value: for a chat message that setup costs about as much as the
encoding itself, and a message's version digest and the LCM store's extra columns are
built once per ingested message (docs/performance.md, "LCM ingest"). A dumper made here
builds the encoder once and calls it directly. Circular references are not looked for:
messages are parsed JSON; a cycle still fails, with ``RecursionError``.
"""

from __future__ import annotations

from collections.abc import Callable
from json import JSONEncoder
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

try:
    from _json import make_encoder
except ImportError:  # a Python without the C accelerator: json's own encoder
    make_encoder = None  # type: ignore[assignment,misc]


def json_dumper(
    *, sort_keys: bool = False, ensure_ascii: bool = False, strict: bool = False
) -> Callable[[Any], str]:
    """A function returning ``json.dumps(value, ensure_ascii=ensure_ascii, default=str,
    sort_keys=sort_keys)``, character for character; ``strict``: without ``default=str``
    (a value JSON has no type for raises json's ``TypeError``)."""
    default = JSONEncoder().default if strict else str
    if make_encoder is None:
        return JSONEncoder(ensure_ascii=ensure_ascii, default=default, sort_keys=sort_keys).encode
    escape = encode_basestring_ascii if ensure_ascii else encode_basestring
    encode = make_encoder(None, default, escape, None, ": ", ", ", sort_keys, False, True)

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


#: Bytes below 0x20: JSON writes each escaped. A UTF-8 multi-byte character has no byte
#: below 0x80, so looking for these in the encoded text finds exactly the characters.
_CONTROL_BYTES = bytes(range(0x20))


def flat_sorted_json(mapping: dict[Any, Any], skip: frozenset[str]) -> bytes | None:
    """``json.dumps({k: v for k, v in mapping.items() if k not in skip},
    ensure_ascii=False, sort_keys=True).encode()`` for a mapping whose keys are all
    ``str`` and values ``str`` or None, whose texts hold no control character but
    ``\\n``, ``\\r`` and ``\\t``; None for any other (the encoder gives its text).

    json's string escape reads a text character by character, twice (~2.9 µs of a
    780-character message, most of a version digest's cost); ``str.replace``,
    ``bytes.replace`` and ``bytes.translate`` run over it at memory speed. Backslashes and
    quotes are escaped in each key and value; the JSON around them holds no control
    character, so ``\n``, ``\r`` and ``\t`` are escaped in the whole text at once (after
    the backslashes, as their escapes add some)."""
    fields: list[tuple[str, str | None]] = []
    for field in mapping.items():
        key, value = field
        if key in skip:
            continue
        if type(key) is not str or (value is not None and type(value) is not str):
            return None
        fields.append(field)
    fields.sort()  # by key: the keys differ, so values are never compared
    body = ", ".join(
        [
            f'"{_quoted(k)}": null' if v is None else f'"{_quoted(k)}": "{_quoted(v)}"'
            for k, v in fields
        ]
    )
    try:
        text = ("{" + body + "}").encode()
    except UnicodeEncodeError:  # a lone surrogate: the encoder's text fails the same way
        return None
    text = text.replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
    if len(text.translate(None, _CONTROL_BYTES)) != len(text):
        return None  # \b, \f or a \u00XX escape: rare, left to the encoder
    return text


def _quoted(text: str) -> str:
    """``text`` with its backslashes and quotes escaped as JSON escapes them."""
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if '"' in text:
        text = text.replace('"', '\\"')
    return text
