"""Hostile tool calls on both backends: every answer is the tool's JSON (an argument error
naming the argument, or a result marked partial), within bounds, and other sessions'
history never hides or leaks into the caller's."""

from __future__ import annotations

import json
import time

import pytest
from conftest import make_engine, uid


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
