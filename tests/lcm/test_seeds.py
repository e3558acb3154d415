"""The rarest query terms find lcm_grep's candidates (seeds.py, #17)."""

from __future__ import annotations

from ctxengine_lcm.seeds import choose_seeds


def test_the_rarest_terms_are_taken_while_their_matches_fit_the_pool():
    seeds = choose_seeds(['"amber"', '"service"', '"key"'], [401, 50, 60], pool=400)
    assert seeds is not None
    assert seeds.expression == '"service" OR "key"'
    assert seeds.skipped


def test_terms_that_all_fit_are_all_taken_and_nothing_is_skipped():
    seeds = choose_seeds(['"a"', '"b"'], [10, 20], pool=400)
    assert seeds is not None and seeds.expression == '"a" OR "b"'  # rarest first
    assert not seeds.skipped


def test_a_term_without_matches_is_neither_taken_nor_skipped():
    seeds = choose_seeds(['"ghost"', '"port"'], [0, 12], pool=400)
    assert seeds is not None and seeds.expression == '"port"' and not seeds.skipped


def test_no_seeds_when_even_the_rarest_term_overflows_the_pool_or_nothing_matches():
    assert choose_seeds(['"the"', '"a"'], [401, 401], pool=400) is None
    assert choose_seeds(['"ghost"'], [0], pool=400) is None


def test_a_term_in_more_than_half_of_the_texts_is_never_taken():
    """bm25 gives such a term no weight: its matches would only add rows ranked last."""
    seeds = choose_seeds(['"quotes"', '"didn"', '"command"'], [232, 320, 14854], 20_000, 28_868)
    assert seeds is not None and seeds.expression == '"quotes" OR "didn"' and seeds.skipped
    assert choose_seeds(['"command"'], [14854], 20_000, 28_868) is None
    half = choose_seeds(['"command"'], [14434], 20_000, 28_868)  # exactly half: taken
    assert half is not None and half.expression == '"command"'
