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


def json_dumper(*, sort_keys: bool = False, ensure_ascii: bool = False) -> Callable[[Any], str]:
    """A function returning ``json.dumps(value, ensure_ascii=ensure_ascii, default=str,
    sort_keys=sort_keys)``, character for character."""
    if make_encoder is None:
        return JSONEncoder(ensure_ascii=ensure_ascii, default=str, sort_keys=sort_keys).encode
    escape = encode_basestring_ascii if ensure_ascii else encode_basestring
    encode = make_encoder(None, str, escape, None, ": ", ", ", sort_keys, False, True)

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps
