"""Fragments of a long hit around the query's rarest words (snippets.py)."""

from __future__ import annotations

from ctxengine_lcm.ranking import exact_pattern
from ctxengine_lcm.snippets import FRAGMENTS, term_snippet


def patterns(*words: str):
    return [exact_pattern(w, False) for w in words]


def test_fragments_go_to_the_rare_word_then_to_other_places_in_text_order():
    common = "the build log repeats common words. " * 60
    text = f"{common}ERROR E4127 in unique_widget_loader. {common}tail common words."
    snippet = term_snippet(text, patterns("common", "unique_widget_loader"), 600)
    assert snippet is not None and "E4127 in unique_widget_loader" in snippet
    fragments = [f for f in snippet.split("…") if f]
    assert len(fragments) == FRAGMENTS
    assert all(len(f) <= 600 // FRAGMENTS for f in fragments)
    assert [text.index(f) for f in fragments] == sorted(text.index(f) for f in fragments)


def test_no_word_as_written_leaves_the_choice_to_the_store():
    assert term_snippet("a long text about scheduling " * 50, patterns("scheduler"), 600) is None


def test_a_text_shorter_than_the_fragments_is_shown_once_unmarked():
    assert term_snippet("just the fact", patterns("fact"), 600) == "just the fact"


def test_a_hostile_text_is_scanned_within_bounds():
    text = "word " * 400_000  # 2 MB, one term everywhere
    snippet = term_snippet(text, patterns("word", "absent"), 600)
    assert snippet is not None and len(snippet) <= 600 + FRAGMENTS + 1
