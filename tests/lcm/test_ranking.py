"""Reranking and folding of full-text hits, independent of the store behind them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxengine_lcm import ranking
from ctxengine_lcm.ranking import (
    _word_set,
    exact_pattern,
    fold_similar,
    folded_aligned,
    occurrences,
    query_terms,
    rerank,
)
from ctxengine_lcm.search import fts_query
from ctxengine_lcm.store import SearchHit


def hit(n: int, text: str, score: float) -> SearchHit:
    return SearchHit("message", n, 1, float(n), text, "user", n, -1, score)


def test_query_terms_read_words_phrases_and_prefixes_from_a_built_query():
    query = fts_query('Deploy "release train" pipe* deploy say"hi')
    assert query is not None
    assert query_terms(query.operands) == [
        ("deploy", False), ("release train", False), ("pipe", True), ('say"hi', False)
    ]  # fmt: skip


def test_the_order_does_not_depend_on_the_backends_score_scale():
    hits = [
        hit(1, "schedule the schedule again", -9.0),
        hit(2, "the scheduler is down", -4.0),
        hit(3, "schedule later", -8.0),
    ]
    terms = [("scheduler", False)]
    order = [r.hit.id for r in rerank(hits, terms)]
    scaled = [hit(h.id, h.text, h.score / 1000) for h in hits]  # ts_rank-sized scores
    assert order == [r.hit.id for r in rerank(scaled, terms)] == [2, 1, 3]


def test_a_rarer_exact_term_weighs_more_than_a_common_one():
    hits = [hit(n, f"deploy step {n}", -5.0) for n in range(10)]
    hits.append(hit(10, "rollback notes", -5.0))
    ranked = rerank(hits, [("deploy", False), ("rollback", False)])
    assert ranked[0].hit.id == 10


def test_exact_matches_respect_word_boundaries_and_prefixes():
    hits = [hit(1, "redeployed twice", -5.0), hit(2, "deploy-ready build", -5.0)]
    assert rerank(hits, [("deploy", False)])[0].hit.id == 2
    prefixed = [hit(1, "a predeploy hook", -5.0), hit(2, "deployment done", -5.0)]
    assert rerank(prefixed, [("deploy", True)])[0].hit.id == 2


def test_folding_keeps_the_best_member_and_lists_the_rest_in_order():
    ranked = rerank(
        [
            hit(1, "look at src/app/storage/a.py and fix the batch handling", -6.0),
            hit(2, "look at src/app/storage/b.py and fix the batch handling", -5.0),
            hit(3, "Ana took over the storage release pipeline", -4.0),
            hit(4, "look at src/app/storage/c.py and fix the batch handling", -3.0),
        ],
        [("storage", False)],
    )
    groups = fold_similar(ranked, threshold=0.5, groups=10)
    assert [g.hit.id for g in groups] == [1, 3]
    assert [h.id for h in groups[0].similar] == [2, 4] and groups[1].similar == ()
    assert len(fold_similar(ranked, threshold=1.5, groups=10)) == 4
    assert [g.hit.id for g in fold_similar(ranked, threshold=1.5, groups=2)] == [1, 2]


_FOLD_WORDS = st.sampled_from(["look", "at", "src", "fix", "Batch", "the", "key", "K1", "é", "_x"])


@given(
    texts=st.lists(st.lists(_FOLD_WORDS, max_size=8).map(" ".join), max_size=14),
    threshold=st.sampled_from([0.3, 0.5, 0.75, 1.0, 1.5]),
    groups=st.integers(1, 5),
)
def test_folding_puts_each_hit_under_the_first_leader_similar_enough(
    texts: list[str], threshold: float, groups: int
) -> None:
    """Against the rule as written: each hit in order joins the first leader whose word
    set's Jaccard similarity with its own reaches the threshold (an empty set joins none),
    else leads, until one leader too many would start (#17)."""
    ranked = [ranking.RankedHit(hit(n, text, -1.0), 1.0) for n, text in enumerate(texts)]
    leaders: list[tuple[int, frozenset[str], list[int]]] = []
    for n, text in enumerate(texts):
        words = frozenset(ranking._WORDS.findall(text.lower()))
        home = next(
            (
                folded
                for _, other, folded in leaders
                if words and other and len(words & other) / len(words | other) >= threshold
            ),
            None,
        )
        if home is not None:
            home.append(n)
        elif len(leaders) == groups:
            break
        else:
            leaders.append((n, words, []))
    groups_found = fold_similar(ranked, threshold, groups)
    assert [(g.hit.id, [h.id for h in g.similar]) for g in groups_found] == [
        (n, folded) for n, _, folded in leaders
    ]


def test_the_substring_prefilter_agrees_with_the_exact_word_regex():
    """The needle search over the joined texts rules out only what the regex would not
    match, and no match spans two texts (#17)."""
    from ctxengine_lcm.ranking import _TextsJoined, exact_pattern

    terms = [
        ("service", False),
        ("key", False),
        ("servic", True),
        ("service key", False),
        ("ключ", False),
        ("app.py", False),
        ("x_1", False),
    ]
    patterns = [exact_pattern(t, p) for t, p in terms]
    texts = [
        "The SERVICE key is here",
        "services keyed",
        "\u017fervice key (long s folds to s)",
        "KEY: Service-Key",
        "nothing here",
        "ключ service",
        "a monkey and a key",
        "ends with service",
        "key starts this one",
        "\u0130stanbul service key",  # lowercases to two characters: matched on its own
        "",
        "see src/App.py:12 and x_1, not myapp.py or x_12",
        "app.pyc x_1x",
    ]
    expected = [[p.search(text) is not None for p in patterns] for text in texts]
    assert _TextsJoined(texts).holdings(terms) == expected
    # Prepared once and asked twice, as rerank asks for the terms, then alternatives.
    joined = _TextsJoined(texts)
    first, second = joined.holdings(terms[:3]), joined.holdings(terms[3:])
    assert [a + b for a, b in zip(first, second, strict=True)] == expected


def test_the_joined_needle_search_agrees_with_the_regex_on_random_texts():
    """Random texts of query words, near misses, case, separators and folding letters."""
    import random

    from ctxengine_lcm.ranking import _TextsJoined, exact_pattern

    rng = random.Random(17)
    vocabulary = ["service", "Services", "key", "KEY", "monkey", "ser", "servic", "\u017fervice",
                  "keys", "x_key", "key_x", "\u0130d", "ключ", "9key", "key9",
                  "\u212aey", "ke\u0131", "keyé", "ékey"]  # fmt: skip
    separators = [" ", "-", ", ", "\n", "_", "", "  ", ".", "/"]
    terms = [("service", False), ("key", False), ("servic", True), ("service key", False),
             ("key service", False), ("ключ", False), ("x_key", False), ("key9", False),
             ("monkey.key", False), ("services", False)]  # fmt: skip
    patterns = [exact_pattern(t, p) for t, p in terms]
    for _ in range(600):
        texts = [
            "".join(
                rng.choice(vocabulary) + rng.choice(separators) for _ in range(rng.randint(0, 6))
            )
            for _ in range(rng.randint(1, 8))
        ]
        expected = [[p.search(text) is not None for p in patterns] for text in texts]
        assert _TextsJoined(texts).holdings(terms) == expected, texts


#: Letters whose lowercase depends on context or changes length, and separators.
_CASING = "ΑΣσςΒ .'\u00ad:İ\u0131\u017fa\n\u0345ǅé"


@given(st.lists(st.text(alphabet=_CASING, max_size=8), max_size=5))
def test_a_join_of_folded_texts_is_the_folded_join(texts: list[str]) -> None:
    """The wide join reuses each text's lowercase (#17): joined by newlines, the pieces
    folded one by one are the whole folded (Greek capital sigma's context ends at one)."""
    from ctxengine_lcm.ranking import _folded, _Join

    aligned = list(range(len(texts)))
    whole = _Join.of(texts, aligned)
    assert _Join.of(texts, aligned, [_folded(t) for t in texts]) == whole


_WORDS = st.sampled_from(
    ["Retry", "retry", "retries", "RETRY_LIMIT", "limit", "İd", "\u017fet", "set"]
)
_GLUE = st.sampled_from([" ", "-", "_", ".", "\n", ", ", "é", "x"])


@given(
    st.lists(st.tuples(_WORDS, _GLUE), max_size=30),
    st.sampled_from([("retry", False), ("retry", True), ("retry limit", False), ("set", False)]),
)
def test_occurrences_are_where_the_exact_pattern_matches(pieces, term):
    """The needle search finds exactly the places the regex scan finds (non-ASCII letters
    and case folding included), so snippets built on it show the same fragments."""
    text = "".join(word + glue for word, glue in pieces)
    expected = [m.start() for m in exact_pattern(*term).finditer(text)]
    found = occurrences(text, term, 1000, folded_aligned(text))
    assert set(expected) <= set(found)  # none missed
    assert all(exact_pattern(*term).match(text, at) for at in found)  # none false
    assert occurrences(text, term, 2, folded_aligned(text)) == found[:2]


def test_word_sets_split_ascii_text_as_the_word_pattern_does() -> None:
    texts = [
        "PASS: the amber service_key is K000Z; see src/app.py:12 (x=1,y=2)",
        "tabs\tand\nnewlines\x1c\x1fcontrol-chars__under_score 3.14e-5",
        "Kelvin \u212a lowers to ASCII; caf\u00e9 and \u0131 do not",
        "",
        "!!! ... ???",
    ]
    for text in texts:
        assert _word_set(text) == frozenset(ranking._WORDS.findall(text.lower())), text


@given(st.text(alphabet=st.characters(max_codepoint=0x250)))
def test_word_sets_are_the_word_patterns_words_for_any_text(text: str) -> None:
    assert _word_set(text) == frozenset(ranking._WORDS.findall(text.lower()))
