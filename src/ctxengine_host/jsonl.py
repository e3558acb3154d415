"""The lines of a JSON Lines text, split where JSON Lines splits them.

JSON Lines separates values with ``\\n`` (``\\r\\n`` read alike). ``str.splitlines`` also
splits at U+2028, U+2029, U+0085 and the other characters Python counts as line ends,
which a JSON string may hold unescaped (JavaScript's ``JSON.stringify`` writes them so, and
so does ``json.dumps(..., ensure_ascii=False)``): a valid line holding one was cut in two
and both halves refused.
"""

from __future__ import annotations


def jsonl_lines(text: str) -> list[str]:
    """The lines of ``text``, numbered as an editor numbers them (``\\n`` only); a text
    ending in a newline has an empty last line."""
    return [line.removesuffix("\r") for line in text.split("\n")]
