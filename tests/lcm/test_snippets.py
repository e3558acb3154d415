"""Fragments of a long hit around the query's rarest words (snippets.py)."""

from __future__ import annotations

from ctxengine_lcm.snippets import FRAGMENTS, term_snippet


def patterns(*words: str) -> list[tuple[str, bool]]:
    return [(w, False) for w in words]


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


def test_one_fragment_takes_the_room_of_the_missing_ones():
    """A report's environment block: the only word found ("Version") is two lines above
    the value asked for; a third of the room would cut the fragment before it."""
    filler = "The widget renders blank frames after resizing the main panel. " * 40
    block = (
        "  GL Version : 4.5 (Core Profile) Mesa 21.0.3\n\n"
        "  Python 3.12.1 (main, Jan 9 2025, 10:11:12) [GCC 12.2.0]\n\n"
        "          framelib : 2.41.7\n          numpy : 1.26.4\n"
    )
    text = f"{filler}{block}{filler}"
    snippet = term_snippet(text, patterns("version"), 600)
    assert snippet is not None and "framelib : 2.41.7" in snippet
    assert len(snippet) <= 600 + 2


def test_alternatives_fill_only_the_fragments_the_words_leave_free():
    filler = "nothing to see in this part of the long text, just filler words. " * 30
    text = f"{filler}the release notes mention it. {filler}Version: 3.3.7 {filler}"
    both = term_snippet(text, patterns("release"), 600, patterns("version"))
    assert both is not None and "release notes" in both and "Version: 3.3.7" in both
    assert term_snippet(text, patterns("absent"), 600, patterns("version")) is not None
    crowded = f"{filler}release one {filler}release two {filler}release three {text}"
    only_written = term_snippet(crowded, patterns("release"), 600, patterns("version"))
    assert only_written is not None and "Version: 3.3.7" not in only_written
