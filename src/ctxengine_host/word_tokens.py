"""Exact cl100k/o200k token counts of prose from cached per-word counts.

tiktoken splits a text into pieces with its pattern and encodes each piece on its own, so a
text's count is the sum of its pieces' counts. In a text whose only whitespace is single
spaces between non-space runs, every such space starts a new piece: no piece that holds a
non-space character reaches past it (letter, number and punctuation runs stop at a space;
only the whitespace alternatives, which hold no other character, take spaces), and the
pieces after it do not depend on what came before (the pattern has no look-behind; its
look-aheads and ``$`` only follow whitespace runs, of which there are none but a single
space at either end). So the count is ``count(w0) + count(" " + w1) + ...`` over
``text.split(" ")``, each word counted once and then looked up: about a third of tiktoken's
time on the same text. A space at the start makes ``w0`` empty (0 tokens) and the first
word a spaced one, as it is mid-text; a space at the end is a piece of its own (the
whitespace alternatives take it, ``\\s+(?!\\S)`` at the end), which is ``count(" " + "")``.

Only ASCII texts take this path (``str.isascii`` is a flag look-up): their whitespace is the
six ASCII characters, checked with ``in``; any other text is counted whole. Two spaces in a
row are found in the split, as an empty word inside it (looking for ``"  "`` in the text
took as long as the dictionary look-ups of all its words).
``tests/runtime/test_word_tokens.py`` checks it against tiktoken on generated texts.
"""

from __future__ import annotations

from collections.abc import Callable

#: Texts shorter than this are counted whole (splitting them saves nothing).
MIN_CHARS = 64
#: Words longer than this are counted but not kept.
MAX_WORD_CHARS = 32
#: Words kept (of each kind) before that cache is cleared (~100 bytes each).
WORD_CACHE_LIMIT = 16_384


def splits_into_words(text: str) -> bool:
    """Whether ``text`` may be counted from its words: long, ASCII, no whitespace but
    spaces (whether they are single ones, :meth:`WordTokens.count` sees in the split)."""
    return (
        len(text) >= MIN_CHARS
        and text.isascii()
        and "\n" not in text
        and "\t" not in text
        and "\r" not in text
        and "\x0b" not in text
        and "\x0c" not in text
    )


class WordTokens:
    """Per-word token counts of one encoding; thread-safe (dict get/set under the GIL)."""

    def __init__(self, encode: Callable[[str], list[int]]) -> None:
        self._encode = encode
        #: Tokens of a word at the start of a text, and of a word after a space (" word").
        #: The empty word is never kept after a space: met inside a text it raises the
        #: KeyError that sends the text to the check for two spaces in a row.
        self._first: dict[str, int] = {}
        self._spaced: dict[str, int] = {}
        self._lone_space: int | None = None

    def count(self, text: str) -> int | None:
        """Tokens in ``text`` when :func:`splits_into_words` and its spaces are single
        ones (one at either end included), else None."""
        if not splits_into_words(text):
            return None
        first, *rest = text.split(" ")
        head = self._first.get(first)
        if head is None:
            head = self._counted(self._first, first, first)
        if rest and not rest[-1]:  # a space at the end: a piece of its own
            rest.pop()
            head += self._space()
        try:  # the words looked up in C: the common case, every word seen before
            return head + sum(map(self._spaced.__getitem__, rest))
        except KeyError:
            if "" in rest:  # two spaces in a row: not every space starts a piece
                return None
            spaced = self._spaced
            return head + sum(
                spaced[w] if w in spaced else self._counted(spaced, w, " " + w) for w in rest
            )

    def _space(self) -> int:
        """Tokens of a lone space."""
        if self._lone_space is None:
            self._lone_space = len(self._encode(" "))
        return self._lone_space

    def _counted(self, cache: dict[str, int], word: str, text: str) -> int:
        n = len(self._encode(text))
        if len(word) <= MAX_WORD_CHARS:
            if len(cache) >= WORD_CACHE_LIMIT:
                cache.clear()
            cache[word] = n
        return n

    def __len__(self) -> int:
        return len(self._first) + len(self._spaced)
