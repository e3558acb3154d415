"""Hostile tool calls on both backends: every answer is the tool's JSON (an argument error
naming the argument, or a result marked partial), within bounds, and other sessions'
history never hides or leaks into the caller's."""

from __future__ import annotations

import json
import time

import pytest
from conftest import BACKENDS, drive, make_engine, new_database, release, uid


def call(engine, name, args):
    return json.loads(engine.handle_tool_call(name, args))


def ingest(engine, session, texts):
    batch = [{"role": "user", "content": t, "message_uid": uid()} for t in texts]
    for start in range(0, len(batch), 500):
        engine.ingest(session, batch[start : start + 500])


@pytest.fixture
def engine(tmp_path, database):
    engine = make_engine(tmp_path, database=database, session="mine", context_length=200_000)
    ingest(engine, "mine", ["the deployment key is kept in legacy/SZHY_3.cfg", "hello there"])
    return engine


# Item 3: the same query table on both backends.

FRAGMENTS = [
    ("legacy/SZHY_3.cfg", 1), ("SZHY_3.cfg", 1), ("SZHY_3", 1), ("SZHY", 1), ("szhy_3.CFG", 1),
    ("legacy", 1), ("cfg", 1), ("SZH*", 1), ('"SZHY_3.cfg"', 1), ("SZHY AND legacy", 1),
    ("SZHX", 0), ("legacy/SZHY_4.cfg", 0),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "found"), FRAGMENTS, ids=[p for p, _ in FRAGMENTS])
def test_fragments_of_path_like_tokens_are_found_on_both_backends(engine, pattern, found):
    out = call(engine, "lcm_grep", {"pattern": pattern, "scope": "messages"})
    assert out["count"] == found, out


# Item 13: bad arguments.

BAD_ARGUMENTS = [
    ("lcm_grep", {"pattern": "key", "limit": "--5"}, "'limit'"),
    ("lcm_grep", {"pattern": "key", "limit": "²"}, "'limit'"),
    ("lcm_grep", {"pattern": "key", "limit": 10**5000}, "'limit'"),
    ("lcm_grep", {"pattern": "key", "limit": 2.5}, "'limit'"),
    ("lcm_grep", {"pattern": "key", "limit": float("nan")}, "'limit'"),
    ("lcm_grep", {"pattern": "key", "since": float("inf")}, "'since'"),
    ("lcm_grep", {"pattern": "key", "since": 1e400}, "'since'"),
    ("lcm_grep", {"pattern": "key", "until": float("nan")}, "'until'"),
    ("lcm_grep", {"pattern": "key", "since": 10**30}, "'since'"),
    ("lcm_grep", {"pattern": "key", "since": "9" * 5000}, "'since'"),
    ("lcm_grep", {"pattern": "key", "until": "0001-01-01T00:00:00+23:59"}, "'until'"),
    ("lcm_expand", {"id": "msg_1", "max_tokens": "1e9"}, "'max_tokens'"),
    ("lcm_expand", {"id": "msg_1", "offset": -(10**40)}, "'offset'"),
    ("lcm_describe", {"id": ["msg_1"]}, "'id'"),
    ("lcm_grep", {"pattern": {"a": [[[[]]]]}}, "'pattern'"),
]


@pytest.mark.parametrize(("name", "args", "names"), BAD_ARGUMENTS, ids=range(len(BAD_ARGUMENTS)))
def test_bad_arguments_are_argument_errors_naming_the_argument(engine, name, args, names):
    out = call(engine, name, args)
    assert names in out.get("error", ""), out
    assert "failed" not in out["error"]


@pytest.mark.parametrize("text", ['{"pattern": "key", "since": 1e400}', "[" * 100_000, "9" * 5000])
def test_argument_text_that_is_hostile_json_is_an_error(engine, text):
    out = call(engine, "lcm_grep", text)
    assert "error" in out and "failed" not in out["error"]


@pytest.mark.parametrize("name", [["lcm_grep"], {"x": 1}, 7, None])
def test_a_tool_name_that_is_not_a_string_is_unknown(engine, name):
    assert "Unknown context engine tool" in call(engine, name, {"pattern": "key"})["error"]


# Item 9: regexes that are costly to compile.


@pytest.mark.parametrize(
    "pattern", ["a{30000000}", "(a{1000}){1000}", "x{99999}" * 3, "(" * 40 + "a" + ")" * 40]
)
def test_costly_regexes_are_refused_before_compiling(engine, pattern):
    started = time.monotonic()
    out = call(engine, "lcm_grep", {"pattern": pattern, "mode": "regex"})
    assert time.monotonic() - started < 1.0
    assert "too costly to compile" in out["error"]


@pytest.mark.parametrize(
    "pattern", [r"SZHY_\d{1}", r"[a-z]{2,8}/SZHY", r"(ke){1}y", r"\p{Lu}{4}_\d"]
)
def test_ordinary_counted_repeats_still_work(engine, pattern):
    assert call(engine, "lcm_grep", {"pattern": pattern, "mode": "regex"})["count"] == 1


# Item 2: a noisy neighbour must not hide the caller's own history.


@pytest.mark.parametrize("sort", ["relevance", "recency"])
def test_a_noisy_neighbour_does_not_hide_your_own_match(tmp_path, database, sort):
    mine = make_engine(tmp_path, database=database, session="mine", grep_relevance_window=100)
    ingest(mine, "mine", ["my note: the release checklist lives in the wiki"])
    noisy = make_engine(tmp_path, database=database, session="noisy", grep_relevance_window=100)
    ingest(noisy, "noisy", [f"noise {n}: release release release" for n in range(400)])
    out = call(mine, "lcm_grep", {"pattern": "release", "scope": "messages", "sort": sort})
    assert [r["snippet"] for r in out["results"]] == [
        "my note: the release checklist lives in the wiki"
    ]
    since = call(mine, "lcm_grep", {"pattern": "release", "since": 0, "sort": sort})
    assert since["count"] == 1


# Item 12: every result within its token limit.

COUNT = None


def tokens(out) -> int:
    from conftest import COUNTER

    return COUNTER.count_text(json.dumps(out, ensure_ascii=False))


@pytest.fixture
def bulky(tmp_path, database):
    engine = make_engine(tmp_path, database=database, session="mine", context_length=200_000)
    big = "".join(f"line {n}: payload {n * 7919 % 100003}\n" for n in range(20_000))
    call_id = "call_1"
    engine.ingest(
        "mine",
        [
            {"role": "user", "content": "read the log", "message_uid": uid()},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "read",
                            "arguments": json.dumps({"blob": "z" * 500_000}),
                        },
                    }
                ],
                "message_uid": uid(),
            },
            {"role": "tool", "tool_call_id": call_id, "content": big, "message_uid": uid()},
        ],
    )
    items = engine.store.context_items(engine._conversation())
    ids = {item.role: f"msg_{item.ref_id}" for item in items}
    return engine, ids, big


@pytest.mark.parametrize("max_tokens", [1, 128, 500, 3000])
@pytest.mark.parametrize("tool", ["lcm_expand", "lcm_describe"])
@pytest.mark.parametrize("role", ["tool", "assistant"])
def test_results_respect_their_token_limit(bulky, tool, role, max_tokens):
    engine, ids, _ = bulky
    args = {"id": ids[role], "max_tokens": max_tokens, "include_content": True}
    out = call(engine, tool, args)
    assert "error" not in out, out
    floor = 128 if tool == "lcm_expand" else 512  # describe's metadata always fits
    assert tokens(out) <= max(max_tokens, floor), (tokens(out), max_tokens)


def test_paging_a_huge_message_returns_it_whole_in_bounded_pages(bulky):
    engine, ids, big = bulky
    pages, offset = [], 0
    while offset is not None:
        out = call(engine, "lcm_expand", {"id": ids["tool"], "max_tokens": 4000, "offset": offset})
        assert tokens(out) <= 4000
        pages.append(out["message"]["content"])
        offset = out["next_offset"]
    assert "".join(pages) == big


# Item 10: full-text search within a time budget and a work cap.


@pytest.fixture(scope="module", params=BACKENDS)
def long_history(request, tmp_path_factory):
    """300 turns (1,200 messages) with summaries, driven once per backend."""
    directory = tmp_path_factory.mktemp("budget")
    database = new_database(request, request.param, directory)
    engine = make_engine(directory, database=database)
    drive(engine, 300)
    yield directory, database, engine
    engine.dispose()
    release(database)


REPEATED = ("fact question topic answer file " * 40)[:1000]


def test_a_query_of_repeated_words_costs_what_its_distinct_words_cost(long_history):
    _, _, engine = long_history
    started = time.monotonic()
    out = call(engine, "lcm_grep", {"pattern": REPEATED, "scope": "summaries", "limit": 100})
    elapsed = time.monotonic() - started
    once = call(engine, "lcm_grep", {"pattern": "fact question topic answer file",
                                     "scope": "summaries", "limit": 100})  # fmt: skip
    assert [r["id"] for r in out["results"]] == [r["id"] for r in once["results"]]
    assert "partial" not in out
    assert elapsed < 2.0, f"{elapsed:.1f} s"


def test_search_past_its_time_budget_returns_partial_results(long_history):
    directory, database, _ = long_history
    engine = make_engine(directory, database=database, grep_time_budget_seconds=0.05,
                         grep_max_terms=1000)  # fmt: skip
    words = " ".join(f"w{n}x{i}" for n in range(0, 300, 3) for i in range(3))[:1000]
    started = time.monotonic()
    out = call(engine, "lcm_grep", {"pattern": words, "limit": 100})
    assert time.monotonic() - started < 1.5
    assert out["partial"] is True and "time budget" in out["partial_reason"]
    ordinary = call(
        make_engine(directory, database=database), "lcm_grep", {"pattern": "fact7 value7"}
    )
    assert ordinary["count"] >= 1 and "partial" not in ordinary


def test_terms_past_the_cap_are_dropped_and_marked(long_history):
    _, _, engine = long_history
    words = " ".join(f"w{n}x1" for n in range(100))
    out = call(engine, "lcm_grep", {"pattern": words})
    assert out["partial"] is True and out["terms_dropped"] == 36
    assert "first 64 distinct terms" in out["partial_reason"]


# Item 11: a huge message is ingested in bounded time.


def test_a_20_mb_tool_output_is_ingested_in_bounded_time(tmp_path, database):
    engine = make_engine(tmp_path, database=database, session="big")
    rows = "".join(f"row {n}: status=ok path=/srv/app/m{n}.py\n" for n in range(700_000))
    big = "early_marker " + rows[:20_000_000] + " needle_at_the_end"
    call_uid = uid()
    batch = [
        {"role": "user", "content": "dump it", "message_uid": uid()},
        {"role": "assistant", "content": None, "message_uid": call_uid,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big, "message_uid": uid()},
    ]  # fmt: skip
    started = time.monotonic()
    engine.ingest("big", batch)
    elapsed = time.monotonic() - started
    assert elapsed < 4.0, f"ingest took {elapsed:.1f} s"  # tokenizing it whole: ~10 s
    ((tool_id,),) = [
        (i.ref_id,) for i in engine.store.context_items(engine._conversation()) if i.role == "tool"
    ]
    stored = engine.store.message(tool_id)
    assert stored.content == big and stored.externalized
    assert call(engine, "lcm_grep", {"pattern": "early_marker"})["count"] == 1
    tail = call(engine, "lcm_grep", {"pattern": "needle_at_the_end", "mode": "regex"})
    assert tail["count"] == 1


def test_a_sub_agent_grant_is_never_charged_or_served_past_its_cap(tmp_path, database):
    parent = make_engine(tmp_path, database=database, session="s1", subagent_token_cap=600)
    call_id = "c1"
    parent.ingest(
        "s1",
        [
            {"role": "user", "content": "go", "message_uid": uid()},
            {"role": "assistant", "content": None, "message_uid": uid(),
             "tool_calls": [{"id": call_id, "type": "function",
                             "function": {"name": "f", "arguments": "y" * 200_000}}]},
            {"role": "tool", "tool_call_id": call_id, "content": "row x\n" * 50_000,
             "message_uid": uid()},
        ],
    )  # fmt: skip
    ids = [f"msg_{i.ref_id}" for i in parent.store.context_items(parent._conversation())]
    child = parent.clone_for_agent()
    child.on_session_start("child")
    parent.prepare_subagent_spawn("s1", "child", "isolated", None)
    served = 0
    for ref in ids * 3:
        for tool in ("lcm_expand", "lcm_describe"):
            out = call(child, tool, {"id": ref, "include_content": True, "max_tokens": 5000})
            served += 0 if "error" in out else tokens(out)
    (grant,) = child.store.active_grants("child", time.time())
    assert grant.tokens_used <= 600
    assert served <= 600 + 6 * 16  # what was charged, plus the "session" key added after
