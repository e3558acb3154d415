"""Recall tools: results, limits, bad arguments, hostile regexes, FTS injection."""

from __future__ import annotations

import json
import re
import time

import pytest
from conftest import (
    BACKENDS,
    drive,
    make_engine,
    new_database,
    query,
    release,
    uid,
)

from ctxengine_lcm.store import NewSummary
from ctxengine_lcm.tools import INNER_SUMMARY_HITS


@pytest.fixture(scope="module", params=BACKENDS)
def driven_database(request, tmp_path_factory):
    """One history per backend for the read-only tests: driven once, 60 turns."""
    directory = tmp_path_factory.mktemp("tools")
    database = new_database(request, request.param, directory)
    engine = make_engine(directory, database=database)
    drive(engine, 60)
    yield engine, database
    engine.dispose()
    release(database)


@pytest.fixture
def driven(driven_database):
    return driven_database[0]


def call(engine, name, args):
    raw = engine.handle_tool_call(name, args)
    return json.loads(raw)


def test_schemas_name_the_three_tools(driven):
    names = [s["name"] for s in driven.get_tool_schemas()]
    assert names == ["lcm_grep", "lcm_expand", "lcm_describe"]


def test_fulltext_finds_a_compacted_fact_and_its_lineage(driven):
    out = call(driven, "lcm_grep", {"pattern": "fact7 value7", "scope": "messages"})
    assert out["matched"] == "any term" and out["sort"] == "relevance"
    hit = out["results"][0]  # holds both terms: ranked above texts holding one
    assert hit["role"] == "assistant" and hit["snippet"] == "answer 7: fact7 is value7"
    assert hit["covered_by"].startswith("sum_")
    expanded = call(driven, "lcm_expand", {"id": hit["id"]})
    assert expanded["message"]["content"] == "answer 7: fact7 is value7"


def test_fulltext_needs_no_every_word_and_ranks_more_terms_first(driven):
    out = call(driven, "lcm_grep", {"pattern": "fact9 nonexistentword", "scope": "messages"})
    assert out["matched"] == "any term"
    assert "fact9" in out["results"][0]["snippet"]
    both = call(driven, "lcm_grep", {"pattern": "answer value9", "scope": "messages"})
    assert both["results"][0]["snippet"] == "answer 9: fact9 is value9"


def test_stemming_finds_other_forms_of_a_word(tmp_path, database):
    engine = make_engine(tmp_path, database=database)
    engine.ingest("s1", [{"role": "user", "content": "The exporter releases builds nightly.",
                          "message_uid": uid()}])  # fmt: skip
    for pattern in ("release", "released builds", "releasing"):
        out = call(engine, "lcm_grep", {"pattern": pattern})
        assert out["count"] == 1, pattern


def test_phrases_and_explicit_operators_keep_their_meaning(driven):
    phrase = call(driven, "lcm_grep", {"pattern": '"fact7 is value7"', "scope": "messages"})
    assert [r["snippet"] for r in phrase["results"]] == ["answer 7: fact7 is value7"]
    assert phrase["matched"] == "any term"
    both = call(driven, "lcm_grep", {"pattern": "fact7 AND value8", "scope": "messages"})
    assert both["matched"] == "as written" and both["count"] == 0
    either = call(driven, "lcm_grep", {"pattern": "fact7 OR fact8", "scope": "messages"})
    assert {r["snippet"] for r in either["results"]} >= {
        "answer 7: fact7 is value7", "answer 8: fact8 is value8"}  # fmt: skip
    without = call(driven, "lcm_grep", {"pattern": "answer NOT fact7", "limit": 100})
    assert without["count"] > 0
    assert all("fact7" not in r["snippet"] for r in without["results"])
    prefix = call(driven, "lcm_grep", {"pattern": "value1*", "scope": "messages", "limit": 100})
    assert any("value12" in r["snippet"] for r in prefix["results"])
    bad = call(driven, "lcm_grep", {"pattern": "NOT fact7"})
    assert "NOT needs a term before it" in bad["error"]


def test_operators_bind_as_in_fts5_not_then_and_then_or(driven):
    def snippets(pattern):
        out = call(driven, "lcm_grep", {"pattern": pattern, "scope": "messages", "limit": 100})
        return {r["snippet"] for r in out["results"]}

    seven = {"answer 7: fact7 is value7"}
    assert snippets("fact7 OR fact8 AND value9") == seven  # fact7, or (fact8 and value9)
    assert snippets("fact7 OR fact8 NOT value8") == seven  # fact7, or (fact8 but not value8)
    assert snippets("fact8 NOT value8 OR fact7 AND value7") == seven


def test_query_structure_groups_operands_by_fts5_precedence():
    from ctxengine_lcm.search import Operand, fts_query, query_structure

    built = fts_query('a OR "b c" AND d* NOT e NOT f"g').expression
    a, bc, d = Operand("a", False), Operand("b c", False), Operand("d", True)
    e, fg = Operand("e", False), Operand('f"g', False)
    assert query_structure(built) == [[[a]], [[bc], [d, e, fg]]]


def test_recency_sort_is_still_available(driven):
    out = call(driven, "lcm_grep", {"pattern": "answer", "sort": "recency", "limit": 5})
    seqs = [r["seq"] for r in out["results"] if r["kind"] == "message"]
    assert seqs == sorted(seqs, reverse=True) and out["sort"] == "recency"


def test_limit_sort_scope_and_time_range(driven):
    out = call(
        driven,
        "lcm_grep",
        {"pattern": "answer", "limit": 5, "scope": "messages", "sort": "recency"},
    )
    assert out["count"] == 5
    seqs = [r["seq"] for r in out["results"]]
    assert seqs == sorted(seqs, reverse=True)  # recency: newest first
    rel = call(driven, "lcm_grep", {"pattern": "answer", "sort": "relevance", "limit": 500})
    assert rel["count"] == driven.settings.grep_max_limit or rel["count"] <= 100
    summaries = call(driven, "lcm_grep", {"pattern": "question", "scope": "summaries"})
    assert summaries["count"] > 0 and all(r["kind"] == "summary" for r in summaries["results"])
    future = call(driven, "lcm_grep", {"pattern": "answer", "since": time.time() + 3600})
    assert future["count"] == 0
    past = call(driven, "lcm_grep", {"pattern": "answer", "until": "2000-01-01T00:00:00Z"})
    assert past["count"] == 0


@pytest.mark.parametrize(
    "pattern",
    [
        'fact7" OR "fact8',
        "NEAR(fact7 fact8)",
        "content:fact7",
        "fact*",
        "^fact7",
        '"',
        "(((",
        "a AND",
    ],
)
def test_fts_syntax_in_user_input_is_matched_literally(driven, pattern):
    out = call(driven, "lcm_grep", {"pattern": pattern})
    assert "error" not in out or "no words" in out["error"]
    if pattern == "content:fact7":
        # A column filter is a word to match, not syntax: every hit holds fact7.
        assert all("fact7" in r["snippet"] for r in out["results"] if r["kind"] == "message")


def test_regex_mode_finds_matches(driven):
    out = call(driven, "lcm_grep", {"pattern": r"fact1\d is value1\d", "mode": "regex"})
    assert out["count"] >= 5 and not out["timed_out"]
    assert all("fact1" in r["snippet"] for r in out["results"] if r["kind"] == "message")


def test_hostile_regexes_return_within_the_time_limit(tmp_path, database):
    engine = make_engine(tmp_path, database=database, grep_regex_timeout_seconds=0.3)
    drive(engine, 3)
    victim = "a" * 40_000 + "!"
    engine.ingest("s1", [{"role": "user", "content": victim, "message_uid": uid()}])
    for hostile in (r"(a+)+$", r"(a|aa)+$", r"(?:a*)*!z", r"(a+a+)+$"):
        started = time.monotonic()
        out = call(engine, "lcm_grep", {"pattern": hostile, "mode": "regex"})
        assert time.monotonic() - started < 3.0
        assert "error" not in out and (out["timed_out"] or out["count"] == 0)
    assert call(engine, "lcm_grep", {"pattern": r"(a+)+$", "mode": "regex"})["timed_out"]


def test_regex_scan_is_capped(tmp_path, database):
    engine = make_engine(tmp_path, database=database, grep_max_rows_scanned=50)
    drive(engine, 40)
    out = call(engine, "lcm_grep", {"pattern": "zzz-not-there", "mode": "regex"})
    assert out["rows_scanned"] <= 50 and out["scan_capped"]


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("lcm_grep", {}, "'pattern' is required"),
        ("lcm_grep", {"pattern": 7}, "must be a string"),
        ("lcm_grep", {"pattern": "x", "mode": "fuzzy"}, "must be one of"),
        ("lcm_grep", {"pattern": "x", "limit": 0}, "at least 1"),
        ("lcm_grep", {"pattern": "x", "limit": True}, "not a boolean"),
        ("lcm_grep", {"pattern": "x", "since": "yesterday"}, "ISO 8601"),
        ("lcm_grep", {"pattern": "(", "mode": "regex"}, "not a valid regex"),
        ("lcm_grep", {"pattern": "x" * 5000}, "limit is"),
        ("lcm_grep", {"pattern": "!!!"}, "no words"),
        ("lcm_grep", ["not", "a", "dict"], "JSON object"),
        ("lcm_describe", {}, "'id' is required"),
        ("lcm_describe", {"id": "../../etc/passwd"}, "not an id"),
        ("lcm_describe", {"id": "sum_999999"}, "no summary or message"),
        ("lcm_expand", {"id": "msg_1", "max_tokens": -5}, "at least 1"),
        ("lcm_expand", {"id": "msg_1", "offset": 10**9}, "past the end"),
        ("lcm_expand", {"id": "sum_1", "start": "x"}, "must be an integer"),
        ("lcm_unknown", {}, "Unknown context engine tool"),
    ],
)
def test_bad_arguments_give_json_errors(driven, name, args, needle):
    out = call(driven, name, args)
    assert needle in out["error"]


def test_arguments_as_json_text_are_accepted(driven):
    out = json.loads(driven.handle_tool_call("lcm_grep", '{"pattern": "fact3"}'))
    assert out["count"] >= 1
    bad = json.loads(driven.handle_tool_call("lcm_grep", "{not json"))
    assert "not valid JSON" in bad["error"]


def test_expand_respects_the_token_cap(driven):
    sid = next(
        i.ref_id for i in driven.store.context_items(driven._conversation()) if i.kind == "summary"
    )
    out = call(driven, "lcm_expand", {"id": f"sum_{sid}", "max_tokens": 200})
    assert out["items"]
    assert len(json.dumps(out)) < 200 * 4 * 4


def test_describe_returns_metadata(driven):
    hit = call(driven, "lcm_grep", {"pattern": "fact2", "scope": "messages"})["results"][0]
    desc = call(driven, "lcm_describe", {"id": hit["id"], "include_content": True})
    assert desc["role"] == "assistant" and desc["lineage"][0] == hit["covered_by"]
    assert desc["message"]["content"] == "answer 2: fact2 is value2"
    top = call(driven, "lcm_describe", {"id": desc["lineage"][-1]})
    assert (
        top["kind"] == "summary" and top["sources_total"] >= 1 and top["in_active_context"] is True
    )
    assert top["descendant_messages"] >= 1 and len(top["time_range"]) == 2


def test_summary_hits_name_the_matching_messages_under_them(driven_database):
    driven, database = driven_database
    ((text,),) = query(database, "SELECT content FROM lcm_summaries ORDER BY id LIMIT 1")
    topic = re.search(r"topic\d+", text).group(0)
    out = call(driven, "lcm_grep", {"pattern": topic, "scope": "summaries"})
    hit = next(r for r in out["results"] if r["matching_messages"])
    inner = hit["matching_messages"][0]
    assert f"about {topic}:" in inner["snippet"]
    # The message is a descendant of the summary: its lineage passes through it.
    desc = call(driven, "lcm_describe", {"id": inner["id"]})
    assert hit["id"] in desc["lineage"]


def summarized_beside_noise(engine, log_text):
    """``log_text`` ingested amid 30 short texts repeating "export", all 31 then under
    one leaf summary: (store, conversation, summary id, the log's id, the noise's ids)."""
    noise = [
        {"role": "user", "content": f"export export export note {n}", "message_uid": uid()}
        for n in range(30)
    ]
    log = {"role": "user", "content": log_text, "message_uid": uid()}
    engine.ingest("s1", [*noise[:15], log, *noise[15:]])
    conversation = engine._conversation()
    store = engine.store
    items = store.context_items(conversation)
    span = NewSummary("leaf", 0, "s", 1, 0.0, 1.0, 1, 31, 31, 0, 10, 0,
                      tuple(i.ref_id for i in items))  # fmt: skip
    summary_id = store.replace_with_summary(conversation, items, span)
    ids = [store.message_by_uid([conversation], m["message_uid"]).id for m in (log, *noise)]
    return store, conversation, summary_id, ids[0], ids[1:]


def test_inner_hits_rank_the_message_holding_most_terms_first(tmp_path, database):
    """Under a summary, a long log holding most of the query's terms beats short texts
    that repeat one term (bm25 alone ranks those first), and its snippet shows the line."""
    from ctxengine_lcm.search import fts_query

    lines = [f"09:15:{n % 60:02d} INFO worker heartbeat seq={n} all quiet" for n in range(600)]
    lines[300] = "ERROR scheduler.export deadline exceeded code=QX-4411 (customer-facing)"
    engine = make_engine(tmp_path, database=database)
    store, conversation, summary_id, log_id, _ = summarized_beside_noise(engine, "\n".join(lines))
    query = fts_query("customers scheduler export code deadline").expression
    listed = store.search_within_summaries([summary_id, summary_id + 99], query, 5, 300)
    assert list(listed) == [summary_id]  # a summary that does not exist is left out
    absent = fts_query("zebra").expression
    assert store.search_within_summaries([summary_id], absent, 5, 300) == {summary_id: []}
    hits = listed[summary_id]
    assert hits[0].id == log_id
    assert "QX-4411" in hits[0].text
    plain = store.search_fulltext([conversation], query, "messages", None, None, 3, True, 100)
    assert len(plain) == 3


def test_inner_hits_of_a_long_span_rank_its_newest_matches(tmp_path, monkeypatch):
    """A span longer than the candidate cap ranks only its newest matches (SQLite reads
    them backwards); a shorter one ranks every match (read forwards): the log holding
    most terms leads in the one and is out of reach in the other."""
    from ctxengine_lcm import sqlite_store
    from ctxengine_lcm.search import fts_query

    engine = make_engine(tmp_path)
    text = "scheduler export deadline code"
    store, _, summary_id, log_id, noise_ids = summarized_beside_noise(engine, text)
    query = fts_query("scheduler export deadline").expression
    every = store.search_within_summaries([summary_id], query, 5, 300)[summary_id]
    assert [h.id for h in every] == [log_id, *reversed(noise_ids[-4:])]
    monkeypatch.setattr(sqlite_store, "_WITHIN_CANDIDATES", 5)
    newest = store.search_within_summaries([summary_id], query, 5, 300)[summary_id]
    assert [h.id for h in newest] == list(reversed(noise_ids[-5:]))


def test_query_building_is_injection_proof():
    from ctxengine_lcm.search import fts_query, query_operands

    built = fts_query('a" OR x:y NEAR(b) "c d" e* AND f NOT g (( "')
    assert built.expression == '"a""" OR "x:y" OR "NEAR(b)" OR "c d" OR "e" * AND "f" NOT "g"'
    assert query_operands(built.expression) == ['"a"""', '"x:y"', '"NEAR(b)"', '"c d"', '"e" *',
                                                '"f"', '"g"']  # fmt: skip
    assert fts_query("AND OR ((") is None
    assert fts_query("x\x00y").expression == '"x" OR "y"'  # a NUL would cut the query short


def ingest_texts(engine, texts):
    engine.ingest("s1", [{"role": "user", "content": t, "message_uid": uid()} for t in texts])


def test_an_exact_word_outranks_texts_that_only_share_its_stem(tmp_path, database):
    """Stemming makes "scheduler" match "schedule"; the text holding the word as asked
    comes first even where bm25 alone prefers the shorter stem-only texts."""
    engine = make_engine(tmp_path, database=database, context_length=200_000)
    ingest_texts(engine, [f"Schedule job{n} at hour{n} on day{n}." for n in range(30)])
    ingest_texts(engine, ["The scheduler moved to a new host last week, with its config."])
    out = call(engine, "lcm_grep", {"pattern": "scheduler", "limit": 3})
    assert out["count"] == 3
    assert out["results"][0]["snippet"].startswith("The scheduler moved")


TEMPLATED = "Storage: look at src/app/storage/file{}.py and fix the batch handling."


def test_near_duplicates_fold_under_the_best_match(tmp_path, database):
    """Templated lines repeated all session long take one result slot, listed by id, so
    a different text that matches less strongly still makes the first page."""
    engine = make_engine(tmp_path, database=database, context_length=200_000)
    ingest_texts(engine, [TEMPLATED.format(n) for n in range(40)])
    ingest_texts(engine, ["Ownership change: Ana Ruiz took over the storage release pipeline."])
    out = call(engine, "lcm_grep", {"pattern": "storage", "limit": 3})
    snippets = [r["snippet"] for r in out["results"]]
    assert any("Ana Ruiz" in s for s in snippets), snippets
    folded = next(r for r in out["results"] if "similar" in r)
    assert folded["similar"]["count"] == 39 and len(folded["similar"]["ids"]) == 5
    expanded = call(engine, "lcm_expand", {"id": folded["similar"]["ids"][0]})
    assert "src/app/storage/file" in expanded["message"]["content"]
    unfolded = make_engine(
        tmp_path / "unfolded", database=database, session="s2", grep_fold_similarity=1.5
    )
    unfolded.ingest(
        "s2",
        [{"role": "user", "content": TEMPLATED.format(n), "message_uid": uid()} for n in range(10)],
    )
    plain = call(unfolded, "lcm_grep", {"pattern": "storage", "limit": 5})
    assert plain["count"] == 5 and all("similar" not in r for r in plain["results"])


RETRIED_EDIT = (
    "The edit failed to apply, I will try the edit command again.\n\n"
    "edit {}\n    limits = load_limits(path)\n    return limits\nend_of_edit"
)


def test_a_folded_near_duplicate_shows_the_lines_that_set_it_apart(tmp_path, database):
    """Retried edits repeat each other but for the line range: folded under one slot,
    each still shows its own range, so the one that applied is seen without expanding."""
    engine = make_engine(tmp_path, database=database, context_length=200_000)
    ranges = ["40:52", "40:52", "40:52", "40:53"]
    ingest_texts(engine, [RETRIED_EDIT.format(r) for r in ranges])
    ingest_texts(engine, ["The limits loader now reads the file once."])
    out = call(engine, "lcm_grep", {"pattern": "edit apply range", "limit": 5})
    folded = next(r for r in out["results"] if "similar" in r)
    assert folded["similar"]["count"] == 3
    differences = folded["similar"]["differences"]
    assert {d["id"] for d in differences} <= set(folded["similar"]["ids"])
    shown = json.dumps(out["results"])
    assert "edit 40:52" in shown and "edit 40:53" in shown
    # Only the differing line is shown, not the lines every retry shares.
    assert all(d["differs"].startswith("edit 40:5") for d in differences)
    assert all("load_limits" not in d["differs"] for d in differences)


def test_a_long_hit_shows_the_part_around_its_rarest_query_word(tmp_path, database):
    """A task prompt repeats the query's common word everywhere; the fragments shown are
    placed where the rarer words occur, so the constraint next to them is in the result
    the agent reads, not only in the message behind it."""
    engine = make_engine(tmp_path, database=database, context_length=200_000)
    filler = " ".join(f"Step {n}: read the files and fix what the files say." for n in range(40))
    prompt = f"{filler[:1500]} Boundaries: DO NOT MODIFY: Tests, leave those alone. {filler[1500:]}"
    ingest_texts(engine, [prompt])
    out = call(engine, "lcm_grep", {"pattern": "which files to leave alone"})
    snippet = out["results"][0]["snippet"]
    assert "DO NOT MODIFY: Tests" in snippet, snippet
    assert len(snippet) <= 600 + 4  # grep_whole_text_chars, and the "…" between fragments


def test_only_the_best_summary_hits_list_their_matching_messages(driven_database):
    """Each listing searches the summary's span; past the best few hits it is not worth it."""
    driven, _ = driven_database
    out = call(driven, "lcm_grep", {"pattern": "question", "scope": "summaries", "limit": 10})
    summaries = [r for r in out["results"] if r["kind"] == "summary"]
    assert len(summaries) > INNER_SUMMARY_HITS
    listed = [r for r in summaries if "matching_messages" in r]
    assert listed == summaries[:INNER_SUMMARY_HITS]
    assert all(r["matching_messages"] for r in listed)


def test_a_grep_is_written_as_json_dumps_writes_it(driven):
    """The items' texts encoded to measure them are written as they are, not encoded
    again: the result is character for character ``json.dumps``'s (#17)."""
    for args in (
        {"pattern": "fact7 value7"},
        {"pattern": "answer", "limit": 3, "sort": "recency"},
        {"pattern": "zzz-nothing-matches"},
    ):
        raw = driven.handle_tool_call("lcm_grep", args)
        assert raw == json.dumps(json.loads(raw), ensure_ascii=False)
        assert len(json.loads(raw)["results"]) == json.loads(raw)["count"]


def test_result_json_writes_encoded_items_from_their_texts():
    from ctxengine_lcm.tools import EncodedItems, result_json

    items = EncodedItems()
    for item in ({"id": "msg_1", "snippet": 'a "quoted" naïve\nline'}, {"id": "sum_2"}):
        items.append(item)
        items.texts.append(json.dumps(item, ensure_ascii=False))
    result = {"pattern": "ключ \\ x", "results": items, "count": 2, "partial": False}
    assert result_json(result) == json.dumps(result, ensure_ascii=False)
    empty = EncodedItems()
    assert result_json({"results": empty, "n": None}) == '{"results": [], "n": null}'
    with pytest.raises(TypeError):  # as json.dumps: a value JSON has no type for
        result_json({"pattern": "x", "odd": {1, 2}})
