"""The lines a folded near-duplicate has that its leader lacks (differences.py)."""

from __future__ import annotations

from ctxengine_lcm.differences import TOTAL_CHARS, differing_lines


def test_only_the_lines_missing_from_the_leader_are_kept_in_order():
    leader = "Retry the edit.\nedit 10:12\n    x = 1\nend_of_edit"
    other = "Retry the edit.\nedit 10:13\n    x = 1\n    y = 2\nend_of_edit"
    assert differing_lines(leader, other) == "edit 10:13\n…\ny = 2"


def test_indentation_alone_is_no_difference_and_same_text_gives_none():
    assert differing_lines("a\n  b\nc", "a\nb\n   c  ") is None


def test_long_lines_are_cut_and_the_whole_kept_short():
    other = "\n".join(f"line {n} " + "x" * 150 for n in range(10))
    shown = differing_lines("", other)
    assert shown is not None and len(shown) <= TOTAL_CHARS
    assert shown.startswith("line 0 ") and shown.split("\n")[0].endswith("…")
