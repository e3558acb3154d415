"""Exact cl100k token counts of long texts from cached per-paragraph counts.

A request often carries a long text made of parts counted before: LCM joins the
summaries it sends into one message (``"\\n\\n".join``), and which of them are joined
changes from request to request while each summary stays the same. tiktoken splits a
text into pieces with its pattern and encodes each piece on its own, so a text's count
is the sum of its pieces' counts. A blank line followed by a printable ASCII character
(``"\\n\\n" + c``, ``c`` not whitespace) always ends a piece: every alternative of the
pattern that takes a newline takes only whitespace after it (``[\\r\\n]*``,
``\\s*[\\r\\n]``, ``\\s+``), and the letter alternative's optional first character
excludes newlines. The pieces before that boundary are the same when the text stops
there (the whitespace run still ends at the newline, now through ``\\s++$``), and the
pieces after it do not depend on what came before (the pattern has no look-behind).
So the count is the sum of the counts of the paragraphs cut just after each such
``"\\n\\n"``, each paragraph counted once and then looked up.

``tests/runtime/test_paragraph_tokens.py`` checks it against tiktoken on generated texts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: Texts shorter than this are counted whole (splitting them saves nothing).
MIN_CHARS = 2_048
#: Paragraphs longer than this are counted but not kept.
MAX_PARAGRAPH_CHARS = 64 * 1024
#: Characters of kept paragraphs before the cache is cleared (~2 MB of ASCII text).
CACHE_CHARS_LIMIT = 2_000_000

#: Where a paragraph ends: just after a blank line that a printable ASCII character follows.
_BOUNDARY_RE = re.compile(r"\n\n(?=[!-~])")


class ParagraphTokens:
    """Per-paragraph token counts of one encoding; thread-safe (dict get/set under the GIL).

    ``count_raw`` counts one paragraph exactly (before any estimate factor).
    """

    def __init__(self, count_raw: Callable[[str], int]) -> None:
        self._count_raw = count_raw
        self._counts: dict[str, int] = {}
        self._chars = 0

    def count(self, text: str) -> int | None:
        """Tokens in ``text`` when it is long and has paragraph boundaries, else None."""
        if len(text) < MIN_CHARS or "\n\n" not in text:
            return None
        cuts = [m.end() for m in _BOUNDARY_RE.finditer(text)]
        if not cuts:
            return None
        counts = self._counts
        total = 0
        start = 0
        for end in (*cuts, len(text)):
            paragraph = text[start:end]
            start = end
            n = counts.get(paragraph)
            if n is None:
                n = self._counted(paragraph)
            total += n
        return total

    def _counted(self, paragraph: str) -> int:
        n = self._count_raw(paragraph)
        if len(paragraph) <= MAX_PARAGRAPH_CHARS:
            if self._chars + len(paragraph) > CACHE_CHARS_LIMIT:
                self._counts.clear()
                self._chars = 0
            self._counts[paragraph] = n
            self._chars += len(paragraph)
        return n

    def __len__(self) -> int:
        return len(self._counts)
